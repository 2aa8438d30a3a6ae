//! Timers: `sleep`, `sleep_until`, `timeout`, `interval` (with tokio's `MissedTickBehavior`).
//!
//! A core keeps its pending timers in a binary min-heap of (deadline, sequence number, slot)
//! over a slab of slots holding each timer's waker. No SQE is used per timer: the loop's
//! wait in the kernel carries the earliest deadline as its timeout (`io_uring_enter` with
//! `IORING_ENTER_EXT_ARG`), and the loop fires every timer whose deadline has passed.
//!
//! Insert is O(log n) on a flat array (no allocation once warm); cancel is O(1): the slot is
//! freed and its heap entry, now stale (its sequence number no longer matches a live slot),
//! is skipped when it reaches the top, or dropped by a compaction once stale entries
//! outnumber live ones. So 100,000 pending timers stay cheap, and the common pattern of a
//! timeout armed and cancelled per request (hyper's header timer, `timeout` around a read)
//! costs a few dozen instructions. Equal deadlines fire in the order they were set. A sleep
//! never returns before its deadline: it checks the clock itself.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use slab::Slab;

use crate::context::{self, CoreId};

/// Stale heap entries tolerated before a compaction, at least.
const COMPACT_FLOOR: usize = 1024;

/// A pending timer's place in its core's [`Timers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    slot: usize,
    seq: u64,
}

struct Slot {
    seq: u64,
    waker: Waker,
}

/// A core's pending timers.
#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    slots: Slab<Slot>,
    next_seq: u64,
    /// Heap entries whose timer was cancelled.
    stale: usize,
}

impl Timers {
    fn insert(&mut self, deadline: Instant, waker: Waker) -> TimerKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slots.insert(Slot { seq, waker });
        self.heap.push(Reverse((deadline, seq, slot)));
        TimerKey { slot, seq }
    }

    /// The timer's waker, if it is still pending.
    fn waker_mut(&mut self, key: TimerKey) -> Option<&mut Waker> {
        match self.slots.get_mut(key.slot) {
            Some(s) if s.seq == key.seq => Some(&mut s.waker),
            _ => None,
        }
    }

    /// Cancels a pending timer (nothing if it already fired).
    fn remove(&mut self, key: TimerKey) {
        if self.waker_mut(key).is_none() {
            return;
        }
        self.slots.remove(key.slot);
        self.stale += 1;
        if self.stale > COMPACT_FLOOR && self.stale > self.slots.len() {
            let slots = &self.slots;
            self.heap
                .retain(|Reverse((_, seq, slot))| live(slots, *slot, *seq));
            self.stale = 0;
        }
    }

    /// Moves the wakers of every timer due by now into `out`; returns the next deadline.
    ///
    /// A cancelled timer's entry leaves the heap only once due (or in a compaction), so the
    /// deadline returned may be a cancelled one's: the loop then wakes for nothing once,
    /// which is cheaper than popping every cancelled entry as it reaches the top.
    pub(crate) fn fire(&mut self, out: &mut Vec<Waker>) -> Option<Instant> {
        if self.heap.is_empty() {
            return None;
        }
        let now = Instant::now();
        while let Some(&Reverse((deadline, seq, slot))) = self.heap.peek() {
            if deadline > now {
                return Some(deadline);
            }
            self.heap.pop();
            if live(&self.slots, slot, seq) {
                out.push(self.slots.remove(slot).waker);
            } else {
                self.stale -= 1;
            }
        }
        None
    }

    /// Timers pending (not fired, not cancelled).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots.len()
    }
}

fn live(slots: &Slab<Slot>, slot: usize, seq: u64) -> bool {
    slots.get(slot).is_some_and(|s| s.seq == seq)
}

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
            context::with_timers(|t, id| {
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
        context::with_timers(|t, id| match entry {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// A waker that records, in one shared log, the number it was made with.
    struct Tag(usize, Arc<std::sync::Mutex<Vec<usize>>>);

    impl Wake for Tag {
        fn wake(self: Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    fn tagged(n: usize, log: &Arc<std::sync::Mutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(Tag(n, log.clone())))
    }

    fn fire_all(t: &mut Timers) -> Option<Instant> {
        let mut out = Vec::new();
        let next = t.fire(&mut out);
        out.into_iter().for_each(Waker::wake);
        next
    }

    #[test]
    fn due_timers_fire_in_deadline_then_insertion_order() {
        let log = Arc::default();
        let mut t = Timers::default();
        let now = Instant::now();
        let past = now - Duration::from_millis(10);
        t.insert(past + Duration::from_millis(2), tagged(3, &log));
        t.insert(past, tagged(1, &log));
        t.insert(past, tagged(2, &log));
        let later = now + Duration::from_secs(60);
        t.insert(later, tagged(9, &log));
        assert_eq!(fire_all(&mut t), Some(later));
        assert_eq!(*log.lock().unwrap(), [1, 2, 3]);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_cancelled_timer_never_fires() {
        let log = Arc::default();
        let mut t = Timers::default();
        let now = Instant::now();
        let soon = t.insert(now + Duration::from_secs(1), tagged(1, &log));
        t.insert(now + Duration::from_secs(5), tagged(2, &log));
        t.remove(soon);
        t.remove(soon); // twice: nothing
                        // The cancelled entry may still name the next wake-up; it fires nothing.
        let next = fire_all(&mut t).unwrap();
        assert!(next <= now + Duration::from_secs(5));
        // A due timer cancelled before the loop fires it stays silent.
        let due = t.insert(now - Duration::from_millis(1), tagged(3, &log));
        t.remove(due);
        fire_all(&mut t);
        assert!(log.lock().unwrap().is_empty());
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_reused_slot_does_not_revive_a_cancelled_entry() {
        let log = Arc::default();
        let mut t = Timers::default();
        let now = Instant::now();
        let old = t.insert(now - Duration::from_millis(5), tagged(1, &log));
        t.remove(old);
        // Same slab slot, later deadline: the old heap entry (due) must not fire it.
        let new = t.insert(now + Duration::from_secs(60), tagged(2, &log));
        assert_eq!(new.slot, old.slot);
        assert!(t.waker_mut(old).is_none());
        assert_eq!(fire_all(&mut t), Some(now + Duration::from_secs(60)));
        assert!(log.lock().unwrap().is_empty());
        assert_eq!(t.stale, 0, "the due stale entry was dropped");
    }

    #[test]
    fn stale_entries_are_compacted_away() {
        static WOKEN: AtomicUsize = AtomicUsize::new(0);
        struct Count;
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                WOKEN.fetch_add(1, Ordering::Relaxed);
            }
        }
        let waker = Waker::from(Arc::new(Count));
        let mut t = Timers::default();
        let far = Instant::now() + Duration::from_secs(3600);
        let keep = t.insert(far, waker.clone());
        // An armed-and-cancelled timeout per request, 100,000 times.
        for _ in 0..100_000 {
            let k = t.insert(far, waker.clone());
            t.remove(k);
        }
        assert!(
            t.heap.len() <= 2 * COMPACT_FLOOR + 2,
            "heap holds {} entries for one live timer",
            t.heap.len()
        );
        assert_eq!(t.len(), 1);
        assert!(t.waker_mut(keep).is_some());
        assert_eq!(fire_all(&mut t), Some(far));
        assert_eq!(WOKEN.load(Ordering::Relaxed), 0);
    }
}
