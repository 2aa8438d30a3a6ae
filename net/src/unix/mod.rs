//! Unix domain sockets: a listener with single and multishot accept, connected streams,
//! and datagram sockets. See `unix(7)`.
//!
//! Like the TCP types, sockets are made with `socket2` (`SOCK_CLOEXEC`), left in blocking
//! mode, and do all their I/O through the ring; each holds its fd in an `Rc`, so it is
//! `!Send` and stays on the core that made it. The stream and its halves are the crate's
//! one stream type for the [`Unix`] family (see [`crate::stream`]), the same code as
//! TCP's; the listener shares TCP's multishot accept; datagrams use `SENDMSG`/`RECVMSG` as
//! UDP does.
//!
//! Addresses are [`SocketAddr`]s: paths are checked before any system call (an empty path,
//! a NUL byte or more than 107 bytes is `InvalidInput`, naming the path); abstract names
//! (Linux) are supported through [`SocketAddr::from_abstract_name`] and the `*_addr`
//! constructors. Binding to a path creates the socket file; dropping the socket does not
//! remove it (as in std): remove it yourself when done.

mod addr;
mod datagram;
mod listener;
mod stream;

pub use addr::SocketAddr;
pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use stream::UnixStream;

use std::io;

use runtime::ext::SharedFd;

use crate::stream::{self as generic, Unix};
use crate::sys::with_sock;

/// The read half of a [`UnixStream`], from [`UnixStream::into_split`]: its read methods
/// (`read_chunk`, `read_owned`, ...) and read traits.
pub type OwnedReadHalf = generic::OwnedReadHalf<Unix>;

/// The write half of a [`UnixStream`], from [`UnixStream::into_split`]: its write methods
/// (`write_chunk`, `write_all_owned`, ...) and `AsyncWrite`.
pub type OwnedWriteHalf = generic::OwnedWriteHalf<Unix>;

/// The read half of a [`UnixStream`] borrowed by [`UnixStream::split`]: the read traits,
/// on the stream's read state.
pub type ReadHalf<'a> = generic::ReadHalf<'a, Unix>;

/// The write half of a [`UnixStream`] borrowed by [`UnixStream::split`]: `AsyncWrite`, on
/// the stream's write state.
pub type WriteHalf<'a> = generic::WriteHalf<'a, Unix>;

/// The halves given to [`OwnedReadHalf::reunite`](generic::OwnedReadHalf::reunite) were
/// split from different Unix streams; both are handed back (`err.0`, `err.1`).
pub type ReuniteError = generic::ReuniteError<Unix>;

/// Accepted Unix connections, from one multishot accept: [`UnixListener::incoming`].
pub type Incoming = generic::Incoming<Unix>;

/// Accepted Unix connections with their peers' addresses:
/// [`UnixListener::incoming_with_addr`].
pub type IncomingWithAddr = generic::IncomingWithAddr<Unix>;

/// The socket's own address (`getsockname(2)`).
pub(crate) fn local_addr(fd: &SharedFd) -> io::Result<SocketAddr> {
    with_sock(fd, "local_addr", |s| {
        SocketAddr::from_sockaddr(s.local_addr()?)
    })
}

/// The connected peer's address (`getpeername(2)`); `NotConnected` if there is none.
pub(crate) fn peer_addr(fd: &SharedFd) -> io::Result<SocketAddr> {
    with_sock(fd, "peer_addr", |s| {
        SocketAddr::from_sockaddr(s.peer_addr()?)
    })
}
