//! Read-ahead: one owned buffer and at most one read op in flight.
//!
//! # Invariants
//! - `buf[pos..]` are the bytes read and not yet consumed; `pos <= buf.len()`.
//! - A read is started only when nothing is buffered, so bytes stay in order.
//! - The buffer is in the op while a read is in flight (`buf` is then empty), so the
//!   kernel's memory is the op's until the CQE, or the driver's if the op is dropped.

use std::io;
use std::mem;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use std::future::Future;

use super::{ReadOp, CURRENT_POS};

/// Buffered reading over a [`ReadOp`]: the building block of `AsyncRead`/`AsyncBufRead`
/// for crates built on the runtime (pipes, files, sockets without a buffer ring).
pub struct ReadAhead<R: ReadOp> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    cap: usize,
    in_flight: Option<R::Op>,
}

impl<R: ReadOp> ReadAhead<R> {
    /// A read-ahead over `src` whose reads take at most `cap` bytes (at least 1).
    pub fn new(src: R, cap: usize) -> ReadAhead<R> {
        ReadAhead {
            src,
            buf: Vec::new(),
            pos: 0,
            cap: cap.max(1),
            in_flight: None,
        }
    }

    /// The op source (the fd, usually).
    pub fn source(&self) -> &R {
        &self.src
    }

    /// The bytes read and not yet consumed (no read is started).
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Whether no read is in flight.
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_none()
    }

    /// The most one read takes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The buffered bytes, reading at the fd's own position first if none are; empty at
    /// end of stream.
    pub fn poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.poll_fill_buf_at(cx, CURRENT_POS, self.cap)
    }

    /// The buffered bytes, reading at most `len` bytes (capped at the capacity) at
    /// `offset` first if none are; empty at end of stream.
    ///
    /// A read already in flight is awaited whatever `offset` and `len` say: a caller that
    /// moves its position drops the read-ahead first ([`discard`](Self::discard)).
    pub fn poll_fill_buf_at(
        &mut self,
        cx: &mut Context<'_>,
        offset: u64,
        len: usize,
    ) -> Poll<io::Result<&[u8]>> {
        if self.pos >= self.buf.len() {
            let op = match self.in_flight.as_mut() {
                Some(op) => op,
                None => {
                    let len = len.clamp(1, self.cap);
                    let mut buf = mem::take(&mut self.buf);
                    buf.clear();
                    buf.reserve(len);
                    self.pos = 0;
                    self.in_flight.insert(self.src.read(buf, len, offset))
                }
            };
            let (res, mut buf) = ready!(Pin::new(op).poll(cx));
            self.in_flight = None;
            self.pos = 0;
            if let Err(e) = res {
                buf.clear();
                self.buf = buf;
                return Poll::Ready(Err(e));
            }
            self.buf = buf;
        }
        Poll::Ready(Ok(&self.buf[self.pos..]))
    }

    /// Marks `amt` buffered bytes as read (at most what is buffered).
    pub fn consume(&mut self, amt: usize) {
        self.pos = self.pos.saturating_add(amt).min(self.buf.len());
    }

    /// Copies buffered bytes into `out`, reading at the fd's own position first if none
    /// are; 0 at end of stream or for an empty `out`.
    pub fn poll_read(&mut self, cx: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>> {
        self.poll_read_at(cx, out, CURRENT_POS, self.cap)
    }

    /// As [`poll_read`](Self::poll_read), reading at most `len` bytes at `offset`.
    pub fn poll_read_at(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut [u8],
        offset: u64,
        len: usize,
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let avail = ready!(self.poll_fill_buf_at(cx, offset, len))?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }

    /// Forgets the buffered bytes and drops the read in flight (its buffer stays with the
    /// driver until its CQE; a new one is allocated for the next read).
    pub fn discard(&mut self) {
        self.in_flight = None;
        self.buf.clear();
        self.pos = 0;
    }
}

impl<R: ReadOp> std::fmt::Debug for ReadAhead<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadAhead")
            .field("buffered", &self.buffered().len())
            .field("reading", &self.in_flight.is_some())
            .finish()
    }
}
