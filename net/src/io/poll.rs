//! The write direction behind `futures::io::AsyncWrite` (and tokio's) on a stream socket.
//! (The read direction is `io::read`.)
//!
//! Poll-based callers lend their bytes only for one call, but the kernel needs a buffer it
//! owns until the CQE, so `poll_write` copies the caller's bytes into a buffer of the
//! socket's, starts a `send` and reports them written (write-behind, like a `BufWriter`);
//! the next `poll_write`, `poll_flush` or `poll_close` first waits for that send (resending
//! a short one) and reports its error, if any. The buffer is freed once its send is done,
//! so an idle connection holds none. Flush or close before dropping the socket: dropping it
//! cancels a send still in flight.
//!
//! Dropping the socket mid-op is safe: the op moves its buffer into the driver's ignored slot.

use std::future::Future;
use std::io;
use std::net::Shutdown as How;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use runtime::buf::{IoBuf, Slice};
use runtime::driver::Op;

use crate::fd::SharedFd;
use crate::ops::{self, Send, Shutdown};

/// The most `poll_write` copies in one call.
const WRITE_CAP: usize = 64 * 1024;

/// A send of part of a buffer the write direction owns.
type SendOp = Op<Send<Slice<Vec<u8>>>>;

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
                    pending.send = Some(ops::send(fd, buf.slice(begin + n..end)));
                }
                // Sent: the buffer is freed, so an idle connection holds none.
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    pending.send = Some(ops::send(fd, buf.slice(begin..end)));
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
        self.pending().send = Some(ops::send(fd, buf.slice(..n)));
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
