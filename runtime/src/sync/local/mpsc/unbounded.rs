//! The unbounded flavour: [`UnboundedSender`], [`UnboundedReceiver`].

use std::fmt;
use std::task::{Context, Poll};

use super::chan::{self, Chan};
use super::error::{SendError, TryRecvError};
use super::Recv;

/// Sends values into an unbounded local channel without waiting; clone it for more
/// senders. `!Send`.
pub struct UnboundedSender<T> {
    chan: Chan<T>,
}

/// Receives the values of an unbounded local channel, in the order they were sent.
/// `!Send`.
pub struct UnboundedReceiver<T> {
    chan: Chan<T>,
}

pub(super) fn new<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let chan = chan::new(None);
    (
        UnboundedSender { chan: chan.clone() },
        UnboundedReceiver { chan },
    )
}

impl<T> UnboundedSender<T> {
    /// Queues `value` and wakes the receiver; gives the value back in `Err` if the
    /// receiver has closed or been dropped.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let pushed = {
            let mut s = self.chan.borrow_mut();
            if s.rx_closed {
                return Err(SendError(value));
            }
            s.push(value)
        };
        match pushed {
            Ok(waker) => {
                chan::wake(waker);
                Ok(())
            }
            Err(value) => Err(SendError(value)),
        }
    }

    /// Completes once the receiver has closed or been dropped.
    pub async fn closed(&self) {
        chan::Closed {
            chan: &self.chan,
            key: None,
        }
        .await
    }

    /// Whether the receiver has closed or been dropped.
    pub fn is_closed(&self) -> bool {
        self.chan.borrow().rx_closed
    }

    /// Whether both senders feed the same channel.
    pub fn same_channel(&self, other: &UnboundedSender<T>) -> bool {
        std::rc::Rc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for UnboundedSender<T> {
    fn clone(&self) -> UnboundedSender<T> {
        chan::add_sender(&self.chan);
        UnboundedSender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for UnboundedSender<T> {
    fn drop(&mut self) {
        chan::drop_sender(&self.chan);
    }
}

impl<T> fmt::Debug for UnboundedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("local::mpsc::UnboundedSender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl<T> UnboundedReceiver<T> {
    /// Receives the next value, waiting while the channel is empty; `None` once it is
    /// empty and every sender is gone or [`close`](UnboundedReceiver::close) was called.
    ///
    /// Cancel-safe: a value is taken only when the future completes, so dropping it (in a
    /// `select!`) loses nothing.
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv::new(&self.chan)
    }

    /// Takes the next value if one is queued: `Empty` if none yet, `Disconnected` if none
    /// can come.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        chan::try_recv(&self.chan)
    }

    /// Polls for the next value, registering `cx`'s waker (for hand-written futures).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        chan::poll_recv(&self.chan, cx)
    }

    /// Closes the channel for senders without dropping the receiver: sends fail from now
    /// on; queued values can still be received.
    pub fn close(&mut self) {
        chan::close(&self.chan);
    }

    /// Whether the channel is closed for senders: the receiver closed it or every sender
    /// is gone.
    pub fn is_closed(&self) -> bool {
        let s = self.chan.borrow();
        s.rx_closed || s.senders == 0
    }

    /// The number of values queued.
    pub fn len(&self) -> usize {
        self.chan.borrow().queue.len()
    }

    /// Whether no value is queued.
    pub fn is_empty(&self) -> bool {
        self.chan.borrow().queue.is_empty()
    }
}

impl<T> Drop for UnboundedReceiver<T> {
    fn drop(&mut self) {
        chan::drop_rx(&self.chan);
    }
}

impl<T> fmt::Debug for UnboundedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("local::mpsc::UnboundedReceiver")
            .field("len", &self.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}
