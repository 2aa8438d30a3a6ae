//! `bench accept`: N clients connect, write 128 B, read it back and close; seed 002.
//!
//! Seed 002 (multishot accept) measured singleshot against multishot `IORING_OP_ACCEPT`
//! with 10,000 clients that each connect, write 128 bytes, read them back and close, the
//! server closing after its write; multishot came out 1.65% faster. Contestants, each with its
//! own listener and server thread on the server CPU (see `server.rs`), measured alternately:
//! - `runtime accept()`: a loop of singleshot `TcpListener::accept`, a task per connection;
//! - `runtime incoming()`: the multishot `TcpListener::incoming` stream, a task per connection;
//! - `tokio current-thread`: a `TcpListener::accept` loop with `tokio::spawn`;
//! - with the `peers` feature, `monoio`, `glommio` and `tokio-uring` (`src/peers/`), each an
//!   accept loop with a task per connection.
//!
//! One load generator serves them all from the client CPU: a tokio current-thread runtime
//! keeping `CONCURRENCY` connections in progress. Client sockets close with `SO_LINGER` 0
//! (an RST), so no `TIME_WAIT` piles up and the ephemeral ports last over every run.
//!
//! On loopback the client's CPU does most of the TCP work of a connection (the handshake is
//! processed in the sender's softirq), so connections/s is largely the client's limit; the
//! server CPU per connection (getrusage inside the server thread) is the figure that shows
//! what the server's accept path costs.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use sysutil::{raise_nofile, PinGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{alternate, Contestant, Plan};
use crate::report::{render_grid, Measure, Metric, Summary, Table};
use crate::server::{no_stats, Cpus, Ctl, Report, Server};
use crate::Opts;

/// Bytes each client writes and reads back, as in the seed.
pub(crate) const MSG: usize = 128;
/// Connections the load generator keeps in progress at once.
const CONCURRENCY: usize = 64;
/// Ring size of the runtime's servers.
pub(crate) const ENTRIES: u32 = 256;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let cpus = Cpus::pick();
    let count = if opts.quick { 1_000 } else { 10_000 };
    let plan = Plan {
        count,
        warmup: count / 4,
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: opts.seconds,
        granule: 1,
    };

    let mut servers = vec![
        Server::spawn("accept-single", cpus.server, runtime_singleshot)?,
        Server::spawn("accept-multi", cpus.server, runtime_multishot)?,
        Server::spawn("accept-tokio", cpus.server, tokio_server)?,
    ];
    let mut names = vec![
        "runtime accept()",
        "runtime incoming()",
        "tokio current-thread",
    ];
    for (name, srv) in peer_servers(cpus.server) {
        names.push(name);
        servers.push(srv);
    }
    let _pin = PinGuard::new(cpus.client)?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    let reports: Vec<RefCell<Vec<Report>>> = servers.iter().map(|_| RefCell::default()).collect();
    let mut contestants: Vec<Contestant<'_>> = servers
        .iter()
        .zip(&reports)
        .zip(names.iter().copied())
        .map(|((srv, rep), name)| {
            let (addr, ctl) = (srv.addr, srv.ctl.clone());
            let client = &client;
            Contestant::new(name, move |n| {
                let (m, r) = one_run(client, addr, &ctl, n)?;
                rep.borrow_mut().push(r);
                Ok(m)
            })
        })
        .collect();
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(_pin);
    for srv in servers {
        srv.stop()?;
    }

    let median_rate = |i: usize| {
        Summary::of(&series[i].runs.iter().map(Measure::rate).collect::<Vec<_>>()).median
    };
    let gain = (median_rate(1) / median_rate(0) - 1.0) * 100.0;
    // Drop each contestant's warm-up report; the rest line up with the measured runs.
    let cpu_rows: Vec<Vec<String>> = std::iter::once(vec![
        String::new(),
        "server us/conn median".to_string(),
        "min".to_string(),
        "max".to_string(),
        "server busy".to_string(),
    ])
    .chain(names.iter().zip(&reports).map(|(name, rep)| {
        let rep = rep.borrow();
        let per: Vec<f64> = rep[1..]
            .iter()
            .map(|r| r.cpu.as_secs_f64() * 1e6 / r.count.max(1) as f64)
            .collect();
        let busy: Vec<f64> = rep[1..]
            .iter()
            .map(|r| r.cpu.as_secs_f64() / r.elapsed.as_secs_f64().max(1e-9))
            .collect();
        let s = Summary::of(&per);
        vec![
            name.to_string(),
            format!("{:.2}", s.median),
            format!("{:.2}", s.min),
            format!("{:.2}", s.max),
            format!("{:.0}%", Summary::of(&busy).median * 100.0),
        ]
    }))
    .collect();
    // The server CPU per connection the second table prints, also in `--json` rows.
    let mut series = series;
    for (s, rep) in series.iter_mut().zip(&reports) {
        let per: Vec<f64> = rep.borrow()[1..]
            .iter()
            .map(|r| r.cpu.as_secs_f64() * 1e6 / r.count.max(1) as f64)
            .collect();
        if !per.is_empty() {
            s.extra
                .push(("server_cpu_us_per_op".to_string(), Summary::of(&per).median));
        }
    }
    let table = Table {
        title: format!(
            "accept: {count} clients per run (connect, write {MSG} B, read it back, close), \
             {CONCURRENCY} in progress at once, median of {} runs",
            plan.runs
        ),
        metric: Metric::Rate("conns/s"),
        ratio_label: "vs tokio".to_string(),
        baseline: 2,
        series,
        notes: vec![
            format!(
                "{}; client: tokio current-thread, SO_LINGER 0; RLIMIT_NOFILE {nofile}",
                cpus.describe()
            ),
            "enters/op: the server's io_uring_enter calls per connection (runtime::stats)"
                .to_string(),
            format!("multishot vs singleshot: {gain:+.2}% connections/s"),
            "target: multishot >= singleshot (seed: +1.65%), >= 1.2x tokio".to_string(),
        ],
    };
    print!("{}", table.render());
    println!("  server CPU per connection (getrusage RUSAGE_THREAD in the server thread):");
    print!("{}", render_grid(&cpu_rows, 4));
    Ok(())
}

