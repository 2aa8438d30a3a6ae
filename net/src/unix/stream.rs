//! `UnixStream`: a connected Unix stream socket; `connect(2)`, `recv(2)`, `send(2)` and
//! `shutdown(2)` through the ring.
//!
//! The same two interfaces as `TcpStream`, on the same shared code: owned-buffer methods
//! (`read`, `write`, ...: one op per call, the buffer given back; `io::owned`) and
//! `futures::io` traits (an internal buffer per direction; `io::poll`). Do not interleave
//! reads of both kinds: bytes `AsyncRead` has buffered are not seen by `read`.

use std::io;
use std::net::Shutdown;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};
use std::path::Path;

use runtime::buf::{IoBuf, IoBufMut};
use socket2::{Domain, Socket, Type};

use crate::error::context;
use crate::fd::SharedFd;
use crate::io::{self as sio, ReadState, WriteState};
use crate::ops;
use crate::unix::{
    impl_as_fd, impl_async_read, impl_async_write, OwnedReadHalf, OwnedWriteHalf, ReadHalf,
    SocketAddr, WriteHalf,
};

/// A connected Unix stream socket.
///
/// The socket is closed once, when the stream (or both halves of [`into_split`]) and every
/// op still in the kernel for it are dropped. Dropping it cancels its ops in flight, but for
/// a write-behind send (the poll traits' `poll_write`, `write_chunk`), which still sends
/// its bytes (as `close(2)` leaves a socket buffer's bytes to be sent); flush or close to
/// see its error.
///
/// The owned-buffer methods (`read`, `write`, `read_exact`, `write_all`, `shutdown`) are
/// inherent, so on a `UnixStream` binding they are found before the `futures::io` (or
/// tokio) extension methods of the same names. Those are reached without a qualified call
/// through a `&mut UnixStream` (a function parameter, or
/// `let s = &mut stream; s.read(&mut buf)`) or through the borrowed halves of [`split`]:
/// see "Two ways to do I/O" in the [crate] documentation.
///
/// # Mixing the APIs
///
/// One reader and one writer per direction, whichever APIs are called, as on a
/// [`TcpStream`](crate::TcpStream#mixing-the-apis): owned reads hand out what the buffered
/// path holds first and never race its receive; owned writes and `shutdown` wait for a
/// write-behind send in flight; a failed write-behind fails every later write. An owned
/// read dropped mid-flight loses what its receive took.
///
/// [`into_split`]: UnixStream::into_split
/// [`split`]: UnixStream::split
#[derive(Debug)]
pub struct UnixStream {
    fd: SharedFd,
    read: ReadState,
    write: WriteState,
}

