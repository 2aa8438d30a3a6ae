//! The write direction behind `futures::io::AsyncWrite` (and tokio's) on a stream socket.
//! (The read direction is `io::read`.)
//!
//! Poll-based callers lend their bytes only for one call, but the kernel needs a buffer it
//! owns until the CQE, so `poll_write` copies the caller's bytes into a buffer of the
//! socket's, starts a `send` and reports them written (write-behind, like a `BufWriter`);
//! the next `poll_write`, `poll_flush` or `poll_close` first waits for that send and
//! reports its error, if any. `write_chunk` does the same with a received chunk, without
//! the copy. The send carries `MSG_WAITALL` (the kernel sends every byte, waiting for room
//! itself) and wakes nobody when it completes: only the next write, flush or close waits
//! for it. The buffer is freed once its send is done, so an idle connection holds none.
//! Flush or close before dropping the socket: dropping it cancels a send still in flight.
//!
//! Dropping the socket mid-op is safe: the op moves its buffer into the driver's ignored slot.

use std::future::Future;
use std::io;
use std::net::Shutdown as How;
use std::pin::Pin;
use std::task::{ready, Context, Poll, Waker};

use runtime::buf::{IoBuf, Slice};
use runtime::driver::Op;

use super::Chunk;
use crate::fd::SharedFd;
use crate::ops::{self, Send, Shutdown};

/// The most `poll_write` copies in one call.
const WRITE_CAP: usize = 64 * 1024;

/// A send of part of a buffer the write direction owns.
type SendOp = Op<Send<Slice<Outgoing>>>;

/// The bytes of the send in flight: a copy of what `poll_write` was lent, or a received
/// chunk passed on as it is ([`WriteState::poll_write_chunk`]).
enum Outgoing {
    Copied(Vec<u8>),
    Chunk(Chunk),
}

// SAFETY: both kinds are `IoBuf`s themselves (a `Vec`'s bytes stay on the heap, a chunk's in
// its ring's memory or its own `Vec`, while the value moves); this forwards to them
// unchanged.
unsafe impl IoBuf for Outgoing {
    fn stable_ptr(&self) -> *const u8 {
        match self {
            Outgoing::Copied(v) => v.stable_ptr(),
            Outgoing::Chunk(c) => c.stable_ptr(),
        }
    }

    fn bytes_init(&self) -> usize {
        match self {
            Outgoing::Copied(v) => v.bytes_init(),
            Outgoing::Chunk(c) => c.bytes_init(),
        }
    }

    fn bytes_total(&self) -> usize {
        match self {
            Outgoing::Copied(v) => v.bytes_total(),
            Outgoing::Chunk(c) => c.bytes_total(),
        }
    }
}

/// The write direction: a `send` of part of a buffer in flight, or nothing.
///
/// The ops live in a box made at the first write and kept (one allocation per socket, not
/// per write): a socket stays small, and it is held twice by an `async fn` that takes it by
/// value. The bytes are freed once sent, so an idle socket holds no buffer.
#[derive(Default)]
pub(crate) struct WriteState {
    ops: Option<Box<Pending>>,
    closed: bool,
}

/// The write direction's ops in flight.
#[derive(Default)]
struct Pending {
    send: Option<SendOp>,
    shutdown: Option<Op<Shutdown>>,
}

impl WriteState {
    /// The ops' box, made on first use.
    fn pending(&mut self) -> &mut Pending {
        self.ops.get_or_insert_with(Box::default)
    }

    /// Waits until the bytes already accepted are sent, resending short sends.
    fn poll_drain(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(pending) = self.ops.as_deref_mut() else {
            return Poll::Ready(Ok(()));
        };
        while let Some(op) = pending.send.as_mut() {
            let (res, slice) = ready!(Pin::new(op).poll(cx));
            pending.send = None;
            let (begin, end) = (slice.begin(), slice.end());
            let buf = slice.into_inner();
            match res {
                Ok(0) => {
                    let err = io::Error::new(io::ErrorKind::WriteZero, "the socket took 0 bytes");
                    return Poll::Ready(Err(err));
                }
                Ok(n) if begin + n < end => {
                    pending.send = Some(ops::send_all(fd, buf.slice(begin + n..end)));
                }
                // Sent: the buffer is freed, so an idle connection holds none.
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    pending.send = Some(ops::send_all(fd, buf.slice(begin..end)));
                }
                Err(e) => return Poll::Ready(Err(e)),
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
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut buf = Vec::with_capacity(total.min(WRITE_CAP));
        for b in bufs {
            let room = WRITE_CAP - buf.len();
            if room == 0 {
                break;
            }
            buf.extend_from_slice(&b[..b.len().min(room)]);
        }
        let n = buf.len();
        self.start_send(fd, Outgoing::Copied(buf));
        Poll::Ready(Ok(n))
    }

    /// Waits for the bytes already accepted, then starts sending `chunk` as it is (taken
    /// out of the option; no copy) and is ready: the chunk is held until its send is done.
    pub(crate) fn poll_write_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        chunk: &mut Option<Chunk>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(fd, cx))?;
        match chunk.take() {
            Some(c) if !c.is_empty() => self.start_send(fd, Outgoing::Chunk(c)),
            _ => {}
        }
        Poll::Ready(Ok(()))
    }

    /// Starts sending all of `buf` (nothing else in flight).
    fn start_send(&mut self, fd: &SharedFd, buf: Outgoing) {
        let n = buf.bytes_init();
        let op = self
            .pending()
            .send
            .insert(ops::send_all(fd, buf.slice(..n)));
        // Poll once now: the first poll submits the SQE, so the bytes leave without waiting
        // for another call. It registers no waker: nobody waits for this send until the
        // next write, flush or close polls it (with theirs), so its completion wakes no
        // task, and a task that writes a reply and then waits for the next request is
        // woken once per request, not twice. The kernel sends every byte itself
        // (`MSG_WAITALL`), so no short send waits for the task to resend the rest.
        let mut detached = Context::from_waker(Waker::noop());
        let _ = Pin::new(op).poll(&mut detached);
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
        let pending = self.pending();
        let op = pending
            .shutdown
            .get_or_insert_with(|| ops::shutdown(fd, How::Write));
        let res = ready!(Pin::new(op).poll(cx));
        pending.shutdown = None;
        self.closed = true;
        Poll::Ready(res)
    }
}

impl std::fmt::Debug for WriteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteState")
            .field(
                "in_flight",
                &self.ops.as_ref().is_some_and(|p| p.send.is_some()),
            )
            .field("closed", &self.closed)
            .finish()
    }
}
