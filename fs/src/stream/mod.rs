//! The cursor and buffers behind [`File`](crate::File)'s stream traits:
//! `futures::io::{AsyncRead, AsyncBufRead, AsyncWrite, AsyncSeek}`, and tokio's with the
//! `tokio-io` feature (the impls are in `traits`).
//!
//! Poll-based callers lend a buffer only for one call, but the kernel needs one it owns
//! until the CQE, so the file keeps one buffer and at most one op in flight per direction
//! between polls: the runtime's I/O core, `runtime::ext::io`'s `ReadAhead` and
//! `WriteBehind` (also behind a child's pipes). Every read and write is still an
//! `IORING_OP_READ`/`IORING_OP_WRITE`, at the file's cursor (an offset the file keeps; the
//! kernel's own file position is not used, except by appends):
//! - reading: `poll_read` reads at the cursor as much as the caller asked for (up to
//!   64 KiB; as tokio's `File`, no more, so a read never returns bytes read before it was
//!   called, even when another handle changed the file meanwhile) into the internal buffer
//!   and copies out of it; `poll_fill_buf` reads up to 64 KiB ahead and lends the buffer
//!   (what it lends is as old as that read, as with any `BufReader`). The cursor moves as
//!   bytes are consumed. A caller that stops polling loses nothing: the op and its buffer
//!   stay in the file, and a later read at the cursor takes what it read.
//! - writing: `poll_write` first waits for the previous write, then copies up to 64 KiB into
//!   the internal buffer, starts a write at the cursor, moves the cursor and reports the bytes
//!   written (write-behind, like a `BufWriter`). The next write, read, seek, flush or
//!   [`File::close`](crate::File::close) waits for it first (rewriting a short write) and
//!   reports its error, if any; after an error the cursor is back where the failed bytes
//!   began.
//! - a read waits for a write in flight first (a read sees the file's own writes); a write
//!   waits for a read in flight and drops the read-ahead (the cursor does not move).
//! - seeking waits for both directions first; `SeekFrom::End` asks the size with a `statx`
//!   through the ring. A position below 0 or past `i64::MAX` is `InvalidInput`, and the cursor
//!   stays where it was.
//! - append mode (`O_APPEND`): writes name offset `-1` (the kernel's file position), which
//!   the kernel moves to the end of the file before each write, so handles appending to one
//!   file interleave whole writes and never overwrite each other. After each append the
//!   cursor is set to the kernel's file position (`lseek(fd, 0, SEEK_CUR)`: no I/O), i.e. just
//!   past the bytes written, as std's `File` has it.
//!
//! # Invariants
//! - The cursor is the logical position: the offset of the read-ahead's first byte, and the offset
//!   the next write goes to. Read-ahead and a write-behind never coexist (a write drops the
//!   read-ahead, a read drains the write first).
//! - The handle's own calls (`read_at`, `write_at`, `set_len`, `sync_data`, `metadata`, ...;
//!   [`Stream::poll_settle`]) first wait for the write-behind and report its error, so they
//!   see (and order after) every byte a stream write reported written. A call that may
//!   change the file's contents or size also forgets the read-ahead, the read in flight and
//!   a `SeekFrom::End` size query in flight (the cursor stays: it was already the logical
//!   position), so no stream read or seek afterwards uses bytes or sizes older than the
//!   change. Reads past a new, shorter end give 0, as std's `File`.
//! - A write-behind is never cancelled: when the file is dropped with one in flight, the
//!   write-behind's drop hands it to a task that finishes it (rewriting a short write), or
//!   detaches it ([`Op::detach`](runtime::ext::Op::detach)) where that task cannot run
//!   (at shutdown); it holds a clone of the fd and owns its buffer, so the fd is closed only
//!   after the write, and no memory the kernel may touch is freed or moved. What it fails
//!   with then is lost (no one is left to tell).
//! - A write error does not stick here: it is reported once (the write-behind's failure is
//!   taken at once) and the cursor goes back where the failed bytes began.
//!
//! The buffers and ops in flight are the runtime's shared I/O core (`runtime::ext::io`): a
//! [`ReadAhead`] and a [`WriteBehind`] over the file's fd, at the cursor; this module keeps
//! the cursor, the ordering between the directions and the handle's coherence rules.
//!
//! The positional API (`read_at`, `write_at`, ...) neither uses nor moves the cursor.
//! Files opened with `O_DIRECT` refuse the stream traits (`InvalidInput`): their buffers
//! must be aligned, so use `read_at`/`write_at` with an [`AlignedBuf`](crate::AlignedBuf).

use std::future::Future;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use runtime::ext::io::{ReadAhead, WriteBehind, CURRENT_POS};
use runtime::ext::Op;

use crate::fd::SharedFd;
use crate::ops::{self, Statx};

mod fd_io;
mod traits;
mod wake;

use fd_io::FileFd;
use wake::WakeList;

/// The internal read buffer's size: the most one read takes.
const READ_CAP: usize = 64 * 1024;
/// The most one `poll_write` accepts.
const WRITE_CAP: usize = 64 * 1024;

