//! The server-thread harness of the socket benchmarks (`accept`, `echo`): the CPUs server
//! and client pin to, and the control block through which the client tells a server when a
//! measured window starts and ends. (Pinning, the fd limit and CPU time are `sysutil`'s.)
//!
//! Every contestant gets its own listening socket and its own thread, pinned to the server
//! CPU (sched_setaffinity(2)), alive for the whole benchmark; the load generator runs on the
//! calling thread, pinned to another CPU where the machine has two. A server reads its own
//! figures, from inside its thread: CPU time with getrusage(2) `RUSAGE_THREAD`, and for this
//! runtime the `runtime::stats()` counters, which are thread-local.
//!
//! # The control protocol
//! The client never wakes a server to take a snapshot: it writes a new phase into
//! [`Ctl`], and the server notices on its next event (a connection accepted or finished, a
//! message echoed, an end of stream), which under load comes within microseconds.
//! - `MEASURE(run)`: the server takes its start snapshot and zeroes its count.
//! - `DONE(run)` (echo), or the `target`-th connection finished (accept): the end snapshot;
//!   the difference goes back to the client as a [`Report`] over a channel.
//!
//! Invariant: only the server thread writes `seen`, `count` and `start`; the client writes
//! `phase`, `target` and `stop`.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use sysutil::{cpu_time, Who};

/// `listen(2)` backlog of every benchmark listener (the kernel caps it at somaxconn).
const BACKLOG: i32 = 4096;
/// How long the client waits for a server's report before calling it a failure.
const REPORT_TIMEOUT: Duration = Duration::from_secs(20);

