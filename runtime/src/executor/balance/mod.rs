//! Where a core's next task comes from, and how idle cores take work (`fresh` has
//! the queues and the no-lost-wake-up invariant):
//! - `spawn` of a `Send` task puts it in the core's LIFO slot; the task it displaces goes
//!   to the core's stealable queue, and one sleeping core is woken to take it;
//! - the core runs its slot first (at most [`MAX_SLOT_RUNS`] times in a row, so a chain of
//!   tasks that each spawn the next cannot starve the rest), then its local queue, then its
//!   stealable queue; every [`FRESH_EVERY`]th pick starts with the stealable queue, so a
//!   busy local queue cannot starve it either;
//! - a core with nothing to run steals from another core's stealable queue before it
//!   sleeps, and registers as idle (then looks once more) before it waits.

mod fresh;

use std::future::Future;

use super::measure::LoopStats;
use super::task::{Loc, RawTask};
use super::{Core, JoinHandle};
pub(crate) use fresh::{Fresh, FreshQueue, Idle, STEAL_MAX};

/// Slot tasks run in a row before the local queue gets a turn (tokio's figure).
const MAX_SLOT_RUNS: u8 = 3;

/// One pick in this many looks at the stealable queue first.
const FRESH_EVERY: u32 = 8;

impl Core {
    /// `spawn` of a `Send` task under `Placement::Local` on a runtime of several cores.
    pub(crate) fn spawn_stealable<F>(&self, future: F, loc: Loc) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
    {
        let (run, list, join) =
            RawTask::new(future, self.shared.clone(), false, self.next_task_id(), loc);
        let displaced = self.slot.borrow_mut().replace(Fresh { run, list });
        if let Some(older) = displaced {
            self.publish(older);
        }
        JoinHandle::new(join)
    }

    /// Makes a task stealable, and wakes a sleeping core to take it.
    pub(super) fn publish(&self, task: Fresh) {
        match self.shared.fresh.push(task) {
            Ok(()) => self.set.wake_idle(self.shared.index),
            // This core is shutting down: the task never runs.
            Err(task) => task.cancel(),
        }
    }

    /// Registers a never-polled task with this core and returns its run-queue entry.
    fn adopt(&self, task: Fresh) -> Option<RawTask> {
        let key = self.owned.borrow_mut().insert(task.list);
        task.run.set_owned_key(key);
        // A never-polled task is neither complete nor queued locally: always `Some`.
        task.run.into_local()
    }

    /// The next task to poll, if any.
    #[inline]
    pub(super) fn next_task(&self) -> Option<RawTask> {
        if !self.balances {
            // One core, or round-robin placement: nothing is ever in the slot or the
            // stealable queue.
            return self.queue.pop();
        }
        if self.slot_runs.get() < MAX_SLOT_RUNS {
            let slot = self.slot.borrow_mut().take();
            if let Some(task) = slot {
                self.slot_runs.set(self.slot_runs.get() + 1);
                return self.adopt(task);
            }
        }
        self.slot_runs.set(0);
        let picks = self.picks.get().wrapping_add(1);
        self.picks.set(picks);
        if picks % FRESH_EVERY == 0 {
            if let Some(task) = self.take_fresh() {
                return Some(task);
            }
        }
        if let Some(task) = self.queue.pop() {
            return Some(task);
        }
        let slot = self.slot.borrow_mut().take();
        match slot {
            Some(task) => self.adopt(task),
            None => self.take_fresh(),
        }
    }

    fn take_fresh(&self) -> Option<RawTask> {
        self.shared.fresh.pop().and_then(|task| self.adopt(task))
    }

    /// Whether the slot or the stealable queue holds a task.
    pub(super) fn has_fresh(&self) -> bool {
        self.balances && (self.slot.borrow().is_some() || self.shared.fresh.len() > 0)
    }

    /// Takes up to half of another core's stealable tasks and makes them this core's: the
    /// oldest is queued to run, the rest wait in this core's own stealable queue (so a
    /// third core, or the victim once it is free, may take them in turn: none is stuck
    /// behind a task that blocks this core). True if it took any.
    pub(super) fn steal(&self) -> bool {
        let cores = self.set.all();
        let n = cores.len();
        let me = self.shared.index;
        for k in 1..n {
            let victim = &cores[(me + k) % n];
            // The lock-free length first: an idle core looks on every park, and most find
            // nothing (no lock, no allocation then).
            if victim.fresh.len() == 0 {
                continue;
            }
            let mut taken = Vec::with_capacity(STEAL_MAX);
            victim.fresh.steal(&mut taken);
            if taken.is_empty() {
                continue;
            }
            LoopStats::count(&self.stats.stolen, taken.len() as u64);
            for task in &taken {
                task.run.rehome(&self.shared);
            }
            // The oldest runs here now; the rest stay stealable in this core's queue
            // (refused only if this core is shutting down: they never run then).
            let first = taken.remove(0);
            for task in self.shared.fresh.push_all(&mut taken) {
                task.cancel();
            }
            if let Some(run) = self.adopt(first) {
                self.enqueue(run);
            }
            if victim.fresh.len() > 0 || self.shared.fresh.len() > 0 {
                // More than this core runs at once: another sleeper may help.
                self.set.wake_idle(me);
            }
            return true;
        }
        false
    }

    /// Called with nothing to run, before a wait: registers the core as idle, then looks
    /// for stealable work once more (`fresh`'s invariant). True if the core may
    /// wait; the caller calls `self.set.idle.leave` after the wait either way.
    pub(super) fn go_idle(&self) -> bool {
        self.set.idle.enter(self.shared.index);
        !self.set.any_fresh()
    }

    /// Drops every task in the slot and the stealable queue (the core shuts down; the
    /// queue stays closed); true if there were any.
    pub(super) fn cancel_fresh(&self) -> bool {
        let mut any = false;
        let slot = self.slot.borrow_mut().take();
        for task in slot.into_iter().chain(self.shared.fresh.close()) {
            any = true;
            task.cancel();
        }
        any
    }

    /// `block_on` returns: the slot's task becomes stealable, so an idle core runs it while
    /// this thread is away from its loop.
    pub(super) fn release_slot(&self) {
        let slot = self.slot.borrow_mut().take();
        if let Some(task) = slot {
            self.publish(task);
        }
    }
}