/// What one of the handle's own calls does to the file, for [`Stream::poll_settle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only looks at it (positional reads, `metadata`, the syncs).
    Looks,
    /// May change its contents or size (positional writes, `set_len`, `fallocate`).
    Changes,
}

/// A file's cursor, its read-ahead and write-behind, and the size query in flight.
pub(crate) struct Stream {
    /// The cursor: the offset the next stream read or write starts at.
    pos: u64,
    /// Whether the file was opened with `O_APPEND`.
    append: bool,
    /// Whether the file was opened with `O_DIRECT` (the stream traits refuse it).
    direct: bool,
    /// Read-ahead: its buffered bytes are the file's bytes from `pos` on; a read in flight
    /// reads at `pos`.
    read: ReadAhead<FileFd>,
    /// Write-behind: at most one write in flight, at the offset it was accepted for.
    write: WriteBehind<FileFd>,
    /// The statx of a `SeekFrom::End` seek in flight, and that seek.
    size_op: Option<(Op<Statx>, SeekFrom)>,
    /// A seek started by tokio's `start_seek`, not yet completed.
    #[cfg_attr(not(feature = "tokio-io"), allow(dead_code))]
    pending_seek: Option<SeekFrom>,
    /// The handle's own calls waiting for the write-behind (made at the first such wait).
    waiters: Option<Arc<WakeList>>,
}

impl Stream {
    /// A cursor at offset 0 over `fd`.
    pub(crate) fn new(fd: &SharedFd, append: bool, direct: bool) -> Stream {
        Stream {
            pos: 0,
            append,
            direct,
            read: ReadAhead::new(FileFd(fd.clone()), READ_CAP),
            write: WriteBehind::new(FileFd(fd.clone()), WRITE_CAP),
            size_op: None,
            pending_seek: None,
            waiters: None,
        }
    }

    /// The cursor as last known (a write in flight may not be counted yet in append mode).
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Starts the cursor at `pos` (a file adopted from std at its OS offset, or a clone);
    /// called before any stream I/O, so nothing is buffered.
    pub(crate) fn start_at(mut self, pos: u64) -> Stream {
        self.pos = pos;
        self
    }

    /// Whether writes append (`O_APPEND`).
    pub(crate) fn is_append(&self) -> bool {
        self.append
    }

