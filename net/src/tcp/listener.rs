//! `TcpListener`: `socket(2)`, `bind(2)` and `listen(2)` through `socket2`, then accepts
//! through the ring (`accept4(2)`, one op per call, or one multishot op for a stream).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};

use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, Protocol, SockRef, Socket, Type};

use crate::ops;
use crate::stream::accept::direct_available;
use crate::sys::inet_addr;
use crate::sys::resolve::{each_addr, ToSocketAddrs};
use crate::tcp::{Incoming, IncomingWithAddr, TcpStream};

/// How [`TcpListener::bind_with`] sets its socket up.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    backlog: i32,
    reuse_address: bool,
    reuse_port: bool,
    only_v6: Option<bool>,
    nodelay: bool,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions::new()
    }
}

impl ListenOptions {
    /// The defaults: backlog 1024, `SO_REUSEADDR` on, `SO_REUSEPORT` off, `IPV6_V6ONLY` as
    /// the system sets it, `TCP_NODELAY` off.
    pub fn new() -> ListenOptions {
        ListenOptions {
            backlog: 1024,
            reuse_address: true,
            reuse_port: false,
            only_v6: None,
            nodelay: false,
        }
    }

    /// The length of the queue of connections not yet accepted (`listen(2)`'s backlog; the
    /// kernel caps it at `net.core.somaxconn`).
    pub fn backlog(mut self, backlog: u32) -> ListenOptions {
        self.backlog = backlog.min(i32::MAX as u32) as i32;
        self
    }

    /// Sets `SO_REUSEADDR`: bind a port whose old connections linger in `TIME_WAIT`.
    pub fn reuse_address(mut self, on: bool) -> ListenOptions {
        self.reuse_address = on;
        self
    }

    /// Sets `SO_REUSEPORT`: several listeners (one per core) on one port, the kernel
    /// spreading connections among them. Every listener on the port must set it.
    pub fn reuse_port(mut self, on: bool) -> ListenOptions {
        self.reuse_port = on;
        self
    }

    /// Sets `IPV6_V6ONLY` on IPv6 listeners: whether `[::]` also takes IPv4 connections.
    pub fn only_v6(mut self, on: bool) -> ListenOptions {
        self.only_v6 = Some(on);
        self
    }

    /// Sets `TCP_NODELAY` on the listener, which every connection it accepts inherits on
    /// Linux: no per-connection [`TcpStream::set_nodelay`] (nor, on a direct descriptor,
    /// its ring round trip) is needed.
    pub fn nodelay(mut self, on: bool) -> ListenOptions {
        self.nodelay = on;
        self
    }

    fn listen(&self, addr: SocketAddr) -> io::Result<OwnedFd> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(self.reuse_address)?;
        if self.reuse_port {
            socket.set_reuse_port(true)?;
        }
        if let (Some(only), true) = (self.only_v6, addr.is_ipv6()) {
            socket.set_only_v6(only)?;
        }
        if self.nodelay {
            socket.set_tcp_nodelay(true)?;
        }
        socket.bind(&addr.into())?;
        socket.listen(self.backlog)?;
        Ok(socket.into())
    }
}

/// A TCP socket listening for connections.
///
/// The socket closes when the listener and every [`Incoming`] made from it are dropped;
/// streams it accepted live on independently.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use corering_net::{TcpListener, TcpStream};
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     // Port 0: the kernel picks a free port.
///     let listener = TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let client = runtime::spawn_local(async move {
///         let stream = TcpStream::connect(addr).await?;
///         stream.write_all_from(b"hi").await
///     });
///     // One multishot accept for every connection (or `accept().await` for one).
///     let mut incoming = listener.incoming();
///     let stream = incoming.next().await.expect("the stream never ends")?;
///     let (res, buf) = stream.read_exact_owned(vec![0u8; 2]).await;
///     res?;
///     assert_eq!(buf, b"hi");
///     client.await.unwrap()
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TcpListener {
    fd: SharedFd,
}

impl TcpListener {
    /// Listens on `addr` with the default [`ListenOptions`] (backlog 1024, `SO_REUSEADDR`).
    ///
    /// Synchronous: a numeric address (`"127.0.0.1:0"`, a [`SocketAddr`]) is parsed without a
    /// system call, but a host name is resolved on the calling thread, blocking the core
    /// (see the [crate] documentation); bind to an IP address to avoid it. Each resolved
    /// address is tried in turn. Errors say what failed and keep their kind, e.g.
    /// `AddrInUse`.
    ///
    /// Synchronous where tokio's `bind` is `async`, on purpose: `bind(2)` and `listen(2)`
    /// never block, so a ring op would only add a round trip. (`IORING_OP_BIND` and
    /// `IORING_OP_LISTEN` exist since Linux 6.11; they would matter only for a socket made
    /// by a ring op, which this crate does not do.) A tokio port drops the `.await`.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        TcpListener::bind_with(addr, &ListenOptions::new())
    }

    /// Listens on `addr` set up as `options` say (resolved as [`bind`](TcpListener::bind)
    /// does).
    pub fn bind_with(addr: impl ToSocketAddrs, options: &ListenOptions) -> io::Result<TcpListener> {
        each_addr(addr, |a| {
            let fd = options
                .listen(a)
                .map_err(|e| error_context(e, format!("bind to {a}")))?;
            Ok(TcpListener {
                fd: SharedFd::new(fd),
            })
        })
    }

    /// Accepts one connection (one `IORING_OP_ACCEPT`), with the peer's address.
    ///
    /// As with [`incoming`](TcpListener::incoming), the connection is a direct descriptor
    /// where the core can (see [`TcpStream`]), else a regular fd; a full fixed-file table
    /// is `ENFILE`.
    ///
    /// Dropping the future before it completes cancels the accept; a connection the kernel
    /// accepted anyway is closed, not leaked.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        if direct_available() {
            let (fd, peer) = ops::accept_direct(&self.fd).await?;
            return Ok((TcpStream::from_shared(fd), peer));
        }
        let (fd, peer) = ops::accept(&self.fd).await?;
        Ok((TcpStream::from_fd(fd), peer))
    }

    /// A stream of accepted connections backed by one multishot accept (Linux 5.19).
    ///
    /// It holds the listening socket open while it lives. See [`Incoming`].
    pub fn incoming(&self) -> Incoming {
        Incoming::new(self.fd.clone(), true)
    }

    /// Like [`incoming`](TcpListener::incoming), with each peer's address: items are
    /// `(TcpStream, SocketAddr)`, as tokio's `accept()` gives. Costs one `getpeername(2)`
    /// per connection; see [`IncomingWithAddr`].
    pub fn incoming_with_addr(&self) -> IncomingWithAddr {
        IncomingWithAddr::new(self.fd.clone())
    }

    /// The address the listener is bound to (with the port the kernel picked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).local_addr())
    }

    /// Wraps a listening std socket; it is set to blocking mode, which the ring expects.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(false)?;
        Ok(TcpListener {
            fd: SharedFd::new(listener.into()),
        })
    }

    /// The std listener (in blocking mode). If a dropped accept is still in the kernel,
    /// this is a duplicate of the fd (`F_DUPFD_CLOEXEC`), which can fail.
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        Ok(crate::sys::into_blocking(self.fd)?.into())
    }
}

crate::sys::impl_as_fd!(impl[] TcpListener);

impl IntoRawFd for TcpListener {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](TcpListener::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match crate::sys::into_blocking(self.fd) {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!("TcpListener::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}