/// The CPUs the server and the client pin to, and whether they differ.
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
        let allowed = sysutil::allowed_cpus();
        let server = allowed.first().copied().unwrap_or(0);
        let client = allowed.get(1).copied().unwrap_or(server);
        Cpus { server, client }
    }

    /// `server on CPU 0, client on CPU 1`, with a warning when they share one.
    pub fn describe(&self) -> String {
        if self.server == self.client {
            format!(
                "server and client share CPU {} (only one allowed): figures are co-scheduled",
                self.server
            )
        } else {
            format!(
                "server on CPU {}, client on CPU {}",
                self.server, self.client
            )
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
    pub stats: Option<runtime::Stats>,
}

struct Snap {
    at: Instant,
    cpu: Duration,
    stats: Option<runtime::Stats>,
}

impl Snap {
    fn take(stats: &impl Fn() -> Option<runtime::Stats>) -> Snap {
        Snap {
            at: Instant::now(),
            cpu: cpu_time(Who::Thread),
            stats: stats(),
        }
    }
}

const WARM: u64 = 0;
const MEASURE: u64 = 1;
const DONE: u64 = 2;

/// The control block one server and its client share (see the module documentation).
pub struct Ctl {
    phase: AtomicU64,
    seen: AtomicU64,
    target: AtomicU64,
    count: AtomicU64,
    stop: AtomicBool,
    start: Mutex<Option<Snap>>,
    tx: mpsc::Sender<Report>,
    rx: Mutex<mpsc::Receiver<Report>>,
    run: AtomicU64,
}

impl Ctl {
    fn new() -> Ctl {
        let (tx, rx) = mpsc::channel();
        Ctl {
            phase: AtomicU64::new(WARM),
            seen: AtomicU64::new(WARM),
            target: AtomicU64::new(u64::MAX),
            count: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            start: Mutex::new(None),
            tx,
            rx: Mutex::new(rx),
            run: AtomicU64::new(0),
        }
    }

    // Client side.

    /// Starts a new run in the warm phase (echo: traffic before the window).
    pub fn warm(&self) {
        let run = self.run.fetch_add(1, Relaxed) + 1;
        self.phase.store(run << 2 | WARM, Relaxed);
    }

    /// Opens the measured window of the current run; the server's `target`-th finished
    /// connection closes it (`u64::MAX`: only [`Ctl::done`] does).
    pub fn measure(&self, target: u64) {
        self.target.store(target, Relaxed);
        let run = self.run.load(Relaxed);
        self.phase.store(run << 2 | MEASURE, Relaxed);
    }

    /// Closes the measured window of the current run.
    pub fn done(&self) {
        let run = self.run.load(Relaxed);
        self.phase.store(run << 2 | DONE, Relaxed);
    }

    /// Waits for the server's report on the window just closed.
    pub fn report(&self) -> io::Result<Report> {
        let rx = self.rx.lock().expect("report channel lock");
        rx.recv_timeout(REPORT_TIMEOUT)
            .map_err(|_| io::Error::other("the server sent no report for the window"))
    }

    // Server side.

    /// Whether the server should return (checked after each accept).
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// An event on the server: `bytes` more echoed (0 for a connection accepted or ended);
    /// acts on a phase the client changed since the last event.
    // Hot path: two relaxed loads when nothing changed; no read-modify-write instruction.
    #[inline]
    pub fn tick(&self, bytes: u64, stats: impl Fn() -> Option<runtime::Stats>) {
        self.count.store(self.count.load(Relaxed) + bytes, Relaxed);
        let phase = self.phase.load(Relaxed);
        if phase != self.seen.load(Relaxed) {
            self.transition(phase, &stats);
        }
    }

    /// A connection the server accepted has finished (accept): closes the window at `target`.
    pub fn conn_done(&self, stats: impl Fn() -> Option<runtime::Stats>) {
        self.tick(1, &stats);
        if self.count.load(Relaxed) == self.target.load(Relaxed) {
            self.finish(&stats);
        }
    }

    #[cold]
    fn transition(&self, phase: u64, stats: &impl Fn() -> Option<runtime::Stats>) {
        let seen = self.seen.load(Relaxed);
        self.seen.store(phase, Relaxed);
        match phase & 3 {
            MEASURE => {
                *self.start.lock().expect("snapshot lock") = Some(Snap::take(stats));
                self.count.store(0, Relaxed);
            }
            DONE if seen == (phase & !3) | MEASURE => self.finish(stats),
            _ => {}
        }
    }

    fn finish(&self, stats: &impl Fn() -> Option<runtime::Stats>) {
        let Some(start) = self.start.lock().expect("snapshot lock").take() else {
            return;
        };
        let end = Snap::take(stats);
        let report = Report {
            elapsed: end.at - start.at,
            cpu: end.cpu.saturating_sub(start.cpu),
            count: self.count.load(Relaxed),
            stats: match (end.stats, start.stats) {
                (Some(e), Some(s)) => Some(e - s),
                _ => None,
            },
        };
        // The client may have given up waiting; then nobody needs the report.
        let _ = self.tx.send(report);
    }
}

/// No counters: for servers that are not this runtime.
pub fn no_stats() -> Option<runtime::Stats> {
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
    /// Binds a listener on 127.0.0.1 (an ephemeral port, backlog [`BACKLOG`]) and starts
    /// `body` on a new thread pinned to `cpu`; `body` serves until [`Ctl::stopping`].
    pub fn spawn<F>(name: &str, cpu: usize, body: F) -> io::Result<Server>
    where
        F: FnOnce(TcpListener, Arc<Ctl>) -> io::Result<()> + Send + 'static,
    {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
        socket.listen(BACKLOG)?;
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
        match handle.join() {
            Ok(result) => result,
            Err(_) => Err(io::Error::other("the server thread panicked")),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("bench: server {}: {e}", self.addr);
        }
    }
}

/// A log-linear latency histogram: 32 sub-buckets per power of two (about 3% precision).
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; 64 * 32],
            total: 0,
        }
    }
}

impl Histogram {
    /// Records one sample.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let v = d.as_nanos().min(u64::MAX as u128) as u64;
        self.counts[bucket(v)] += 1;
        self.total += 1;
    }

    /// The `q` quantile (0..=1), from the middle of its bucket; zero if empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Duration::from_nanos(bucket_mid(i));
            }
        }
        Duration::from_nanos(bucket_mid(self.counts.len() - 1))
    }
}

fn bucket(v: u64) -> usize {
    if v < 64 {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - 5;
    (shift * 32) as usize + (v >> shift) as usize
}

fn bucket_mid(i: usize) -> u64 {
    if i < 64 {
        return i as u64;
    }
    let shift = (i / 32 - 1) as u32;
    let mantissa = (i % 32 + 32) as u64;
    (mantissa << shift) + (1u64 << shift) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip() {
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 123_456, 10_000_000_000] {
            let mid = bucket_mid(bucket(v));
            let err = (mid as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err < 0.04, "{v} -> {mid}");
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for us in 1..=100u64 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).as_micros();
        let p99 = h.quantile(0.99).as_micros();
        assert!((48..=52).contains(&p50), "{p50}");
        assert!((96..=102).contains(&p99), "{p99}");
    }
}