impl UnixStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> UnixStream {
        UnixStream::from_parts(
            SharedFd::new(fd),
            ReadState::default(),
            WriteState::default(),
        )
    }

    pub(crate) fn from_parts(fd: SharedFd, read: ReadState, write: WriteState) -> UnixStream {
        UnixStream { fd, read, write }
    }

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
            .map_err(|e: io::Error| context(e, format!("connect to {addr}")))?;
        Ok(UnixStream::from_parts(
            fd,
            ReadState::default(),
            WriteState::default(),
        ))
    }

    /// A pair of connected, unnamed streams (`socketpair(2)`).
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = Socket::pair(Domain::UNIX, Type::STREAM, None)?;
        Ok((UnixStream::from_fd(a.into()), UnixStream::from_fd(b.into())))
    }

    /// The next chunk of received bytes, in a provided buffer of the core's shared ring: no
    /// buffer of this connection's is pinned while it waits (an idle connection owns none).
    /// Empty at end of stream. The chunk goes back to the ring when dropped; it is an
    /// `IoBuf`, so `write_all(chunk)` sends it on without a copy.
    ///
    /// This reads from the same buffered state as the poll traits (`AsyncRead`,
    /// `AsyncBufRead`): bytes they buffered come first. [`read_owned`](Self::read_owned) reads the same
    /// bytes, in order; on a socket with nothing buffered and no receive armed it pins the
    /// caller's buffer in the kernel until data arrives.
    pub async fn read_chunk(&mut self) -> io::Result<crate::Chunk> {
        sio::read_chunk(&self.fd, &mut self.read).await
    }

    /// Sends `chunk` after the bytes already written through the poll traits
    /// (`AsyncWrite`) or an earlier `write_chunk`, without copying it, and returns as soon
    /// as its send is started (write-behind, as `poll_write` does): it waits only for the
    /// send before it. The chunk goes back to its ring as soon as it is sent, with no task
    /// woken for that, and is sent even if the socket is dropped first. That send's error,
    /// if any, is reported by the next `write_chunk`, poll-trait write, flush or close.
    ///
    /// An echo that answers with what it read copies nothing and wakes its task once per
    /// message: `let c = s.read_chunk().await?; s.write_chunk(c).await?;`. The owned-buffer
    /// [`write_all_owned`](Self::write_all_owned) waits for the sends before it, then for its own.
    pub async fn write_chunk(&mut self, chunk: crate::Chunk) -> io::Result<()> {
        sio::write_chunk(&self.fd, &mut self.write, chunk).await
    }

    /// Reads once into `buf` (up to its total length, from its start) and gives it back with
    /// the count; `Ok(0)` is end of stream. A zero-length buffer gives `Ok(0)` at once.
    pub async fn read_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        sio::ordered::read(&self.fd, &self.read, buf).await
    }

    /// Reads once into `buf`'s spare capacity, appending after its length (tokio's
    /// `read_buf`): a `Vec` can be reused without `clear()`, and what it held stays. With no
    /// spare capacity, 8 KiB are reserved first. `Ok(0)` is end of stream.
    pub async fn read_buf_owned(&self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        sio::ordered::read_buf(&self.fd, &self.read, buf).await
    }

    /// Reads until `buf` is full (its total length: a `Vec`'s capacity); `UnexpectedEof` if
    /// the stream ends first.
    pub async fn read_exact_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<()>, B) {
        sio::ordered::read_exact(&self.fd, &self.read, buf).await
    }

    /// Writes `buf`'s initialised bytes once and gives it back with the count (maybe short).
    pub async fn write_owned<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write(fd, b)).await
    }

    /// Writes all of `buf`'s initialised bytes.
    pub async fn write_all_owned<B: IoBuf>(&self, buf: B) -> (io::Result<()>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write_all(fd, b)).await
    }

    /// Writes all of the borrowed `data`; as [`TcpStream::write_all_from`]: `data` is copied
    /// into a `Vec` the op owns (one allocation and one copy per call).
    ///
    /// [`TcpStream::write_all_from`]: crate::TcpStream::write_all_from
    pub async fn write_all_from(&self, data: &[u8]) -> io::Result<()> {
        sio::ordered::drain(&self.fd, &self.write).await?;
        sio::write_all_from(&self.fd, data).await
    }

    /// Writes the initialised bytes of `bufs` in order, once (one `IORING_OP_SENDMSG`; the
    /// count may be short); empty buffers give `Ok(0)` at once.
    pub async fn writev_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<usize>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev(fd, b)).await
    }

    /// Writes all the initialised bytes of `bufs`, in order; as
    /// [`TcpStream::writev_all`](crate::TcpStream::writev_all).
    pub async fn writev_all_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<()>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev_all(fd, b)).await
    }

    /// Shuts down the read direction, the write direction (the peer reads end of stream
    /// after the bytes sent so far) or both.
    pub async fn shutdown_socket(&self, how: Shutdown) -> io::Result<()> {
        if how != Shutdown::Read {
            // The bytes already accepted go first.
            sio::ordered::drain(&self.fd, &self.write).await?;
        }
        ops::shutdown(&self.fd, how).await
    }

    /// Splits the stream into a read half and a write half, each usable from its own task
    /// on this core (both are `!Send`); bytes `AsyncRead` buffered move to the read half.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let UnixStream { fd, read, write } = self;
        (
            OwnedReadHalf::new(fd.clone(), read),
            OwnedWriteHalf::new(fd, write),
        )
    }

    /// Borrows the stream as a read half and a write half, usable at once in one task; as
    /// [`TcpStream::split`](crate::TcpStream::split) (the futures-io traits, tokio's under
    /// `tokio-io`, and no owned-buffer methods).
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (
            ReadHalf::new(&self.fd, &mut self.read),
            WriteHalf::new(&self.fd, &mut self.write),
        )
    }

    /// The socket's own address (unnamed unless it was bound).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        super::local_addr(&self.fd)
    }

    /// The peer's address (for a connected client: the listener's path).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        super::peer_addr(&self.fd)
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
        let UnixStream { fd, read, write } = self;
        drop((read, write));
        Ok(fd.into_owned()?.into())
    }
}

impl_as_fd!(UnixStream);
impl_async_read!(UnixStream);
impl_async_write!(UnixStream);

impl IntoRawFd for UnixStream {
    /// The fd, now the caller's to close.
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`); use
    /// [`into_std`](UnixStream::into_std) to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match self.into_std() {
            Ok(s) => s.into_raw_fd(),
            Err(e) => panic!("UnixStream::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}
