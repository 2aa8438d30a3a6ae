//! [`UnixStream`]: what a stream socket does only for Unix: `connect(2)` to a path or an
//! abstract name through the ring, `socketpair(2)`, and std's type. The rest is the
//! crate's one stream type (`crate::stream`).

use std::io;
use std::path::Path;

use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, Socket, Type};

use crate::ops;
use crate::stream::{StreamSocket, Unix};
use crate::unix::SocketAddr;

/// A connected Unix stream socket: the crate's one [`StreamSocket`], for the [`Unix`]
/// family.
///
/// Everything but connecting, [`pair`](StreamSocket::pair) and the std conversions is
/// [`StreamSocket`]'s, shared with [`TcpStream`](crate::TcpStream): read its documentation
/// for the two ways to do I/O (the futures-io and tokio traits, or owned buffers) and how
/// they mix on one socket. Unix streams are always regular fds (`SCM_RIGHTS`, peer
/// credentials and the like want them), and have no zero-copy send (the kernel has none
/// for `AF_UNIX`).
///
/// # Examples
///
/// ```
/// use futures::io::AsyncReadExt;
/// use corering_net::UnixStream;
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let (a, mut b) = UnixStream::pair()?;
///     // Owned buffers on one end, the traits on the other.
///     let (res, _) = a.write_all_owned(b"ping".to_vec()).await;
///     res?;
///     a.shutdown_socket(std::net::Shutdown::Write).await?;
///     let mut got = String::new();
///     b.read_to_string(&mut got).await?;
///     assert_eq!(got, "ping");
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub type UnixStream = StreamSocket<Unix>;

impl StreamSocket<Unix> {
    /// Connects to the socket at the filesystem path `path` (one `IORING_OP_CONNECT`).
    ///
    /// A bad path is `InvalidInput` (see [`SocketAddr::from_pathname`]); no socket there is
    /// `NotFound`, a socket nobody listens on `ConnectionRefused`. Errors name the path and
    /// keep their kind.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        UnixStream::connect_addr(&SocketAddr::from_pathname(path)?).await
    }

    /// Connects to `addr`: a path or an abstract name.
    pub async fn connect_addr(addr: &SocketAddr) -> io::Result<UnixStream> {
        let connect = async {
            let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
            let fd = SharedFd::new(socket.into());
            ops::connect_to(&fd, addr.to_buf()).await?;
            Ok(fd)
        };
        let fd = connect
            .await
            .map_err(|e: io::Error| error_context(e, format!("connect to {addr}")))?;
        Ok(UnixStream::from_shared(fd))
    }

    /// A pair of connected, unnamed streams (`socketpair(2)`).
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = Socket::pair(Domain::UNIX, Type::STREAM, None)?;
        Ok((UnixStream::from_fd(a.into()), UnixStream::from_fd(b.into())))
    }

    /// Wraps a connected std stream; it is set to blocking mode, which the ring expects.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(false)?;
        Ok(UnixStream::from_fd(stream.into()))
    }

    /// The std stream (in blocking mode). Ops in flight are cancelled and bytes buffered for
    /// `AsyncRead` are lost; if a dropped op is still in the kernel, this is a duplicate of
    /// the fd (`F_DUPFD_CLOEXEC`), which can fail.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        Ok(self.into_owned_fd()?.into())
    }
}
