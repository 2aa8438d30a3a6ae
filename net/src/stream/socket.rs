//! [`StreamSocket`]: a connected stream socket of either family, with every method that
//! does not depend on the family. `tcp/stream.rs` and `unix/stream.rs` add what does.

use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{BorrowedFd, IntoRawFd, OwnedFd, RawFd};

use runtime::buf::BufRing;
use runtime::ext::{error_context, SharedFd};

use super::methods::{addr_methods, read_methods, write_methods};
use super::{Family, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::io::{ReadState, RecvStream, WriteState};

/// A connected stream socket of the family `F`: [`TcpStream`](crate::TcpStream) is
/// `StreamSocket<Tcp>`, [`UnixStream`](crate::UnixStream) `StreamSocket<Unix>`.
///
/// This documents what both share; each alias documents what its family adds (connecting,
/// options, std conversions; TCP's direct descriptors) and has an example.
///
/// The socket is closed once, when the stream (or both halves of
/// [`into_split`](Self::into_split)) and every op still in the kernel for it are dropped.
/// Dropping it cancels its ops in flight, but for a write-behind send (the poll traits'
/// `poll_write`, `write_chunk`), which still sends its bytes (as `close(2)` leaves a socket
/// buffer's bytes to be sent); flush or close to see its error.
///
/// # Two ways to do I/O
///
/// - The futures-io traits (`AsyncRead`, `AsyncBufRead`, `AsyncWrite`; tokio's under the
///   `tokio-io` feature) with their extension methods (`read`, `read_exact`, `write_all`,
///   `flush`, `close`/`shutdown`, ...), as tokio and futures code calls them: no inherent
///   method has one of their names, so they are found on a binding as they are on
///   tokio's types.
/// - The owned-buffer methods, io_uring's native interface: [`read_owned`](Self::read_owned),
///   [`read_buf_owned`](Self::read_buf_owned), [`read_exact_owned`](Self::read_exact_owned),
///   [`readv_owned`](Self::readv_owned), [`write_owned`](Self::write_owned),
///   [`write_all_owned`](Self::write_all_owned), [`writev_owned`](Self::writev_owned),
///   [`writev_all_owned`](Self::writev_all_owned), [`shutdown_socket`](Self::shutdown_socket)
///   (and, on TCP, `send_zc`): each takes its buffer by value, submits one op and gives the
///   buffer back with the result. [`write_all_from`](Self::write_all_from) copies borrowed
///   bytes; [`read_chunk`](Self::read_chunk) and [`write_chunk`](Self::write_chunk) pass
///   the core ring's buffers on without a copy.
///
/// # Mixing the APIs
///
/// A socket has one reader and one writer per direction, whichever APIs are called on
/// it: the owned-buffer reads first hand out what `read_chunk` and the poll traits
/// (`AsyncRead`, `AsyncBufRead`) have buffered, and while those keep a receive armed, read
/// through it (a copy out of the received chunk) rather than race it with a receive of
/// their own; only when that path is idle does an owned read receive straight into the
/// caller's buffer. The owned writes and `shutdown_socket` of the write direction first
/// wait for a write-behind send in flight (`poll_write`, `write_chunk`) and fail with its
/// error, if it failed, so bytes go out in the order they were written. A write-behind
/// send that failed (a reset, a broken pipe) fails every later write, flush and shutdown
/// with the same kind of error.
///
/// An owned read dropped while its receive is in flight loses the bytes that receive took
/// (the kernel wrote them into a buffer that is then dropped): use `read_chunk` or the
/// poll traits where a read may be cancelled (`select!`, a timeout).
pub struct StreamSocket<F: Family> {
    // `pub(crate)` for the families' own `impl` blocks (`tcp/stream.rs`, `unix/stream.rs`).
    pub(crate) fd: SharedFd,
    pub(crate) read: ReadState,
    pub(crate) write: WriteState,
    family: PhantomData<fn() -> F>,
}

impl<F: Family> StreamSocket<F> {
    /// A stream of the connected socket `fd`.
    pub(crate) fn from_fd(fd: OwnedFd) -> StreamSocket<F> {
        StreamSocket::from_shared(SharedFd::new(fd))
    }

    /// A stream of the connected socket `fd` (a regular fd or a direct descriptor).
    pub(crate) fn from_shared(fd: SharedFd) -> StreamSocket<F> {
        StreamSocket::from_parts(fd, ReadState::default(), WriteState::default())
    }

    /// A stream of `fd` with the read and write state it had (the halves, reunited).
    pub(crate) fn from_parts(fd: SharedFd, read: ReadState, write: WriteState) -> StreamSocket<F> {
        StreamSocket {
            fd,
            read,
            write,
            family: PhantomData,
        }
    }

    /// The socket's fd, now the caller's alone (see the families' `into_std`): ops in flight
    /// are cancelled and buffered bytes dropped first.
    pub(crate) fn into_owned_fd(self) -> io::Result<OwnedFd> {
        let StreamSocket {
            fd, read, write, ..
        } = self;
        drop((read, write));
        crate::sys::into_blocking(fd).map_err(|e| error_context(e, "into_std"))
    }

    /// Takes the socket off this core so that another core can go on with it
    /// (`hyper::serve` moving an idle connection): waits for every write-behind send to
    /// complete, stops the receive and collects the bytes received but not read yet, and
    /// returns the socket as a regular fd (installed for a direct descriptor) with those
    /// bytes, which come before any the fd reads. Nothing of the socket is in flight on
    /// this core afterwards. A send's error, end of stream, or a failed install is an error
    /// (the socket is then closed).
    #[cfg_attr(not(feature = "hyper"), allow(dead_code))]
    pub(crate) async fn detach(mut self) -> io::Result<(OwnedFd, Vec<u8>)> {
        std::future::poll_fn(|cx| self.write.poll_flush(&self.fd, cx)).await?;
        let mut bytes = Vec::new();
        std::future::poll_fn(|cx| self.read.poll_detach(&self.fd, cx, &mut bytes)).await?;
        let StreamSocket {
            fd, read, write, ..
        } = self;
        drop((read, write));
        Ok((fd.into_owned()?, bytes))
    }

    read_methods!();
    write_methods!();
    addr_methods!();

    /// The bytes this stream receives, as a `Stream` of buffers from `ring`, through one
    /// multishot receive (see [`RecvStream`]).
    ///
    /// Do not read the stream by other means meanwhile: which reader gets a chunk would be
    /// up to the kernel.
    pub fn recv_stream(&self, ring: &BufRing) -> RecvStream {
        RecvStream::new(self.fd.clone(), ring)
    }

    /// Splits the stream into a read half and a write half, each usable from its own task
    /// on this core (both are `!Send`); bytes `AsyncRead` buffered move to the read half.
    /// [`OwnedReadHalf::reunite`] puts them back together.
    pub fn into_split(self) -> (OwnedReadHalf<F>, OwnedWriteHalf<F>) {
        let StreamSocket {
            fd, read, write, ..
        } = self;
        (
            OwnedReadHalf::new(fd.clone(), read),
            OwnedWriteHalf::new(fd, write),
        )
    }

    /// Borrows the stream as a read half and a write half (tokio's `split`), usable at once
    /// in one task (e.g. with `futures::join!` or `futures::io::copy`).
    ///
    /// The halves have the futures-io traits (`AsyncRead`, `AsyncBufRead`, `AsyncWrite`;
    /// tokio's under the `tokio-io` feature) on the stream's own buffers, and no
    /// owned-buffer methods, so `AsyncReadExt::read(&mut half, ..)` is simply
    /// `half.read(..)`. Costs nothing: no reference count, no allocation. For halves that
    /// move to separate tasks use [`into_split`](Self::into_split).
    ///
    /// With `futures::io::AsyncReadExt` in scope, `stream.split()` on a binding is that
    /// trait's by-value `split(self)`; call `TcpStream::split(&mut stream)` for this one.
    pub fn split(&mut self) -> (ReadHalf<'_, F>, WriteHalf<'_, F>) {
        (
            ReadHalf::new(&self.fd, &mut self.read),
            WriteHalf::new(&self.fd, &mut self.write),
        )
    }

    /// Whether the stream is a direct descriptor (see [Direct descriptors](
    /// crate::TcpStream#direct-descriptors)) rather than a regular fd. Unix streams never
    /// are.
    pub fn is_direct(&self) -> bool {
        self.fd.fixed_index().is_some()
    }

    /// The socket's regular fd, borrowed; on a direct descriptor, the one installed for it
    /// (installed by the first call). Unlike [`AsFd::as_fd`](std::os::fd::AsFd::as_fd),
    /// which panics, an install that fails (out of fds) is an error.
    pub fn try_as_fd(&self) -> io::Result<BorrowedFd<'_>> {
        self.fd.try_as_fd()
    }
}

impl<F: Family> fmt::Debug for StreamSocket<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(<F as super::family::sealed::Sealed>::STREAM)
            .field("fd", &self.fd)
            .field("read", &self.read)
            .field("write", &self.write)
            .finish()
    }
}

impl<F: Family> IntoRawFd for StreamSocket<F> {
    /// The fd, now the caller's to close (on a direct descriptor, one installed for it; see
    /// the families' `into_std`).
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`), or a direct
    /// descriptor's fd cannot be installed; use `into_std` to get that error instead.
    fn into_raw_fd(self) -> RawFd {
        match self.into_owned_fd() {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => panic!(
                "{}::into_raw_fd: duplicating the fd failed: {e}",
                <F as super::family::sealed::Sealed>::STREAM
            ),
        }
    }
}
