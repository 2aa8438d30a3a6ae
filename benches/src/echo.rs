//! `bench echo`: C connections ping-pong M-byte messages for D seconds.
//!
//! The standard runtime benchmark, in two configurations: 64 connections x 128 B (per-op
//! overhead) and 16 x 16 KiB (copying, short reads). Each client connection sends one
//! message and waits for the whole echo before sending the next. Servers, each with its own
//! listener and thread on the server CPU (see `server.rs`), measured alternately:
//! - `runtime`: `incoming()` and a `spawn_local` task per connection, owned-buffer `read`
//!   then `write_all` of what was read, one buffer per connection reused;
//! - `tokio current-thread`: `accept` and `tokio::spawn`, `read` then `write_all`;
//! - `raw ring`: the hand-written io_uring loop of `raw_echo.rs`;
//! - with the `peers` feature, `monoio`, `glommio` and `tokio-uring` (`src/peers/`).
//!
//! One load generator drives them all from the client CPU: a tokio current-thread runtime
//! with one task per connection, recording each round trip's latency in the window.
//!
//! On two cores both are saturated and round trips/s is co-limited by the client, so the
//! figure that depends least on it is the server's CPU time per round trip (getrusage
//! `RUSAGE_THREAD` in the server thread, over the same window the client measures; see
//! `shared/BENCHMARKS.md`).

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use runtime::buf::IoBuf;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{alternate, Contestant, Plan};
use crate::report::{render_grid, Measure, Metric, Series, Summary, Table};
use crate::server::{no_stats, raise_nofile, Cpus, Ctl, Histogram, PinGuard, Report, Server};
use crate::Opts;

/// Ring size of the runtime's server.
pub(crate) const ENTRIES: u32 = 256;
/// Traffic before each window opens: connections warm, queues at their steady depth.
const RAMP: Duration = Duration::from_millis(100);

/// One configuration: connections and message size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Client connections, each with one message in flight.
    pub(crate) conns: usize,
    /// Message size in bytes.
    pub(crate) msg: usize,
}

/// The configurations every echo benchmark runs (`echo`, `echo-cores`).
pub(crate) const CONFIGS: [Config; 2] = [
    Config {
        conns: 64,
        msg: 128,
    },
    Config {
        conns: 16,
        msg: 16 * 1024,
    },
];

/// What one run measured besides the rate.
struct Extra {
    p50: Duration,
    p99: Duration,
    server: Report,
}

/// Runs the benchmark and prints one table per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let cpus = Cpus::pick();
    let secs = opts.seconds.unwrap_or(if opts.quick { 1.0 } else { 5.0 });
    let window_ms = (secs * 1000.0).round().max(1.0) as u64;
    let plan = Plan {
        count: window_ms,
        warmup: (window_ms / 4).max(200),
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: None,
        granule: 1,
    };
    for (i, cfg) in CONFIGS.iter().enumerate() {
        if i > 0 {
            println!();
        }
        one_config(*cfg, plan, cpus, nofile)?;
    }
    Ok(())
}

fn one_config(cfg: Config, plan: Plan, cpus: Cpus, nofile: u64) -> io::Result<()> {
    let msg = cfg.msg;
    let mut servers = vec![
        Server::spawn("echo-runtime", cpus.server, move |l, c| {
            runtime_server(l, c, msg)
        })?,
        Server::spawn("echo-tokio", cpus.server, move |l, c| {
            tokio_server(l, c, msg)
        })?,
        Server::spawn("echo-raw", cpus.server, move |l, c| {
            crate::raw_echo::serve(l, c, msg)
        })?,
    ];
    let mut names = vec!["runtime", "tokio current-thread", "raw ring"];
    for (name, srv) in peer_servers(cpus.server, msg) {
        names.push(name);
        servers.push(srv);
    }
    let pin = PinGuard::new(cpus.client)?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let extras: Vec<RefCell<Vec<Extra>>> = servers.iter().map(|_| RefCell::default()).collect();
    let mut contestants: Vec<Contestant<'_>> = servers
        .iter()
        .zip(&extras)
        .zip(names.iter().copied())
        .map(|((srv, extra), name)| {
            let (addr, ctl, client) = (srv.addr, srv.ctl.clone(), &client);
            Contestant::new(name, move |ms| {
                let (m, e) = one_run(client, addr, &ctl, cfg, Duration::from_millis(ms))?;
                extra.borrow_mut().push(e);
                Ok(m)
            })
        })
        .collect();
    let (series, _) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(pin);
    for srv in servers {
        srv.stop()?;
    }
    // Each contestant's first extra is its warm-up run's.
    let extras: Vec<Vec<Extra>> = extras
        .into_iter()
        .map(|e| e.into_inner().into_iter().skip(1).collect())
        .collect();
    let table = Table {
        title: format!(
            "echo: {} connections x {} B ping-pong, {:.1} s windows, median of {} runs",
            cfg.conns,
            cfg.msg,
            plan.count as f64 / 1000.0,
            plan.runs
        ),
        metric: Metric::Rate("rt/s"),
        ratio_label: "vs tokio".to_string(),
        baseline: 1,
        series: series.clone(),
        notes: vec![
            format!(
                "{}; client: tokio current-thread, one task per connection; \
                 RLIMIT_NOFILE {nofile}",
                cpus.describe()
            ),
            "enters/op: the server's io_uring_enter calls per round trip (runtime::stats; \
             the raw ring counts its own)"
                .to_string(),
        ],
    };
    print!("{}", table.render());
    print!("{}", details(&names, &series, &extras, cfg.msg));
    println!(
        "  target: >= 1.3x tokio and >= 0.9x the raw ring; < 1 enter per round trip under load"
    );
    println!(
        "  (where the raw ring itself is under 1.3x tokio, the bar is the raw ring: \
         within 5% of its server CPU per round trip)"
    );
    Ok(())
}