/// The peer runtimes' accept servers (feature `peers`), each a row after tokio's.
#[cfg(feature = "peers")]
fn peer_servers(cpu: usize) -> Vec<(&'static str, Server)> {
    crate::peers::accept_servers(cpu)
}

/// No peers without the `peers` feature.
#[cfg(not(feature = "peers"))]
fn peer_servers(_cpu: usize) -> Vec<(&'static str, Server)> {
    Vec::new()
}

/// One measured run: `n` clients against the server behind `ctl`, and the server's report.
fn one_run(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    ctl: &Ctl,
    n: u64,
) -> io::Result<(Measure, Report)> {
    ctl.warm();
    ctl.measure(n);
    let start = Instant::now();
    load(client, addr, n)?;
    let elapsed = start.elapsed();
    let report = ctl.report()?;
    if report.count != n {
        return Err(io::Error::other(format!(
            "the server finished {} connections, the client {n}",
            report.count
        )));
    }
    Ok((
        Measure {
            ops: n,
            elapsed,
            enters: report.stats.map(|s| s.enters),
        },
        report,
    ))
}

/// The load generator: `n` connect-write-read-close cycles, `CONCURRENCY` at a time.
fn load(client: &tokio::runtime::Runtime, addr: SocketAddr, n: u64) -> io::Result<()> {
    let local = tokio::task::LocalSet::new();
    local.block_on(client, async move {
        let next = Rc::new(Cell::new(0u64));
        let workers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let next = next.clone();
                tokio::task::spawn_local(async move {
                    let msg = [0x5au8; MSG];
                    let mut back = [0u8; MSG];
                    loop {
                        let i = next.get();
                        if i >= n {
                            return Ok::<(), io::Error>(());
                        }
                        next.set(i + 1);
                        let mut s = tokio::net::TcpStream::connect(addr).await?;
                        s.set_zero_linger()?;
                        s.write_all(&msg).await?;
                        s.read_exact(&mut back).await?;
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.map_err(io::Error::other)??;
        }
        Ok(())
    })
}

/// The server's half of one connection: read the 128 bytes, write them back, close.
async fn serve_runtime(stream: corering_net::TcpStream) -> io::Result<()> {
    let buf = vec![0u8; MSG].into_boxed_slice();
    let (res, buf) = stream.read_exact_owned(buf).await;
    res?;
    let (res, _) = stream.write_all_owned(buf).await;
    res
}

fn runtime_server(
    listener: std::net::TcpListener,
    ctl: Arc<Ctl>,
    multishot: bool,
) -> io::Result<()> {
    let rt = runtime::Builder::new().entries(ENTRIES).build()?;
    rt.block_on(async move {
        let listener = corering_net::TcpListener::from_std(listener)?;
        let mut incoming = multishot.then(|| listener.incoming());
        loop {
            let accepted = match incoming.as_mut() {
                Some(incoming) => incoming.next().await.expect("incoming never ends"),
                None => listener.accept().await.map(|(s, _)| s),
            };
            if ctl.stopping() {
                return Ok(());
            }
            let stream = match accepted {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("bench accept: runtime server: {e}");
                    continue;
                }
            };
            ctl.tick(0, runtime::stats);
            let ctl = ctl.clone();
            runtime::spawn_local(async move {
                if let Err(e) = serve_runtime(stream).await {
                    eprintln!("bench accept: runtime connection: {e}");
                }
                ctl.conn_done(runtime::stats);
            });
        }
    })
}

fn runtime_singleshot(listener: std::net::TcpListener, ctl: Arc<Ctl>) -> io::Result<()> {
    runtime_server(listener, ctl, false)
}

fn runtime_multishot(listener: std::net::TcpListener, ctl: Arc<Ctl>) -> io::Result<()> {
    runtime_server(listener, ctl, true)
}

fn tokio_server(listener: std::net::TcpListener, ctl: Arc<Ctl>) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let accepted = listener.accept().await;
            if ctl.stopping() {
                return Ok(());
            }
            let mut stream = match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    eprintln!("bench accept: tokio server: {e}");
                    continue;
                }
            };
            ctl.tick(0, no_stats);
            let ctl = ctl.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; MSG];
                let res = async {
                    stream.read_exact(&mut buf).await?;
                    stream.write_all(&buf).await
                }
                .await;
                if let Err(e) = res {
                    eprintln!("bench accept: tokio connection: {e}");
                }
                drop(stream);
                ctl.conn_done(no_stats);
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_reports_every_connection() {
        let srv =
            Server::spawn("test-multi", Cpus::pick().server, runtime_multishot).expect("server");
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        let (m, r) = one_run(&client, srv.addr, &srv.ctl, 100).expect("run");
        assert_eq!((m.ops, r.count), (100, 100));
        assert!(m.enters.is_some_and(|e| e > 0));
        srv.stop().expect("stop");
    }

    /// Every peer that starts here serves every connection (one that cannot start says why
    /// on stderr).
    #[cfg(feature = "peers")]
    #[test]
    fn peers_report_every_connection() {
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        for (name, srv) in peer_servers(Cpus::pick().server) {
            let (m, r) = one_run(&client, srv.addr, &srv.ctl, 100).expect(name);
            assert_eq!((m.ops, r.count), (100, 100), "{name}");
            srv.stop().expect("stop");
        }
    }
}
