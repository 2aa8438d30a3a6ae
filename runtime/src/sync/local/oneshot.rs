//! A core-local one-value channel: the `!Send`, atomic-free [`tokio::sync::oneshot`].
//!
//! The two halves share one `Rc` cell: the value, whether each side is gone or closed, and
//! each side's waker. Invariants: a value is stored only while the receiver is open; once
//! the receiver has closed or been dropped, [`Sender::send`] gives the value back; the
//! receiver's waker is held only while its `.await` is pending, the sender's only while its
//! [`Sender::closed`] is; values and wakers are dropped or woken outside the cell's borrow.
//!
//! ```
//! use runtime::sync::local::oneshot;
//!
//! let rt = runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let (tx, rx) = oneshot::channel();
//!     runtime::spawn_local(async move { tx.send(7).unwrap() });
//!     assert_eq!(rx.await, Ok(7));
//! });
//! # Ok::<(), std::io::Error>(())
//! ```

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The errors of this module, under tokio's names.
pub mod error {
    use std::fmt;

    /// The sender was dropped without sending (or the value was already taken).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RecvError(pub(super) ());

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel closed")
        }
    }

    impl std::error::Error for RecvError {}

    /// Why [`Receiver::try_recv`](super::Receiver::try_recv) returned no value.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TryRecvError {
        /// The sender has not sent yet.
        Empty,
        /// The sender was dropped without sending, or the value was already taken.
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                TryRecvError::Empty => "channel empty",
                TryRecvError::Closed => "channel closed",
            })
        }
    }

    impl std::error::Error for TryRecvError {}
}

use error::{RecvError, TryRecvError};

struct Inner<T> {
    value: Option<T>,
    /// The sender sent or was dropped: no value will come after the one stored, if any.
    tx_done: bool,
    /// The receiver closed or was dropped: `send` gives the value back.
    rx_closed: bool,
    rx_waker: Option<Waker>,
    tx_waker: Option<Waker>,
}

/// Creates a one-value channel for the tasks of one core.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Rc::new(RefCell::new(Inner {
        value: None,
        tx_done: false,
        rx_closed: false,
        rx_waker: None,
        tx_waker: None,
    }));
    (
        Sender {
            inner: Some(inner.clone()),
        },
        Receiver { inner: Some(inner) },
    )
}

/// Sends the channel's one value; `!Send`.
pub struct Sender<T> {
    /// `None` once `send` has consumed it (so `Drop` does nothing).
    inner: Option<Rc<RefCell<Inner<T>>>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waking the receiver; gives it back in `Err` when the receiver has
    /// closed or been dropped.
    pub fn send(mut self, value: T) -> Result<(), T> {
        let Some(inner) = self.inner.take() else {
            return Err(value);
        };
        let waker = {
            let mut st = inner.borrow_mut();
            st.tx_done = true;
            st.tx_waker = None;
            if st.rx_closed {
                return Err(value);
            }
            st.value = Some(value);
            st.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Whether the receiver has closed or been dropped (a `send` would fail).
    pub fn is_closed(&self) -> bool {
        self.inner.as_ref().is_none_or(|i| i.borrow().rx_closed)
    }

    /// Completes once the receiver has closed or been dropped, e.g. to stop computing a
    /// value nobody will read.
    pub async fn closed(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }

    /// Polls for the receiver having closed or been dropped, registering `cx`'s waker.
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(inner) = &self.inner else {
            return Poll::Ready(());
        };
        let mut st = inner.borrow_mut();
        if st.rx_closed {
            st.tx_waker = None;
            return Poll::Ready(());
        }
        match &st.tx_waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.tx_waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let waker = {
            let mut st = inner.borrow_mut();
            st.tx_done = true;
            st.tx_waker = None;
            st.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Sender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Receives the channel's one value: `.await` it (cancel-safe: a dropped `.await` loses
/// nothing), or [`try_recv`](Receiver::try_recv); `!Send`.
pub struct Receiver<T> {
    /// `None` once the value (or the closed error) has been returned.
    inner: Option<Rc<RefCell<Inner<T>>>>,
}

impl<T> Receiver<T> {
    /// Takes the value if it has been sent: `Empty` if not yet, `Closed` if the sender was
    /// dropped without sending or the value was already taken.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let Some(inner) = &self.inner else {
            return Err(TryRecvError::Closed);
        };
        let taken = {
            let mut st = inner.borrow_mut();
            match st.value.take() {
                Some(v) => Some(v),
                None if st.tx_done => None,
                None => return Err(TryRecvError::Empty),
            }
        };
        self.finish();
        taken.ok_or(TryRecvError::Closed)
    }

    /// Closes the channel without dropping the receiver: a later `send` fails and the
    /// sender's [`closed`](Sender::closed) completes; a value sent before stays receivable.
    pub fn close(&mut self) {
        let Some(inner) = &self.inner else {
            return;
        };
        let waker = {
            let mut st = inner.borrow_mut();
            st.rx_closed = true;
            st.tx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether the value has been taken or will never come (the sender is gone and nothing
    /// is stored).
    pub fn is_terminated(&self) -> bool {
        self.inner.as_ref().is_none_or(|i| {
            let st = i.borrow();
            st.tx_done && st.value.is_none()
        })
    }

    /// Whether a value is stored and not yet taken.
    pub fn is_empty(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|i| i.borrow().value.is_none())
    }

    /// Marks the receiver done: closed for the sender, and no waker kept.
    fn finish(&mut self) {
        if let Some(inner) = self.inner.take() {
            let mut st = inner.borrow_mut();
            st.rx_closed = true;
            st.rx_waker = None;
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    /// Ready with the value, or `Err(RecvError)` once the sender is gone without sending;
    /// polled again after that, `Err(RecvError)` again.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = &this.inner else {
            return Poll::Ready(Err(RecvError(())));
        };
        let taken = {
            let mut st = inner.borrow_mut();
            match st.value.take() {
                Some(v) => Some(v),
                None if st.tx_done => None,
                None => {
                    match &st.rx_waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => st.rx_waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
        };
        this.finish();
        Poll::Ready(taken.ok_or(RecvError(())))
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let (value, waker) = {
            let mut st = inner.borrow_mut();
            st.rx_closed = true;
            st.rx_waker = None;
            (st.value.take(), st.tx_waker.take())
        };
        // Dropped and woken outside the borrow: either may run arbitrary code.
        drop(value);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Receiver")
            .field("terminated", &self.is_terminated())
            .finish()
    }
}
