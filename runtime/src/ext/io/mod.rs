//! The I/O core that crates built on the runtime share: read-ahead and write-behind over
//! owned-buffer ring ops, and the poll traits the futures-io and tokio adapters forward to.
//!
//! Poll-based callers (`AsyncRead`, `AsyncWrite`) lend a buffer for one call only, but the
//! kernel needs one it owns until the CQE. So a stream keeps one buffer and at most one op
//! in flight per direction between polls, and a poll that is dropped loses nothing:
//! - [`ReadAhead`] reads into a buffer it owns and lends it out (`poll_fill_buf`, `consume`)
//!   or copies out of it (`poll_read`);
//! - [`WriteBehind`] copies what it is lent into a buffer it owns, starts the write and
//!   reports the bytes written, like a `BufWriter`; `poll_drain` waits for the write,
//!   writing again what a short write left.
//!
//! The op that reads or writes is a parameter ([`ReadOp`], [`WriteOp`]): a pipe's
//! `IORING_OP_READ`/`WRITE`, a file's at an offset, a socket's `RECV`.
//!
//! # Invariants
//! - Memory the kernel may touch is never freed or moved: the buffer lives in the op (its
//!   data, see `driver::op`) from submission to CQE. Dropping a read in flight is fine: the
//!   op lifecycle keeps its buffer in an ignored slot until the CQE.
//! - Bytes a write reported written are delivered: a dropped [`WriteBehind`] hands its write
//!   in flight to a task on the current core that finishes it, writing again what a short
//!   write left; where that task cannot run (dropped at shutdown, or no runtime) the op is
//!   detached ([`WriteOp::detach`]). The write is never cancelled.
//! - Errors keep their kind, and a write-behind's first error sticks.
//!
//! [`impl_async_io!`](crate::ext::impl_async_io) generates the futures-io (and, under the
//! calling crate's `tokio-io` feature, tokio) traits for a type implementing [`PollRead`] or
//! [`PollWrite`].

use std::future::Future;
use std::io::{self, IoSlice};
use std::task::{Context, Poll};

mod macros;
mod read_ahead;
mod write_behind;

pub use read_ahead::ReadAhead;
/// tokio's `ReadBuf`, which [`PollRead::io_poll_read_buf`] fills (tokio's I/O traits need
/// no tokio feature, so it is here whatever the features).
pub use tokio::io::ReadBuf;
pub use write_behind::WriteBehind;

/// A write-behind's first error, kept to fail every later call the same way: bytes a write
/// reported written were lost, so going on would leave a hole in the stream. `io::Error`
/// is not `Clone`: the kind and message are kept, and each later call gets a fresh error.
#[derive(Debug)]
pub struct StickyError {
    kind: io::ErrorKind,
    message: Box<str>,
}

impl StickyError {
    /// Keeps `err`'s kind and message.
    pub fn of(err: &io::Error) -> StickyError {
        StickyError {
            kind: err.kind(),
            message: err.to_string().into(),
        }
    }

    /// The kind of the first error.
    pub fn kind(&self) -> io::ErrorKind {
        self.kind
    }

    /// The error again: the same kind, saying it is an earlier write's.
    pub fn error(&self) -> io::Error {
        io::Error::new(
            self.kind,
            format!(
                "an earlier write failed, bytes reported written were lost: {}",
                self.message
            ),
        )
    }
}

/// The offset that names the fd's own position (pipes, sockets, files in append mode): the
/// kernel reads or writes there and moves it, and the core does not advance it.
pub const CURRENT_POS: u64 = u64::MAX;

/// The op that fills a [`ReadAhead`]'s buffer.
pub trait ReadOp {
    /// The op future: the outcome and the buffer, whose length is the number of bytes read.
    type Op: Future<Output = (io::Result<usize>, Vec<u8>)> + Unpin + 'static;

    /// Starts a read of at most `len` bytes at `offset` ([`CURRENT_POS`]: the fd's own
    /// position) into `buf`, which is empty with a capacity of at least `len`.
    fn read(&self, buf: Vec<u8>, len: usize, offset: u64) -> Self::Op;
}

/// The op that writes a [`WriteBehind`]'s buffer.
///
/// `Clone` because a dropped write-behind gives a clone to the task that finishes its write
/// (it also keeps the fd open until then).
pub trait WriteOp: Clone + 'static {
    /// The op future: the outcome (bytes written) and the buffer, given back to be reused.
    type Op: Future<Output = (io::Result<usize>, Vec<u8>)> + Unpin + 'static;

    /// Starts a write of `buf[from..]` at `offset` ([`CURRENT_POS`]: the fd's own position).
    fn write(&self, buf: Vec<u8>, from: usize, offset: u64) -> Self::Op;

    /// Lets `op` run to its end with no one waiting for it, where it cannot be finished by a
    /// task (its task is dropped at shutdown, or there is no runtime): never a cancel.
    /// Ops of the runtime call [`Op::detach`](crate::ext::Op::detach) (a detached op
    /// gets time to finish at shutdown); the default drops `op`.
    fn detach(op: Self::Op) {
        drop(op);
    }
}

/// The read side a type offers to [`impl_async_io!`](crate::ext::impl_async_io)'s `read` arm.
///
/// The method names are the traits' with an `io_` prefix, so they never hide tokio's or
/// futures' methods.
pub trait PollRead {
    /// `AsyncRead::poll_read`: copies buffered bytes into `out`, reading first if none are.
    fn io_poll_read(&mut self, cx: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>>;

    /// `AsyncBufRead::poll_fill_buf`: the buffered bytes, reading first if none are.
    fn io_poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>>;

    /// `AsyncBufRead::consume`: marks `amt` buffered bytes as read.
    fn io_consume(&mut self, amt: usize);

    /// tokio's `AsyncRead::poll_read`: copies into the unfilled part of `out` without
    /// initializing it first.
    fn io_poll_read_buf(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let avail = std::task::ready!(self.io_poll_fill_buf(cx))?;
        let n = avail.len().min(out.remaining());
        out.put_slice(&avail[..n]);
        self.io_consume(n);
        Poll::Ready(Ok(()))
    }
}

/// The write side a type offers to [`impl_async_io!`](crate::ext::impl_async_io)'s `write` arm.
pub trait PollWrite {
    /// `AsyncWrite::poll_write`.
    fn io_poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>>;

    /// `AsyncWrite::poll_write_vectored`; by default the first non-empty slice.
    fn io_poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        self.io_poll_write(cx, first)
    }

    /// tokio's `AsyncWrite::is_write_vectored`.
    fn io_is_write_vectored(&self) -> bool {
        false
    }

    /// `AsyncWrite::poll_flush`: waits until every byte reported written is written.
    fn io_poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// `AsyncWrite::poll_close` (tokio's `poll_shutdown`).
    fn io_poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}
