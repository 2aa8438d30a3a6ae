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
use runtime::ext::SharedFd;

use super::RingRead;

/// A stream of received chunks in provided buffers. Made by a stream socket's
/// [`recv_stream`](crate::stream::StreamSocket::recv_stream) (TCP's or Unix's).
///
/// The receive is the same as the streams' own read path (`io::ring_read`), on the caller's
/// ring: a connection's unread backlog is bounded (its receive pauses past a few buffers'
/// worth and re-arms when the stream is polled again), and one that found the ring empty
/// re-arms as soon as a buffer is back.
pub struct RecvStream {
    fd: SharedFd,
    read: RingRead,
    done: bool,
}

impl RecvStream {
    pub(crate) fn new(fd: SharedFd, ring: &BufRing) -> RecvStream {
        RecvStream {
            fd,
            read: RingRead::new(ring.clone(), false),
            done: false,
        }
    }

    /// How many times the kernel found the ring empty (`ENOBUFS`) and the stream had to
    /// re-arm: a sign the ring is too small for the load, or buffers are held too long.
    pub fn times_starved(&self) -> u64 {
        self.read.empties()
    }

    /// The ring the buffers come from.
    pub fn ring(&self) -> &BufRing {
        self.read.ring()
    }
}

impl Stream for RecvStream {
    type Item = io::Result<RingBuf>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match std::task::ready!(this.read.poll_buf(&this.fd, cx)) {
            Ok(Some(buf)) => Poll::Ready(Some(Ok(buf))),
            Ok(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            // An error (a reset, say) is yielded once and ends the stream.
            Err(e) => {
                this.done = true;
                Poll::Ready(Some(Err(e)))
            }
        }
    }
}

impl fmt::Debug for RecvStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field("ring", self.read.ring())
            .field("done", &self.done)
            .finish()
    }
}
