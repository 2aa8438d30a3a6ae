//! A core's pending timers: a binary min-heap of (deadline, sequence number, slot) over a
//! slab of slots holding each timer's waker. The loop fires the due ones
//! ([`Timers::fire`]) and waits in the kernel until the next deadline.
//!
//! Insert is O(log n) on a flat array (no allocation once warm); cancel is O(1): the slot is
//! freed and its heap entry, now stale (its sequence number no longer matches a live slot),
//! is skipped when it reaches the top, or dropped by a compaction once stale entries
//! outnumber live ones. So 100,000 pending timers stay cheap, and the common pattern of a
//! timeout armed and cancelled per request (hyper's header timer, `timeout` around a read)
//! costs a few dozen instructions. Equal deadlines fire in the order they were set.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::task::Waker;
use std::time::Instant;

use slab::Slab;

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
    pub(super) fn insert(&mut self, deadline: Instant, waker: Waker) -> TimerKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slots.insert(Slot { seq, waker });
        self.heap.push(Reverse((deadline, seq, slot)));
        TimerKey { slot, seq }
    }

    /// The timer's waker, if it is still pending.
    pub(super) fn waker_mut(&mut self, key: TimerKey) -> Option<&mut Waker> {
        match self.slots.get_mut(key.slot) {
            Some(s) if s.seq == key.seq => Some(&mut s.waker),
            _ => None,
        }
    }

    /// Cancels a pending timer (nothing if it already fired).
    pub(super) fn remove(&mut self, key: TimerKey) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;
    use std::time::Duration;

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