/// The peer runtimes' echo servers (feature `peers`), each a row after the raw ring's.
#[cfg(feature = "peers")]
fn peer_servers(cpu: usize, msg: usize) -> Vec<(&'static str, Server)> {
    crate::peers::echo_servers(cpu, msg)
}

/// No peers without the `peers` feature.
#[cfg(not(feature = "peers"))]
fn peer_servers(_cpu: usize, _msg: usize) -> Vec<(&'static str, Server)> {
    Vec::new()
}

/// The second table: latency, server CPU per round trip, and ratios to tokio and raw.
fn details(names: &[&str], series: &[Series], extras: &[Vec<Extra>], msg: usize) -> String {
    let cpu_per_rt = |e: &Extra| {
        let rts = e.server.count as f64 / msg as f64;
        e.server.cpu.as_secs_f64() * 1e6 / rts.max(1.0)
    };
    let med = |v: Vec<f64>| Summary::of(&v);
    let cpu: Vec<Summary> = extras
        .iter()
        .map(|x| med(x.iter().map(cpu_per_rt).collect()))
        .collect();
    let rate: Vec<f64> = series
        .iter()
        .map(|s| med(s.runs.iter().map(Measure::rate).collect()).median)
        .collect();
    let (tokio, raw) = (1, 2);
    let mut rows = vec![[
        "",
        "p50 us",
        "p99 us",
        "server us/rt median",
        "min",
        "max",
        "server busy",
        "CPU vs tokio",
        "CPU vs raw",
        "rt/s vs raw",
    ]
    .map(String::from)
    .to_vec()];
    for (i, name) in names.iter().enumerate() {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let x = &extras[i];
        let busy = med(x
            .iter()
            .map(|e| e.server.cpu.as_secs_f64() / e.server.elapsed.as_secs_f64().max(1e-9))
            .collect());
        rows.push(vec![
            name.to_string(),
            format!("{:.1}", med(x.iter().map(|e| us(e.p50)).collect()).median),
            format!("{:.1}", med(x.iter().map(|e| us(e.p99)).collect()).median),
            format!("{:.2}", cpu[i].median),
            format!("{:.2}", cpu[i].min),
            format!("{:.2}", cpu[i].max),
            format!("{:.0}%", busy.median * 100.0),
            format!("{:.2}x", cpu[tokio].median / cpu[i].median),
            format!("{:.2}x", cpu[raw].median / cpu[i].median),
            format!("{:.2}x", rate[i] / rate[raw]),
        ]);
    }
    let mut out = String::from(
        "  latency (client, median over runs), server CPU per round trip (getrusage \
         RUSAGE_THREAD); CPU vs X: X's us/rt over this row's (>1: less CPU)\n",
    );
    out.push_str(&render_grid(&rows, 4));
    out
}

/// The client's view of the current run, shared by its connection tasks.
struct ClientState {
    /// 0 ramp, 1 measuring, 2 stop.
    phase: Cell<u8>,
    count: Cell<u64>,
    hist: RefCell<Histogram>,
}

/// One run: connect `cfg.conns`, ramp, measure for `window`, close; with the server's report.
fn one_run(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    ctl: &Ctl,
    cfg: Config,
    window: Duration,
) -> io::Result<(Measure, Extra)> {
    let w = drive(client, addr, cfg, window, &|phase| match phase {
        Phase::Warm => ctl.warm(),
        Phase::Open => ctl.measure(u64::MAX),
        Phase::Close => ctl.done(),
    })?;
    let server = ctl.report()?;
    Ok((
        Measure {
            ops: w.ops,
            elapsed: w.elapsed,
            enters: server.stats.map(|s| s.enters),
        },
        Extra {
            p50: w.hist.quantile(0.50),
            p99: w.hist.quantile(0.99),
            server,
        },
    ))
}

/// The moments of a client run at which [`drive`] calls its hook, on the client thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Phase {
    /// Every connection is open; traffic (the ramp) is about to start.
    Warm,
    /// The measured window opens (its clock starts right after the hook returns).
    Open,
    /// The measured window has closed (its clock stops right after the hook returns).
    Close,
}

/// What the client measured over one window.
pub(crate) struct Window {
    /// Round trips completed inside the window.
    pub(crate) ops: u64,
    /// The window's wall time.
    pub(crate) elapsed: Duration,
    /// Latency of each round trip counted.
    pub(crate) hist: Histogram,
}

