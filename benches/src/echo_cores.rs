//! `bench echo-cores`: the echo benchmark's runtime server on one core and on N cores.
//!
//! The same load, configurations and tables as `bench echo` (its driver in `echo.rs`: the
//! tokio current-thread load generator) against two servers measured alternately:
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

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use corering_net::ListenOptions;
use futures::channel::oneshot;
use futures::StreamExt;
use sysutil::{cpu_time, Who};

use crate::echo::{
    each_config, measure, runtime_conn, Config, EchoServer, Phase, ServerFigures, Spec, Window,
    ENTRIES,
};
use crate::server::Cpus;
use crate::Opts;

/// How long a server may take to bind its listeners.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the benchmark and prints two tables per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let cores = opts.cores.unwrap_or(2);
    let allowed = sysutil::allowed_cpus();
    let client_cpu = Cpus::pick().client;
    // Core i of a server runs on the i-th allowed CPU (wrapping around).
    let cpus_of = |n: usize| -> Vec<usize> {
        (0..n)
            .map(|i| allowed.get(i % allowed.len().max(1)).copied().unwrap_or(0))
            .collect()
    };
    each_config(opts, |cfg, plan, nofile| {
        let counts = [1, cores];
        let servers = counts
            .iter()
            .map(|&n| CoreServer::start(n, &allowed))
            .collect::<io::Result<Vec<_>>>()?;
        let spec = Spec {
            name: "echo-cores",
            rows: counts
                .iter()
                .zip(&servers)
                .map(|(n, srv)| (format!("runtime cores({n})"), srv as &dyn EchoServer))
                .collect(),
            baseline: (0, "cores(1)"),
            cpu_vs: vec![(0, "cores(1)")],
            rate_vs: None,
            busy: "server CPU busy",
            client_cpu,
            notes: vec![
                format!(
                    "server cores pinned to CPUs {:?} (cores(1): {:?}); client: tokio \
                     current-thread on CPU {client_cpu}; RLIMIT_NOFILE {nofile}",
                    cpus_of(cores),
                    cpus_of(1)
                ),
                format!(
                    "NOTE: the client shares this {}-CPU machine with the server: under \
                     cores({cores}) it shares CPU {client_cpu} with a server core, so a server \
                     core gained is CPU the load generator loses",
                    allowed.len()
                ),
            ],
            details: "latency (client, median over runs), server CPU per round trip (getrusage \
                      RUSAGE_SELF less the client thread's RUSAGE_THREAD); server CPU busy: of \
                      one CPU (cores(N) can reach N x 100%); CPU vs cores(1): its us/rt over \
                      this row's (>1: less CPU)",
            after: &[
                "traffic per core: bytes echoed by each core's connections (SO_REUSEPORT \
                      hashes each connection to one core's listener)",
            ],
        };
        let measured = measure(&spec, cfg, plan);
        drop(spec);
        for srv in servers {
            srv.stop()?;
        }
        measured
    })
}

/// CPU snapshot at a window edge: (process, client thread), with the servers' byte counts.
struct Edge {
    process: Duration,
    client: Duration,
    bytes: Vec<u64>,
}

/// Server CPU per round trip: the process's CPU time over the window less the client
/// thread's, both read by the client at the window's edges (the other, idle server's threads
/// sleep in `io_uring_enter`); round trips as the client counted them.
impl EchoServer for CoreServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn phase(&self, phase: Phase) {
        let edge = || {
            Some(Edge {
                process: cpu_time(Who::Process),
                client: cpu_time(Who::Thread),
                bytes: self.bytes(),
            })
        };
        match phase {
            Phase::Warm => {}
            Phase::Open => self.edges[0].set(edge()),
            Phase::Close => self.edges[1].set(edge()),
        }
    }

    fn figures(&self, _cfg: Config, window: &Window) -> io::Result<ServerFigures> {
        let (Some(a), Some(b)) = (self.edges[0].take(), self.edges[1].take()) else {
            return Err(io::Error::other("the client skipped a window edge"));
        };
        let process = b.process.saturating_sub(a.process);
        let client = b.client.saturating_sub(a.client);
        Ok(ServerFigures {
            enters: None,
            cpu: process.saturating_sub(client),
            elapsed: window.elapsed,
            rts: window.ops as f64,
            per_core: b.bytes.iter().zip(&a.bytes).map(|(b, a)| b - a).collect(),
        })
    }
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
    /// The current run's window edges, as the client took them (opening, closing).
    edges: [Cell<Option<Edge>>; 2],
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl CoreServer {
    /// Starts a `cores`-core server (core i pinned to `cpus[i]`) and waits until every core's
    /// listener is bound.
    fn start(cores: usize, cpus: &[usize]) -> io::Result<CoreServer> {
        let bytes: Arc<[PerCore]> = (0..cores).map(|_| PerCore::default()).collect();
        let (stops, stop_rxs): (Vec<_>, Vec<_>) = (0..cores).map(|_| oneshot::channel()).unzip();
        let (ready_tx, ready_rx) = mpsc::channel();
        let cpus = cpus.to_vec();
        let server_bytes = bytes.clone();
        let thread = std::thread::Builder::new()
            .name(format!("echo-cores-{cores}"))
            .spawn(move || serve(cores, cpus, server_bytes, stop_rxs, ready_tx))?;
        let mut server = CoreServer {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            bytes,
            stops,
            edges: Default::default(),
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
                runtime::spawn_local(serve_core(0, addr, bytes, stop, bound_tx))
            } else {
                // Only `addr`, the counters and the channels cross to the other core; the
                // listener is bound there, in a task made there.
                runtime::spawn_on(core, async move {
                    runtime::spawn_local(serve_core(core, addr, bytes, stop, bound_tx))
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
    bytes: Arc<[PerCore]>,
    stop: oneshot::Receiver<()>,
    bound: oneshot::Sender<io::Result<SocketAddr>>,
) -> io::Result<()> {
    debug_assert_eq!(runtime::current_core(), Some(core));
    let options = ListenOptions::new().reuse_port(true).backlog(4096);
    let listener = match corering_net::TcpListener::bind_with(addr, &options)
        .and_then(|l| Ok((l.local_addr()?, l)))
    {
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
                    let bytes = bytes.clone();
                    runtime::spawn_local(runtime_conn(stream, move |n| bytes[core].add(n)));
                }
                Err(e) => eprintln!("bench echo-cores: core {core}: {e}"),
            }
        }
    };
    futures::pin_mut!(accept);
    futures::future::select(accept, stop).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::echo::one_run;

    #[test]
    fn two_core_server_echoes_on_both_cores() {
        let srv = CoreServer::start(2, &sysutil::allowed_cpus()).expect("server");
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        let cfg = Config { conns: 4, msg: 512 };
        let (w, server) = one_run(&client, &srv, cfg, Duration::from_millis(50)).expect("run");
        assert!(w.ops > 0);
        assert_eq!(server.per_core.len(), 2);
        assert!(server.per_core.iter().sum::<u64>() > 0);
        srv.stop().expect("stop");
    }
}
