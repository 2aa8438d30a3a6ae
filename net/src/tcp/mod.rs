//! TCP: a listener with single and multishot accept, and connected streams.
//!
//! See `tcp(7)`. Sockets are made with `socket2` (`SOCK_CLOEXEC`), left in blocking mode (the
//! ring does not need `O_NONBLOCK`, and `into_std` hands back what std expects), and do all
//! their I/O through the ring. Every type here holds its fd in an `Rc`, so it stays on the
//! core that made it: it is `!Send`. Accepted connections are direct descriptors (indexes in
//! the core ring's fixed-file table) where the kernel allows: see [`TcpStream`].

mod incoming;
mod listener;
mod split;
mod stream;

pub use incoming::{Incoming, IncomingWithAddr};
pub use listener::{ListenOptions, TcpListener};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::TcpStream;

use std::io;
use std::net::SocketAddr;

use socket2::{SockAddr, SockRef};

use crate::error::context;
use crate::fd::SharedFd;

/// A socket address from `getsockname`/`getpeername`, as a `SocketAddr` (also for UDP).
pub(crate) fn inet_addr(addr: io::Result<SockAddr>) -> io::Result<SocketAddr> {
    addr?.as_socket().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not an IPv4 or IPv6 socket address",
        )
    })
}

/// Runs `f` on a [`SockRef`] of `fd`'s regular fd: for a direct descriptor, the one
/// installed for it (installed on first use: see [`TcpStream`]'s documentation). An install
/// that fails is an error naming `what` was asked.
pub(crate) fn with_sock<R>(
    fd: &SharedFd,
    what: &str,
    f: impl FnOnce(SockRef<'_>) -> io::Result<R>,
) -> io::Result<R> {
    let borrowed = fd.try_as_fd().map_err(|e| context(e, what))?;
    f(SockRef::from(&borrowed))
}

/// The peer's address of the TCP socket `fd` (`getpeername(2)`; see [`with_sock`]).
pub(crate) fn peer_addr_of(fd: &SharedFd) -> io::Result<SocketAddr> {
    with_sock(fd, "peer_addr", |s| inet_addr(s.peer_addr()))
}

/// The local address of the TCP socket `fd` (`getsockname(2)`; see [`with_sock`]).
pub(crate) fn local_addr_of(fd: &SharedFd) -> io::Result<SocketAddr> {
    with_sock(fd, "local_addr", |s| inet_addr(s.local_addr()))
}