/// The load generator: connect `cfg.conns`, ramp for [`RAMP`], measure for `window`, close;
/// `hook` is told each [`Phase`] as it comes.
pub(crate) fn drive(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    cfg: Config,
    window: Duration,
    hook: &dyn Fn(Phase),
) -> io::Result<Window> {
    let local = tokio::task::LocalSet::new();
    local.block_on(client, async move {
        let mut streams = Vec::with_capacity(cfg.conns);
        for _ in 0..cfg.conns {
            let s = tokio::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            streams.push(s);
        }
        let state = Rc::new(ClientState {
            phase: Cell::new(0),
            count: Cell::new(0),
            hist: RefCell::new(Histogram::default()),
        });
        hook(Phase::Warm);
        let tasks: Vec<_> = streams
            .into_iter()
            .map(|mut s| {
                let state = state.clone();
                tokio::task::spawn_local(async move {
                    let out = vec![0x5au8; cfg.msg];
                    let mut back = vec![0u8; cfg.msg];
                    // Hot path: one write and one full read per round trip.
                    loop {
                        let phase = state.phase.get();
                        if phase == 2 {
                            return Ok::<(), io::Error>(());
                        }
                        let t = Instant::now();
                        s.write_all(&out).await?;
                        s.read_exact(&mut back).await?;
                        if phase == 1 && state.phase.get() == 1 {
                            state.count.set(state.count.get() + 1);
                            state.hist.borrow_mut().record(t.elapsed());
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(RAMP).await;
        hook(Phase::Open);
        state.phase.set(1);
        let start = Instant::now();
        tokio::time::sleep(window).await;
        state.phase.set(2);
        hook(Phase::Close);
        let elapsed = start.elapsed();
        for t in tasks {
            t.await.map_err(io::Error::other)??;
        }
        let state = Rc::into_inner(state).expect("every task has ended");
        Ok::<_, io::Error>(Window {
            ops: state.count.get(),
            elapsed,
            hist: state.hist.into_inner(),
        })
    })
}

/// This runtime's half of one connection: read once, write back what came, until the end.
async fn runtime_conn(stream: net::TcpStream, ctl: Arc<Ctl>, msg: usize) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; msg].into_boxed_slice();
    // Hot path: one recv and (unless the socket takes a short write) one send per message.
    loop {
        let (res, b) = stream.read(buf).await;
        let n = match res {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (res, slice) = stream.write_all(b.slice(..n)).await;
        buf = slice.into_inner();
        if res.is_err() {
            break;
        }
        ctl.tick(n as u64, runtime::stats);
    }
    ctl.tick(0, runtime::stats);
}

fn runtime_server(listener: std::net::TcpListener, ctl: Arc<Ctl>, msg: usize) -> io::Result<()> {
    let rt = runtime::Builder::new().entries(ENTRIES).build()?;
    rt.block_on(async move {
        let listener = net::TcpListener::from_std(listener)?;
        let mut incoming = listener.incoming();
        while let Some(accepted) = incoming.next().await {
            if ctl.stopping() {
                break;
            }
            match accepted {
                Ok(stream) => {
                    runtime::spawn_local(runtime_conn(stream, ctl.clone(), msg));
                }
                Err(e) => eprintln!("bench echo: runtime server: {e}"),
            }
        }
        Ok(())
    })
}

fn tokio_server(listener: std::net::TcpListener, ctl: Arc<Ctl>, msg: usize) -> io::Result<()> {
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
                    eprintln!("bench echo: tokio server: {e}");
                    continue;
                }
            };
            let ctl = ctl.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut buf = vec![0u8; msg];
                loop {
                    let n = match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if stream.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    ctl.tick(n as u64, no_stats);
                }
                ctl.tick(0, no_stats);
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: Config = Config { conns: 4, msg: 512 };

    fn short_run(body: fn(std::net::TcpListener, Arc<Ctl>, usize) -> io::Result<()>) {
        let srv = Server::spawn("test-echo", Cpus::pick().server, move |l, c| {
            body(l, c, CFG.msg)
        })
        .expect("server");
        two_runs(&srv);
        srv.stop().expect("stop");
    }

    fn two_runs(srv: &Server) {
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        for _ in 0..2 {
            let (m, e) =
                one_run(&client, srv.addr, &srv.ctl, CFG, Duration::from_millis(50)).expect("run");
            assert!(m.ops > 0);
            assert!(e.server.count > 0);
            assert!(e.p50 <= e.p99);
        }
    }

    #[test]
    fn runtime_server_echoes() {
        short_run(runtime_server);
    }

    #[test]
    fn tokio_server_echoes() {
        short_run(tokio_server);
    }

    #[test]
    fn raw_server_echoes() {
        short_run(crate::raw_echo::serve);
    }

    /// Every peer that starts here echoes (one that cannot start says why on stderr).
    #[cfg(feature = "peers")]
    #[test]
    fn peer_servers_echo() {
        for (name, srv) in peer_servers(Cpus::pick().server, CFG.msg) {
            eprintln!("peer {name}");
            two_runs(&srv);
            srv.stop().expect("stop");
        }
    }
}
