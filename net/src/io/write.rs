//! The write direction behind `futures::io::AsyncWrite` (and tokio's) on a stream socket,
//! and `write_chunk`. (The read direction is `io::read`.)
//!
//! Poll-based callers lend their bytes only for one call, but the kernel needs a buffer it
//! owns until the CQE, so `poll_write` copies the caller's bytes into a buffer, starts a
//! `send` and reports them written (write-behind, like a `BufWriter`); the next
//! `poll_write`, `poll_flush` or `poll_close` first waits for that send and reports its
//! error, if any. `write_chunk` does the same with a received chunk, without the copy.
//!
//! hyper's I/O in `serve` flushes without waiting ([`WriteState::poll_flush_started`]):
//! hyper flushes every response and then reads the next request, and the wait cost a wake
//! and a poll of the connection's task per request, for a send that completes in the same
//! submission. The next write (or hyper's shutdown) waits for it and reports its error, as
//! does the read that meets the connection's reset. The traits' `poll_flush` keeps waiting:
//! a caller's `write_all` then `flush` gets a failed send's error there, as it gets it from
//! the write on std and tokio.
//!
//! The send is detached ([`Op::detach`](runtime::ext::Op::detach)): it carries
//! `MSG_WAITALL` (the kernel sends every byte itself, waiting for room), its completion
//! wakes no task unless one waits for it, and the driver frees its bytes (a chunk goes back
//! to its ring) as soon as it completes, so an idle connection holds no buffer. It is not
//! cancelled when the socket is dropped: bytes reported written are sent, as `close(2)`
//! leaves a socket buffer's bytes to be sent (the op keeps the socket open until then).
//!
//! A send that fails loses bytes already reported written, so the failure is sticky: the
//! call that collects it returns it, with its kind (after a short `MSG_WAITALL` send, the
//! error a plain send gives then, see `owned::short_send_error`), and every later write, `write_chunk`,
//! flush and close fails with the same kind, as a byte sent after the gap would corrupt
//! the stream.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::net::Shutdown as How;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll, Waker};

use runtime::buf::IoBuf;
use runtime::ext::io::StickyError;
use runtime::ext::{Op, SharedFd};

use super::pool::WriteBuf;
use super::Chunk;
use crate::ops::{self, Shutdown};

/// The most `poll_write` copies in one call.
const WRITE_CAP: usize = 64 * 1024;

/// The write direction: the outcome of the send in flight, if any, and the shutdown.
///
/// Kept in a box made at the first write (one allocation per socket): a socket stays small,
/// and it is held twice by an `async fn` that takes it by value. The send itself is
/// detached ([`Op::detach`](runtime::ext::Op::detach)): the driver frees its bytes as
/// soon as it completes, so an idle socket holds no buffer.
#[derive(Default)]
pub(crate) struct WriteState {
    /// In a `RefCell`, borrowed only within one poll: the poll traits and `write_chunk`
    /// reach it through `&mut` (no run-time borrow), the owned-buffer writes, which take
    /// `&self`, through [`WriteState::poll_flush_shared`] (see `io::ordered`).
    ops: RefCell<Option<Box<Pending>>>,
    closed: bool,
}

/// The write direction's ops.
#[derive(Default)]
struct Pending {
    /// Where the send in flight reports its outcome (reused from send to send).
    status: Rc<SendStatus>,
    /// A send was started and its outcome not yet collected.
    in_flight: bool,
    /// Why a send failed, once one has: every later call fails with it.
    failed: Option<StickyError>,
    /// Boxed: an op carries its SQE until it is pushed, and only a closing socket has one,
    /// so a socket between writes keeps this box small.
    shutdown: Option<Box<Op<Shutdown>>>,
}

/// The outcome of a detached send, written by its CQE handler inside the driver.
#[derive(Default)]
struct SendStatus {
    result: Cell<Option<Outcome>>,
    /// The task waiting for the outcome, woken by the handler.
    waker: Cell<Option<Waker>>,
}

/// What a send's CQE said. A short count is kept as counts: the socket is asked why (by a
/// plain send) only when the outcome is collected, outside the driver (the handler must
/// not use the runtime, which installing a direct descriptor's fd for that send does).
enum Outcome {
    Sent,
    Short { sent: usize, len: usize },
    Failed(io::Error),
}

impl WriteState {
    /// The ops' box, made on first use.
    fn pending(&mut self) -> &mut Pending {
        self.ops.get_mut().get_or_insert_with(Box::default)
    }

    /// Waits until the send in flight (if any) is done, and reports its error, or an
    /// earlier send's (sticky: see the module documentation).
    fn poll_drain(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        drain(self.ops.get_mut().as_deref_mut(), fd, Some(cx))
    }

