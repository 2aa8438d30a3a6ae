//! The differential stress suite: hundreds of connections, each carrying a stream made from
//! its own number ([`pattern`]), written in random sizes from 1 B to 1 MiB, echoed by a
//! server on one runtime and read back and checked, byte by byte, by clients on another.
//!
//! A [`Case`] names the runtime configuration (feature switches, buffer-ring size) and the
//! transport (TCP, Unix, TLS over TCP); every connection of a case draws, from the case's
//! seed, the read API and the write API its server side and its client side use
//! ([`ReadApi`], [`WriteApi`]) and how its client reads ([`Reader`]: fast, slow, or
//! dropping read futures mid-stream). A case passes when every byte arrived, in order, on
//! the connection it was written to, and the runtimes came back to rest: every provided
//! buffer in its ring, no task left, no fd left. `stress` (the binary) runs the suite; the
//! same seed replays a failure.

pub mod cases;
mod io;
pub mod pattern;

use std::fmt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Rng;

/// How a connection's bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP on 127.0.0.1.
    Tcp,
    /// A Unix stream socket in a temporary directory.
    Unix,
    /// TLS (rustls) over TCP.
    Tls,
}

/// The read APIs a connection may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadApi {
    /// `read_chunk`.
    Chunk,
    /// `futures::io::AsyncReadExt::read`.
    Futures,
    /// `tokio::io::AsyncReadExt::read`.
    Tokio,
    /// The owned `read_buf(Vec)`, appending to a vector's spare capacity.
    ReadBuf,
    /// The owned `read(Vec)`.
    Owned,
    /// Each read one of the above at random, on the same socket: the buffered path and the
    /// owned calls must hand out every byte once, in order.
    Mixed,
}

/// The write APIs a connection may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteApi {
    /// `write_chunk` of what `read_chunk` gave (a server whose read API is `Chunk` only).
    Chunk,
    /// `futures::io::AsyncWriteExt::write_all`.
    Futures,
    /// `tokio::io::AsyncWriteExt::write_all`.
    Tokio,
    /// The owned `write_all(Vec)`.
    Owned,
    /// The owned `writev_all(Vec<Vec<u8>>)`, the write cut in up to four pieces.
    Writev,
    /// Each write one of the above at random (`Chunk` when a chunk was read), on the same
    /// socket: no owned write may overtake a write-behind send.
    Mixed,
}

/// How a client reads its echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// As fast as bytes come.
    Fast,
    /// Sleeping a millisecond every few reads, so the server's sends back up.
    Slow,
    /// Now and then gives a read a few microseconds and drops it if it is not done (only
    /// with the APIs that promise to lose nothing when dropped: `Chunk`, `Futures`, `Tokio`).
    Dropping,
}

/// What one connection does, drawn from the case's seed.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The connection's number (its stream's name).
    pub conn: u32,
    /// The server's read API.
    pub server_read: ReadApi,
    /// The server's write API.
    pub server_write: WriteApi,
    /// The client's read API.
    pub client_read: ReadApi,
    /// The client's write API.
    pub client_write: WriteApi,
    /// How the client reads.
    pub reader: Reader,
    /// Bytes the client sends (and reads back).
    pub bytes: u64,
    /// The seed of the write sizes.
    pub seed: u64,
}

/// One run: a runtime configuration, a transport and a load.
#[derive(Clone, Debug)]
pub struct Case {
    /// A name for reports (the configuration and the transport).
    pub name: String,
    /// Feature switches turned off (names as `RUNTIME_DISABLE` takes them).
    pub disable: Vec<&'static str>,
    /// The read path's ring (`Builder::recv_buffers`); `None`: the default.
    pub ring: Option<(u16, u32)>,
    /// The transport.
    pub transport: Transport,
    /// Concurrent connections.
    pub conns: u32,
    /// Bytes each connection carries each way.
    pub bytes_per_conn: u64,
    /// The largest single write.
    pub max_write: usize,
    /// The seed every connection's plan is drawn from.
    pub seed: u64,
}

/// What a passing case moved.
#[derive(Clone, Debug)]
pub struct Report {
    /// The case's name.
    pub name: String,
    /// Bytes echoed (each way).
    pub bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Read futures dropped before they finished.
    pub dropped_reads: u64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.bytes as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "{:<48} {:>8.1} MiB each way in {:>6.2} s ({:>7.1} MiB/s), {} reads dropped",
            self.name,
            mib,
            self.elapsed.as_secs_f64(),
            mib / self.elapsed.as_secs_f64().max(1e-9),
            self.dropped_reads
        )
    }
}

impl Case {
    /// The runtime builder of this case (the same on the server and the client side).
    pub fn builder(&self) -> runtime::Builder {
        // `Builder::new` reads RUNTIME_DISABLE; the case's own list is applied on top.
        let mut b = runtime::Builder::new();
        for name in &self.disable {
            b = match *name {
                "registered_ring_fd" => b.registered_ring_fd(false),
                "no_sqarray" => b.no_sqarray(false),
                "min_timeout" => b.min_timeout(false),
                "recv_multishot" => b.recv_multishot(false),
                "recv_bundle" => b.recv_bundle(false),
                "recv_incremental" => b.recv_incremental(false),
                "direct_descriptors" => b.direct_descriptors(false),
                other => panic!("unknown feature switch {other}"),
            };
        }
        if let Some((entries, len)) = self.ring {
            b = b.recv_buffers(entries, len);
        }
        b
    }

