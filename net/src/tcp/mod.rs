//! TCP: a listener with single and multishot accept, and connected streams.
//!
//! See `tcp(7)`. Sockets are made with `socket2` (`SOCK_CLOEXEC`), left in blocking mode (the
//! ring does not need `O_NONBLOCK`, and `into_std` hands back what std expects), and do all
//! their I/O through the ring. Every type here holds its fd in an `Rc`, so it stays on the
//! core that made it: it is `!Send`.

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

use socket2::SockAddr;

/// A socket address from `getsockname`/`getpeername`, as a `SocketAddr` (also for UDP).
pub(crate) fn inet_addr(addr: io::Result<SockAddr>) -> io::Result<SocketAddr> {
    addr?.as_socket().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not an IPv4 or IPv6 socket address",
        )
    })
}
