//! Every runtime's echo and accept servers (the raw ring's in `raw.rs`, the peers' in `peers.rs`).

#[cfg(feature = "peers")]
mod peers;
pub mod raw;

use std::fmt::Display;
use std::io;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use corering_net::TcpStream;
use futures::channel::oneshot;
use futures::future::Either;
use futures::{Stream, StreamExt as _};
use runtime::buf::IoBuf as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::harness::measure::tokio_current;
use crate::harness::server::{no_stats, Ctl, Server};

/// Ring size of every io_uring server here (this runtime's, the peers').
pub const ENTRIES: u32 = 256;
/// Bytes each accept-benchmark client writes and reads back.
pub const ACCEPT_MSG: usize = 128;

/// The stream of `$listener.accept()` results, for any runtime's listener.
macro_rules! accepts {
    ($listener:expr) => {
        futures::stream::unfold($listener, |l| async move { Some((l.accept().await, l)) })
    };
}

/// One connection's echo loop over a `$size`-byte buffer it lends to each `read` (tokio's or futures' traits).
macro_rules! echo_borrowed {
    ($stream:ident, $size:expr, $echoed:expr) => {{
        #[allow(unused_mut)]
        let mut echoed = $echoed;
        let _ = $stream.set_nodelay(true);
        let mut buf = vec![0u8; $size];
        // Hot path: one recv and (unless the socket takes a short write) one send per message.
        loop {
            let n = match $stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if $stream.write_all(&buf[..n]).await.is_err() {
                break;
            }
            echoed(n as u64);
        }
        echoed(0);
    }};
}