    fn check_direct(&self) -> io::Result<()> {
        if self.direct {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a file opened with O_DIRECT has no stream reads or writes (its buffers must \
                 be aligned): use read_at/write_at with an AlignedBuf",
            ));
        }
        Ok(())
    }

    /// Waits for a read in flight, keeping what it read as the read-ahead.
    fn poll_read_op(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.read.is_idle() {
            ready!(self.read.poll_fill_buf_at(cx, self.pos, READ_CAP))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Drops the read-ahead (the cursor stays), once no read is in flight.
    fn poll_drop_read_ahead(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        // A failed read-ahead matters to no one now: its error is dropped with it.
        let _ = ready!(self.poll_read_op(cx));
        self.read.discard();
        Poll::Ready(())
    }

    /// Forgets everything read before a change to the file: the read-ahead, a read in
    /// flight (cancelled: the driver keeps its buffer until the kernel is done with it) and
    /// a size query in flight. The cursor stays.
    fn forget_reads(&mut self) {
        self.read.discard();
        self.size_op = None;
    }

    /// Sets the cursor to the kernel's file position, after an append.
    fn sync_append_pos(&mut self, fd: &SharedFd) -> io::Result<()> {
        // SAFETY: `lseek` on an fd this file keeps open; it touches no memory of ours.
        let at = unsafe { libc::lseek(fd.raw(), 0, libc::SEEK_CUR) };
        if at < 0 {
            return Err(io::Error::last_os_error());
        }
        self.pos = at as u64;
        Ok(())
    }

    /// After a write-behind error: takes its failure (errors do not stick on a file) and
    /// puts the cursor back where the failed bytes began.
    fn write_failed(&mut self, e: io::Error) -> io::Error {
        if let Some(at) = self.write.take_failure() {
            if !self.append && at != CURRENT_POS {
                self.pos = at;
            }
        }
        e
    }

    /// Waits until the bytes already accepted are written, rewriting short writes.
    fn poll_drain(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let was_writing = !self.write.is_idle();
        if let Err(e) = ready!(self.write.poll_drain(cx)) {
            return Poll::Ready(Err(self.write_failed(e)));
        }
        if was_writing && self.append {
            self.sync_append_pos(fd)?;
        }
        Poll::Ready(Ok(()))
    }

    /// Before one of the handle's own calls: waits for the write-behind (any number of
    /// calls of a shared file may wait at once) and gives its error, if any; then, for a
    /// call that changes the file, forgets what was read before it (see the module's
    /// invariants).
    pub(crate) fn poll_settle(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        access: Access,
    ) -> Poll<io::Result<()>> {
        if !self.write.is_idle() {
            // An op keeps one waker: poll it with one that wakes every waiting call.
            let list = self.waiters.get_or_insert_with(Arc::default).clone();
            list.register(cx.waker());
            let waker = Waker::from(list);
            ready!(self.poll_drain(fd, &mut Context::from_waker(&waker)))?;
        }
        if access == Access::Changes {
            self.forget_reads();
        }
        Poll::Ready(Ok(()))
    }

    /// The read-ahead, reading up to `want` bytes (at most 64 KiB) at the cursor first if
    /// there is none; empty at the end of the file.
    fn poll_fill(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        want: usize,
    ) -> Poll<io::Result<&[u8]>> {
        self.check_direct()?;
        ready!(self.poll_drain(fd, cx))?;
        if self.read.buffered().is_empty() && self.read.is_idle() {
            check_offset(self.pos)?;
        }
        self.read
            .poll_fill_buf_at(cx, self.pos, want.clamp(1, READ_CAP))
    }

    /// The read-ahead, reading up to 64 KiB at the cursor first if there is none (what
    /// `AsyncBufRead` lends); empty at the end of the file.
    pub(crate) fn poll_fill_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<&[u8]>> {
        self.poll_fill(fd, cx, READ_CAP)
    }

    /// Marks `amt` bytes of the read-ahead as read, moving the cursor past them.
    pub(crate) fn consume(&mut self, amt: usize) {
        let amt = amt.min(self.read.buffered().len());
        self.read.consume(amt);
        self.pos += amt as u64;
    }

    /// Copies up to `max` bytes of read-ahead out with `put`, reading (no more than `max`)
    /// first if there is none; gives the count, 0 at the end of the file.
    pub(crate) fn poll_read_with(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        max: usize,
        put: impl FnOnce(&[u8]),
    ) -> Poll<io::Result<usize>> {
        if max == 0 {
            return Poll::Ready(Ok(0));
        }
        let avail = ready!(self.poll_fill(fd, cx, max))?;
        let n = avail.len().min(max);
        put(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }

    /// Accepts up to 64 KiB of `bufs`, in order, and starts writing it at the cursor.
    pub(crate) fn poll_write_vectored(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        self.check_direct()?;
        ready!(self.poll_drain(fd, cx))?;
        ready!(self.poll_drop_read_ahead(cx));
        // A size asked before this write is stale once it starts.
        self.size_op = None;
        let n = bufs.iter().map(|b| b.len()).sum::<usize>().min(WRITE_CAP);
        let at = self.pos;
        let offset = if self.append {
            CURRENT_POS
        } else {
            // The last byte's offset must fit the kernel's signed offset.
            let end = at.saturating_add(n as u64);
            check_offset(at).and_then(|()| check_offset(end))?;
            self.pos = end;
            at
        };
        // Copies, starts the write and polls it once (the first poll submits the SQE, so
        // the bytes leave without waiting for another call); a write that already failed
        // fails this one.
        match ready!(self.write.poll_write_vectored_at(cx, bufs, offset)) {
            Ok(n) => {
                if self.append && self.write.is_idle() {
                    self.sync_append_pos(fd)?;
                }
                Poll::Ready(Ok(n))
            }
            Err(e) => Poll::Ready(Err(self.write_failed(e))),
        }
    }

    /// Waits until every accepted byte is written (`flush`; no `fsync`).
    pub(crate) fn poll_flush(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_drain(fd, cx)
    }

    /// Moves the cursor to `target` once both directions are idle; gives the new cursor.
    pub(crate) fn poll_seek(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        target: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        ready!(self.poll_drain(fd, cx))?;
        let _ = ready!(self.poll_read_op(cx));
        let base: i128 = match target {
            SeekFrom::Start(n) => i128::from(n),
            SeekFrom::Current(d) => i128::from(self.pos) + i128::from(d),
            SeekFrom::End(d) => {
                if matches!(&self.size_op, Some((_, t)) if *t != target) {
                    // A seek given up on: its statx is of no use to this one.
                    self.size_op = None;
                }
                let (op, _) = self
                    .size_op
                    .get_or_insert_with(|| (ops::statx_fd(fd, 0), target));
                let res = ready!(Pin::new(op).poll(cx));
                self.size_op = None;
                i128::from(res?.len()) + i128::from(d)
            }
        };
        if base < 0 || base > i128::from(i64::MAX) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "seek {target:?} from offset {} leads to offset {base}, outside 0..=i64::MAX",
                    self.pos
                ),
            )));
        }
        let new = base as u64;
        // Keep the read-ahead when the cursor moves within it.
        let avail = self.read.buffered().len() as u64;
        if new >= self.pos && new - self.pos <= avail {
            self.read.consume((new - self.pos) as usize);
        } else {
            self.read.discard();
        }
        self.pos = new;
        Poll::Ready(Ok(new))
    }
}

/// Offsets past `i64::MAX` are negative to the kernel (and -1 means its file position).
fn check_offset(pos: u64) -> io::Result<()> {
    if pos > i64::MAX as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("file offset {pos} is past i64::MAX"),
        ));
    }
    Ok(())
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("pos", &self.pos)
            .field("append", &self.append)
            .field("read_in_flight", &!self.read.is_idle())
            .field("write_in_flight", &!self.write.is_idle())
            .finish()
    }
}
