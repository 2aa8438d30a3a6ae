//! `UnixListener`: `socket(2)`, `bind(2)` and `listen(2)` through `socket2`, then accepts
//! through the ring (`accept4(2)`, one op per call, or one multishot op for a stream, shared
//! with TCP).

use std::io;
use std::os::fd::{IntoRawFd, RawFd};
use std::path::Path;

use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, Socket, Type};

use crate::ops;
use crate::unix::{Incoming, IncomingWithAddr, SocketAddr, UnixStream};

/// The listen backlog (the kernel caps it at `net.core.somaxconn`).
const BACKLOG: i32 = 1024;

/// A Unix stream socket listening for connections.
///
/// The socket closes when the listener and every [`Incoming`] made from it are dropped;
/// streams it accepted live on independently. The socket file stays until removed.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use corering_net::{UnixListener, UnixStream};
///
/// let path = std::env::temp_dir().join(format!("corering-doc-{}.sock", std::process::id()));
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let listener = UnixListener::bind(&path)?;
///     let client = runtime::spawn_local({
///         let path = path.clone();
///         async move {
///             let stream = UnixStream::connect(&path).await?;
///             stream.write_all_from(b"hi").await
///         }
///     });
///     let mut incoming = listener.incoming();
///     let stream = incoming.next().await.expect("never ends")?;
///     let (res, buf) = stream.read_exact_owned(vec![0u8; 2]).await;
///     res?;
///     assert_eq!(buf, b"hi");
///     client.await.unwrap()
/// })?;
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UnixListener {
    fd: SharedFd,
}

impl UnixListener {
    /// Listens on the filesystem path `path`, creating the socket file (backlog 1024).
    ///
    /// A bad path is `InvalidInput` (see [`SocketAddr::from_pathname`]); an existing file
    /// is `AddrInUse`. Errors name the path and keep their kind.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        UnixListener::bind_addr(&SocketAddr::from_pathname(path)?)
    }

    /// Listens on `addr`: a path or an abstract name.
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixListener> {
        let listen = || -> io::Result<SharedFd> {
            let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
            socket.bind(addr.as_sockaddr())?;
            socket.listen(BACKLOG)?;
            Ok(SharedFd::new(socket.into()))
        };
        let fd = listen().map_err(|e| error_context(e, format!("bind to {addr}")))?;
        Ok(UnixListener { fd })
    }

    /// Accepts one connection (one `IORING_OP_ACCEPT`), with the peer's address (usually
    /// unnamed: connecting sockets are rarely bound).
    ///
    /// Dropping the future before it completes cancels the accept; a connection the kernel
    /// accepted anyway is closed, not leaked.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (fd, peer) = ops::accept(&self.fd).await?;
        Ok((UnixStream::from_fd(fd), peer))
    }

    /// A stream of accepted connections backed by one multishot accept (Linux 5.19), the
    /// same machinery as [`TcpListener::incoming`](crate::TcpListener::incoming).
    ///
    /// It holds the listening socket open while it lives. See [`Incoming`].
    pub fn incoming(&self) -> Incoming {
        // Unix streams keep regular fds (`SCM_RIGHTS`, peer credentials and the like want
        // them): the family never accepts into the fixed-file table.
        Incoming::new(self.fd.clone(), false)
    }

    /// Like [`incoming`](UnixListener::incoming), with each peer's address: items are
    /// `(UnixStream, SocketAddr)`, as [`accept`](UnixListener::accept) gives (usually
    /// unnamed). Costs one `getpeername(2)` per connection; see [`IncomingWithAddr`].
    pub fn incoming_with_addr(&self) -> IncomingWithAddr {
        IncomingWithAddr::new(self.fd.clone())
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        super::local_addr(&self.fd)
    }

    /// Wraps a listening std socket; it is set to blocking mode, which the ring expects.
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(false)?;
        Ok(UnixListener {
            fd: SharedFd::new(listener.into()),
        })
    }

    /// The std listener (in blocking mode). If a dropped accept is still in the kernel,
    /// this is a duplicate of the fd (`F_DUPFD_CLOEXEC`), which can fail.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        Ok(crate::sys::into_blocking(self.fd)?.into())
    }
}

crate::sys::impl_as_fd!(impl[] UnixListener);

impl IntoRawFd for UnixListener {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](UnixListener::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match crate::sys::into_blocking(self.fd) {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!("UnixListener::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}
