//! The owned halves of a `TcpStream`, for a reader task and a writer task on one core.
//!
//! Both halves share the socket's fd (an `Rc`: they are `!Send`, as tasks on one core need
//! not be); it closes when both are dropped. Dropping the write half does not shut the
//! connection down: call [`OwnedWriteHalf::shutdown`] (or `poll_close`) to send end of stream.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::io::{AsyncBufRead, AsyncRead, AsyncWrite};
use runtime::buf::{IoBuf, IoBufMut};
use socket2::SockRef;

use crate::fd::SharedFd;
use crate::io::{self as sio, ReadState, WriteState};
use crate::ops;
use crate::tcp::{inet_addr, TcpStream};

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

    /// Reads once into `buf`; as [`TcpStream::read`].
    pub async fn read<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        sio::read(&self.fd, buf).await
    }

    /// Reads until `buf` is full; as [`TcpStream::read_exact`].
    pub async fn read_exact<B: IoBufMut>(&self, buf: B) -> (io::Result<()>, B) {
        sio::read_exact(&self.fd, buf).await
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).peer_addr())
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).local_addr())
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

    /// Writes once; as [`TcpStream::write`].
    pub async fn write<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        sio::write(&self.fd, buf).await
    }

    /// Writes all of `buf`; as [`TcpStream::write_all`].
    pub async fn write_all<B: IoBuf>(&self, buf: B) -> (io::Result<()>, B) {
        sio::write_all(&self.fd, buf).await
    }

    /// Shuts down a direction of the connection; as [`TcpStream::shutdown`].
    pub async fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        ops::shutdown(&self.fd, how).await
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).peer_addr())
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet_addr(SockRef::from(&self.fd).local_addr())
    }
}

impl AsRawFd for OwnedReadHalf {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.raw()
    }
}

impl AsFd for OwnedReadHalf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for OwnedWriteHalf {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.raw()
    }
}

impl AsFd for OwnedWriteHalf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.read.poll_read(&this.fd, cx, buf)
    }
}

impl AsyncBufRead for OwnedReadHalf {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        this.read.poll_fill_buf(&this.fd, cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().read.consume(amt);
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.write.poll_write(&this.fd, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.write.poll_flush(&this.fd, cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.write.poll_close(&this.fd, cx)
    }
}
