//! `bench echo-cores`: the echo benchmark's runtime server on one core and on N cores.
//!
//! The same load as `bench echo` (see `echo.rs`: the tokio current-thread load generator,
//! both configurations) against two servers measured alternately:
//! - `runtime cores(1)`: one core, one listener, as in `bench echo`;
//! - `runtime cores(N)` (`--cores N`, default 2): one `SO_REUSEPORT` listener per core on
//!   one port, each bound on its own core (`spawn_on(core, ..)` carries only the address;
//!   inside it a `spawn_local` task binds the listener, which is not `Send`), each core
//!   running its own `incoming()` loop and `spawn_local`ing a handler per connection. The
//!   kernel spreads connections among the listeners by a hash of the 4-tuple.
//!
//! Every core of both servers is pinned, core i to the i-th allowed CPU; the client to the
//! second. On a 2-core machine the client therefore shares CPU 1 with the multi-core server's
//! core 1: what cores(2) gains in server CPUs the load generator loses.
//!
//! Server CPU per round trip: the process's CPU time over the window (getrusage
//! `RUSAGE_SELF`) less the client thread's (`RUSAGE_THREAD`), both read by the client at
//! the window's edges; the other, idle server's threads sleep in `io_uring_enter`.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::oneshot;
use futures::StreamExt;
use net::ListenOptions;
use runtime::buf::IoBuf;

use crate::echo::{drive, Config, Phase, CONFIGS, ENTRIES};
use crate::harness::{alternate, Contestant, Plan};
use crate::report::{render_grid, Measure, Metric, Summary, Table};
use crate::server::{process_cpu, raise_nofile, thread_cpu, PinGuard};
use crate::Opts;

/// How long a server may take to bind its listeners.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the benchmark and prints one table per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let cores = opts.cores.unwrap_or(2);
    let allowed = crate::allowed_cpus();
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
        one_config(*cfg, plan, &allowed, cores, nofile)?;
    }
    Ok(())
}

/// What one run measured besides the rate.
struct Extra {
    p50: Duration,
    p99: Duration,
    /// Server CPU over the window (process less client thread).
    cpu: Duration,
    elapsed: Duration,
    /// Bytes each core echoed in the window.
    per_core: Vec<u64>,
}

/// CPU snapshot at a window edge: (process, client thread), with the servers' byte counts.
struct Edge {
    process: Duration,
    client: Duration,
    bytes: Vec<u64>,
}