    /// [`poll_flush`](WriteState::poll_flush) for a caller holding only `&self` (an
    /// owned-buffer write, which waits for the write-behind first).
    pub(crate) fn poll_flush_shared(
        &self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        drain(self.ops.borrow_mut().as_deref_mut(), fd, Some(cx))
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
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut buf = WriteBuf::with_capacity(total.min(WRITE_CAP));
        for b in bufs {
            let room = WRITE_CAP - buf.len();
            if room == 0 {
                break;
            }
            buf.extend_from_slice(&b[..b.len().min(room)]);
        }
        let n = buf.len();
        // A chunk of its own: what `write_chunk` sends, with the copy in place of a ring
        // buffer; a small one goes back to the core's pool once sent.
        self.start_send(fd, Chunk::from_write(buf));
        Poll::Ready(Ok(n))
    }

    /// Waits for the bytes already accepted, then starts sending `chunk` as it is (taken
    /// out of the option; no copy) and is ready: the chunk is freed once it is sent.
    pub(crate) fn poll_write_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        chunk: &mut Option<Chunk>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(fd, cx))?;
        match chunk.take() {
            Some(c) if !c.is_empty() => self.start_send(fd, c),
            _ => {}
        }
        Poll::Ready(Ok(()))
    }

    /// Starts sending all of `buf` (nothing else in flight), detached: the kernel sends
    /// every byte itself (`MSG_WAITALL`), its completion wakes no task (only one waiting in
    /// `poll_drain`), and the driver frees `buf` as soon as it is sent.
    fn start_send(&mut self, fd: &SharedFd, buf: Chunk) {
        let len = buf.bytes_init();
        let pending = self.pending();
        if Rc::strong_count(&pending.status) > 1 {
            // The last send's handler has not run (it cannot have been collected then; a
            // fresh status keeps the two apart all the same).
            pending.status = Rc::default();
        }
        pending.in_flight = true;
        let status = pending.status.clone();
        ops::send_all(fd, buf).detach(move |cqe| {
            let outcome = match cqe.result {
                Ok(n) if n as usize >= len => Outcome::Sent,
                Ok(n) => Outcome::Short {
                    sent: n as usize,
                    len,
                },
                Err(e) => Outcome::Failed(e),
            };
            status.result.set(Some(outcome));
            if let Some(w) = status.waker.take() {
                w.wake();
            }
        });
    }

    /// Waits until every accepted byte is sent.
    pub(crate) fn poll_flush(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_drain(fd, cx)
    }

    /// Reports the send's error if its CQE has come (or an earlier send's), and is
    /// otherwise ready at once, the send left in flight (see the module documentation).
    #[cfg(feature = "hyper")]
    pub(crate) fn poll_flush_started(&mut self, fd: &SharedFd) -> Poll<io::Result<()>> {
        drain(self.ops.get_mut().as_deref_mut(), fd, None)
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
        let pending = self.pending();
        let op = pending
            .shutdown
            .get_or_insert_with(|| Box::new(ops::shutdown(fd, How::Write)));
        let res = ready!(Pin::new(&mut **op).poll(cx));
        pending.shutdown = None;
        self.closed = true;
        Poll::Ready(res)
    }
}

impl std::fmt::Debug for WriteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Ok(ops) = self.ops.try_borrow() else {
            return f.write_str("WriteState { <in use> }");
        };
        f.debug_struct("WriteState")
            .field("in_flight", &ops.as_ref().is_some_and(|p| p.in_flight))
            .field("closed", &self.closed)
            .field(
                "failed",
                &ops.as_ref()
                    .and_then(|p| p.failed.as_ref().map(|f| f.kind())),
            )
            .finish()
    }
}

/// Waits until the send in flight (if any) is done, and reports its error, or an earlier
/// send's (sticky: see the module documentation). Without `cx`, does not wait: a send
/// still in flight is left to a later call.
fn drain(
    pending: Option<&mut Pending>,
    fd: &SharedFd,
    cx: Option<&mut Context<'_>>,
) -> Poll<io::Result<()>> {
    let Some(pending) = pending else {
        return Poll::Ready(Ok(()));
    };
    if let Some(failure) = &pending.failed {
        return Poll::Ready(Err(failure.error()));
    }
    if !pending.in_flight {
        return Poll::Ready(Ok(()));
    }
    let Some(outcome) = pending.status.result.take() else {
        let Some(cx) = cx else {
            return Poll::Ready(Ok(()));
        };
        pending.status.waker.set(Some(cx.waker().clone()));
        return Poll::Pending;
    };
    pending.in_flight = false;
    let err = match outcome {
        Outcome::Sent => return Poll::Ready(Ok(())),
        // With MSG_WAITALL a short count means the socket failed: a plain send says why.
        Outcome::Short { sent, len } => super::owned::short_send_error(fd, sent, len),
        Outcome::Failed(e) => e,
    };
    pending.failed = Some(StickyError::of(&err));
    Poll::Ready(Err(err))
}
