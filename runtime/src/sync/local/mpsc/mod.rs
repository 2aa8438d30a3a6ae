//! Core-local multi-producer, single-consumer channels: the `!Send`, atomic-free
//! [`tokio::sync::mpsc`], bounded ([`channel`]) and unbounded ([`unbounded_channel`]).
//!
//! The names and signatures are tokio's: `send(v).await`, `try_send`, `reserve`,
//! `recv().await`, `try_recv`, `close`. The promises:
//! - values arrive in the order they were sent (per sender, and across the senders in the
//!   order their sends completed);
//! - [`Receiver::recv`] returns `None` once the queue is empty and every sender is gone
//!   (or the receiver [closed](Receiver::close) the channel and no reserved slot is left);
//! - a send on a closed channel gives the value back in the error;
//! - a bounded channel holds at most its capacity: a send waits while it is full, and
//!   waiting senders get slots in the order they started waiting;
//! - `recv` is cancel-safe: dropping its future loses no value;
//! - no wake-up is lost: a slot handed to a waiting send whose future is then dropped goes
//!   to the next waiting send.
//!
//! All of it lives in one `Rc`: use a channel between the tasks of one core (and move it
//! to another core only by making it there). Between cores or threads, use
//! [`runtime::sync::mpsc`](crate::sync::mpsc).
//!
//! ```
//! use runtime::sync::local::mpsc;
//!
//! let rt = runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let (tx, mut rx) = mpsc::channel(2);
//!     runtime::spawn_local(async move {
//!         for i in 0..5 {
//!             tx.send(i).await.unwrap(); // waits while 2 values are queued
//!         }
//!     });
//!     let mut got = Vec::new();
//!     while let Some(v) = rx.recv().await {
//!         got.push(v);
//!     }
//!     assert_eq!(got, [0, 1, 2, 3, 4]); // `None` once the sender is gone
//! });
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The halves are `!Send`:
//!
//! ```compile_fail
//! fn send<T: Send>(_: T) {}
//! let (tx, _rx) = runtime::sync::local::mpsc::channel::<u8>(1);
//! send(tx);
//! ```

mod bounded;
mod chan;
mod unbounded;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use bounded::{Permit, Receiver, Reserve, Sender};
pub use unbounded::{UnboundedReceiver, UnboundedSender};

/// Creates a bounded channel holding at most `capacity` values.
///
/// A `capacity` of 0 is taken as 1 (tokio panics there): a channel always has room for one
/// value, so a send can complete.
pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    bounded::new(capacity.max(1))
}

/// Creates an unbounded channel: sends never wait (memory is the only limit).
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    unbounded::new()
}

/// The future of `recv` (both flavours): the next value, or `None` at the end.
///
/// Cancel-safe; dropped while pending, it also drops the waker it registered.
#[must_use = "futures do nothing unless polled"]
pub struct Recv<'a, T> {
    chan: &'a chan::Chan<T>,
    /// It returned `Pending` (its waker is registered) and has not completed since.
    pending: bool,
}

impl<'a, T> Recv<'a, T> {
    fn new(chan: &'a chan::Chan<T>) -> Recv<'a, T> {
        Recv {
            chan,
            pending: false,
        }
    }
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let poll = chan::poll_recv(this.chan, cx);
        this.pending = poll.is_pending();
        poll
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        if self.pending {
            chan::forget_rx_waker(self.chan);
        }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("pending", &self.pending)
            .finish()
    }
}

/// The errors of this module, under tokio's names.
pub mod error {
    use std::fmt;

    /// The receiver has closed or been dropped; the value that was not sent is inside.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct SendError<T>(pub T);

    impl<T> fmt::Debug for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("SendError").finish_non_exhaustive()
        }
    }

    impl<T> fmt::Display for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel closed")
        }
    }

    impl<T> std::error::Error for SendError<T> {}

    /// Why `try_send` did not send; the value is inside.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum TrySendError<T> {
        /// The channel is full (or other senders wait for a slot).
        Full(T),
        /// The receiver has closed or been dropped.
        Closed(T),
    }

    impl<T> TrySendError<T> {
        /// The value that was not sent.
        pub fn into_inner(self) -> T {
            match self {
                TrySendError::Full(v) | TrySendError::Closed(v) => v,
            }
        }
    }

    impl<T> fmt::Debug for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("Full(..)"),
                TrySendError::Closed(_) => f.write_str("Closed(..)"),
            }
        }
    }

    impl<T> fmt::Display for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                TrySendError::Full(_) => "no available capacity",
                TrySendError::Closed(_) => "channel closed",
            })
        }
    }

    impl<T> std::error::Error for TrySendError<T> {}

    impl<T> From<SendError<T>> for TrySendError<T> {
        fn from(e: SendError<T>) -> TrySendError<T> {
            TrySendError::Closed(e.0)
        }
    }

    /// Why `try_recv` returned no value.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TryRecvError {
        /// No value is queued yet.
        Empty,
        /// No value is queued and none can come.
        Disconnected,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                TryRecvError::Empty => "receiving on an empty channel",
                TryRecvError::Disconnected => "receiving on a closed channel",
            })
        }
    }

    impl std::error::Error for TryRecvError {}
}
