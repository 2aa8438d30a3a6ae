//! The state both flavours of the local channel share, and the operations on it.
//!
//! One `Rc<RefCell<Shared>>` holds the queue, the sender count, whether the receiver has
//! closed, the receiver's waker, and for the bounded flavour the free slots and the
//! senders waiting for one. Invariants:
//! - bounded, while the receiver lives: `free + queue.len() + reserved permits == bound`;
//!   and `free > 0` only while no sender waits (a freed slot goes to the first waiting
//!   sender before it is counted free), so senders are served in arrival order;
//! - the receiver's waker is stored only while a receive is pending, and taken when it is
//!   woken (a value arrives, the last sender goes, or after a close the last reserved
//!   slot is given back);
//! - wakers are woken, and values dropped, only after the borrow of the cell has ended:
//!   both may run code that uses the channel again.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::super::wait_list::WaitList;
use super::error::TryRecvError;

/// What happened to a waiting sender (or a waiting `closed()`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Tag {
    Waiting,
    /// Handed one slot: given back if dropped unused.
    Granted,
    /// The receiver closed.
    Closed,
}

/// The channel's state.
pub(super) struct Shared<T> {
    pub(super) queue: VecDeque<T>,
    pub(super) senders: usize,
    /// The receiver closed (or was dropped): new sends fail.
    pub(super) rx_closed: bool,
    /// The receiver was dropped: values that arrive through reserved slots are dropped.
    pub(super) rx_dropped: bool,
    rx_waker: Option<Waker>,
    /// Whether this is the bounded flavour (the unbounded one never waits).
    bounded: bool,
    /// The capacity; `usize::MAX` for the unbounded flavour.
    pub(super) bound: usize,
    /// Bounded: slots neither queued nor reserved.
    pub(super) free: usize,
    /// Bounded: senders waiting for a slot, in arrival order.
    pub(super) send_waiters: WaitList<Tag>,
    /// Futures of `Sender::closed`, woken when the receiver closes.
    closed_waiters: WaitList<Tag>,
}

/// A handle on the shared state.
pub(super) type Chan<T> = Rc<RefCell<Shared<T>>>;

/// A new channel with room for `bound` values (`None`: unbounded), and one sender.
pub(super) fn new<T>(bound: Option<usize>) -> Chan<T> {
    let (bounded, bound) = (bound.is_some(), bound.unwrap_or(usize::MAX));
    Rc::new(RefCell::new(Shared {
        queue: VecDeque::new(),
        senders: 1,
        rx_closed: false,
        rx_dropped: false,
        rx_waker: None,
        bounded,
        bound,
        free: bound,
        send_waiters: WaitList::new(Tag::Waiting),
        closed_waiters: WaitList::new(Tag::Waiting),
    }))
}

impl<T> Shared<T> {
    /// Slots reserved by permits and not yet used.
    fn reserved(&self) -> usize {
        if self.bounded {
            self.bound - self.free - self.queue.len()
        } else {
            0
        }
    }

    /// Queues `value` (its slot already accounted for); returns the receiver's waker to
    /// wake, or gives the value back to be dropped if the receiver is gone.
    pub(super) fn push(&mut self, value: T) -> Result<Option<Waker>, T> {
        if self.rx_dropped {
            return Err(value);
        }
        self.queue.push_back(value);
        Ok(self.rx_waker.take())
    }

    /// Gives one bounded slot back: to the first waiting sender, else to the free count;
    /// returns the waker to wake.
    pub(super) fn release(&mut self) -> Option<Waker> {
        if !self.bounded {
            return None;
        }
        if let Some(waker) = self.send_waiters.pop_front(Tag::Granted) {
            return waker;
        }
        self.free += 1;
        if self.rx_closed && self.reserved() == 0 {
            // The last reserved slot after a close: a pending receive may now end.
            return self.rx_waker.take();
        }
        None
    }
}

/// Wakes `waker`, if any (after the caller's borrow has ended).
pub(super) fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

