//! `UnixDatagram`: a Unix datagram socket; `send_to`/`recv_from` through
//! `IORING_OP_SENDMSG`/`IORING_OP_RECVMSG`, `send`/`recv` through `IORING_OP_SEND`/`RECV`.
//!
//! Setup (`socket(2)`, `bind(2)`, `socketpair(2)`, and `connect(2)`, which for a datagram
//! socket only sets the default peer and never waits) is plain system calls. Datagram
//! semantics are UDP's (see `crate::udp`): one send is one datagram, zero-length ones too; a
//! datagram longer than the buffer is truncated to fit and the rest discarded, without
//! report. Unlike UDP, Unix datagrams are reliable and ordered: a send to a full receive
//! queue waits until there is room.

use std::io;
use std::net::Shutdown;
use std::os::fd::{IntoRawFd, RawFd};
use std::path::Path;

use runtime::buf::{IoBuf, IoBufMut};
use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, SockRef, Socket, Type};

use crate::ops;
use crate::unix::SocketAddr;

/// A Unix datagram socket, bound to a path, an abstract name, or unbound.
///
/// The socket is closed once, when it and every op still in the kernel for it are dropped.
/// Several ops may be in flight at once, as the methods take `&self`. A socket bound to a
/// path leaves its file behind when dropped.
#[derive(Debug)]
pub struct UnixDatagram {
    fd: SharedFd,
}

impl UnixDatagram {
    fn new_socket() -> io::Result<Socket> {
        Socket::new(Domain::UNIX, Type::DGRAM, None)
    }

    fn from_socket(socket: Socket) -> UnixDatagram {
        UnixDatagram {
            fd: SharedFd::new(socket.into()),
        }
    }

    /// A socket bound to the filesystem path `path`, creating the socket file.
    ///
    /// A bad path is `InvalidInput` (see [`SocketAddr::from_pathname`]); an existing file
    /// is `AddrInUse`. Errors name the path and keep their kind.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        UnixDatagram::bind_addr(&SocketAddr::from_pathname(path)?)
    }

    /// A socket bound to `addr`: a path or an abstract name.
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixDatagram> {
        let bind = || -> io::Result<Socket> {
            let socket = UnixDatagram::new_socket()?;
            socket.bind(addr.as_sockaddr())?;
            Ok(socket)
        };
        let socket = bind().map_err(|e| error_context(e, format!("bind to {addr}")))?;
        Ok(UnixDatagram::from_socket(socket))
    }

    /// A socket bound to no address: it can send, and receive replies only once connected
    /// (its datagrams arrive from an unnamed sender).
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram::from_socket(UnixDatagram::new_socket()?))
    }

    /// A pair of connected, unnamed datagram sockets (`socketpair(2)`).
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = Socket::pair(Domain::UNIX, Type::DGRAM, None)?;
        Ok((UnixDatagram::from_socket(a), UnixDatagram::from_socket(b)))
    }

    /// Sets the default peer to the socket at `path`: `send` goes there and `recv` takes
    /// only its datagrams. A plain `connect(2)`, which never waits.
    ///
    /// Errors name the path and keep their kind (`NotFound`, `ConnectionRefused`, ...).
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.connect_addr(&SocketAddr::from_pathname(path)?)
    }

    /// Sets the default peer to `addr`: a path or an abstract name.
    pub fn connect_addr(&self, addr: &SocketAddr) -> io::Result<()> {
        SockRef::from(&self.fd)
            .connect(addr.as_sockaddr())
            .map_err(|e| error_context(e, format!("connect to {addr}")))
    }

    /// Sends `buf`'s initialised bytes as one datagram to the socket at `path` and gives
    /// the buffer back with the count. A bad path is `InvalidInput`, before any system call.
    pub async fn send_to<B: IoBuf>(
        &self,
        buf: B,
        path: impl AsRef<Path>,
    ) -> (io::Result<usize>, B) {
        match SocketAddr::from_pathname(path) {
            Ok(addr) => self.send_to_addr(buf, &addr).await,
            Err(e) => (Err(e), buf),
        }
    }

    /// Sends `buf`'s initialised bytes as one datagram to `addr`: a path or an abstract name.
    pub async fn send_to_addr<B: IoBuf>(
        &self,
        buf: B,
        addr: &SocketAddr,
    ) -> (io::Result<usize>, B) {
        ops::send_msg(&self.fd, buf, *addr.to_buf()).await
    }

    /// Receives one datagram into `buf` (up to its total length: a `Vec`'s capacity) and
    /// gives the buffer back with the count and the sender's address (unnamed if the sender
    /// is not bound). A longer datagram is truncated to fit; the rest is discarded.
    pub async fn recv_from<B: IoBufMut>(&self, buf: B) -> (io::Result<(usize, SocketAddr)>, B) {
        ops::recv_msg(&self.fd, buf).await
    }

    /// Sends `buf`'s initialised bytes as one datagram to the connected peer; `ENOTCONN` if
    /// there is none.
    pub async fn send<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        ops::send(&self.fd, buf).await
    }

    /// Receives one datagram into `buf`, truncated to fit as
    /// [`recv_from`](UnixDatagram::recv_from) does.
    pub async fn recv<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        ops::recv(&self.fd, buf).await
    }

    /// Shuts down the read direction, the write direction or both: a `recv` waiting on a
    /// socket whose read side is shut down returns `Ok(0)`.
    pub async fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        ops::shutdown(&self.fd, how).await
    }

    /// The socket's own address (unnamed unless bound).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        super::local_addr(&self.fd)
    }

    /// The connected peer's address; `NotConnected` if there is none.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        super::peer_addr(&self.fd)
    }

    /// Wraps a std socket; it is set to blocking mode, which the ring expects.
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(false)?;
        Ok(UnixDatagram {
            fd: SharedFd::new(socket.into()),
        })
    }

    /// The std socket (in blocking mode). If a dropped op is still in the kernel, this is a
    /// duplicate of the fd (`F_DUPFD_CLOEXEC`), which can fail.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        Ok(crate::sys::into_blocking(self.fd)?.into())
    }
}

crate::sys::impl_as_fd!(impl[] UnixDatagram);

impl IntoRawFd for UnixDatagram {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](UnixDatagram::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match crate::sys::into_blocking(self.fd) {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!("UnixDatagram::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}
