//! The server threads of the socket benchmarks.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use sysutil::{cpu_time, Who};

/// How long the client waits for a server's report before calling it a failure.
const REPORT_TIMEOUT: Duration = Duration::from_secs(20);

/// The CPUs the server and the client pin to.
#[derive(Clone, Copy, Debug)]
pub struct Cpus {
    /// The server threads' CPU.
    pub server: usize,
    /// The load generator's CPU.
    pub client: usize,
}

impl Cpus {
    /// The first two allowed CPUs (server, client), or the one CPU twice.
    pub fn pick() -> Cpus {
        let [server, client] = super::measure::two_cpus();
        Cpus { server, client }
    }

    /// `server on CPU 0, client on CPU 1`, with a warning when they share one.
    pub fn describe(&self) -> String {
        match self.server == self.client {
            true => format!(
                "server and client share CPU {} (only one allowed): figures are co-scheduled",
                self.server
            ),
            false => format!(
                "server on CPU {}, client on CPU {}",
                self.server, self.client
            ),
        }
    }
}

/// A server's own figures over one measured window.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// Wall time between the start and end snapshots.
    pub elapsed: Duration,
    /// Server thread CPU time over the window.
    pub cpu: Duration,
    /// What the server counted: connections finished (accept) or bytes echoed (echo).
    pub count: u64,
    /// The runtime's counters over the window (`enters` alone for the raw ring), if any.
    pub stats: Option<runtime::CoreMetrics>,
}

/// A server's snapshot at a window's edge: when, its thread's CPU time, its counters.
type Snap = (Instant, Duration, Option<runtime::CoreMetrics>);

fn snap(stats: &impl Fn() -> Option<runtime::CoreMetrics>) -> Snap {
    (Instant::now(), cpu_time(Who::Thread), stats())
}

const MEASURE: u64 = 1;
const DONE: u64 = 2;

/// The control block one server and its client share (see the module documentation).
pub struct Ctl {
    /// The run (above two bits) and its phase (`WARM` 0, `MEASURE`, `DONE`).
    phase: AtomicU64,
    seen: AtomicU64,
    target: AtomicU64,
    count: AtomicU64,
    stop: AtomicBool,
    start: Mutex<Option<Snap>>,
    reports: (mpsc::Sender<Report>, Mutex<mpsc::Receiver<Report>>),
    run: AtomicU64,
}

impl Ctl {
    fn new() -> Ctl {
        let (tx, rx) = mpsc::channel();
        Ctl {
            phase: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            target: AtomicU64::new(u64::MAX),
            count: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            start: Mutex::new(None),
            reports: (tx, Mutex::new(rx)),
            run: AtomicU64::new(0),
        }
    }

    // Client side.

    /// Starts a new run in the warm phase (echo: traffic before the window).
    pub fn warm(&self) {
        let run = self.run.fetch_add(1, Relaxed) + 1;
        self.phase.store(run << 2, Relaxed);
    }

    /// Opens the measured window of the current run; the server's `target`-th finished connection closes it.
    pub fn measure(&self, target: u64) {
        self.target.store(target, Relaxed);
        self.phase
            .store(self.run.load(Relaxed) << 2 | MEASURE, Relaxed);
    }

    /// Closes the measured window of the current run.
    pub fn done(&self) {
        self.phase
            .store(self.run.load(Relaxed) << 2 | DONE, Relaxed);
    }

    /// Waits for the server's report on the window just closed.
    pub fn report(&self) -> io::Result<Report> {
        let rx = self.reports.1.lock().expect("report channel lock");
        let report = rx.recv_timeout(REPORT_TIMEOUT);
        report.map_err(|_| io::Error::other("the server sent no report for the window"))
    }

    // Server side.

    /// Whether the server should return (checked after each accept).
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// An event on the server: `bytes` more echoed (0 for a connection accepted or ended).
    // Hot path: two relaxed loads when nothing changed; no read-modify-write instruction.
    #[inline]
    pub fn tick(&self, bytes: u64, stats: impl Fn() -> Option<runtime::CoreMetrics>) {
        self.count.store(self.count.load(Relaxed) + bytes, Relaxed);
        let phase = self.phase.load(Relaxed);
        if phase != self.seen.load(Relaxed) {
            self.transition(phase, &stats);
        }
    }

    /// A connection the server accepted has finished (accept): closes the window at `target`.
    pub fn conn_done(&self, stats: impl Fn() -> Option<runtime::CoreMetrics>) {
        self.tick(1, &stats);
        if self.count.load(Relaxed) == self.target.load(Relaxed) {
            self.finish(&stats);
        }
    }

    #[cold]
    fn transition(&self, phase: u64, stats: &impl Fn() -> Option<runtime::CoreMetrics>) {
        let seen = self.seen.swap(phase, Relaxed);
        match phase & 3 {
            MEASURE => {
                *self.start.lock().expect("snapshot lock") = Some(snap(stats));
                self.count.store(0, Relaxed);
            }
            DONE if seen == (phase & !3) | MEASURE => self.finish(stats),
            _ => {}
        }
    }

    fn finish(&self, stats: &impl Fn() -> Option<runtime::CoreMetrics>) {
        let Some((at, cpu, before)) = self.start.lock().expect("snapshot lock").take() else {
            return;
        };
        let (end_at, end_cpu, after) = snap(stats);
        let report = Report {
            elapsed: end_at - at,
            cpu: end_cpu.saturating_sub(cpu),
            count: self.count.load(Relaxed),
            stats: after.zip(before).map(|(e, s)| e - s),
        };
        // The client may have given up waiting; then nobody needs the report.
        let _ = self.reports.0.send(report);
    }
}

/// No counters: for servers that are not this runtime.
pub fn no_stats() -> Option<runtime::CoreMetrics> {
    None
}

/// A server thread with its listener and control block.
pub struct Server {
    /// Where the listener is bound.
    pub addr: SocketAddr,
    /// Shared with the server thread.
    pub ctl: Arc<Ctl>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds a listener on 127.0.0.1 (an ephemeral port, backlog 4096, which the kernel caps at somaxconn) and starts
    /// `body` on a new thread pinned to `cpu`; `body` serves until [`Ctl::stopping`].
    pub fn spawn<F>(name: &str, cpu: usize, body: F) -> io::Result<Server>
    where
        F: FnOnce(TcpListener, Arc<Ctl>) -> io::Result<()> + Send + 'static,
    {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
        socket.listen(4096)?;
        let listener: TcpListener = socket.into();
        let addr = listener.local_addr()?;
        let ctl = Arc::new(Ctl::new());
        let server_ctl = ctl.clone();
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                sysutil::pin_to(cpu)?;
                body(listener, server_ctl)
            })?;
        Ok(Server {
            addr,
            ctl,
            handle: Some(handle),
        })
    }

    /// Tells the server to stop, wakes it with one connection, and joins its thread.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        let Some(handle) = self.handle.take() else {
            return Ok(());
        };
        self.ctl.stop.store(true, Relaxed);
        // The server checks `stopping` after each accept: give it one.
        let _ = std::net::TcpStream::connect(self.addr);
        handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the server thread panicked")))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("bench: server {}: {e}", self.addr);
        }
    }
}