/// One connection's echo loop over an owned buffer `$buf` that travels to the kernel and back on every call.
macro_rules! echo_owned {
    ($stream:ident.$read:ident, $write_all:ident, $buf:expr, $echoed:expr) => {{
        #[allow(unused_mut)]
        let mut echoed = $echoed;
        let _ = $stream.set_nodelay(true);
        let mut buf = $buf;
        // Hot path: one recv and (unless the socket takes a short write) one send per message.
        loop {
            let (res, b) = $stream.$read(buf).await;
            let n = match res {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let (res, slice) = $stream.$write_all(b.slice(..n)).await;
            buf = slice.into_inner();
            if res.is_err() {
                break;
            }
            echoed(n as u64);
        }
        echoed(0);
    }};
}

#[cfg(feature = "peers")]
pub(crate) use {accepts, echo_borrowed, echo_owned};

/// Serves one accept-benchmark connection with `served` (which owns the stream), says what failed, and tells `ctl`.
pub async fn accept_conn(
    ctl: &Ctl,
    who: &str,
    stats: fn() -> Option<runtime::CoreMetrics>,
    served: impl std::future::Future<Output = io::Result<()>>,
) {
    if let Err(e) = served.await {
        eprintln!("bench accept: {who} connection: {e}");
    }
    ctl.conn_done(stats);
}

/// Hands each connection `accepted` yields to `each` until the harness says stop.
pub async fn accept_loop<S, E: Display>(
    ctl: &Ctl,
    what: &str,
    stats: fn() -> Option<runtime::CoreMetrics>,
    accepted: impl Stream<Item = Result<S, E>>,
    mut each: impl FnMut(S),
) -> io::Result<()> {
    futures::pin_mut!(accepted);
    while let Some(accepted) = accepted.next().await {
        if ctl.stopping() {
            return Ok(());
        }
        match accepted {
            Ok(s) => {
                ctl.tick(0, stats);
                each(s);
            }
            Err(e) => {
                eprintln!("{what}: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    Err(io::Error::other(format!("{what}: the accept stream ended")))
}

/// Servers as data: `servers![cpu; "row name", "thread name" => body, ...]` starts each `body` (a
/// `Server::spawn` body) on its own thread pinned to `cpu`, in row order.
macro_rules! servers {
    ($cpu:expr; $($name:literal, $thread:literal => $body:expr),* $(,)?) => {
        vec![$(($name, Server::spawn($thread, $cpu, $body)?)),*]
    };
}

/// `bench echo`'s servers for `msg`-byte messages, each on its own thread pinned to `cpu`, in row order.
pub fn echo_servers(cpu: usize, msg: usize) -> io::Result<Vec<(String, Server)>> {
    let rt = || runtime::Builder::new().entries(ENTRIES);
    let epoll = move || rt().backend(runtime::Backend::Epoll);
    let mut servers = servers![cpu;
        "runtime", "echo-runtime" => move |l, c| runtime_echo(l, c, rt(), Conn::Chunks),
        "tokio current-thread", "echo-tokio" => move |l, c| tokio_echo(l, c, msg, true),
        "runtime epoll backend", "echo-runtime-epoll" => move |l, c| runtime_echo(l, c, epoll(), Conn::Chunks),
        "raw ring", "echo-raw" => move |l, c| raw::echo(l, c, msg),
        "runtime own-buffer read", "echo-runtime-own" => move |l, c| runtime_echo(l, c, rt(), Conn::OwnBuffer(msg)),
    ];
    servers.extend(peer_servers("echo", cpu, Some(msg)));
    Ok(servers
        .into_iter()
        .map(|(name, s)| (name.to_string(), s))
        .collect())
}

/// `bench accept`'s servers, each on its own thread pinned to `cpu`, in row order.
pub fn accept_servers(cpu: usize) -> io::Result<Vec<(&'static str, Server)>> {
    let mut servers = servers![cpu;
        "runtime accept()", "accept-single" => |l, c| runtime_accept(l, c, false),
        "runtime incoming()", "accept-multi" => |l, c| runtime_accept(l, c, true),
        "tokio current-thread", "accept-tokio" => tokio_accept,
    ];
    servers.extend(peer_servers("accept", cpu, None));
    Ok(servers)
}

/// This runtime's echo server, on a runtime from `builder`, `incoming()` and a `spawn_local` task per connection.
pub fn runtime_echo(
    listener: TcpListener,
    ctl: Arc<Ctl>,
    builder: runtime::Builder,
    conn: Conn,
) -> io::Result<()> {
    builder.build()?.block_on(async move {
        let listener = corering_net::TcpListener::from_std(listener)?;
        let what = "bench: runtime echo server";
        accept_loop(
            &ctl,
            what,
            runtime::core_metrics,
            listener.incoming(),
            |stream| {
                let ctl = ctl.clone();
                let echoed = move |n| ctl.tick(n, runtime::core_metrics);
                // Spawned as they are: a wrapping `async move` block would hold the stream twice.
                match conn {
                    Conn::Chunks => drop(runtime::spawn_local(runtime_conn(stream, echoed))),
                    Conn::OwnBuffer(buf) => {
                        drop(runtime::spawn_local(runtime_own_conn(stream, buf, echoed)))
                    }
                    Conn::Untallied => drop(runtime::spawn_local(untallied_conn(stream))),
                }
            },
        )
        .await
    })
}

/// How [`runtime_echo`] serves a connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Conn {
    /// [`runtime_conn`], this runtime's default read path, each echo ticked to the [`Ctl`].
    Chunks,
    /// [`runtime_own_conn`], the previous default, with a buffer of this many bytes.
    OwnBuffer(usize),
    /// The echo example's loop, counting nothing and keeping no state beyond the stream.
    Untallied,
}

/// One connection on this runtime's default read path: each chunk written back as it is.
pub async fn runtime_conn(mut stream: TcpStream, mut echoed: impl FnMut(u64)) {
    let _ = stream.set_nodelay(true);
    // Hot path: one CQE of the multishot recv and one send per message, the task woken once.
    while let Ok(chunk) = stream.read_chunk().await {
        let n = chunk.len() as u64;
        if n == 0 || stream.write_chunk(chunk).await.is_err() {
            break;
        }
        echoed(n);
    }
    let _ = futures::AsyncWriteExt::flush(&mut stream).await;
    echoed(0);
}

/// One connection as the echo example serves it: each chunk written back as it is until the end or an error.
async fn untallied_conn(mut stream: TcpStream) -> io::Result<()> {
    loop {
        let chunk = stream.read_chunk().await?;
        if chunk.is_empty() {
            return Ok(());
        }
        stream.write_chunk(chunk).await?;
    }
}

/// The previous default, for comparison: owned-buffer `read` into one buffer of `buf` bytes per connection.
pub async fn runtime_own_conn(stream: TcpStream, buf: usize, echoed: impl FnMut(u64)) {
    let buf = vec![0u8; buf].into_boxed_slice();
    echo_owned!(stream.read_owned, write_all_owned, buf, echoed);
}

/// tokio current-thread's echo server.
pub fn tokio_echo(listener: TcpListener, ctl: Arc<Ctl>, buf: usize, tally: bool) -> io::Result<()> {
    let what = "bench: tokio echo server";
    match tally {
        true => tokio_server(listener, ctl, what, move |s, ctl| {
            tokio_conn(s, buf, move |n| ctl.tick(n, no_stats))
        }),
        false => tokio_server(listener, ctl, what, move |s, _| tokio_conn(s, buf, |_| {})),
    }
}

/// One tokio connection: `read` into its own `buf`-byte `Vec`, `write_all` of what came, until the end.
async fn tokio_conn(mut stream: tokio::net::TcpStream, buf: usize, echoed: impl FnMut(u64)) {
    echo_borrowed!(stream, buf, echoed);
}

/// This runtime's accept server: a loop of singleshot `accept`, or with `multishot` the `incoming()` stream, and a
/// `spawn_local` task per connection.
pub fn runtime_accept(listener: TcpListener, ctl: Arc<Ctl>, multishot: bool) -> io::Result<()> {
    let rt = runtime::Builder::new().entries(ENTRIES).build()?;
    rt.block_on(async move {
        let listener = corering_net::TcpListener::from_std(listener)?;
        let accepted = match multishot {
            true => Either::Left(listener.incoming()),
            false => Either::Right(accepts!(&listener).map(|r| r.map(|(s, _)| s))),
        };
        accept_loop(
            &ctl,
            "bench accept: runtime server",
            runtime::core_metrics,
            accepted,
            |s| {
                let ctl = ctl.clone();
                runtime::spawn_local(async move {
                    let served = async move {
                        let buf = vec![0u8; ACCEPT_MSG].into_boxed_slice();
                        let (res, buf) = s.read_exact_owned(buf).await;
                        res?;
                        s.write_all_owned(buf).await.0
                    };
                    accept_conn(&ctl, "runtime", runtime::core_metrics, served).await
                });
            },
        )
        .await
    })
}

/// tokio current-thread's accept server: `accept` and `tokio::spawn`, `read_exact` then `write_all`.
pub fn tokio_accept(listener: TcpListener, ctl: Arc<Ctl>) -> io::Result<()> {
    tokio_server(
        listener,
        ctl,
        "bench accept: tokio server",
        |mut s, ctl| async move {
            let served = async move {
                let mut buf = [0u8; ACCEPT_MSG];
                s.read_exact(&mut buf).await?;
                s.write_all(&buf).await
            };
            accept_conn(&ctl, "tokio", no_stats, served).await
        },
    )
}

/// A tokio current-thread server: `conn` spawned on each accepted stream.
fn tokio_server<F: std::future::Future<Output = ()> + Send + 'static>(
    listener: TcpListener,
    ctl: Arc<Ctl>,
    what: &str,
    conn: impl Fn(tokio::net::TcpStream, Arc<Ctl>) -> F,
) -> io::Result<()> {
    let rt = tokio_current()?;
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        accept_loop(&ctl, what, no_stats, accepts!(&listener), |(s, _)| {
            tokio::spawn(conn(s, ctl.clone()));
        })
        .await
    })
}

/// A byte counter written by one core only (padded: the cores' counters share no line).
#[derive(Default)]
#[repr(align(128))]
pub struct PerCore(pub AtomicU64);

impl PerCore {
    /// Adds `n`; only the owning core writes, so no read-modify-write instruction is needed.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed) + n, Relaxed);
    }
}

