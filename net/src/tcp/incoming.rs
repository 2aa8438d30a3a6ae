//! `Incoming`: accepted TCP connections as a `Stream`, from one multishot `IORING_OP_ACCEPT`.
//!
//! A thin wrapper: the accepting, re-arming, error handling and back-off are the crate's
//! shared `AcceptStream` (also behind `UnixListener::incoming`); this file turns its fds into
//! [`TcpStream`]s, and `IncomingWithAddr` adds each peer's address.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::stream::{FusedStream, Stream};

use crate::accept_stream::AcceptStream;
use crate::error::context;
use crate::fd::SharedFd;
use crate::tcp::TcpStream;

/// A stream of connections accepted by one multishot accept; made by
/// [`TcpListener::incoming`](crate::TcpListener::incoming).
///
/// Connections are accepted as direct descriptors where the core can (the default on Linux
/// 6.8 and newer; see [`TcpStream`]'s documentation): into the ring's fixed-file table,
/// holding no fd of the process until one is asked for. With
/// [`Builder::direct_descriptors(false)`](runtime::Builder::direct_descriptors), or on an
/// older kernel, they are regular fds.
///
/// It never ends while the listener can accept. Errors: `EMFILE`, `ENFILE`, `ENOBUFS` and
/// `ENOMEM` are yielded and the stream goes on after a 10 ms back-off; `EBADF`, `EINVAL`,
/// `ENOTSOCK`, `EOPNOTSUPP` and `ECANCELED` are yielded and end it; others are yielded and
/// it goes on. `ENFILE` is also a full fixed-file table (see
/// [`Builder::fixed_files`](runtime::Builder::fixed_files)): the kernel closes that
/// connection, whose peer sees a reset; the next ones are accepted once slots are free
/// again. Dropping it cancels the accept; connections accepted meanwhile are closed.
/// Peers' addresses are not given (the multishot accept has none); use
/// [`TcpListener::incoming_with_addr`](crate::TcpListener::incoming_with_addr) for
/// `(TcpStream, SocketAddr)` items, or [`TcpStream::peer_addr`] on the ones wanted.
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Incoming {
    inner: AcceptStream,
}

impl Incoming {
    /// Accepts on `listener`; into the fixed-file table with `direct`, where the core can.
    pub(crate) fn new(listener: SharedFd, direct: bool) -> Incoming {
        Incoming {
            inner: AcceptStream::new(listener, direct),
        }
    }
}

impl Stream for Incoming {
    type Item = io::Result<TcpStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.get_mut().inner.poll_next_fd(cx);
        next.map(|item| item.map(|res| res.map(TcpStream::from_shared)))
    }
}

impl FusedStream for Incoming {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// Accepted TCP connections with their peers' addresses, as tokio's `accept()` gives them;
/// made by [`TcpListener::incoming_with_addr`](crate::TcpListener::incoming_with_addr).
///
/// An [`Incoming`] (one multishot accept, the same errors and back-off) that asks each
/// accepted socket for its peer with `getpeername(2)`: one plain system call per connection,
/// which never blocks (the multishot accept cannot return addresses). That call needs a
/// regular fd, so these connections are accepted as regular fds, never as direct
/// descriptors. A connection whose
/// peer is already gone when asked (`ENOTCONN`) is closed and its error yielded, with
/// context; the stream goes on.
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct IncomingWithAddr {
    inner: Incoming,
}

impl IncomingWithAddr {
    pub(crate) fn new(inner: Incoming) -> IncomingWithAddr {
        IncomingWithAddr { inner }
    }
}

impl Stream for IncomingWithAddr {
    type Item = io::Result<(TcpStream, SocketAddr)>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.get_mut().inner).poll_next(cx);
        next.map(|item| {
            item.map(|res| {
                let stream = res?;
                let peer = stream
                    .peer_addr()
                    .map_err(|e| context(e, "peer address of an accepted connection"))?;
                Ok((stream, peer))
            })
        })
    }
}

impl FusedStream for IncomingWithAddr {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}
