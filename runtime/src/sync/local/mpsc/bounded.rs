//! The bounded flavour: [`Sender`], [`Receiver`], [`Permit`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::chan::{self, Chan, Tag};
use super::error::{SendError, TryRecvError, TrySendError};
use super::Recv;

/// Sends values into a bounded local channel, waiting while it is full; clone it for more
/// senders. `!Send`.
pub struct Sender<T> {
    chan: Chan<T>,
}

/// Receives the values of a bounded local channel, in the order they were sent. `!Send`.
pub struct Receiver<T> {
    chan: Chan<T>,
}

/// A slot reserved in a bounded channel: [`send`](Permit::send) fills it without waiting;
/// dropped unused, the slot goes to the next waiting sender.
pub struct Permit<'a, T> {
    chan: &'a Chan<T>,
}

pub(super) fn new<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let chan = chan::new(Some(capacity));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

impl<T> Sender<T> {
    /// Sends `value`, waiting for a free slot while the channel is full; gives the value
    /// back in `Err` if the receiver has closed or been dropped.
    ///
    /// Waiting senders are served in the order they started waiting. As with tokio, a
    /// future dropped before it completes has not sent its value (the value is dropped
    /// with it) and loses its place in line.
    pub async fn send(&self, value: T) -> Result<(), SendError<T>> {
        match self.reserve().await {
            Ok(permit) => {
                permit.send(value);
                Ok(())
            }
            Err(SendError(())) => Err(SendError(value)),
        }
    }

    /// Sends `value` if a slot is free now: `Full` (with the value) when the channel is
    /// full or other senders wait, `Closed` (with the value) when the receiver is gone.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        match self.try_reserve() {
            Ok(permit) => {
                permit.send(value);
                Ok(())
            }
            Err(TrySendError::Full(())) => Err(TrySendError::Full(value)),
            Err(TrySendError::Closed(())) => Err(TrySendError::Closed(value)),
        }
    }

    /// Waits for a free slot and reserves it; `Err` if the receiver has closed.
    pub fn reserve(&self) -> Reserve<'_, T> {
        Reserve {
            chan: &self.chan,
            key: None,
        }
    }

    /// Reserves a free slot if there is one now (see [`try_send`](Sender::try_send)).
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        let mut s = self.chan.borrow_mut();
        if s.rx_closed {
            return Err(TrySendError::Closed(()));
        }
        if s.free == 0 {
            return Err(TrySendError::Full(()));
        }
        s.free -= 1;
        Ok(Permit { chan: &self.chan })
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

    /// The slots free now (neither holding a value nor reserved).
    pub fn capacity(&self) -> usize {
        self.chan.borrow().free
    }

    /// The channel's capacity, as created.
    pub fn max_capacity(&self) -> usize {
        self.chan.borrow().bound
    }

    /// Whether both senders feed the same channel.
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        std::rc::Rc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        chan::add_sender(&self.chan);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        chan::drop_sender(&self.chan);
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("local::mpsc::Sender")
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The future of [`Sender::reserve`]: a [`Permit`] once a slot is free.
///
/// Dropped while waiting, it leaves the line; dropped after a slot was handed to it, it
/// hands the slot on (no wake-up is lost).
#[must_use = "futures do nothing unless polled"]
pub struct Reserve<'a, T> {
    chan: &'a Chan<T>,
    /// Its entry among the waiting senders, from its first `Pending`.
    key: Option<usize>,
}

impl<'a, T> Future for Reserve<'a, T> {
    type Output = Result<Permit<'a, T>, SendError<()>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let chan = this.chan;
        let mut s = chan.borrow_mut();
        let Some(key) = this.key else {
            if s.rx_closed {
                return Poll::Ready(Err(SendError(())));
            }
            if s.free > 0 {
                s.free -= 1;
                return Poll::Ready(Ok(Permit { chan }));
            }
            this.key = Some(s.send_waiters.push_back(Some(cx.waker().clone())));
            return Poll::Pending;
        };
        match s.send_waiters.tag(key) {
            Some(Tag::Waiting) => {
                s.send_waiters.set_waker(key, cx.waker());
                Poll::Pending
            }
            tag => {
                s.send_waiters.remove(key);
                this.key = None;
                match tag {
                    Some(Tag::Granted) => Poll::Ready(Ok(Permit { chan })),
                    _ => Poll::Ready(Err(SendError(()))),
                }
            }
        }
    }
}

impl<T> Drop for Reserve<'_, T> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else {
            return;
        };
        let waker = {
            let mut s = self.chan.borrow_mut();
            match s.send_waiters.remove(key) {
                Some(Tag::Granted) => s.release(),
                _ => None,
            }
        };
        chan::wake(waker);
    }
}

impl<T> fmt::Debug for Reserve<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reserve")
            .field("waiting", &self.key.is_some())
            .finish()
    }
}

impl<T> Permit<'_, T> {
    /// Sends `value` in the reserved slot, waking the receiver. If the receiver was
    /// dropped meanwhile, the value is dropped (as with tokio); after a mere
    /// [`close`](Receiver::close) it is still delivered.
    pub fn send(self, value: T) {
        let chan = self.chan;
        std::mem::forget(self);
        let pushed = chan.borrow_mut().push(value);
        match pushed {
            Ok(waker) => chan::wake(waker),
            Err(value) => drop(value),
        }
    }
}

impl<T> Drop for Permit<'_, T> {
    fn drop(&mut self) {
        let waker = self.chan.borrow_mut().release();
        chan::wake(waker);
    }
}

impl<T> fmt::Debug for Permit<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Permit")
    }
}

impl<T> Receiver<T> {
    /// Receives the next value, waiting while the channel is empty; `None` once it is
    /// empty and no value can come (every sender is gone, or [`close`](Receiver::close)
    /// was called and no reserved slot is left).
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
    /// on, waiting senders get their values back, queued values (and values sent through
    /// permits already reserved) can still be received.
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

    /// The slots free now (neither holding a value nor reserved).
    pub fn capacity(&self) -> usize {
        self.chan.borrow().free
    }

    /// The channel's capacity, as created.
    pub fn max_capacity(&self) -> usize {
        self.chan.borrow().bound
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        chan::drop_rx(&self.chan);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("local::mpsc::Receiver")
            .field("len", &self.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}
