//! A child's stdin, stdout and stderr: pipes whose reads and writes are ring ops
//! (`IORING_OP_READ`/`WRITE` on the pipe's fd), behind owned-buffer methods and the
//! futures-io traits.
//!
//! tokio's traits are there too under the `tokio-io` feature of `runtime`.
//!
//! The traits keep one buffer and at most one op in flight per pipe, between polls, so a
//! poll that is dropped loses nothing: the bytes a read brought stay buffered, and a write
//! reported done is sent (write-behind, like a `BufWriter`; `poll_flush` waits for it).
//!
//! Bytes a write reported written are delivered even if the writer is then dropped
//! unflushed: the drop hands the write in flight to a task of its own on the current core,
//! which finishes it (a pipe write may be short; the rest is written again) and then lets
//! the pipe close, so the child sees every byte and then end of input. That task's error,
//! if any (the child closed its end), has no caller left and is dropped; flush first to
//! see it. A runtime that shuts down first cancels the write, as it does every op.
//!
//! Writing to a pipe whose reader is gone (the child exited) fails with `BrokenPipe`
//! (`EPIPE`, from the write in flight, so reported by the next write or flush). The kernel
//! also raises `SIGPIPE`, which Rust programs ignore from `main` on; a process that does not
//! ignore it dies of it, as with any pipe write.

use std::future::Future;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use io_uring::{opcode, types};

use crate::driver::{Completable, Cqe, Op};
use crate::fd::SharedFd;

/// Bytes one read asks for.
const READ_CAP: usize = 16 * 1024;
/// The most one `poll_write` takes.
const WRITE_CAP: usize = 64 * 1024;

/// A read or write of a pipe: the buffer and the fd, both kept until the CQE.
struct PipeIo {
    fd: SharedFd,
    buf: Vec<u8>,
    /// Where the bytes to write start in `buf` (writes only).
    from: usize,
}

impl Completable for PipeIo {
    type Output = (io::Result<usize>, Vec<u8>, usize);

    fn complete(self, cqe: Cqe) -> Self::Output {
        drop(self.fd);
        (cqe.result.map(|n| n as usize), self.buf, self.from)
    }
}

fn read_op(fd: &SharedFd, mut buf: Vec<u8>) -> Op<PipeIo> {
    buf.clear();
    buf.reserve(READ_CAP);
    let len = buf.capacity().min(u32::MAX as usize) as u32;
    let sqe = opcode::Read::new(types::Fd(fd.raw()), buf.as_mut_ptr(), len)
        .offset(u64::MAX)
        .build();
    let data = PipeIo {
        fd: fd.clone(),
        buf,
        from: 0,
    };
    // SAFETY: the SQE points into the Vec's heap block (`len` bytes of capacity), which
    // the op's data owns and does not move; the data keeps the fd open.
    unsafe { Op::new(data, sqe) }
}

fn write_op(fd: &SharedFd, buf: Vec<u8>, from: usize) -> Op<PipeIo> {
    let len = (buf.len() - from).min(u32::MAX as usize) as u32;
    // SAFETY: `from` is within the Vec (callers pass at most its length).
    let ptr = unsafe { buf.as_ptr().add(from) };
    let sqe = opcode::Write::new(types::Fd(fd.raw()), ptr, len)
        .offset(u64::MAX)
        .build();
    let data = PipeIo {
        fd: fd.clone(),
        buf,
        from,
    };
    // SAFETY: as for `read_op`: the SQE points into the heap block the data owns.
    unsafe { Op::new(data, sqe) }
}

/// The reading end of a child's stdout or stderr.
pub struct PipeReader {
    fd: SharedFd,
    buf: Vec<u8>,
    pos: usize,
    in_flight: Option<Op<PipeIo>>,
}

/// The writing end of a child's stdin.
pub struct PipeWriter {
    fd: SharedFd,
    in_flight: Option<Op<PipeIo>>,
    spare: Vec<u8>,
}

/// A child's stdout, from [`Child::stdout`](super::Child::stdout).
pub type ChildStdout = PipeReader;
/// A child's stderr, from [`Child::stderr`](super::Child::stderr).
pub type ChildStderr = PipeReader;
/// A child's stdin, from [`Child::stdin`](super::Child::stdin). Drop it (or `close` it) to
/// let the child see end of input.
pub type ChildStdin = PipeWriter;

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader")
            .field("fd", &self.fd.raw())
            .field("buffered", &(self.buf.len() - self.pos.min(self.buf.len())))
            .field("reading", &self.in_flight.is_some())
            .finish()
    }
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("fd", &self.fd.raw())
            .field("writing", &self.in_flight.is_some())
            .finish()
    }
}

impl PipeReader {
    pub(crate) fn new(fd: OwnedFd) -> PipeReader {
        PipeReader {
            fd: SharedFd::new(fd),
            buf: Vec::new(),
            pos: 0,
            in_flight: None,
        }
    }

