//! `UdpSocket`: `socket(2)`, `bind(2)`, `connect(2)` and options through `socket2`;
//! datagrams through the ring.
//!
//! See `udp(7)`. `send_to`/`recv_from` are `IORING_OP_SENDMSG`/`IORING_OP_RECVMSG` (the op
//! owns a boxed `msghdr`, its `iovec` and the address); `send`/`recv` on a connected socket
//! are `IORING_OP_SEND`/`IORING_OP_RECV`. `connect` is a plain system call: for UDP it only
//! sets the default peer (and filters what `recv` gets), it never waits.
//!
//! Datagram semantics: a send sends the whole buffer as one datagram (or fails, e.g.
//! `EMSGSIZE`); zero-length datagrams are real and are sent. A receive takes one datagram;
//! if it is longer than the buffer, the rest is discarded and the count is the bytes
//! written, as std's `recv_from` does. The truncation is not reported: pass a buffer one
//! byte longer than the longest datagram you expect to detect it.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};

use runtime::buf::{IoBuf, IoBufMut};
use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, Protocol, SockRef, Socket, Type};

use crate::ops;
use crate::sys::inet_addr;
use crate::sys::resolve::{each_addr, no_addresses, resolve, ToSocketAddrs};
use crate::sys::sockaddr::SockAddrBuf;

/// A UDP socket.
///
/// The socket is closed once, when it and every op still in the kernel for it are dropped.
/// Several ops may be in flight at once (a receive and a send from two tasks, say), as the
/// methods take `&self`. The type is `!Send`: it stays on the core that made it.
///
/// # Examples
///
/// ```
/// use corering_net::UdpSocket;
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let a = UdpSocket::bind("127.0.0.1:0")?;
///     let b = UdpSocket::bind("127.0.0.1:0")?;
///     // One datagram, to an address; the buffer comes back with the count.
///     let (res, _) = a.send_to(b"ping".to_vec(), b.local_addr()?).await;
///     assert_eq!(res?, 4);
///     let (res, buf) = b.recv_from(vec![0u8; 64]).await;
///     let (n, from) = res?;
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    fd: SharedFd,
}

impl UdpSocket {
    /// Binds a socket to `addr` (port 0: the kernel picks one).
    ///
    /// Synchronous: a numeric address is parsed without a system call, but a host name is
    /// resolved on the calling thread, blocking the core (see the [crate] documentation);
    /// each resolved address is tried in turn. `SO_REUSEADDR` is not set, so a port in use
    /// gives `AddrInUse`. Errors say what failed and keep their kind.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        each_addr(addr, |a| {
            let bind = || -> io::Result<OwnedFd> {
                let socket = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
                socket.bind(&a.into())?;
                Ok(socket.into())
            };
            let fd = bind().map_err(|e| error_context(e, format!("bind to {a}")))?;
            Ok(UdpSocket {
                fd: SharedFd::new(fd),
            })
        })
    }

    /// Sets the socket's default peer: `send` goes there and `recv` takes only its
    /// datagrams. A plain `connect(2)`, which for UDP never waits.
    ///
    /// A host name is resolved on the runtime's blocking pool, a numeric address on the core
    /// (see the [crate] documentation). Each resolved address is tried in turn; errors name
    /// the address and keep their kind.
    ///
    /// # Panics
    /// For a host name, outside a runtime.
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let mut last = None;
        for a in resolve(&addr).await? {
            match SockRef::from(&self.fd).connect(&a.into()) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(error_context(e, format!("connect to {a}"))),
            }
        }
        Err(last.unwrap_or_else(|| no_addresses("address")))
    }

    /// Sends `buf`'s initialised bytes as one datagram to `addr` and gives the buffer back
    /// with the count.
    ///
    /// A host name is resolved on the runtime's blocking pool, a numeric address on the core
    /// (see the [crate] documentation). One address is used: the first of the socket's family
    /// (IPv4 or IPv6), else the first, so `"localhost:port"` reaches an IPv4 peer from an
    /// IPv4 socket even where `localhost` resolves to `::1` first. A malformed address gives
    /// `InvalidInput`, a name that does not resolve an error naming it.
    ///
    /// # Panics
    /// For a host name, outside a runtime.
    pub async fn send_to<B: IoBuf>(
        &self,
        buf: B,
        addr: impl ToSocketAddrs,
    ) -> (io::Result<usize>, B) {
        let addrs = match resolve(&addr).await {
            Ok(addrs) => addrs,
            Err(e) => return (Err(e), buf),
        };
        let addr = if addrs.len() == 1 {
            addrs.pick_for(None)
        } else {
            addrs.pick_for(self.local_addr().ok())
        };
        match addr {
            Some(addr) => ops::send_msg(&self.fd, buf, *SockAddrBuf::new(addr)).await,
            None => (Err(no_addresses("address")), buf),
        }
    }

    /// Receives one datagram into `buf` (up to its total length: a `Vec`'s capacity) and
    /// gives the buffer back with the count and the sender's address.
    ///
    /// A datagram longer than the buffer is truncated to fit; the rest is discarded (see the
    /// module documentation).
    pub async fn recv_from<B: IoBufMut>(&self, buf: B) -> (io::Result<(usize, SocketAddr)>, B) {
        ops::recv_msg(&self.fd, buf).await
    }

    /// Sends `buf`'s initialised bytes as one datagram to the peer set by
    /// [`connect`](UdpSocket::connect); `EDESTADDRREQ` if there is none.
    pub async fn send<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        ops::send(&self.fd, buf).await
    }

    /// Receives one datagram from the peer set by [`connect`](UdpSocket::connect) into
    /// `buf`, truncated to fit as [`recv_from`](UdpSocket::recv_from) does.
    ///
    /// An ICMP error for an earlier send to the peer (a closed port) may be reported here,
    /// as `ConnectionRefused`.
    pub async fn recv<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        ops::recv(&self.fd, buf).await
    }

    /// The address the socket is bound to (with the port the kernel picked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).local_addr())
    }

    /// The peer set by [`connect`](UdpSocket::connect); `NotConnected` if there is none.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).peer_addr())
    }

    /// Sets `SO_BROADCAST`: allow sending to a broadcast address.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        SockRef::from(&self.fd).set_broadcast(on)
    }

    /// Whether `SO_BROADCAST` is set.
    pub fn broadcast(&self) -> io::Result<bool> {
        SockRef::from(&self.fd).broadcast()
    }

    /// Sets the IPv4 time-to-live (`IP_TTL`) of datagrams sent.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        SockRef::from(&self.fd).set_ttl_v4(ttl)
    }

    /// The IPv4 time-to-live (`IP_TTL`) of datagrams sent.
    pub fn ttl(&self) -> io::Result<u32> {
        SockRef::from(&self.fd).ttl_v4()
    }

    /// Wraps a std socket; it is set to blocking mode, which the ring expects.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(false)?;
        Ok(UdpSocket {
            fd: SharedFd::new(socket.into()),
        })
    }

    /// The std socket (in blocking mode). If a dropped op is still in the kernel, this is a
    /// duplicate of the fd (`F_DUPFD_CLOEXEC`), which can fail.
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        Ok(crate::sys::into_blocking(self.fd)?.into())
    }
}

crate::sys::impl_as_fd!(impl[] UdpSocket);

impl IntoRawFd for UdpSocket {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](UdpSocket::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match crate::sys::into_blocking(self.fd) {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!("UdpSocket::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}
