//! Unix domain sockets: a listener with single and multishot accept, connected streams,
//! and datagram sockets. See `unix(7)`.
//!
//! Like the TCP types, sockets are made with `socket2` (`SOCK_CLOEXEC`), left in blocking
//! mode, and do all their I/O through the ring; each holds its fd in an `Rc`, so it is
//! `!Send` and stays on the core that made it. Streams share the TCP streams' I/O code
//! (`io::owned` for owned buffers, `io::poll` for the `futures::io` traits); the listener
//! shares TCP's multishot accept (`AcceptStream`); datagrams use `SENDMSG`/`RECVMSG` as UDP
//! does.
//!
//! Addresses are [`SocketAddr`]s: paths are checked before any system call (an empty path,
//! a NUL byte or more than 107 bytes is `InvalidInput`, naming the path); abstract names
//! (Linux) are supported through [`SocketAddr::from_abstract_name`] and the `*_addr`
//! constructors. Binding to a path creates the socket file; dropping the socket does not
//! remove it (as in std): remove it yourself when done.

mod addr;
mod datagram;
mod listener;
mod split;
mod stream;

pub use addr::SocketAddr;
pub use datagram::UnixDatagram;
pub use listener::{Incoming, UnixListener};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::UnixStream;

use std::io;

use socket2::SockRef;

use crate::fd::SharedFd;

/// The socket's own address (`getsockname(2)`).
fn local_addr(fd: &SharedFd) -> io::Result<SocketAddr> {
    SocketAddr::from_sockaddr(SockRef::from(fd).local_addr()?)
}

/// The connected peer's address (`getpeername(2)`); `NotConnected` if there is none.
fn peer_addr(fd: &SharedFd) -> io::Result<SocketAddr> {
    SocketAddr::from_sockaddr(SockRef::from(fd).peer_addr()?)
}

pub(crate) use crate::io::{impl_as_fd, impl_async_read, impl_async_write};