    /// Reads everything until end of stream (the child closed its end).
    pub async fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let n = std::future::poll_fn(|cx| {
                let avail = ready!(self.poll_fill(cx))?;
                out.extend_from_slice(avail);
                Poll::Ready(Ok::<_, io::Error>(avail.len()))
            })
            .await?;
            if n == 0 {
                return Ok(out);
            }
            self.pos += n;
        }
    }

    /// The buffered bytes, reading first if none are; empty at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        if self.pos >= self.buf.len() {
            let op = self
                .in_flight
                .get_or_insert_with(|| read_op(&self.fd, mem::take(&mut self.buf)));
            let (res, mut buf, _) = ready!(Pin::new(op).poll(cx));
            self.in_flight = None;
            self.pos = 0;
            let n = match res {
                Ok(n) => n,
                Err(e) => {
                    buf.clear();
                    self.buf = buf;
                    return Poll::Ready(Err(e));
                }
            };
            // SAFETY: the kernel wrote `n` bytes at the start of the Vec's capacity.
            unsafe { buf.set_len(n) };
            self.buf = buf;
        }
        Poll::Ready(Ok(&self.buf[self.pos..]))
    }
}

impl futures::io::AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let this = self.get_mut();
        let avail = ready!(this.poll_fill(cx))?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        this.pos += n;
        Poll::Ready(Ok(n))
    }
}

impl futures::io::AsyncBufRead for PipeReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.buf.len());
    }
}

impl AsRawFd for PipeReader {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.raw()
    }
}

impl PipeWriter {
    pub(crate) fn new(fd: OwnedFd) -> PipeWriter {
        PipeWriter {
            fd: SharedFd::new(fd),
            in_flight: None,
            spare: Vec::new(),
        }
    }

    /// Writes all of `data` (copied into the pipe's buffer, then written by ring ops).
    pub async fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = std::future::poll_fn(|cx| self.poll_write_slice(cx, data)).await?;
            data = &data[n..];
        }
        std::future::poll_fn(|cx| self.poll_drain(cx)).await
    }

    /// Waits until every accepted byte is written, resending short writes.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(poll_finish(&self.fd, &mut self.in_flight, cx)) {
            Some((res, buf)) => {
                self.spare = buf;
                Poll::Ready(res)
            }
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_write_slice(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        ready!(self.poll_drain(cx))?;
        let mut buf = mem::take(&mut self.spare);
        buf.clear();
        let n = data.len().min(WRITE_CAP);
        buf.extend_from_slice(&data[..n]);
        self.in_flight = Some(write_op(&self.fd, buf, 0));
        // The first poll submits the write; one that already failed fails this call.
        match self.poll_drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(n)),
        }
    }
}

/// Waits until the write in `in_flight` (if any) is done, resending what a short write
/// left; then its outcome and its buffer (to reuse), or `None` if there was none.
fn poll_finish(
    fd: &SharedFd,
    in_flight: &mut Option<Op<PipeIo>>,
    cx: &mut Context<'_>,
) -> Poll<Option<(io::Result<()>, Vec<u8>)>> {
    while let Some(op) = in_flight.as_mut() {
        let (res, buf, from) = ready!(Pin::new(op).poll(cx));
        *in_flight = None;
        match res {
            Ok(0) => {
                let err = io::Error::new(io::ErrorKind::WriteZero, "the pipe took 0 bytes");
                return Poll::Ready(Some((Err(err), buf)));
            }
            Ok(n) if from + n < buf.len() => *in_flight = Some(write_op(fd, buf, from + n)),
            Ok(_) => return Poll::Ready(Some((Ok(()), buf))),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                *in_flight = Some(write_op(fd, buf, from));
            }
            Err(e) => return Poll::Ready(Some((Err(e), buf))),
        }
    }
    Poll::Ready(None)
}

impl Drop for PipeWriter {
    /// Lets the write in flight, whose bytes were reported written, finish (see the module
    /// documentation): a task on the current core owns it and a clone of the fd until the
    /// last byte is written, so the pipe closes only then.
    fn drop(&mut self) {
        let Some(op) = self.in_flight.take() else {
            return;
        };
        if crate::context::current_core_id().is_none() {
            // No runtime here (it shut down): dropping the op is all there is to do.
            return;
        }
        let fd = self.fd.clone();
        let mut in_flight = Some(op);
        // A task dropped unpolled (its runtime shutting down) drops the op: cancelled, as
        // every op is at shutdown. The error has no caller left (documented).
        drop(crate::spawn_local(async move {
            let _ = std::future::poll_fn(|cx| poll_finish(&fd, &mut in_flight, cx)).await;
        }));
    }
}

impl futures::io::AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slice(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drain(cx)
    }

    /// Flushes; the pipe itself closes when the writer is dropped.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drain(cx)
    }
}

impl AsRawFd for PipeWriter {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.raw()
    }
}

#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let this = self.get_mut();
        let avail = ready!(this.poll_fill(cx))?;
        let n = avail.len().min(out.remaining());
        out.put_slice(&avail[..n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncBufRead for PipeReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.buf.len());
    }
}

#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slice(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drain(cx)
    }

    /// Flushes; the pipe itself closes when the writer is dropped.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drain(cx)
    }
}
