//! `RecvStream`: the bytes a stream socket receives, as a `Stream` of provided buffers.
//!
//! Backed by one multishot `RECV` that picks buffers from a [`BufRing`]: no buffer is
//! handed to the kernel per read, and one SQE serves many receives. Each item is a
//! [`RingBuf`] holding one chunk; dropping it returns the buffer to the ring. When the ring
//! runs dry the kernel ends the op with `ENOBUFS`; the stream re-arms as soon as a buffer is
//! back (at once if the caller already dropped some), so holding every buffer stalls the
//! stream until one is dropped, which is the back-pressure.
//!
//! The stream ends (`None`) at end of stream; an error (a reset, say) is yielded once and
//! ends it too. Dropping the stream cancels its op.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use runtime::buf::{BufRing, RingBuf};
use runtime::driver::MultiOp;

use crate::fd::SharedFd;
use crate::ops::{recv_multi, RecvMulti};

/// A stream of received chunks in provided buffers. Made by
/// [`TcpStream::recv_stream`](crate::TcpStream::recv_stream).
pub struct RecvStream {
    fd: SharedFd,
    ring: BufRing,
    op: Option<MultiOp<RecvMulti>>,
    /// The last op ended with `ENOBUFS`: re-arm only once a buffer is back.
    starved: bool,
    /// How many times the ring ran dry (`ENOBUFS`).
    times_starved: u64,
    done: bool,
}

impl RecvStream {
    pub(crate) fn new(fd: SharedFd, ring: &BufRing) -> RecvStream {
        RecvStream {
            fd,
            ring: ring.clone(),
            op: None,
            starved: false,
            times_starved: 0,
            done: false,
        }
    }

    /// How many times the kernel found the ring empty (`ENOBUFS`) and the stream had to
    /// re-arm: a sign the ring is too small for the load, or buffers are held too long.
    pub fn times_starved(&self) -> u64 {
        self.times_starved
    }

    /// The ring the buffers come from.
    pub fn ring(&self) -> &BufRing {
        &self.ring
    }
}

impl Stream for RecvStream {
    type Item = io::Result<RingBuf>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let op = match &mut this.op {
                Some(op) => op,
                None => {
                    if this.starved {
                        std::task::ready!(this.ring.poll_available(cx));
                        this.starved = false;
                    }
                    this.op.insert(recv_multi(&this.fd, &this.ring))
                }
            };
            let Some(cqe) = std::task::ready!(op.poll_next_cqe(cx)) else {
                // The final CQE was already yielded: arm a new op.
                this.op = None;
                continue;
            };
            if !cqe.more() {
                this.op = None;
            }
            match &cqe.result {
                Ok(0) => {
                    // End of stream; a buffer, if the kernel picked one, goes back.
                    drop(this.ring.take(&cqe));
                    this.done = true;
                    this.op = None;
                    return Poll::Ready(None);
                }
                Ok(_) => match this.ring.take(&cqe) {
                    Some(buf) => return Poll::Ready(Some(Ok(buf))),
                    None => {
                        this.done = true;
                        return Poll::Ready(Some(Err(io::Error::other(
                            "multishot recv completed without a provided buffer",
                        ))));
                    }
                },
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    this.starved = true;
                    this.times_starved += 1;
                    this.op = None;
                }
                Err(_) => {
                    this.done = true;
                    this.op = None;
                    let Err(e) = cqe.result else { unreachable!() };
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl fmt::Debug for RecvStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field("ring", &self.ring)
            .field("armed", &self.op.is_some())
            .field("starved", &self.starved)
            .field("done", &self.done)
            .finish()
    }
}
