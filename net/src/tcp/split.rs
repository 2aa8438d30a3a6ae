//! The halves of a `TcpStream`: owned ones (`into_split`), for a reader task and a writer
//! task on one core, and borrowed ones (`split`), for both directions in one task.
//!
//! Both halves share the socket's fd (an `Rc`: they are `!Send`, as tasks on one core need
//! not be); it closes when both are dropped. Dropping the write half does not shut the
//! connection down: call [`OwnedWriteHalf::shutdown`] (or `poll_close`) to send end of stream.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};

use runtime::buf::{IoBuf, IoBufMut};

use crate::fd::SharedFd;
use crate::io::{self as sio, ReadState, WriteState};
use crate::ops;
use crate::tcp::{local_addr_of, peer_addr_of, TcpStream};

/// The read half of a [`TcpStream`], from [`TcpStream::into_split`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    fd: SharedFd,
    read: ReadState,
}

/// The write half of a [`TcpStream`], from [`TcpStream::into_split`].
#[derive(Debug)]
pub struct OwnedWriteHalf {
    fd: SharedFd,
    write: WriteState,
}

/// The halves given to [`OwnedReadHalf::reunite`] were split from different streams.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves of different TCP streams")
    }
}

impl Error for ReuniteError {}

impl OwnedReadHalf {
    pub(crate) fn new(fd: SharedFd, read: ReadState) -> OwnedReadHalf {
        OwnedReadHalf { fd, read }
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

    /// Reads once into `buf`; as [`TcpStream::read`].
    pub async fn read_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        sio::ordered::read(&self.fd, &self.read, buf).await
    }

    /// Reads once into `buf`'s spare capacity, appending after its length (tokio's
    /// `read_buf`): a `Vec` can be reused without `clear()`, and what it held stays. With no
    /// spare capacity, 8 KiB are reserved first. `Ok(0)` is end of stream.
    pub async fn read_buf_owned(&self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        sio::ordered::read_buf(&self.fd, &self.read, buf).await
    }

    /// Reads until `buf` is full; as [`TcpStream::read_exact`].
    pub async fn read_exact_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<()>, B) {
        sio::ordered::read_exact(&self.fd, &self.read, buf).await
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr_of(&self.fd)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr_of(&self.fd)
    }

    /// Puts the halves back together, if they came from one stream.
    // The error hands both halves back, as the stream itself would be: boxing them would
    // cost an allocation for a mistake that is rare.
    #[allow(clippy::result_large_err)]
    pub fn reunite(self, write: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if self.fd.same(&write.fd) {
            drop(write.fd);
            Ok(TcpStream::from_parts(self.fd, self.read, write.write))
        } else {
            Err(ReuniteError(self, write))
        }
    }
}

impl OwnedWriteHalf {
    pub(crate) fn new(fd: SharedFd, write: WriteState) -> OwnedWriteHalf {
        OwnedWriteHalf { fd, write }
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

    /// Writes once; as [`TcpStream::write`].
    pub async fn write_owned<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write(fd, b)).await
    }

    /// Writes all of `buf`; as [`TcpStream::write_all`].
    pub async fn write_all_owned<B: IoBuf>(&self, buf: B) -> (io::Result<()>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write_all(fd, b)).await
    }

    /// Writes all of the borrowed `data`, copying it first; as
    /// [`TcpStream::write_all_from`] (one allocation and one copy per call).
    pub async fn write_all_from(&self, data: &[u8]) -> io::Result<()> {
        sio::ordered::drain(&self.fd, &self.write).await?;
        sio::write_all_from(&self.fd, data).await
    }

    /// Writes `bufs` in order, once; as [`TcpStream::writev`].
    pub async fn writev_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<usize>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev(fd, b)).await
    }

    /// Writes all of `bufs` in order; as [`TcpStream::writev_all`].
    pub async fn writev_all_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<()>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev_all(fd, b)).await
    }

    /// Sends `buf` once without copying it into the kernel; as [`TcpStream::send_zc`].
    pub async fn send_zc<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        if buf.bytes_init() == 0 {
            return (Ok(0), buf);
        }
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| ops::send_zc(fd, b)).await
    }

    /// Shuts down a direction of the connection; as [`TcpStream::shutdown`].
    pub async fn shutdown_socket(&self, how: Shutdown) -> io::Result<()> {
        if how != Shutdown::Read {
            // The bytes already accepted go first.
            sio::ordered::drain(&self.fd, &self.write).await?;
        }
        ops::shutdown(&self.fd, how).await
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr_of(&self.fd)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr_of(&self.fd)
    }
}

/// The read half of a [`TcpStream`] borrowed by [`TcpStream::split`]: the futures-io read
/// traits (tokio's under the `tokio-io` feature), on the stream's read buffer.
#[derive(Debug)]
pub struct ReadHalf<'a> {
    fd: &'a SharedFd,
    read: &'a mut ReadState,
}

/// The write half of a [`TcpStream`] borrowed by [`TcpStream::split`]: the futures-io
/// `AsyncWrite` (tokio's under the `tokio-io` feature), on the stream's write buffer.
///
/// `close` (tokio's `shutdown`) shuts the connection's write direction down, as on the
/// stream.
#[derive(Debug)]
pub struct WriteHalf<'a> {
    fd: &'a SharedFd,
    write: &'a mut WriteState,
}

impl<'a> ReadHalf<'a> {
    pub(crate) fn new(fd: &'a SharedFd, read: &'a mut ReadState) -> ReadHalf<'a> {
        ReadHalf { fd, read }
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr_of(self.fd)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr_of(self.fd)
    }
}

impl<'a> WriteHalf<'a> {
    pub(crate) fn new(fd: &'a SharedFd, write: &'a mut WriteState) -> WriteHalf<'a> {
        WriteHalf { fd, write }
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr_of(self.fd)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr_of(self.fd)
    }
}

crate::io::impl_as_fd!(OwnedReadHalf, OwnedWriteHalf, ReadHalf<'_>, WriteHalf<'_>);
crate::io::impl_async_read!(OwnedReadHalf, ReadHalf<'_>);
crate::io::impl_async_write!(OwnedWriteHalf, WriteHalf<'_>);
