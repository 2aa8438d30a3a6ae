//! The address families of a stream socket, [`Tcp`] and [`Unix`], and [`Family`]: all that
//! the one stream type needs to know about them. Everything else a family has of its own
//! (connecting, its socket options, its std type) is an `impl` block in `tcp/` or `unix/`.

use std::fmt;
use std::io;

use runtime::ext::SharedFd;

use crate::sys::{inet_addr, with_sock};

/// The address family of a [`StreamSocket`](super::StreamSocket): [`Tcp`] or [`Unix`].
///
/// Sealed: this crate's two families are the only ones.
pub trait Family: sealed::Sealed + fmt::Debug + 'static {
    /// A socket address of the family: [`std::net::SocketAddr`] for TCP,
    /// [`unix::SocketAddr`](crate::unix::SocketAddr) for Unix.
    type Addr: fmt::Debug + Clone;
}

/// TCP over IPv4 or IPv6 (`tcp(7)`): [`TcpStream`](crate::TcpStream) is
/// `StreamSocket<Tcp>`.
#[derive(Debug)]
pub enum Tcp {}

/// Unix domain stream sockets (`unix(7)`): [`UnixStream`](crate::UnixStream) is
/// `StreamSocket<Unix>`.
#[derive(Debug)]
pub enum Unix {}

impl Family for Tcp {
    type Addr = std::net::SocketAddr;
}

impl Family for Unix {
    type Addr = crate::unix::SocketAddr;
}

/// What differs between the families, out of the public API.
pub(crate) mod sealed {
    use super::*;

    /// The family's part of the stream code (see [`Family`]).
    pub trait Sealed {
        /// The family's name in messages (`"TCP"`).
        const NAME: &'static str;
        /// The stream type's public name, for `Debug` and messages (`"TcpStream"`).
        const STREAM: &'static str;
        /// Whether a listener's `incoming()` accepts into the core's fixed-file table where
        /// the core can (TCP); Unix streams keep regular fds (`SCM_RIGHTS`, peer
        /// credentials and the like want them).
        const ACCEPT_DIRECT: bool;

        /// The socket's own address (`getsockname(2)`). On a direct descriptor, installs a
        /// regular fd on first use.
        fn local_addr(fd: &SharedFd) -> io::Result<<Self as Family>::Addr>
        where
            Self: Family;

        /// The connected peer's address (`getpeername(2)`); `NotConnected` if there is
        /// none. On a direct descriptor, installs a regular fd on first use.
        fn peer_addr(fd: &SharedFd) -> io::Result<<Self as Family>::Addr>
        where
            Self: Family;
    }

    impl Sealed for Tcp {
        const NAME: &'static str = "TCP";
        const STREAM: &'static str = "TcpStream";
        const ACCEPT_DIRECT: bool = true;

        fn local_addr(fd: &SharedFd) -> io::Result<std::net::SocketAddr> {
            with_sock(fd, "local_addr", |s| inet_addr(s.local_addr()))
        }

        fn peer_addr(fd: &SharedFd) -> io::Result<std::net::SocketAddr> {
            with_sock(fd, "peer_addr", |s| inet_addr(s.peer_addr()))
        }
    }

    impl Sealed for Unix {
        const NAME: &'static str = "Unix";
        const STREAM: &'static str = "UnixStream";
        const ACCEPT_DIRECT: bool = false;

        fn local_addr(fd: &SharedFd) -> io::Result<crate::unix::SocketAddr> {
            crate::unix::local_addr(fd)
        }

        fn peer_addr(fd: &SharedFd) -> io::Result<crate::unix::SocketAddr> {
            crate::unix::peer_addr(fd)
        }
    }
}
