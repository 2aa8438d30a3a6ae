//! [`Sleep`]: a future that completes at a deadline, registered in its core's timers while
//! it is pending.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::TimerKey;
use crate::context::CoreId;

/// A future that completes at a deadline. Made by [`sleep`] and [`sleep_until`].
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// The timer entry, and the core whose timers hold it.
    entry: Option<(TimerKey, CoreId)>,
}

/// Completes after `duration`.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = runtime::Runtime::new().unwrap();
/// let t = Instant::now();
/// rt.block_on(runtime::time::sleep(Duration::from_millis(5)));
/// assert!(t.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    // A duration too large for Instant means "never" in practice: about 30 years.
    let deadline = Instant::now()
        .checked_add(duration)
        .unwrap_or_else(far_future);
    sleep_until(deadline)
}

/// Completes at `deadline` (at once if it has passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        entry: None,
    }
}

/// A deadline so far ahead it never comes in practice (about 30 years): what a duration too
/// large for `Instant` means.
pub(super) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

impl Sleep {
    /// The instant at which the sleep completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the deadline; the sleep can then be awaited again.
    pub fn reset(&mut self, deadline: Instant) {
        self.unregister();
        self.deadline = deadline;
    }

    fn unregister(&mut self) {
        if let Some((key, core)) = self.entry.take() {
            super::with_timers(|t, id| {
                if id == core {
                    t.remove(key);
                }
            });
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if Instant::now() >= this.deadline {
            this.unregister();
            return Poll::Ready(());
        }
        let deadline = this.deadline;
        let entry = &mut this.entry;
        super::with_timers(|t, id| match entry {
            Some((key, core)) if *core == id => match t.waker_mut(*key) {
                Some(w) => {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                }
                None => *entry = Some((t.insert(deadline, cx.waker().clone()), id)),
            },
            // First poll, or polled on another core than before: register here.
            _ => *entry = Some((t.insert(deadline, cx.waker().clone()), id)),
        })
        .unwrap_or_else(|| panic!("a timer was polled outside of a runtime"));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish()
    }
}