fn one_config(
    cfg: Config,
    plan: Plan,
    allowed: &[usize],
    cores: usize,
    nofile: u64,
) -> io::Result<()> {
    let counts = [1, cores];
    let servers = counts
        .iter()
        .map(|&n| CoreServer::start(n, allowed, cfg.msg))
        .collect::<io::Result<Vec<_>>>()?;
    let client_cpu = allowed.get(1).or(allowed.first()).copied().unwrap_or(0);
    let pin = PinGuard::new(client_cpu)?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let extras: Vec<RefCell<Vec<Extra>>> = counts.iter().map(|_| RefCell::default()).collect();
    let names: Vec<String> = counts
        .iter()
        .map(|n| format!("runtime cores({n})"))
        .collect();
    let mut contestants: Vec<Contestant<'_>> = servers
        .iter()
        .zip(&extras)
        .zip(&names)
        .map(|((srv, extra), name)| {
            let client = &client;
            Contestant::new(name.clone(), move |ms| {
                let edges: [Cell<Option<Edge>>; 2] = Default::default();
                let w = drive(client, srv.addr, cfg, Duration::from_millis(ms), &|p| {
                    let edge = || Edge {
                        process: process_cpu(),
                        client: thread_cpu(),
                        bytes: srv.bytes(),
                    };
                    match p {
                        Phase::Warm => {}
                        Phase::Open => edges[0].set(Some(edge())),
                        Phase::Close => edges[1].set(Some(edge())),
                    }
                })?;
                let [Some(a), Some(b)] = edges.map(Cell::into_inner) else {
                    return Err(io::Error::other("the client skipped a window edge"));
                };
                let process = b.process.saturating_sub(a.process);
                let client_cpu = b.client.saturating_sub(a.client);
                extra.borrow_mut().push(Extra {
                    p50: w.hist.quantile(0.50),
                    p99: w.hist.quantile(0.99),
                    cpu: process.saturating_sub(client_cpu),
                    elapsed: w.elapsed,
                    per_core: b.bytes.iter().zip(&a.bytes).map(|(b, a)| b - a).collect(),
                });
                Ok(Measure {
                    ops: w.ops,
                    elapsed: w.elapsed,
                    enters: None,
                })
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

    let cpus_of = |n: usize| -> Vec<usize> {
        (0..n)
            .map(|i| allowed.get(i % allowed.len().max(1)).copied().unwrap_or(0))
            .collect()
    };
    let table = Table {
        title: format!(
            "echo-cores: {} connections x {} B ping-pong, {:.1} s windows, median of {} runs",
            cfg.conns,
            cfg.msg,
            plan.count as f64 / 1000.0,
            plan.runs
        ),
        metric: Metric::Rate("rt/s"),
        ratio_label: "vs cores(1)".to_string(),
        baseline: 0,
        series: series.clone(),
        notes: vec![
            format!(
                "server cores pinned to CPUs {:?} (cores(1): {:?}); client: tokio current-thread \
                 on CPU {client_cpu}; RLIMIT_NOFILE {nofile}",
                cpus_of(cores),
                cpus_of(1)
            ),
            format!(
                "NOTE: the client shares this {}-CPU machine with the server: under cores({cores}) \
                 it shares CPU {client_cpu} with a server core, so a server core gained is CPU \
                 the load generator loses",
                allowed.len()
            ),
        ],
    };
    print!("{}", table.render());

    let cpu_per_rt = |e: &Extra, rts: f64| e.cpu.as_secs_f64() * 1e6 / rts.max(1.0);
    let mut rows = vec![[
        "",
        "p50 us",
        "p99 us",
        "server us/rt median",
        "min",
        "max",
        "server CPU busy",
        "CPU vs cores(1)",
        "traffic per core",
    ]
    .map(String::from)
    .to_vec()];
    let cpu: Vec<Summary> = extras
        .iter()
        .zip(&series)
        .map(|(x, s)| {
            let v: Vec<f64> = x
                .iter()
                .zip(&s.runs)
                .map(|(e, m)| cpu_per_rt(e, m.ops as f64))
                .collect();
            Summary::of(&v)
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let x = &extras[i];
        let med = |v: Vec<f64>| Summary::of(&v).median;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let busy = med(x
            .iter()
            .map(|e| e.cpu.as_secs_f64() / e.elapsed.as_secs_f64().max(1e-9))
            .collect());
        // Each core's share of the bytes echoed, summed over the runs.
        let mut per_core = vec![0u64; x.first().map_or(0, |e| e.per_core.len())];
        for e in x {
            for (t, b) in per_core.iter_mut().zip(&e.per_core) {
                *t += b;
            }
        }
        let total = per_core.iter().sum::<u64>().max(1) as f64;
        let shares: Vec<String> = per_core
            .iter()
            .map(|&b| format!("{:.0}%", 100.0 * b as f64 / total))
            .collect();
        rows.push(vec![
            name.clone(),
            format!("{:.1}", med(x.iter().map(|e| us(e.p50)).collect())),
            format!("{:.1}", med(x.iter().map(|e| us(e.p99)).collect())),
            format!("{:.2}", cpu[i].median),
            format!("{:.2}", cpu[i].min),
            format!("{:.2}", cpu[i].max),
            format!("{:.0}%", busy * 100.0),
            format!("{:.2}x", cpu[0].median / cpu[i].median),
            shares.join(" / "),
        ]);
    }
    println!(
        "  latency (client, median over runs), server CPU per round trip (getrusage RUSAGE_SELF \
         less the client thread's RUSAGE_THREAD); server CPU busy: of one CPU (cores(N) can \
         reach N x 100%); CPU vs cores(1): its us/rt over this row's (>1: less CPU)"
    );
    print!("{}", render_grid(&rows, 4));
    println!(
        "  traffic per core: bytes echoed by each core's connections (SO_REUSEPORT hashes each \
         connection to one core's listener)"
    );
    Ok(())
}

/// A byte counter written by one core only (padded: the cores' counters share no line).
#[derive(Default)]
#[repr(align(128))]
struct PerCore(AtomicU64);

impl PerCore {
    /// Adds `n`; only the owning core writes, so no read-modify-write instruction is needed.
    #[inline]
    fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed) + n, Relaxed);
    }
}

/// A runtime echo server on its own thread, with one listener per core on one port.
struct CoreServer {
    addr: SocketAddr,
    bytes: Arc<[PerCore]>,
    /// One per core: sending (or dropping) it ends that core's accept loop.
    stops: Vec<oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl CoreServer {
    /// Starts a `cores`-core server (core i pinned to `cpus[i]`) and waits until every core's
    /// listener is bound.
    fn start(cores: usize, cpus: &[usize], msg: usize) -> io::Result<CoreServer> {
        let bytes: Arc<[PerCore]> = (0..cores).map(|_| PerCore::default()).collect();
        let (stops, stop_rxs): (Vec<_>, Vec<_>) = (0..cores).map(|_| oneshot::channel()).unzip();
        let (ready_tx, ready_rx) = mpsc::channel();
        let cpus = cpus.to_vec();
        let server_bytes = bytes.clone();
        let thread = std::thread::Builder::new()
            .name(format!("echo-cores-{cores}"))
            .spawn(move || serve(cores, cpus, msg, server_bytes, stop_rxs, ready_tx))?;
        let mut server = CoreServer {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            bytes,
            stops,
            thread: Some(thread),
        };
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(addr)) => {
                server.addr = addr;
                Ok(server)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(server
                .shutdown()
                .err()
                .unwrap_or_else(|| io::Error::other("the server did not start"))),
        }
    }

    /// Bytes each core has echoed so far.
    fn bytes(&self) -> Vec<u64> {
        self.bytes.iter().map(|b| b.0.load(Relaxed)).collect()
    }

    fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        match thread.join() {
            Ok(r) => r,
            Err(_) => Err(io::Error::other("the server thread panicked")),
        }
    }
}

impl Drop for CoreServer {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("bench echo-cores: server {}: {e}", self.addr);
        }
    }
}

