//! Peer io_uring runtimes as extra rows of `bench echo` and `bench accept` (feature `peers`).
//!
//! Each peer (monoio, glommio, tokio-uring) serves the same benchmark as this runtime's row,
//! written the way that runtime's own examples write it, on a server thread of `server.rs`
//! (its own listener, pinned to the server CPU, `Ctl` ticks on every event), so the existing
//! client, alternation and tables measure it unchanged.
//!
//! A peer whose runtime cannot be built here (glommio needs `RLIMIT_MEMLOCK` >= 512 KiB and
//! reads the CPU topology from sysfs) says why on stderr and loses its row; the run goes on.
//! The server thread reports, over [`Ready`], whether its runtime came up before the client
//! is pointed at it: a listener nobody serves would accept connections and never echo.
//!
//! The peers' servers live in this process for the whole benchmark, so the peak RSS column
//! (the process's `VmHWM`) of every row includes them: glommio's default 10 MiB `io_memory`
//! pool is resident from the start (`bench accept --quick`: 4.2 MiB per row without the
//! feature, 5.3 MiB with monoio and tokio-uring, 15.5 MiB with glommio too).

mod glommio;
mod monoio;
mod tokio_uring;

use std::io;
use std::net::TcpListener;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::server::{Ctl, Server};

/// How long a peer's server thread may take to build its runtime.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a peer's server thread gets: the harness's listener and control block, its CPU,
/// and the channel that tells [`spawn`] whether the runtime came up.
pub(crate) struct Serve {
    /// Bound and listening (blocking mode, as `server.rs` makes it).
    pub(crate) listener: TcpListener,
    /// Shared with the client.
    pub(crate) ctl: Arc<Ctl>,
    /// The CPU this thread is pinned to (for runtimes that pin themselves).
    pub(crate) cpu: usize,
    /// Sends the runtime's build result once.
    pub(crate) ready: Ready,
}

/// A peer's accept loop: hands each connection `accept` yields to `each` until the harness
/// says stop; an accept error is printed under `what` and the loop goes on.
pub(crate) async fn accept_loop<S, E, F>(
    ctl: &Ctl,
    what: &str,
    mut accept: impl FnMut() -> F,
    mut each: impl FnMut(S),
) -> io::Result<()>
where
    E: std::fmt::Display,
    F: std::future::Future<Output = Result<S, E>>,
{
    loop {
        let accepted = accept().await;
        if ctl.stopping() {
            return Ok(());
        }
        match accepted {
            Ok(s) => each(s),
            Err(e) => eprintln!("{what}: {e}"),
        }
    }
}

/// The server thread's one message to [`spawn`]: its runtime was built, or why not.
pub(crate) struct Ready(mpsc::Sender<io::Result<()>>);

impl Ready {
    /// Passes a runtime build result through, telling [`spawn`] how it went.
    pub(crate) fn built<T>(self, result: io::Result<T>) -> io::Result<T> {
        let copy = match &result {
            Ok(_) => Ok(()),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        // `spawn` may have given up waiting; then nobody needs the answer.
        let _ = self.0.send(copy);
        result
    }
}

/// One peer runtime's servers.
struct Peer {
    /// The row's name in the table and the JSON.
    name: &'static str,
    /// `bench echo`: echo every read back until the end of stream; the message size.
    echo: fn(Serve, usize) -> io::Result<()>,
    /// `bench accept`: per connection read 128 B, write them back, close.
    accept: fn(Serve) -> io::Result<()>,
    /// Printed with a setup error.
    hint: &'static str,
}

/// Every peer, in the order of their rows.
const PEERS: [Peer; 3] = [
    Peer {
        name: "monoio",
        echo: self::monoio::echo,
        accept: self::monoio::accept,
        hint: "io_uring setup failed (kernel.io_uring_disabled? seccomp?)",
    },
    Peer {
        name: "glommio",
        echo: self::glommio::echo,
        accept: self::glommio::accept,
        hint:
            "glommio needs RLIMIT_MEMLOCK >= 512 KiB (`ulimit -l 512`) and /sys/devices/system/cpu",
    },
    Peer {
        name: "tokio-uring",
        echo: self::tokio_uring::echo,
        accept: self::tokio_uring::accept,
        hint: "io_uring setup failed (kernel.io_uring_disabled? seccomp?)",
    },
];

/// Starts every peer's echo server for `msg`-byte messages on `cpu`, skipping (with a line
/// on stderr) those whose runtime cannot start.
pub(crate) fn echo_servers(cpu: usize, msg: usize) -> Vec<(&'static str, Server)> {
    PEERS
        .iter()
        .filter_map(|p| {
            let serve = p.echo;
            spawn("echo", p, cpu, move |s| serve(s, msg))
        })
        .collect()
}

/// Starts every peer's accept server on `cpu`, skipping those whose runtime cannot start.
pub(crate) fn accept_servers(cpu: usize) -> Vec<(&'static str, Server)> {
    PEERS
        .iter()
        .filter_map(|p| spawn("accept", p, cpu, p.accept))
        .collect()
}

/// Starts `body` on a server thread and waits until its runtime is up; `None` (said on
/// stderr) when it is not.
fn spawn(
    bench: &str,
    peer: &Peer,
    cpu: usize,
    body: impl FnOnce(Serve) -> io::Result<()> + Send + 'static,
) -> Option<(&'static str, Server)> {
    let (tx, rx) = mpsc::channel();
    let thread = format!("{bench}-{}", peer.name);
    let server = Server::spawn(&thread, cpu, move |listener, ctl| {
        body(Serve {
            listener,
            ctl,
            cpu,
            ready: Ready(tx),
        })
    });
    let why = match server {
        Err(e) => e,
        Ok(server) => match rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(())) => return Some((peer.name, server)),
            Ok(Err(e)) => {
                // The thread has returned its error; `stop` joins it and hands it back.
                let _ = server.stop();
                e
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => match server.stop() {
                // The thread ended before building (pinning failed, or it panicked).
                Err(e) => e,
                Ok(()) => io::Error::other("the server thread ended without a word"),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Still building: joining could hang the run, so leave the thread behind.
                std::mem::forget(server);
                io::Error::other("the runtime did not start in 10 s")
            }
        },
    };
    eprintln!(
        "bench {bench}: {}: skipped, its runtime did not start: {why} (hint: {})",
        peer.name, peer.hint
    );
    None
}
