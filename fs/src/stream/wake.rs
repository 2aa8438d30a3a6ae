//! [`WakeList`]: one waker that wakes every task waiting for the same op.
//!
//! An op keeps one waker (the last poller's), but the `&self` calls of a file shared in an
//! `Rc` may all wait for its one write-behind at once; each adds its own waker here and
//! polls the op with this list's, so the CQE wakes them all.

use std::mem;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

/// The tasks of the handle's own calls waiting for one write-behind: the op is polled
/// with a waker of this list, which wakes them all (an op keeps only one waker, and the
/// calls of a file shared in an `Rc` may wait at once).
#[derive(Default)]
pub(super) struct WakeList(Mutex<Vec<Waker>>);

impl WakeList {
    /// Adds `waker` unless it is already there.
    pub(super) fn register(&self, waker: &Waker) {
        let mut list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !list.iter().any(|w| w.will_wake(waker)) {
            list.push(waker.clone());
        }
    }
}

impl Wake for WakeList {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let wakers = mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        for w in wakers {
            w.wake();
        }
    }
}
