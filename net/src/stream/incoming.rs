//! [`Incoming`]: accepted connections as a `Stream`, from one multishot `IORING_OP_ACCEPT`,
//! for a listener of either family; [`IncomingWithAddr`] adds each peer's address.
//!
//! A thin wrapper: the accepting, re-arming, error handling and back-off are
//! [`AcceptStream`]'s; this file turns its fds into [`StreamSocket`]s.

use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::stream::{FusedStream, Stream};
use runtime::ext::{error_context, SharedFd};

use super::accept::AcceptStream;
use super::{Family, StreamSocket};

/// A stream of connections accepted by one multishot accept; made by
/// [`TcpListener::incoming`](crate::TcpListener::incoming) (as
/// [`tcp::Incoming`](crate::tcp::Incoming)) and
/// [`UnixListener::incoming`](crate::UnixListener::incoming) (as
/// [`unix::Incoming`](crate::unix::Incoming)).
///
/// TCP connections are accepted as direct descriptors where the core can (the default on
/// Linux 6.8 and newer; see [`TcpStream`](crate::TcpStream)'s documentation): into the
/// ring's fixed-file table, holding no fd of the process until one is asked for. With
/// [`Builder::direct_descriptors(false)`](runtime::Builder::direct_descriptors), or on an
/// older kernel, they are regular fds, as Unix connections always are.
///
/// It never ends while the listener can accept. Errors: `EMFILE`, `ENFILE`, `ENOBUFS` and
/// `ENOMEM` are yielded and the stream goes on after a 10 ms back-off; `EBADF`, `EINVAL`,
/// `ENOTSOCK`, `EOPNOTSUPP` and `ECANCELED` are yielded and end it; others are yielded and
/// it goes on. `ENFILE` is also a full fixed-file table (see
/// [`Builder::fixed_files`](runtime::Builder::fixed_files)): the kernel closes that
/// connection, whose peer sees a reset; the next ones are accepted once slots are free
/// again. Dropping it cancels the accept; connections accepted meanwhile are closed.
/// Peers' addresses are not given (the multishot accept has none); use the listener's
/// `incoming_with_addr` for `(stream, address)` items, or `peer_addr` on the ones wanted.
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Incoming<F: Family> {
    inner: AcceptStream,
    family: PhantomData<fn() -> F>,
}

impl<F: Family> Incoming<F> {
    /// Accepts on `listener`; into the fixed-file table where the family and the core
    /// allow and `direct` asks for it.
    pub(crate) fn new(listener: SharedFd, direct: bool) -> Incoming<F> {
        Incoming {
            inner: AcceptStream::new(listener, direct && F::ACCEPT_DIRECT),
            family: PhantomData,
        }
    }
}

impl<F: Family> Stream for Incoming<F> {
    type Item = io::Result<StreamSocket<F>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.get_mut().inner.poll_next_fd(cx);
        next.map(|item| item.map(|res| res.map(StreamSocket::from_shared)))
    }
}

impl<F: Family> FusedStream for Incoming<F> {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// Accepted connections with their peers' addresses, as tokio's `accept()` gives them;
/// made by [`TcpListener::incoming_with_addr`](crate::TcpListener::incoming_with_addr) and
/// [`UnixListener::incoming_with_addr`](crate::UnixListener::incoming_with_addr).
///
/// An [`Incoming`] (one multishot accept, the same errors and back-off) that asks each
/// accepted socket for its peer with `getpeername(2)`: one plain system call per
/// connection, which never blocks (the multishot accept cannot return addresses). That call
/// needs a regular fd, so these connections are accepted as regular fds, never as direct
/// descriptors. A connection whose peer is already gone when asked (`ENOTCONN`) is closed
/// and its error yielded, with context; the stream goes on.
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct IncomingWithAddr<F: Family> {
    inner: Incoming<F>,
}

impl<F: Family> IncomingWithAddr<F> {
    /// Accepts on `listener`, as regular fds.
    pub(crate) fn new(listener: SharedFd) -> IncomingWithAddr<F> {
        IncomingWithAddr {
            inner: Incoming::new(listener, false),
        }
    }
}

impl<F: Family> Stream for IncomingWithAddr<F> {
    type Item = io::Result<(StreamSocket<F>, F::Addr)>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.get_mut().inner).poll_next(cx);
        next.map(|item| {
            item.map(|res| {
                let stream = res?;
                let peer = stream
                    .peer_addr()
                    .map_err(|e| error_context(e, "peer address of an accepted connection"))?;
                Ok((stream, peer))
            })
        })
    }
}

impl<F: Family> FusedStream for IncomingWithAddr<F> {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}
