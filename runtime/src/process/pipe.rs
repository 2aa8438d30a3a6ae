//! A child's stdin, stdout and stderr: pipes whose reads and writes are ring ops
//! (`IORING_OP_READ`/`WRITE` on the pipe's fd), behind owned-buffer methods and the
//! futures-io traits.
//!
//! tokio's traits are there too under the `tokio-io` feature of `runtime`.
//!
//! The reader is a [`ReadAhead`] and the writer a [`WriteBehind`] (the runtime's shared
//! I/O core, `crate::io`): one buffer and at most one op in flight per pipe, between polls,
//! so a poll that is dropped loses nothing: the bytes a read brought stay buffered, and a
//! write reported done is sent (write-behind, like a `BufWriter`; `poll_flush` waits for it).
//!
//! Bytes a write reported written are delivered even if the writer is then dropped
//! unflushed: the drop hands the write in flight to a task of its own on the current core,
//! which finishes it (a pipe write may be short; the rest is written again) and then lets
//! the pipe close, so the child sees every byte and then end of input. That task's error,
//! if any (the child closed its end), has no caller left and is dropped; flush first to
//! see it. A runtime that shuts down first gives the write time to finish (it is detached,
//! as a file's is), never cancels it. A write's error sticks: later writes and flushes fail with its kind.
//!
//! Writing to a pipe whose reader is gone (the child exited) fails with `BrokenPipe`
//! (`EPIPE`, from the write in flight, so reported by the next write or flush). The kernel
//! also raises `SIGPIPE`, which Rust programs ignore from `main` on; a process that does not
//! ignore it dies of it, as with any pipe write.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::task::{Context, Poll};

use io_uring::{opcode, types};

use crate::ext::io::{PollRead, PollWrite, ReadAhead, ReadOp, WriteBehind, WriteOp};
use crate::ext::{Completable, Cqe, Op};
use crate::fd::SharedFd;

/// Bytes one read asks for.
const READ_CAP: usize = 16 * 1024;
/// The most one `poll_write` takes.
const WRITE_CAP: usize = 64 * 1024;

/// A pipe's fd, as the source of its reads and the sink of its writes.
#[derive(Clone)]
struct PipeFd(SharedFd);

/// A read of a pipe: the buffer and the fd, both kept until the CQE.
struct PipeRead {
    fd: SharedFd,
    buf: Vec<u8>,
    len: usize,
}

impl Completable for PipeRead {
    type Output = (io::Result<usize>, Vec<u8>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        drop(self.fd);
        let mut buf = self.buf;
        let res = cqe.result.map(|n| (n as usize).min(self.len));
        if let Ok(n) = res {
            // SAFETY: the kernel wrote `n` bytes (at most the `len` asked for, which is
            // within the capacity) at the start of the Vec's heap block.
            unsafe { buf.set_len(n) };
        }
        (res, buf)
    }
}

/// A write to a pipe: the buffer and the fd, both kept until the CQE.
struct PipeWrite {
    fd: SharedFd,
    buf: Vec<u8>,
}

impl Completable for PipeWrite {
    type Output = (io::Result<usize>, Vec<u8>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        drop(self.fd);
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

impl ReadOp for PipeFd {
    type Op = Op<PipeRead>;

    fn read(&self, mut buf: Vec<u8>, len: usize, _offset: u64) -> Op<PipeRead> {
        buf.clear();
        buf.reserve(len);
        let len = len.min(buf.capacity()).min(u32::MAX as usize);
        let sqe = opcode::Read::new(types::Fd(self.0.raw()), buf.as_mut_ptr(), len as u32)
            .offset(u64::MAX)
            .build();
        let data = PipeRead {
            fd: self.0.clone(),
            buf,
            len,
        };
        // SAFETY: the SQE points into the Vec's heap block (`len` bytes of capacity), which
        // the op's data owns and does not move; the data keeps the fd open.
        unsafe { Op::new(data, sqe) }
    }
}

impl WriteOp for PipeFd {
    type Op = Op<PipeWrite>;

    fn write(&self, buf: Vec<u8>, from: usize, _offset: u64) -> Op<PipeWrite> {
        let rest = buf.get(from..).unwrap_or_default();
        let (ptr, len) = (rest.as_ptr(), rest.len().min(u32::MAX as usize) as u32);
        let sqe = opcode::Write::new(types::Fd(self.0.raw()), ptr, len)
            .offset(u64::MAX)
            .build();
        let data = PipeWrite {
            fd: self.0.clone(),
            buf,
        };
        // SAFETY: the SQE points into the Vec's heap block (moving the Vec does not move
        // it), which the op's data owns until the CQE; the data keeps the fd open.
        unsafe { Op::new(data, sqe) }
    }

    fn detach(op: Op<PipeWrite>) {
        op.detach(|_| {});
    }
}

/// The reading end of a child's stdout or stderr.
pub struct PipeReader {
    inner: ReadAhead<PipeFd>,
}

/// The writing end of a child's stdin.
pub struct PipeWriter {
    inner: WriteBehind<PipeFd>,
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
            .field("fd", &self.inner.source().0.raw())
            .field("buffered", &self.inner.buffered().len())
            .field("reading", &!self.inner.is_idle())
            .finish()
    }
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("fd", &self.inner.sink().0.raw())
            .field("writing", &!self.inner.is_idle())
            .finish()
    }
}

impl PipeReader {
    pub(crate) fn new(fd: OwnedFd) -> PipeReader {
        PipeReader {
            inner: ReadAhead::new(PipeFd(SharedFd::new(fd)), READ_CAP),
        }
    }

    /// Reads everything until end of stream (the child closed its end).
    pub async fn read_to_vec(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let n = std::future::poll_fn(|cx| {
                let avail = std::task::ready!(self.inner.poll_fill_buf(cx))?;
                out.extend_from_slice(avail);
                Poll::Ready(Ok::<_, io::Error>(avail.len()))
            })
            .await?;
            if n == 0 {
                return Ok(out);
            }
            self.inner.consume(n);
        }
    }
}

impl PollRead for PipeReader {
    fn io_poll_read(&mut self, cx: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_read(cx, out)
    }

    fn io_poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.inner.poll_fill_buf(cx)
    }

    fn io_consume(&mut self, amt: usize) {
        self.inner.consume(amt);
    }
}

impl AsRawFd for PipeReader {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.source().0.raw()
    }
}

impl PipeWriter {
    pub(crate) fn new(fd: OwnedFd) -> PipeWriter {
        PipeWriter {
            inner: WriteBehind::new(PipeFd(SharedFd::new(fd)), WRITE_CAP),
        }
    }

    /// Writes all of `data` (copied into the pipe's buffer, then written by ring ops).
    pub async fn write_all_from(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = std::future::poll_fn(|cx| self.inner.poll_write(cx, data)).await?;
            data = &data[n..];
        }
        std::future::poll_fn(|cx| self.inner.poll_drain(cx)).await
    }
}

impl PollWrite for PipeWriter {
    fn io_poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_write(cx, data)
    }

    fn io_poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.inner
            .poll_write_vectored_at(cx, bufs, crate::ext::io::CURRENT_POS)
    }

    fn io_is_write_vectored(&self) -> bool {
        true
    }

    fn io_poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_drain(cx)
    }

    /// Flushes; the pipe itself closes when the writer is dropped.
    fn io_poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_drain(cx)
    }
}

impl AsRawFd for PipeWriter {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.sink().0.raw()
    }
}

crate::impl_async_io!(read: PipeReader);
crate::impl_async_io!(write: PipeWriter);
