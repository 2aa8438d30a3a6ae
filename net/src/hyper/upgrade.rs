//! HTTP upgrades (WebSocket, `CONNECT`-style tunnels) over this crate's core-bound sockets.
//!
//! hyper hands an upgraded connection over as [`hyper::upgrade::Upgraded`], which requires
//! its I/O to be `Send`, and offers it through hyper's own [`Read`] and [`Write`] traits.
//! This module bridges both gaps:
//!
//! - [`UpgradableIo`] lets a core-bound stream (a [`TcpStream`](crate::TcpStream), a
//!   [`TlsStream`](crate::tls::TlsStream), both `!Send`) into hyper's upgrade machinery: it
//!   is `Send`, and checks on every use that it is still on the thread that made it.
//!   [`serve`](super::serve()) wraps every connection in it, so the HTTP/1.1 connections it
//!   serves support upgrades as they are;
//! - [`UpgradedIo`] presents any hyper [`Read`] + [`Write`] (an [`Upgraded`], or a
//!   [`HyperIo`](super::HyperIo)) through the `futures::io` traits and, with the `tokio-io`
//!   feature, tokio's [`AsyncRead`](tokio::io::AsyncRead) and
//!   [`AsyncWrite`](tokio::io::AsyncWrite), as crates like `tokio-tungstenite` and
//!   `async-tungstenite` take them.
//!
//! A WebSocket handshake in a handler, then the socket in a task on the same core:
//!
//! ```no_run
//! use corering_net::hyper::UpgradedIo;
//! use http::{Request, Response, StatusCode};
//!
//! fn upgrade(mut req: Request<hyper::body::Incoming>) -> Response<String> {
//!     // (Check `Upgrade`, `Connection`, `Sec-WebSocket-Key` and `-Version` first.)
//!     let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
//!         // HTTP/2, or a connection served without upgrades.
//!         let mut res = Response::new("upgrades need HTTP/1.1\n".to_string());
//!         *res.status_mut() = StatusCode::BAD_REQUEST;
//!         return res;
//!     };
//!     drop(runtime::spawn_local(async move {
//!         if let Ok(upgraded) = on_upgrade.await {
//!             let io = UpgradedIo::new(upgraded);
//!             // e.g. `WebSocketStream::from_raw_socket(io, Role::Server, None).await`
//!             # drop(io);
//!         }
//!     }));
//!     let mut res = Response::new(String::new());
//!     *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
//!     // ... plus `Upgrade`, `Connection` and `Sec-WebSocket-Accept` ...
//!     res
//! }
//! ```
//!
//! [`Upgraded`]: hyper::upgrade::Upgraded

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::thread::{self, ThreadId};

use ::hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};
use runtime::ext::CoreOwner;

thread_local! {
    /// This thread's id, cached: `thread::current()` clones an `Arc` each call.
    static THREAD: ThreadId = thread::current().id();
}

/// The calling thread's id.
fn this_thread() -> ThreadId {
    THREAD.with(|id| *id)
}

/// Hands a value back to its core to be dropped there.
type SendBack<T> = fn(&CoreOwner, T);

/// A core-bound stream made `Send` for hyper's upgrades ([`hyper::upgrade::Upgraded`]
/// requires `Send` I/O), made safe by a check on every use: read, write, flush and
/// shutdown work on the thread that wrapped it (its core), and fail with an
/// [`io::ErrorKind::Other`] error on any other; dropped on another thread, the stream goes
/// back to its core, which drops it on its next turn (it never runs its destructor there).
///
/// Used as it is meant to, on its core, it behaves exactly like the stream it wraps (one
/// thread-local read per call). [`serve`](super::serve()) wraps every connection in one;
/// wrap a stream in one yourself to serve a connection by hand with hyper's
/// `with_upgrades` or hyper-util's `serve_connection_with_upgrades`.
pub struct UpgradableIo<T> {
    /// `None` only during a drop.
    inner: Option<T>,
    owner: ThreadId,
    /// The core it was made on and how `T` goes back to it to be dropped there (a drop on
    /// another thread); `None` if it was made outside a runtime.
    home: Option<(CoreOwner, SendBack<T>)>,
}

// SAFETY: `T` may be `!Send` (this crate's sockets are bound to the core that opened them).
// Moving an `UpgradableIo` to another thread moves `T` without touching it; every access to
// `T` (`inner_mut`, and the `&T` uses in `is_write_vectored` and `Debug`) checks that it
// happens on `owner`, the thread that made the wrapper, and fails or skips `T` otherwise;
// `Drop` runs `T`'s destructor only on `owner`; elsewhere it hands `T` back to the core it
// was made on (`CoreOwner::drop_on_core`, which drops it on that core's thread), or leaks it
// if it was made outside a runtime.
// So `T` is only ever used or dropped on the thread it was made on, which is what `!Send`
// requires. Thread ids are never reused within a process. No `&T` is handed out, so no
// `Sync` is implied or needed.
unsafe impl<T> Send for UpgradableIo<T> {}