/// The server thread: builds the runtime, binds core 0's listener (which picks the port),
/// then every other core's on the same port, reports the address, and serves until stopped.
fn serve(
    cores: usize,
    cpus: Vec<usize>,
    msg: usize,
    bytes: Arc<[PerCore]>,
    stops: Vec<oneshot::Receiver<()>>,
    ready: mpsc::Sender<io::Result<SocketAddr>>,
) -> io::Result<()> {
    let rt = match runtime::Builder::new()
        .entries(ENTRIES)
        .cores(cores)
        .cpus(cpus)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(io::Error::new(e.kind(), e.to_string())));
            return Err(e);
        }
    };
    rt.block_on(async move {
        let mut handles = Vec::with_capacity(cores);
        let mut addr = SocketAddr::from(([127, 0, 0, 1], 0));
        for (core, stop) in stops.into_iter().enumerate() {
            let (bound_tx, bound_rx) = oneshot::channel();
            let bytes = bytes.clone();
            handles.push(if core == 0 {
                runtime::spawn_local(serve_core(0, addr, msg, bytes, stop, bound_tx))
            } else {
                // Only `addr`, the counters and the channels cross to the other core; the
                // listener is bound there, in a task made there.
                runtime::spawn_on(core, async move {
                    runtime::spawn_local(serve_core(core, addr, msg, bytes, stop, bound_tx))
                        .await
                        .unwrap_or_else(|e| Err(io::Error::other(e)))
                })
            });
            match bound_rx.await {
                Ok(Ok(a)) => addr = a,
                Ok(Err(e)) => {
                    let _ = ready.send(Err(io::Error::new(
                        e.kind(),
                        format!("core {core}: bind {addr}: {e}"),
                    )));
                    return Err(e);
                }
                Err(_) => {
                    let _ = ready.send(Err(io::Error::other(format!(
                        "core {core} ended before binding"
                    ))));
                    return Err(io::Error::other("a core ended before binding"));
                }
            }
        }
        let _ = ready.send(Ok(addr));
        for h in handles {
            h.await.map_err(io::Error::other)??;
        }
        Ok(())
    })
}

/// One core's accept loop on its own `SO_REUSEPORT` listener, until `stop` fires.
async fn serve_core(
    core: usize,
    addr: SocketAddr,
    msg: usize,
    bytes: Arc<[PerCore]>,
    stop: oneshot::Receiver<()>,
    bound: oneshot::Sender<io::Result<SocketAddr>>,
) -> io::Result<()> {
    debug_assert_eq!(runtime::current_core(), Some(core));
    let options = ListenOptions::new().reuse_port(true).backlog(4096);
    let listener =
        match net::TcpListener::bind_with(addr, &options).and_then(|l| Ok((l.local_addr()?, l))) {
            Ok((local, l)) => {
                let _ = bound.send(Ok(local));
                l
            }
            Err(e) => {
                let _ = bound.send(Err(e));
                return Ok(());
            }
        };
    let mut incoming = listener.incoming();
    let accept = async {
        while let Some(accepted) = incoming.next().await {
            match accepted {
                Ok(stream) => {
                    runtime::spawn_local(conn(stream, bytes.clone(), core, msg));
                }
                Err(e) => eprintln!("bench echo-cores: core {core}: {e}"),
            }
        }
    };
    futures::pin_mut!(accept);
    futures::future::select(accept, stop).await;
    Ok(())
}

/// One connection, as `echo.rs`'s runtime server handles it: read once, write back what came.
async fn conn(stream: net::TcpStream, bytes: Arc<[PerCore]>, core: usize, msg: usize) {
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
        bytes[core].add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_core_server_echoes_on_both_cores() {
        let allowed = crate::allowed_cpus();
        let srv = CoreServer::start(2, &allowed, 512).expect("server");
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        let cfg = Config { conns: 4, msg: 512 };
        let w = drive(&client, srv.addr, cfg, Duration::from_millis(50), &|_| {}).expect("run");
        assert!(w.ops > 0);
        assert!(srv.bytes().iter().sum::<u64>() > 0);
        srv.stop().expect("stop");
    }
}
