//! Write-behind: one owned buffer and at most one write op in flight.
//!
//! # Invariants
//! - `pending` holds the one write in flight, with where its bytes start in its buffer and
//!   the offset they go to; its buffer is the op's until the CQE.
//! - Bytes a write reported written are delivered: a short write is written again from
//!   where it stopped, and a dropped write-behind hands its write to a task that finishes
//!   it ([`Finish`]); a write that task cannot finish (it is dropped at shutdown) is
//!   detached ([`WriteOp::detach`]), never cancelled.
//! - The first error sticks: it is returned as is, and every later call fails with its kind
//!   and message, until the owner takes it ([`WriteBehind::take_failure`]).

use std::future::Future;
use std::io::{self, IoSlice};
use std::mem;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use super::{StickyError, WriteOp, CURRENT_POS};

/// A write in flight: the op, where its bytes start in its buffer, the offset they go to.
struct Pending<W: WriteOp> {
    op: W::Op,
    from: usize,
    offset: u64,
}

/// Buffered writing over a [`WriteOp`]: the building block of `AsyncWrite` for crates built
/// on the runtime (pipes, files).
pub struct WriteBehind<W: WriteOp> {
    sink: W,
    pending: Option<Pending<W>>,
    spare: Vec<u8>,
    cap: usize,
    failed: Option<Failure>,
}

/// A write-behind's first error: its kind, its message, and the offset the bytes it failed
/// to write were to go to.
#[derive(Debug)]
struct Failure {
    error: StickyError,
    offset: u64,
}

impl<W: WriteOp> WriteBehind<W> {
    /// A write-behind over `sink` that accepts at most `cap` bytes (at least 1) per write.
    pub fn new(sink: W, cap: usize) -> WriteBehind<W> {
        WriteBehind {
            sink,
            pending: None,
            spare: Vec::new(),
            cap: cap.max(1),
            failed: None,
        }
    }

    /// The op sink (the fd, usually).
    pub fn sink(&self) -> &W {
        &self.sink
    }

    /// Whether no write is in flight.
    pub fn is_idle(&self) -> bool {
        self.pending.is_none()
    }

    /// Whether a write failed (every later call fails with its kind).
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Forgets the sticky error, so that writes go on; gives the offset the bytes it failed
    /// to write were to go to ([`CURRENT_POS`] for the fd's own position), if there was one.
    pub fn take_failure(&mut self) -> Option<u64> {
        self.failed.take().map(|f| f.offset)
    }

    /// Accepts up to the capacity of `data` for the fd's own position: waits for the write
    /// in flight, copies, starts the write and reports the bytes written.
    pub fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_at(cx, &[IoSlice::new(data)], CURRENT_POS)
    }

    /// As [`poll_write`](Self::poll_write), gathering the slices into one write at `offset`
    /// ([`CURRENT_POS`]: the fd's own position).
    pub fn poll_write_vectored_at(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
        offset: u64,
    ) -> Poll<io::Result<usize>> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(self.sticky().map(|()| 0));
        }
        ready!(self.poll_drain(cx))?;
        let mut buf = mem::take(&mut self.spare);
        buf.clear();
        for b in bufs {
            let n = b.len().min(self.cap - buf.len());
            buf.extend_from_slice(&b[..n]);
            if buf.len() == self.cap {
                break;
            }
        }
        let n = buf.len();
        let op = self.sink.write(buf, 0, offset);
        self.pending = Some(Pending {
            op,
            from: 0,
            offset,
        });
        // The first poll submits the write; one that already failed fails this call.
        match self.poll_drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(n)),
        }
    }

    /// Waits until every accepted byte is written, writing again what a short write left.
    pub fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.sticky()?;
        match ready!(poll_pending(&self.sink, &mut self.pending, cx)) {
            Some(Done { res, buf, offset }) => {
                self.spare = buf;
                if let Err(e) = &res {
                    self.failed = Some(Failure {
                        error: StickyError::of(e),
                        offset,
                    });
                }
                Poll::Ready(res)
            }
            None => Poll::Ready(Ok(())),
        }
    }

    /// The sticky error, as a fresh error of the first one's kind and message.
    fn sticky(&self) -> io::Result<()> {
        match &self.failed {
            Some(f) => Err(f.error.error()),
            None => Ok(()),
        }
    }
}

/// A finished write: its outcome, its buffer (to reuse), and the offset of the last op
/// (where the bytes it failed to write were to go).
struct Done {
    res: io::Result<()>,
    buf: Vec<u8>,
    offset: u64,
}

/// Waits until the write in `pending` (if any) is done, writing again what a short write
/// left; `None` if there was none.
fn poll_pending<W: WriteOp>(
    sink: &W,
    pending: &mut Option<Pending<W>>,
    cx: &mut Context<'_>,
) -> Poll<Option<Done>> {
    while let Some(p) = pending.as_mut() {
        let (res, buf) = ready!(Pin::new(&mut p.op).poll(cx));
        let (from, offset) = (p.from, p.offset);
        *pending = None;
        match res {
            Ok(0) => {
                let msg = format!("the write took 0 of {} bytes", buf.len() - from);
                let res = Err(io::Error::new(io::ErrorKind::WriteZero, msg));
                return Poll::Ready(Some(Done { res, buf, offset }));
            }
            Ok(n) if from + n < buf.len() => {
                let offset = if offset == CURRENT_POS {
                    offset
                } else {
                    offset + n as u64
                };
                let op = sink.write(buf, from + n, offset);
                *pending = Some(Pending {
                    op,
                    from: from + n,
                    offset,
                });
            }
            Ok(_) => {
                let res = Ok(());
                return Poll::Ready(Some(Done { res, buf, offset }));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                let op = sink.write(buf, from, offset);
                *pending = Some(Pending { op, from, offset });
            }
            Err(e) => {
                let res = Err(e);
                return Poll::Ready(Some(Done { res, buf, offset }));
            }
        }
    }
    Poll::Ready(None)
}

impl<W: WriteOp> Drop for WriteBehind<W> {
    /// Lets the write in flight, whose bytes were reported written, finish: a task on the
    /// current core owns it and a clone of the sink until the last byte is written, so the
    /// fd closes only then. Its error has no caller left and is dropped (flush first to see
    /// it). After its core ended, nothing is left to finish.
    fn drop(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let mut finish = Finish {
            sink: self.sink.clone(),
            pending: Some(p),
        };
        // Off the loop on the core's thread (after `block_on` returned), the core is
        // entered: the task finishes the write at its next turn (or its shutdown detaches
        // it). With no core on this thread (it ended), the write was reaped and is dropped.
        let _home = crate::driver::EnterHome::new();
        if crate::context::current_core_id().is_none() {
            return;
        }
        drop(crate::spawn_local(async move {
            let _ = std::future::poll_fn(|cx| poll_pending(&finish.sink, &mut finish.pending, cx))
                .await;
        }));
    }
}

/// A dropped write-behind's write, finished by a task of its own; a write left when that
/// task is dropped unfinished (at shutdown) is detached, never cancelled.
struct Finish<W: WriteOp> {
    sink: W,
    pending: Option<Pending<W>>,
}

impl<W: WriteOp> Drop for Finish<W> {
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            W::detach(p.op);
        }
    }
}

impl<W: WriteOp> std::fmt::Debug for WriteBehind<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind")
            .field("writing", &self.pending.is_some())
            .field("failed", &self.failed.as_ref().map(|f| f.error.kind()))
            .finish()
    }
}