/// This runtime's echo server on one core per listener, core i pinned to `cpus[i]`.
pub fn runtime_echo_cores(
    cpus: Vec<usize>,
    listeners: Vec<TcpListener>,
    bytes: Arc<[PerCore]>,
    stops: Vec<oneshot::Receiver<()>>,
) -> io::Result<()> {
    let rt = runtime::Builder::new()
        .entries(ENTRIES)
        .cores(listeners.len())
        .cpus(cpus)
        .build()?;
    rt.block_on(async move {
        let mut handles = Vec::new();
        for (core, (listener, stop)) in listeners.into_iter().zip(stops).enumerate() {
            let bytes = bytes.clone();
            let serve = move || runtime::spawn_local(serve_core(core, listener, bytes, stop));
            handles.push(match core {
                0 => serve(),
                _ => runtime::spawn_on(core, async move {
                    serve().await.unwrap_or_else(|e| Err(io::Error::other(e)))
                }),
            });
        }
        for h in handles {
            h.await.map_err(io::Error::other)??;
        }
        Ok(())
    })
}

/// One core's accept loop on its own listener, until `stop` fires.
async fn serve_core(
    core: usize,
    listener: TcpListener,
    bytes: Arc<[PerCore]>,
    stop: oneshot::Receiver<()>,
) -> io::Result<()> {
    debug_assert_eq!(runtime::current_core(), Some(core));
    let listener = corering_net::TcpListener::from_std(listener)?;
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

#[cfg(feature = "peers")]
use peers::servers as peer_servers;

/// No peers without the `peers` feature.
#[cfg(not(feature = "peers"))]
fn peer_servers(_bench: &str, _cpu: usize, _msg: Option<usize>) -> Vec<(&'static str, Server)> {
    Vec::new()
}
