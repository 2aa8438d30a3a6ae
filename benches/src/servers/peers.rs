//! Peer io_uring runtimes as extra rows of `bench echo` and `bench accept`.

use std::io;
use std::net::TcpListener;
use std::os::fd::{FromRawFd as _, IntoRawFd as _};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::{accept_conn, accept_loop, accepts, echo_borrowed, echo_owned, ACCEPT_MSG, ENTRIES};
use crate::harness::server::{no_stats, Ctl, Server};

/// How long a peer's server thread may take to build its runtime.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// A peer's server body: the listener, the control block, the CPU it is pinned to.
type Body = fn(TcpListener, Arc<Ctl>, usize, Ready, Option<usize>) -> io::Result<()>;

/// The hint for a runtime whose io_uring setup failed.
const URING_HINT: &str = "io_uring setup failed (kernel.io_uring_disabled? seccomp?)";

/// Every peer, in the order of their rows: its name, its servers, and a hint printed with a setup error.
const PEERS: [(&str, Body, &str); 3] = [
    ("monoio", monoio, URING_HINT),
    (
        "glommio",
        glommio,
        "glommio needs RLIMIT_MEMLOCK >= 512 KiB (`ulimit -l 512`) and /sys/devices/system/cpu",
    ),
    ("tokio-uring", tokio_uring, URING_HINT),
];

/// The server thread's one message to [`spawn`]: its runtime was built, or why not.
pub struct Ready(mpsc::Sender<io::Result<()>>);

impl Ready {
    /// Passes a runtime build result through, telling [`spawn`] how it went.
    fn built<T>(self, result: io::Result<T>) -> io::Result<T> {
        let copy = result
            .as_ref()
            .map(drop)
            .map_err(|e| io::Error::new(e.kind(), e.to_string()));
        // `spawn` may have given up waiting; then nobody needs the answer.
        let _ = self.0.send(copy);
        result
    }
}

/// Starts every peer's server for `bench` (`Some(msg)`: echo of `msg`-byte messages; `None`: accept) on `cpu`.
pub fn servers(bench: &str, cpu: usize, msg: Option<usize>) -> Vec<(&'static str, Server)> {
    PEERS
        .iter()
        .filter_map(|p| spawn(bench, *p, cpu, msg))
        .collect()
}

/// Starts a peer's server thread and waits until its runtime is up; `None` (said on stderr) when it is not.
fn spawn(
    bench: &str,
    (name, body, hint): (&'static str, Body, &str),
    cpu: usize,
    msg: Option<usize>,
) -> Option<(&'static str, Server)> {
    let (tx, rx) = mpsc::channel();
    let server = Server::spawn(&format!("{bench}-{name}"), cpu, move |l, ctl| {
        body(l, ctl, cpu, Ready(tx), msg)
    });
    let why = match server {
        Err(e) => e,
        Ok(server) => match rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(())) => return Some((name, server)),
            // The thread has returned its error; `stop` joins it and hands it back.
            Ok(Err(e)) => server.stop().err().unwrap_or(e),
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
    eprintln!("bench {bench}: {name}: skipped, its runtime did not start: {why} (hint: {hint})");
    None
}

/// monoio's servers.
fn monoio(
    listener: TcpListener,
    ctl: Arc<Ctl>,
    _cpu: usize,
    ready: Ready,
    msg: Option<usize>,
) -> io::Result<()> {
    use monoio::buf::IoBuf as _;
    use monoio::io::{AsyncReadRent, AsyncReadRentExt, AsyncWriteRentExt};
    use monoio::{IoUringDriver, RuntimeBuilder};
    let rt = RuntimeBuilder::<IoUringDriver>::new().with_entries(ENTRIES);
    ready.built(rt.build())?.block_on(async move {
        let listener = monoio::net::TcpListener::from_std(listener)?;
        let accepted = accepts!(&listener);
        accept_loop(
            &ctl,
            "bench: monoio server",
            no_stats,
            accepted,
            |(mut stream, _)| {
                let ctl = ctl.clone();
                monoio::spawn(async move {
                    let Some(msg) = msg else {
                        return accept_conn(&ctl, "monoio", no_stats, async move {
                            let buf = vec![0u8; ACCEPT_MSG].into_boxed_slice();
                            let (res, buf) = stream.read_exact(buf).await;
                            res?;
                            stream.write_all(buf).await.0.map(drop)
                        })
                        .await;
                    };
                    // The buffer travels to the kernel and back on every call.
                    let buf = Vec::with_capacity(msg);
                    echo_owned!(stream.read, write_all, buf, |n| ctl.tick(n, no_stats));
                });
            },
        )
        .await
    })
}

/// glommio's servers.
fn glommio(
    listener: TcpListener,
    ctl: Arc<Ctl>,
    cpu: usize,
    ready: Ready,
    msg: Option<usize>,
) -> io::Result<()> {
    use futures::{AsyncReadExt, AsyncWriteExt};
    use glommio::{LocalExecutorBuilder, Placement};
    let builder = LocalExecutorBuilder::new(Placement::Fixed(cpu)).name("glommio-server");
    let ex = builder.ring_depth(ENTRIES as usize).make();
    ready.built(ex.map_err(io::Error::from))?.run(async move {
        // SAFETY: `into_raw_fd` hands over a bound, listening socket that nothing else owns; wrapped inside the
        // executor, as glommio binds it to the current reactor.
        let listener = unsafe { glommio::net::TcpListener::from_raw_fd(listener.into_raw_fd()) };
        let what = "bench: glommio server";
        accept_loop(&ctl, what, no_stats, accepts!(&listener), |mut stream| {
            let ctl = ctl.clone();
            let task = glommio::spawn_local(async move {
                let Some(msg) = msg else {
                    return accept_conn(&ctl, "glommio", no_stats, async move {
                        let mut buf = [0u8; ACCEPT_MSG];
                        stream.read_exact(&mut buf).await?;
                        stream.write_all(&buf).await
                    })
                    .await;
                };
                echo_borrowed!(stream, msg, |n| ctl.tick(n, no_stats));
            });
            task.detach();
        })
        .await
    })
}

/// tokio-uring's servers.
fn tokio_uring(
    listener: TcpListener,
    ctl: Arc<Ctl>,
    _cpu: usize,
    ready: Ready,
    msg: Option<usize>,
) -> io::Result<()> {
    use tokio_uring::buf::BoundedBuf;
    let rt = tokio_uring::Runtime::new(tokio_uring::builder().entries(ENTRIES));
    ready.built(rt)?.block_on(async move {
        let listener = tokio_uring::net::TcpListener::from_std(listener);
        let what = "bench: tokio-uring server";
        accept_loop(&ctl, what, no_stats, accepts!(&listener), |(stream, _)| {
            let ctl = ctl.clone();
            tokio_uring::spawn(async move {
                let Some(msg) = msg else {
                    // tokio-uring has no `read_exact`: read until the message is whole.
                    return accept_conn(&ctl, "tokio-uring", no_stats, async move {
                        let (mut buf, mut got) = (vec![0u8; ACCEPT_MSG], 0);
                        while got < buf.len() {
                            let (res, slice) = stream.read(buf.slice(got..)).await;
                            buf = slice.into_inner();
                            match res? {
                                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                                n => got += n,
                            }
                        }
                        stream.write_all(buf).await.0
                    })
                    .await;
                };
                // The buffer travels to the kernel and back on every call.
                echo_owned!(stream.read, write_all, vec![0u8; msg], |n| ctl
                    .tick(n, no_stats));
            });
        })
        .await
    })
}
