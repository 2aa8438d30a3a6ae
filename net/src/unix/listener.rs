//! `UnixListener`: `socket(2)`, `bind(2)` and `listen(2)` through `socket2`, then accepts
//! through the ring (`accept4(2)`, one op per call, or one multishot op for a stream, shared
//! with TCP).

use std::io;
use std::os::fd::{IntoRawFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::stream::{FusedStream, Stream};
use socket2::{Domain, Socket, Type};

use crate::accept_stream::AcceptStream;
use crate::error::context;
use crate::fd::SharedFd;
use crate::io::{ReadState, WriteState};
use crate::ops;
use crate::unix::{impl_as_fd, SocketAddr, UnixStream};

/// The listen backlog (the kernel caps it at `net.core.somaxconn`).
const BACKLOG: i32 = 1024;

/// A Unix stream socket listening for connections.
///
/// The socket closes when the listener and every [`Incoming`] made from it are dropped;
/// streams it accepted live on independently. The socket file stays until removed.
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
        let fd = listen().map_err(|e| context(e, format!("bind to {addr}")))?;
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
        Incoming {
            // Unix streams keep regular fds (`SCM_RIGHTS`, peer credentials and the like
            // want them).
            inner: AcceptStream::new(self.fd.clone(), false),
        }
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
        Ok(self.fd.into_owned()?.into())
    }
}

impl_as_fd!(UnixListener);

impl IntoRawFd for UnixListener {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](UnixListener::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match self.fd.into_owned() {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!("UnixListener::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}

/// A stream of connections accepted by one multishot accept; made by
/// [`UnixListener::incoming`].
///
/// It never ends while the listener can accept. Errors are handled as by TCP's
/// [`Incoming`](crate::Incoming): out of fds or memory is yielded and the stream goes on
/// after a 10 ms back-off; a listener that cannot accept yields its error and ends the
/// stream; others are yielded and it goes on. Dropping it cancels the accept; connections
/// accepted meanwhile are closed.
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Incoming {
    inner: AcceptStream,
}

impl Stream for Incoming {
    type Item = io::Result<UnixStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.get_mut().inner.poll_next_fd(cx);
        next.map(|item| {
            item.map(|res| {
                res.map(|fd| {
                    UnixStream::from_parts(fd, ReadState::default(), WriteState::default())
                })
            })
        })
    }
}

impl FusedStream for Incoming {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}