/// Polls for the next value: `Some` with it, `None` once the queue is empty and no value
/// can come (every sender is gone, or the receiver closed and no reserved slot is left).
pub(super) fn poll_recv<T>(chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
    let (value, waker) = {
        let mut s = chan.borrow_mut();
        match s.queue.pop_front() {
            Some(v) => {
                let waker = s.release();
                (v, waker)
            }
            None if s.senders == 0 || (s.rx_closed && s.reserved() == 0) => {
                return Poll::Ready(None)
            }
            None => {
                match &s.rx_waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => s.rx_waker = Some(cx.waker().clone()),
                }
                return Poll::Pending;
            }
        }
    };
    wake(waker);
    Poll::Ready(Some(value))
}

/// Takes the next value if one is queued.
pub(super) fn try_recv<T>(chan: &Chan<T>) -> Result<T, TryRecvError> {
    let (value, waker) = {
        let mut s = chan.borrow_mut();
        match s.queue.pop_front() {
            Some(v) => {
                let waker = s.release();
                (v, waker)
            }
            None if s.senders == 0 || (s.rx_closed && s.reserved() == 0) => {
                return Err(TryRecvError::Disconnected)
            }
            None => return Err(TryRecvError::Empty),
        }
    };
    wake(waker);
    Ok(value)
}

/// Forgets the receiver's waker: a receive future was dropped while pending.
pub(super) fn forget_rx_waker<T>(chan: &Chan<T>) {
    let old = chan.borrow_mut().rx_waker.take();
    drop(old);
}

/// Closes the channel for senders: waiting sends fail, `closed()` futures complete.
pub(super) fn close<T>(chan: &Chan<T>) {
    let wakers = {
        let mut s = chan.borrow_mut();
        if s.rx_closed {
            return;
        }
        s.rx_closed = true;
        let mut wakers = s.send_waiters.drain(Tag::Closed);
        wakers.extend(s.closed_waiters.drain(Tag::Closed));
        wakers
    };
    wakers.into_iter().for_each(Waker::wake);
}

/// The receiver is dropped: closes, and drops the queued values outside the borrow.
pub(super) fn drop_rx<T>(chan: &Chan<T>) {
    close(chan);
    let (queue, waker) = {
        let mut s = chan.borrow_mut();
        s.rx_dropped = true;
        (std::mem::take(&mut s.queue), s.rx_waker.take())
    };
    drop(waker);
    drop(queue);
}

/// A sender is cloned.
pub(super) fn add_sender<T>(chan: &Chan<T>) {
    chan.borrow_mut().senders += 1;
}

/// A sender is dropped: the last one wakes a pending receive (which then ends).
pub(super) fn drop_sender<T>(chan: &Chan<T>) {
    let waker = {
        let mut s = chan.borrow_mut();
        s.senders -= 1;
        if s.senders == 0 {
            s.rx_waker.take()
        } else {
            None
        }
    };
    wake(waker);
}

/// The future of `Sender::closed` (both flavours): completes once the receiver closes.
pub(super) struct Closed<'a, T> {
    pub(super) chan: &'a Chan<T>,
    pub(super) key: Option<usize>,
}

impl<T> Future for Closed<'_, T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut s = this.chan.borrow_mut();
        let waiting = match this.key {
            None => !s.rx_closed,
            Some(key) => s.closed_waiters.tag(key) == Some(Tag::Waiting),
        };
        if !waiting {
            if let Some(key) = this.key.take() {
                s.closed_waiters.remove(key);
            }
            return Poll::Ready(());
        }
        match this.key {
            Some(key) => s.closed_waiters.set_waker(key, cx.waker()),
            None => this.key = Some(s.closed_waiters.push_back(Some(cx.waker().clone()))),
        }
        Poll::Pending
    }
}

impl<T> Drop for Closed<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut s = self.chan.borrow_mut();
            s.closed_waiters.remove(key);
        }
    }
}
