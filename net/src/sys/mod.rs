//! What every socket of this crate is made of, below its I/O: the fd, the addresses the
//! kernel reads and writes, and name resolution.
//!
//! - The fd is the runtime's [`SharedFd`](runtime::ext::SharedFd), shared by a socket and
//!   the ops it has in flight (an op holds a clone in its data until its final CQE, so the
//!   fd is closed, and its number reused, only after the kernel is done with it). A direct
//!   descriptor installs a regular fd on first use where one is needed ([`with_sock`],
//!   [`impl_as_fd!`]).
//! - `sockaddr`: [`SockAddrBuf`](sockaddr::SockAddrBuf), the boxed `sockaddr_storage`
//!   that `connect(2)`, `accept4(2)`, `sendmsg(2)` and `recvmsg(2)` read or write.
//! - `resolve`: [`ToSocketAddrs`](crate::ToSocketAddrs) and [`lookup_host`](crate::lookup_host).
//!
//! Setup errors get context with the runtime's [`context`](runtime::ext::error_context);
//! data-path errors (read, write, accept) are returned unwrapped.

pub(crate) mod resolve;
pub(crate) mod sockaddr;

use std::io;
use std::net::SocketAddr;

use runtime::ext::{error_context, SharedFd};
use socket2::{SockAddr, SockRef};

/// The socket's own regular fd, out of the runtime, in blocking mode (what `into_std` and
/// `into_raw_fd` promise on both backends: the readiness backend made it non-blocking):
/// see [`SharedFd::into_owned`] for when it is a duplicate.
pub(crate) fn into_blocking(fd: SharedFd) -> io::Result<std::os::fd::OwnedFd> {
    let fd = fd.into_owned()?;
    SockRef::from(&fd).set_nonblocking(false)?;
    Ok(fd)
}

/// A socket address from `getsockname`/`getpeername`, as a `SocketAddr` (TCP and UDP).
pub(crate) fn inet_addr(addr: io::Result<SockAddr>) -> io::Result<SocketAddr> {
    addr?.as_socket().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not an IPv4 or IPv6 socket address",
        )
    })
}

/// Runs `f` on a [`SockRef`] of `fd`'s regular fd: for a direct descriptor, the one
/// installed for it (installed on first use: see [`TcpStream`](crate::TcpStream)'s
/// documentation). An install that fails is an error naming `what` was asked.
pub(crate) fn with_sock<R>(
    fd: &SharedFd,
    what: &str,
    f: impl FnOnce(SockRef<'_>) -> io::Result<R>,
) -> io::Result<R> {
    let borrowed = fd.try_as_fd().map_err(|e| error_context(e, what))?;
    f(SockRef::from(&borrowed))
}

/// `AsRawFd` and `AsFd` for types with a `fd: SharedFd` field (or a `&SharedFd` one), each
/// written `impl[generics] Type`. On a direct descriptor both install a regular fd on first
/// use (see [`SharedFd::try_as_fd`](runtime::ext::SharedFd::try_as_fd)).
macro_rules! impl_as_fd {
    ($(impl[$($gen:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($gen)*> std::os::fd::AsRawFd for $ty {
            /// The socket's fd. On a direct descriptor, the regular fd installed for it
            /// (installed on first use); `-1` if that fails (any call given it fails with
            /// `EBADF`).
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                self.fd.raw()
            }
        }

        impl<$($gen)*> std::os::fd::AsFd for $ty {
            /// The socket's fd, borrowed. On a direct descriptor, the regular fd installed
            /// for it (installed on first use).
            ///
            /// # Panics
            /// If a direct descriptor's fd cannot be installed (out of fds): `try_as_fd`
            /// gives that error instead.
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.fd)
            }
        }
    )*};
}

pub(crate) use impl_as_fd;
