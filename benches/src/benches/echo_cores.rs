//! `bench echo-cores`: `bench echo`'s loads and tables.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::oneshot;
use socket2::{Domain, Protocol, Socket, Type};
use sysutil::{cpu_time, Who};

use super::echo::{each_config, measure, Config, EchoServer, Phase, ServerFigures, Spec, Window};
use crate::harness::cli::Opts;
use crate::harness::server::Cpus;
use crate::servers::{runtime_echo_cores, PerCore};

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
        let servers = ([1, cores].into_iter())
            .map(|n| {
                Ok((
                    format!("runtime cores({n})"),
                    CoreServer::start(cpus_of(n))?,
                ))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let spec = Spec {
            name: "echo-cores",
            baseline: (0, "vs cores(1)"),
            cpu_vs: vec![(0, "cores(1)")],
            rate_vs: None,
            busy: "server CPU busy",
            client_cpu,
            notes: vec![
                format!(
                    "server cores pinned to CPUs {:?} (cores(1): {:?}); client: tokio current-thread on CPU \
                     {client_cpu}; RLIMIT_NOFILE {nofile}",
                    cpus_of(cores),
                    cpus_of(1)
                ),
                format!(
                    "NOTE: the client shares this {}-CPU machine with the server: under cores({cores}) it shares CPU \
                     {client_cpu} with a server core, so a server core gained is CPU the load generator loses",
                    allowed.len()
                ),
            ],
            details: "latency (client, median over runs), server CPU per round trip (getrusage RUSAGE_SELF less the \
                      client thread's RUSAGE_THREAD); server CPU busy: of one CPU (cores(N) can reach N x 100%); CPU \
                      vs cores(1): its us/rt over this row's (>1: less CPU)",
            after: &["traffic per core: bytes echoed by each core's connections (SO_REUSEPORT hashes each connection \
                      to one core's listener)"],
        };
        measure(&spec, servers, CoreServer::stop, cfg, plan)
    })
}

/// CPU snapshot at a window edge: (process, client thread), with the servers' byte counts.
struct Edge {
    process: Duration,
    client: Duration,
    bytes: Vec<u64>,
}

/// Server CPU per round trip: the process's CPU time over the window less the client thread's, both read by the
/// client at the window's edges (the other, idle server's threads sleep in `io_uring_enter`); round trips as the
/// client counted them.
impl EchoServer for CoreServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn phase(&self, phase: Phase) {
        let edge = || {
            let bytes = self.bytes.iter().map(|b| b.0.load(Relaxed)).collect();
            Some(Edge {
                process: cpu_time(Who::Process),
                client: cpu_time(Who::Thread),
                bytes,
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

/// The multi-core runtime echo server ([`runtime_echo_cores`]) on its own thread.
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
    /// Binds one `SO_REUSEPORT` listener per CPU of `cpus` on one port.
    fn start(cpus: Vec<usize>) -> io::Result<CoreServer> {
        let mut addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let mut listeners = Vec::new();
        for _ in &cpus {
            let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
            socket.set_reuse_port(true)?;
            socket.bind(&addr.into())?;
            socket.listen(4096)?;
            let listener: std::net::TcpListener = socket.into();
            addr = listener.local_addr()?;
            listeners.push(listener);
        }
        let bytes: Arc<[PerCore]> = cpus.iter().map(|_| PerCore::default()).collect();
        let (stops, stop_rxs): (Vec<_>, Vec<_>) = cpus.iter().map(|_| oneshot::channel()).unzip();
        let server_bytes = bytes.clone();
        let thread = std::thread::Builder::new()
            .name(format!("echo-cores-{}", cpus.len()))
            .spawn(move || runtime_echo_cores(cpus, listeners, server_bytes, stop_rxs))?;
        Ok(CoreServer {
            addr,
            bytes,
            stops,
            edges: Default::default(),
            thread: Some(thread),
        })
    }

    fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        let panicked = || Err(io::Error::other("the server thread panicked"));
        self.thread
            .take()
            .map_or(Ok(()), |t| t.join().unwrap_or_else(|_| panicked()))
    }
}

impl Drop for CoreServer {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("bench echo-cores: server {}: {e}", self.addr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benches::echo::one_run;
    use crate::harness::measure::tokio_current;

    #[test]
    fn two_core_server_echoes_on_both_cores() {
        let [a, b] = crate::harness::measure::two_cpus();
        let srv = CoreServer::start(vec![a, b]).expect("server");
        let client = tokio_current().unwrap();
        let cfg = Config { conns: 4, msg: 512 };
        let (w, server) = one_run(&client, &srv, cfg, Duration::from_millis(50)).expect("run");
        assert!(w.ops > 0);
        assert_eq!(server.per_core.len(), 2);
        assert!(server.per_core.iter().sum::<u64>() > 0);
        srv.stop().expect("stop");
    }
}
