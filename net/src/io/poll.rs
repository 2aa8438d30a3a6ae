//! The state behind `futures::io::{AsyncRead, AsyncBufRead, AsyncWrite}` on a stream socket.
//!
//! Poll-based callers lend a buffer only for one call, but the kernel needs one it owns until
//! the CQE, so each direction keeps its own buffer and at most one op in flight, in the
//! socket, between polls:
//! - reading: a `recv` fills the internal buffer; `poll_read` copies out of it and
//!   `poll_fill_buf` lends it. A caller that stops polling loses nothing: the bytes stay
//!   buffered for the next call.
//! - writing: `poll_write` copies the caller's bytes into the internal buffer, starts a
//!   `send` and reports them written (write-behind, like a `BufWriter`); the next
//!   `poll_write`, `poll_flush` or `poll_close` first waits for that send (resending a short
//!   one) and reports its error, if any. Flush or close before dropping the socket: dropping
//!   it cancels a send still in flight.
//!
//! Dropping the socket mid-op is safe: the op moves its buffer into the driver's ignored slot.

use std::future::Future;
use std::io;
use std::mem;
use std::net::Shutdown as How;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use runtime::buf::{IoBuf, Slice};
use runtime::driver::Op;

use crate::fd::SharedFd;
use crate::ops::{self, Recv, Send, Shutdown};

/// The internal read buffer's size.
const READ_CAP: usize = 16 * 1024;
/// The most `poll_write` copies in one call.
const WRITE_CAP: usize = 64 * 1024;

/// The read direction: buffered bytes `buf[pos..]`, or a `recv` in flight that owns `buf`.
#[derive(Default)]
pub(crate) struct ReadState {
    buf: Vec<u8>,
    pos: usize,
    in_flight: Option<Op<Recv<Vec<u8>>>>,
}

impl ReadState {
    /// The buffered bytes, receiving more first if there are none; empty at end of stream.
    pub(crate) fn poll_fill_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<&[u8]>> {
        if self.pos >= self.buf.len() {
            let op = self.in_flight.get_or_insert_with(|| {
                let mut buf = mem::take(&mut self.buf);
                buf.clear();
                if buf.capacity() == 0 {
                    buf.reserve_exact(READ_CAP);
                }
                ops::recv(fd, buf)
            });
            let (res, buf) = ready!(Pin::new(op).poll(cx));
            self.in_flight = None;
            self.buf = buf;
            self.pos = 0;
            if let Err(e) = res {
                self.buf.clear();
                return Poll::Ready(Err(e));
            }
        }
        Poll::Ready(Ok(&self.buf[self.pos..]))
    }

    /// Marks `amt` buffered bytes as read.
    pub(crate) fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.buf.len());
    }

    /// Copies buffered bytes into `out`, receiving first if there are none.
    pub(crate) fn poll_read(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let avail = ready!(self.poll_fill_buf(fd, cx))?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}

#[cfg(feature = "tokio-io")]
impl ReadState {
    /// Copies buffered bytes into tokio's `ReadBuf`, receiving first if there are none.
    pub(crate) fn poll_read_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let avail = ready!(self.poll_fill_buf(fd, cx))?;
        let n = avail.len().min(out.remaining());
        out.put_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

/// The write direction: a `send` of part of the internal buffer in flight, or the idle buffer.
#[derive(Default)]
pub(crate) struct WriteState {
    in_flight: Option<Op<Send<Slice<Vec<u8>>>>>,
    spare: Vec<u8>,
    shutdown: Option<Op<Shutdown>>,
    closed: bool,
}

impl WriteState {
    /// Waits until the bytes already accepted are sent, resending short sends.
    fn poll_drain(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(op) = self.in_flight.as_mut() {
            let (res, slice) = ready!(Pin::new(op).poll(cx));
            self.in_flight = None;
            let (begin, end) = (slice.begin(), slice.end());
            let buf = slice.into_inner();
            match res {
                Ok(0) => {
                    self.spare = buf;
                    let err = io::Error::new(io::ErrorKind::WriteZero, "the socket took 0 bytes");
                    return Poll::Ready(Err(err));
                }
                Ok(n) if begin + n < end => {
                    self.in_flight = Some(ops::send(fd, buf.slice(begin + n..end)));
                }
                Ok(_) => self.spare = buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    self.in_flight = Some(ops::send(fd, buf.slice(begin..end)));
                }
                Err(e) => {
                    self.spare = buf;
                    return Poll::Ready(Err(e));
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Accepts up to 64 KiB of `data` and starts sending it.
    pub(crate) fn poll_write(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(fd, cx, &[io::IoSlice::new(data)])
    }

    /// Accepts up to 64 KiB of `bufs`, in order, into one buffer and starts sending it: one
    /// send for a response's head and body, which a caller such as hyper would otherwise
    /// copy together itself first.
    pub(crate) fn poll_write_vectored(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        ready!(self.poll_drain(fd, cx))?;
        let mut buf = mem::take(&mut self.spare);
        buf.clear();
        for b in bufs {
            let room = WRITE_CAP - buf.len();
            if room == 0 {
                break;
            }
            buf.extend_from_slice(&b[..b.len().min(room)]);
        }
        let n = buf.len();
        self.in_flight = Some(ops::send(fd, buf.slice(..n)));
        // Poll once now: the first poll submits the SQE, so the bytes leave without waiting
        // for another call. A send that already failed fails this write.
        match self.poll_drain(fd, cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(n)),
        }
    }

    /// Waits until every accepted byte is sent.
    pub(crate) fn poll_flush(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_drain(fd, cx)
    }

    /// Flushes, then shuts down the write direction (the peer reads end of stream), once.
    pub(crate) fn poll_close(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(fd, cx))?;
        if self.closed {
            return Poll::Ready(Ok(()));
        }
        let op = self
            .shutdown
            .get_or_insert_with(|| ops::shutdown(fd, How::Write));
        let res = ready!(Pin::new(op).poll(cx));
        self.shutdown = None;
        self.closed = true;
        Poll::Ready(res)
    }
}

impl std::fmt::Debug for ReadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadState")
            .field("buffered", &(self.buf.len() - self.pos.min(self.buf.len())))
            .field("in_flight", &self.in_flight.is_some())
            .finish()
    }
}

impl std::fmt::Debug for WriteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteState")
            .field("in_flight", &self.in_flight.is_some())
            .field("closed", &self.closed)
            .finish()
    }
}
