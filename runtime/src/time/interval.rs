//! [`Interval`]: ticks at a fixed period, and [`MissedTickBehavior`], what it does with the
//! ticks it missed (tokio's type, names and semantics).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::sleep::{far_future, sleep_until, Sleep};

/// What an [`Interval`] does when ticks were missed: when its task polls it more than a few
/// milliseconds (5, as tokio) after a tick was due, because the core was busy or the task
/// did not call [`tick`](Interval::tick) in time. tokio's type, names and semantics.
///
/// With a period of 10 ms, ticks due at 0, 10, 20, ... ms, and a stall from 10 to 45 ms
/// (the tick due at 10 ms is seen at 45 ms):
///
/// | behaviour | ticks after the stall (their returned instants, and when they complete) |
/// |---|---|
/// | `Burst` | 10, 20, 30, 40 at once at 45; then 50, 60, ... on time |
/// | `Delay` | 10 at once at 45; then 55, 65, ... (every period from the late tick) |
/// | `Skip` | 10 at once at 45; then 50, 60, ... (the missed ones dropped, the schedule kept) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissedTickBehavior {
    /// Fire every missed tick at once, one per poll, until caught up: the ticks keep their
    /// schedule and none is lost (the default, as in tokio).
    #[default]
    Burst,
    /// Fire one tick at once, then tick every period from then on: the schedule moves
    /// later by the delay.
    Delay,
    /// Fire one tick at once, then go on at the next tick of the original schedule, dropping
    /// the others missed.
    Skip,
}

/// How late a tick may be seen before it counts as missed (tokio's tolerance).
const MISSED_TOLERANCE: Duration = Duration::from_millis(5);

impl MissedTickBehavior {
    /// The deadline after a tick due at `due` seen at `now`, late by more than the tolerance.
    fn next_timeout(self, due: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => due.checked_add(period),
            MissedTickBehavior::Delay => now.checked_add(period),
            MissedTickBehavior::Skip => {
                // The next instant of the schedule `due + k * period` strictly after `now`.
                // `period` is non-zero (checked at construction); the remainder is below
                // it, so it fits in u64 nanoseconds whenever the period does.
                let late = now.saturating_duration_since(due).as_nanos();
                let rem = late % period.as_nanos().max(1);
                let rem = Duration::from_nanos(u64::try_from(rem).unwrap_or(u64::MAX));
                now.checked_add(period.saturating_sub(rem))
            }
        }
        .unwrap_or_else(far_future)
    }
}

/// Ticks at a fixed period. Missed ticks are handled as its [`MissedTickBehavior`] says:
/// by default ([`Burst`](MissedTickBehavior::Burst), as tokio) they fire at once, one after
/// another; [`set_missed_tick_behavior`](Interval::set_missed_tick_behavior) chooses
/// `Delay` or `Skip` instead.
///
/// ```
/// use std::time::Duration;
/// use runtime::time::{interval, MissedTickBehavior};
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let mut ticks = interval(Duration::from_millis(1));
///     ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
///     ticks.tick().await; // the first tick is at once
///     ticks.tick().await;
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    missed: MissedTickBehavior,
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
        missed: MissedTickBehavior::default(),
        sleep: sleep_until(start),
    }
}

impl Interval {
    /// Completes at the next tick, giving its scheduled instant (which, for a missed tick,
    /// is in the past).
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick; the next deadline is set as the [`MissedTickBehavior`] says.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => {
                let due = self.sleep.deadline();
                let now = Instant::now();
                let next = match due.checked_add(MISSED_TOLERANCE) {
                    Some(limit) if now > limit => self.missed.next_timeout(due, now, self.period),
                    _ => due.checked_add(self.period).unwrap_or_else(far_future),
                };
                self.sleep.reset(next);
                Poll::Ready(due)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Makes the next tick due one period from now (tokio's `reset`).
    pub fn reset(&mut self) {
        let next = Instant::now()
            .checked_add(self.period)
            .unwrap_or_else(far_future);
        self.sleep.reset(next);
    }

    /// The period between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does with missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what the interval does with missed ticks; it applies from the next tick seen late.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }
}