    /// Every connection's plan, drawn from the seed.
    pub fn plans(&self) -> Vec<Plan> {
        let mut rng = Rng::new(self.seed);
        (0..self.conns)
            .map(|conn| plan(&mut rng, conn, self.transport, self.bytes_per_conn))
            .collect()
    }

    /// Runs the case: the server on a thread of its own, the clients on this one. `Err`
    /// names every connection that went wrong (the first few) and what the rest checks saw.
    pub fn run(&self) -> Result<Report, String> {
        let fds_before = crate::fd_count();
        let started = Instant::now();
        let plans = self.plans();
        let (addr_tx, addr_rx) = mpsc::channel();
        let (server_tls, client_tls) = match self.transport {
            Transport::Tls => {
                let (s, c) = io::tls_configs();
                (Some(s), Some(c))
            }
            Transport::Tcp | Transport::Unix => (None, None),
        };
        let server = {
            let case = self.clone();
            let plans = plans.clone();
            std::thread::Builder::new()
                .name("stress-server".into())
                .spawn(move || io::serve(&case, &plans, server_tls, addr_tx))
                .map_err(|e| format!("spawning the server thread: {e}"))?
        };
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the server did not start".to_string())?
            .map_err(|e| format!("the server could not start: {e}"))?;
        let client = io::clients(self, &plans, client_tls, &addr);
        let server = server
            .join()
            .unwrap_or_else(|_| Err("the server thread panicked".into()));
        let mut errors = Vec::new();
        let dropped_reads = match client {
            Ok(n) => n,
            Err(e) => {
                errors.push(format!("client side: {e}"));
                0
            }
        };
        if let Err(e) = server {
            errors.push(format!("server side: {e}"));
        }
        if let io::Addr::Unix(dir, _) = &addr {
            let _ = std::fs::remove_dir_all(dir);
        }
        // Both runtimes are gone: every fd they opened is closed.
        let fds_after = wait_for(crate::fd_count, |n| *n <= fds_before);
        if fds_after > fds_before {
            errors.push(format!(
                "{} fds left open ({fds_before} before, {fds_after} after)",
                fds_after - fds_before
            ));
        }
        if !errors.is_empty() {
            return Err(format!(
                "{} (seed {:#x}): {}",
                self.name,
                self.seed,
                errors.join("; ")
            ));
        }
        Ok(Report {
            name: self.name.clone(),
            bytes: plans.iter().map(|p| p.bytes).sum(),
            elapsed: started.elapsed(),
            dropped_reads,
        })
    }
}

/// Polls `read` until `done` holds of its value or a second passes; returns the last value.
fn wait_for<T>(mut read: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let v = read();
        if done(&v) || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Connection `conn`'s plan: APIs and reader drawn at random among those its transport has.
fn plan(rng: &mut Rng, conn: u32, transport: Transport, bytes: u64) -> Plan {
    const READS: [ReadApi; 6] = [
        ReadApi::Chunk,
        ReadApi::Futures,
        ReadApi::Tokio,
        ReadApi::ReadBuf,
        ReadApi::Owned,
        ReadApi::Mixed,
    ];
    const WRITES: [WriteApi; 5] = [
        WriteApi::Futures,
        WriteApi::Tokio,
        WriteApi::Owned,
        WriteApi::Writev,
        WriteApi::Mixed,
    ];
    let (reads, writes): (&[ReadApi], &[WriteApi]) = match transport {
        // TLS has the trait APIs only.
        Transport::Tls => (&READS[1..3], &WRITES[..2]),
        Transport::Tcp | Transport::Unix => (&READS, &WRITES),
    };
    let pick_read = |rng: &mut Rng| reads[rng.below(reads.len() as u64) as usize];
    let pick_write = |rng: &mut Rng| writes[rng.below(writes.len() as u64) as usize];
    let server_read = pick_read(rng);
    // A server reading chunks echoes them with write_chunk half the time.
    let server_write = if matches!(server_read, ReadApi::Chunk | ReadApi::Mixed) && rng.one_in(2) {
        WriteApi::Chunk
    } else {
        pick_write(rng)
    };
    let client_read = pick_read(rng);
    let client_write = pick_write(rng);
    let cancel_safe = matches!(
        client_read,
        ReadApi::Chunk | ReadApi::Futures | ReadApi::Tokio
    );
    let reader = match rng.below(4) {
        0 => Reader::Slow,
        1 if cancel_safe => Reader::Dropping,
        _ => Reader::Fast,
    };
    Plan {
        conn,
        server_read,
        server_write,
        client_read,
        client_write,
        reader,
        bytes,
        seed: rng.next_u64(),
    }
}

/// The sizes of a plan's writes: log-uniform from 1 B to `max`, summing to `total`.
pub fn write_sizes(seed: u64, total: u64, max: usize) -> impl Iterator<Item = usize> {
    let mut rng = Rng::new(seed);
    let mut left = total;
    let ln_max = (max as f64).ln();
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let u = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
        let n = ((u * ln_max).exp() as u64).clamp(1, max as u64).min(left);
        left -= n;
        Some(n as usize)
    })
}
