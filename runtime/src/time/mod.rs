//! Timers: `sleep`, `sleep_until`, `timeout`, `interval` (with tokio's `MissedTickBehavior`).
//!
//! - `timers`: a core's pending timers (`Timers`), the heap the loop fires from;
//! - `sleep`: [`Sleep`], the one timer future, which the others are built on;
//! - `timeout`: [`Timeout`] and [`Elapsed`];
//! - `interval`: [`Interval`] and [`MissedTickBehavior`].
//!
//! No SQE is used per timer: the loop's wait in the kernel carries the earliest deadline as
//! its timeout (`io_uring_enter` with `IORING_ENTER_EXT_ARG`), and the loop fires every
//! timer whose deadline has passed. Equal deadlines fire in the order they were set. A
//! sleep never returns before its deadline: it checks the clock itself.

mod interval;
mod sleep;
mod timeout;
mod timers;

pub use interval::{interval, interval_at, Interval, MissedTickBehavior};
pub use sleep::{sleep, sleep_until, Sleep};
pub use timeout::{timeout, timeout_at, Elapsed, Timeout};
pub(crate) use timers::{TimerKey, Timers};

use crate::context::{self, CoreId};

/// Runs `f` with the current core's timers and id; `None` outside a runtime.
pub(crate) fn with_timers<R>(f: impl FnOnce(&mut Timers, CoreId) -> R) -> Option<R> {
    let (p, id) = (context::timers_ptr(), context::current_core_id()?);
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null `timers` pointer points at the entered core's `RefCell<Timers>`,
    // alive while it is entered on this thread (`context`'s invariant); the reference does
    // not leave this call.
    let timers = unsafe { &*p.cast::<std::cell::RefCell<Timers>>() };
    Some(f(&mut timers.borrow_mut(), id))
}
