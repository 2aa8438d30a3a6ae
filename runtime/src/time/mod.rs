//! Timers: `sleep`, `sleep_until`, `timeout`, `interval`.
//!
//! A core keeps its pending timers in one ordered map keyed by (deadline, sequence number).
//! No SQE is used per timer: the loop's wait in the kernel carries the earliest deadline as
//! its timeout (`io_uring_enter` with `IORING_ENTER_EXT_ARG`), and the loop fires every
//! timer whose deadline has passed. Insert and remove are O(log n), so 100,000 pending
//! timers stay cheap. A sleep never returns before its deadline: it checks the clock itself.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::executor::{self, CoreId};

/// A core's pending timers.
#[derive(Default)]
pub(crate) struct Timers {
    map: BTreeMap<(Instant, u64), Waker>,
    next_seq: u64,
}

impl Timers {
    fn insert(&mut self, deadline: Instant, waker: Waker) -> (Instant, u64) {
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.map.insert(key, waker);
        key
    }

    /// Moves the wakers of every timer due by now into `out`; returns the next deadline.
    pub(crate) fn fire(&mut self, out: &mut Vec<Waker>) -> Option<Instant> {
        let first = *self.map.first_key_value()?.0;
        let now = Instant::now();
        if first.0 > now {
            return Some(first.0);
        }
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0);
            }
            out.push(entry.remove());
        }
        None
    }
}

/// A future that completes at a deadline. Made by [`sleep`] and [`sleep_until`].
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// The timer entry, and the core whose map holds it.
    entry: Option<((Instant, u64), CoreId)>,
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

fn far_future() -> Instant {
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
            executor::with_timers(|t, id| {
                if id == core {
                    t.map.remove(&key);
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
        executor::with_timers(|t, id| match entry {
            Some((key, core)) if *core == id => match t.map.get_mut(key) {
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

/// The error of a [`timeout`] whose deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for io::Error {
    fn from(e: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, e)
    }
}

pin_project_lite::pin_project! {
    /// A future with a deadline. Made by [`timeout`].
    #[must_use = "futures do nothing unless awaited"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

/// Runs `future` for at most `duration`: its output, or [`Elapsed`] if time ran out first
/// (the future is then dropped, which cancels its ops).
///
/// ```
/// use std::time::Duration;
/// use runtime::time::{sleep, timeout};
/// let rt = runtime::Runtime::new().unwrap();
/// let r = rt.block_on(timeout(Duration::from_millis(1), sleep(Duration::from_secs(60))));
/// assert!(r.is_err());
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep(duration),
    }
}

/// Runs `future` until `deadline` at most.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep_until(deadline),
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Ticks at a fixed period; missed ticks fire at once, one after another (tokio's `Burst`).
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    sleep: Sleep,
}

/// An interval whose first tick is now and then every `period`.
///
/// # Panics
/// If `period` is zero.
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// An interval whose first tick is at `start`.
///
/// # Panics
/// If `period` is zero.
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(!period.is_zero(), "interval period must be non-zero");
    Interval {
        period,
        sleep: sleep_until(start),
    }
}

impl Interval {
    /// Completes at the next tick, giving its scheduled instant.
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => {
                let at = self.sleep.deadline();
                let next = at.checked_add(self.period).unwrap_or_else(far_future);
                self.sleep.reset(next);
                Poll::Ready(at)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// The period between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }
}