impl<T: 'static> UpgradableIo<T> {
    /// Wraps `inner`, bound to the calling thread (and its core).
    pub fn new(inner: T) -> UpgradableIo<T> {
        fn send_back<T: 'static>(core: &CoreOwner, inner: T) {
            // SAFETY: `inner` was made on `core`'s thread (the wrapper's `owner`, checked on
            // every use) and never used elsewhere; the socket types it wraps share their
            // `Rc`s only with their own ops, which live on that core.
            unsafe { core.drop_on_core(inner) }
        }
        UpgradableIo {
            inner: Some(inner),
            owner: this_thread(),
            home: CoreOwner::current().map(|c| (c, send_back::<T> as SendBack<T>)),
        }
    }
}

impl<T> UpgradableIo<T> {
    /// Unwraps the stream, on its own thread.
    ///
    /// # Errors
    /// On another thread (the wrapper is given back in the error).
    pub fn into_inner(mut self) -> Result<T, UpgradableIo<T>> {
        if self.owner != this_thread() {
            return Err(self);
        }
        self.inner.take().ok_or(self)
    }

    /// The stream, if this is its thread.
    fn inner_mut(&mut self) -> io::Result<Pin<&mut T>>
    where
        T: Unpin,
    {
        if self.owner != this_thread() {
            return Err(io::Error::other(
                "corering_net::hyper::UpgradableIo: a core-bound stream used on another thread \
                 (keep an upgraded connection on the core that accepted it: spawn_local)",
            ));
        }
        match &mut self.inner {
            Some(inner) => Ok(Pin::new(inner)),
            None => Err(io::Error::other(
                "corering_net::hyper::UpgradableIo: stream already taken",
            )),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for UpgradableIo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("UpgradableIo");
        // The stream itself only on its own thread (its `Debug` may read core-local state).
        if self.owner == this_thread() {
            d.field("inner", &self.inner);
        }
        d.field("owner", &self.owner).finish_non_exhaustive()
    }
}

impl<T> Drop for UpgradableIo<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            if self.owner != this_thread() {
                // Not on its core's thread: the core drops it (on its next turn), never
                // here; made outside a runtime, it is leaked rather than dropped here.
                match &self.home {
                    Some((core, send_back)) => send_back(core, inner),
                    None => std::mem::forget(inner),
                }
            }
        }
    }
}

impl<T: Read + Unpin> Read for UpgradableIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().inner_mut()?.poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for UpgradableIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner_mut()?.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner_mut()?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        // Only asked of the stream on its own thread; elsewhere every write fails anyway.
        self.owner == this_thread() && self.inner.as_ref().is_some_and(Write::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner_mut()?.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner_mut()?.poll_shutdown(cx)
    }
}

/// Any hyper [`Read`] + [`Write`] (an [`Upgraded`](hyper::upgrade::Upgraded) connection
/// above all) through the `futures::io` traits ([`AsyncRead`](futures::io::AsyncRead),
/// [`AsyncWrite`](futures::io::AsyncWrite)) and, with the `tokio-io` feature, tokio's
/// [`AsyncRead`](tokio::io::AsyncRead) and [`AsyncWrite`](tokio::io::AsyncWrite): what
/// `tokio-tungstenite`'s `WebSocketStream::from_raw_socket` (tokio's) or
/// `async-tungstenite`'s (futures') take. The counterpart of [`HyperIo`](super::HyperIo),
/// and of hyper-util's `TokioIo` without its tokio runtime.
///
/// Closing (`poll_close`, `poll_shutdown`) is hyper's `poll_shutdown`: the write side
/// ends.
#[derive(Debug)]
pub struct UpgradedIo<T> {
    inner: T,
}

impl<T> UpgradedIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> UpgradedIo<T> {
        UpgradedIo { inner }
    }

    /// The wrapped connection.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The wrapped connection, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the connection.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: Read + Unpin> UpgradedIo<T> {
    /// Reads into `dst` (initialized bytes: no `unsafe` needed), returning how many.
    fn read_into(&mut self, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut buf = ReadBuf::new(dst);
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf.unfilled()))?;
        Poll::Ready(Ok(buf.filled().len()))
    }
}

impl<T: Read + Unpin> futures::io::AsyncRead for UpgradedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().read_into(cx, buf)
    }
}

impl<T: Write + Unpin> futures::io::AsyncWrite for UpgradedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(feature = "tokio-io")]
impl<T: Read + Unpin> tokio::io::AsyncRead for UpgradedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        // `initialize_unfilled` zeroes only what was never initialized (once per buffer),
        // which keeps this safe code.
        let n = ready!(self.get_mut().read_into(cx, buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "tokio-io")]
impl<T: Write + Unpin> tokio::io::AsyncWrite for UpgradedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
