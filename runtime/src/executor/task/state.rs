//! The task state word: four flags in the low bits, the reference count above them, in one
//! atomic, and every change to it as a named transition (after tokio's
//! `runtime/task/state.rs`). No `unsafe` here: what a transition's result obliges the caller
//! to do (push an entry, free the cell, drop the output) is said on the result, which must be
//! used.
//!
//! | bit | flag | set by | cleared by |
//! |---|---|---|---|
//! | 0 | `SCHEDULED` | a remote wake (the task has an entry in its core's remote queue) | the core's drain of that entry |
//! | 1 | `COMPLETE` | the owning core, once the future is dropped and the output stored | never |
//! | 2 | `CANCELLED` | `abort` | never |
//! | 3 | `JOIN_INTEREST` | the task's creation (the join handle exists) | the join handle's drop |
//! | 4.. | references | one per `RawTask` and per waker | their drops |
//!
//! Under `--cfg loom` the atomic is loom's, so the loom tests check these transitions
//! themselves, not a copy of them.

use crate::loom::sync::atomic::{fence, AtomicUsize, Ordering};

const SCHEDULED: usize = 1;
const COMPLETE: usize = 2;
const CANCELLED: usize = 4;
const JOIN_INTEREST: usize = 8;
/// One reference, in the state word.
const REF_ONE: usize = 16;

/// The state word of one task.
pub(crate) struct State {
    val: AtomicUsize,
}

/// The state word as one transition saw it (before the change, unless said otherwise).
#[must_use]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    /// An entry waits in the remote queue.
    pub(crate) fn is_scheduled(self) -> bool {
        self.0 & SCHEDULED != 0
    }

    /// The future is gone and the output (if anyone wants it) stored.
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }

    /// `abort` was called.
    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }

    /// The join handle still exists.
    pub(crate) fn has_join_interest(self) -> bool {
        self.0 & JOIN_INTEREST != 0
    }

    /// Neither remotely queued nor complete: a wake must give it a queue entry (unless it
    /// is queued locally, which the owner's `queued` flag tells).
    pub(crate) fn needs_entry(self) -> bool {
        self.0 & (SCHEDULED | COMPLETE) == 0
    }

    /// How many references there are.
    pub(crate) fn ref_count(self) -> usize {
        self.0 / REF_ONE
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("scheduled", &self.is_scheduled())
            .field("complete", &self.is_complete())
            .field("cancelled", &self.is_cancelled())
            .field("join_interest", &self.has_join_interest())
            .field("refs", &self.ref_count())
            .finish()
    }
}

/// What a remote wake must do.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemoteWake {
    /// Push an entry onto the owner's remote queue; it owns a reference (taken by the
    /// transition, or handed on by the waker).
    Push,
    /// Already queued or complete: nothing to push (a waker by value gives its reference
    /// up).
    Skip,
}

/// Whether a dropped reference was the last.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefDec {
    /// The caller frees the cell (the acquire fence has run: every other owner's writes
    /// are visible).
    Last,
    /// Others remain.
    Alive,
}

impl State {
    /// A new task: three references (its first queue entry, its core's task list, its join
    /// handle), the join handle's interest, and `SCHEDULED` when its first entry goes to a
    /// remote queue.
    pub(crate) fn new(remote_queued: bool) -> State {
        let scheduled = if remote_queued { SCHEDULED } else { 0 };
        State {
            val: AtomicUsize::new(scheduled | JOIN_INTEREST | (3 * REF_ONE)),
        }
    }

    /// The current word.
    #[inline(always)]
    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.val.load(Ordering::Acquire))
    }

    /// One more reference (a waker clone, a queue entry). Relaxed: the caller already holds
    /// one, so the count cannot be zero and nothing is published by the increment.
    #[inline(always)]
    pub(crate) fn ref_inc(&self) {
        self.val.fetch_add(REF_ONE, Ordering::Relaxed);
    }

    /// One reference fewer.
    #[inline(always)]
    pub(crate) fn ref_dec(&self) -> RefDec {
        let prev = self.val.fetch_sub(REF_ONE, Ordering::Release);
        if prev & !(REF_ONE - 1) != REF_ONE {
            return RefDec::Alive;
        }
        // Every other owner's release decrement happens before the free.
        fence(Ordering::Acquire);
        RefDec::Last
    }

    /// A wake by reference from another thread: in one step, marks the task remotely
    /// queued and takes a reference for the entry, unless it is queued already or
    /// complete.
    pub(crate) fn schedule_remote_by_ref(&self) -> RemoteWake {
        let mut cur = self.val.load(Ordering::Acquire);
        loop {
            if !Snapshot(cur).needs_entry() {
                return RemoteWake::Skip;
            }
            let next = (cur | SCHEDULED) + REF_ONE;
            match self
                .val
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return RemoteWake::Push,
                Err(actual) => cur = actual,
            }
        }
    }

    /// A wake by value from another thread: marks the task remotely queued unless it is
    /// queued already or complete. On `Push` the waker's reference becomes the entry's; on
    /// `Skip` the caller gives it up.
    pub(crate) fn schedule_remote_by_val(&self) -> RemoteWake {
        let prev = Snapshot(self.val.fetch_or(SCHEDULED, Ordering::AcqRel));
        if prev.needs_entry() {
            RemoteWake::Push
        } else {
            RemoteWake::Skip
        }
    }

    /// The owner's drain takes an entry off the remote queue: a remote wake from now on
    /// queues the task again.
    pub(crate) fn unset_scheduled(&self) -> Snapshot {
        Snapshot(self.val.fetch_and(!SCHEDULED, Ordering::AcqRel))
    }

    /// `abort`: the next poll drops the future instead of polling it.
    pub(crate) fn cancel(&self) -> Snapshot {
        Snapshot(self.val.fetch_or(CANCELLED, Ordering::AcqRel))
    }

    /// The owner finished the task (future dropped, output stored first: the release
    /// publishes it to the join handle).
    pub(crate) fn complete(&self) -> Snapshot {
        Snapshot(self.val.fetch_or(COMPLETE, Ordering::AcqRel))
    }

    /// The join handle goes away. If the result was complete, the output is the handle's
    /// to drop; otherwise the owner drops it when it finishes.
    pub(crate) fn unset_join_interest(&self) -> Snapshot {
        Snapshot(self.val.fetch_and(!JOIN_INTEREST, Ordering::AcqRel))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_new_task_holds_three_references_and_join_interest() {
        for remote in [false, true] {
            let s = State::new(remote).load();
            assert_eq!(s.ref_count(), 3);
            assert!(s.has_join_interest());
            assert_eq!(s.is_scheduled(), remote);
            assert!(!s.is_complete() && !s.is_cancelled());
        }
    }

    #[test]
    fn a_remote_wake_pushes_once_until_the_drain_and_never_after_completion() {
        let state = State::new(false);
        assert_eq!(state.schedule_remote_by_ref(), RemoteWake::Push);
        assert_eq!(state.load().ref_count(), 4);
        // Queued already: neither wake kind pushes or takes a reference.
        assert_eq!(state.schedule_remote_by_ref(), RemoteWake::Skip);
        assert_eq!(state.schedule_remote_by_val(), RemoteWake::Skip);
        assert_eq!(state.load().ref_count(), 4);
        assert!(state.unset_scheduled().is_scheduled());
        assert_eq!(state.schedule_remote_by_val(), RemoteWake::Push);
        assert!(state.unset_scheduled().is_scheduled());
        assert!(!state.complete().is_complete());
        assert_eq!(state.schedule_remote_by_ref(), RemoteWake::Skip);
        assert_eq!(state.schedule_remote_by_val(), RemoteWake::Skip);
    }

    #[test]
    fn only_the_last_reference_frees() {
        let state = State::new(false);
        assert_eq!(state.ref_dec(), RefDec::Alive);
        assert_eq!(state.ref_dec(), RefDec::Alive);
        assert_eq!(state.ref_dec(), RefDec::Last);
    }

    #[test]
    fn flags_survive_reference_traffic() {
        let state = State::new(false);
        assert!(!state.cancel().is_cancelled());
        state.ref_inc();
        assert!(state.unset_join_interest().has_join_interest());
        let s = state.load();
        assert!(s.is_cancelled() && !s.has_join_interest());
        assert_eq!(s.ref_count(), 4);
    }
}

/// The transitions above under loom's model checker: every interleaving (and every
/// ordering the atomics allow) of a remote wake, the owner completing the task, and the
/// join handle, with the task's output and its freeing as loom cells, so that a transition
/// whose ordering were too weak shows up as a data race or a double or missing free.
/// `scripts/loom.sh` runs them.
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::{Arc, Mutex};
    use loom::thread;

    use super::*;

    /// A task reduced to what the state word guards: the output (written by the owner
    /// before `complete`, read by the join handle after seeing it) and the free.
    struct Task {
        state: State,
        output: UnsafeCell<u32>,
        frees: AtomicUsize,
        /// Remote queue entries (each owns a reference).
        remote: Mutex<usize>,
    }

    impl Task {
        fn ref_dec(&self) {
            if self.state.ref_dec() == RefDec::Last {
                // Freeing writes the cell: it must come after every other owner's use.
                // SAFETY: loom's cell hands out a valid pointer; loom checks the access.
                self.output.with_mut(|p| unsafe { *p = u32::MAX });
                self.frees.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn run(wake_by_ref: bool) {
        loom::model(move || {
            let task = Arc::new(Task {
                state: State::new(false),
                output: UnsafeCell::new(0),
                frees: AtomicUsize::new(0),
                remote: Mutex::new(0),
            });
            // The first queue entry was polled and dropped; a waker was cloned.
            task.ref_dec();
            task.state.ref_inc();

            let waker = {
                let task = task.clone();
                thread::spawn(move || {
                    if wake_by_ref {
                        if task.state.schedule_remote_by_ref() == RemoteWake::Push {
                            *task.remote.lock().unwrap() += 1;
                        }
                        task.ref_dec(); // the waker itself
                    } else if task.state.schedule_remote_by_val() == RemoteWake::Push {
                        *task.remote.lock().unwrap() += 1; // the waker's ref is the entry's
                    } else {
                        task.ref_dec();
                    }
                })
            };
            let owner = {
                let task = task.clone();
                thread::spawn(move || {
                    // SAFETY: loom's cell hands out a valid pointer; loom checks the access.
                    task.output.with_mut(|p| unsafe { *p = 42 });
                    let _ = task.state.complete();
                    task.ref_dec(); // the task list's
                })
            };
            let joiner = {
                let task = task.clone();
                thread::spawn(move || {
                    if task.state.load().is_complete() {
                        // SAFETY: loom's cell hands out a valid pointer; loom checks the access.
                        let out = task.output.with(|p| unsafe { *p });
                        assert_eq!(out, 42);
                    }
                    let _ = task.state.unset_join_interest();
                    task.ref_dec(); // the join handle's
                })
            };
            waker.join().unwrap();
            owner.join().unwrap();
            joiner.join().unwrap();
            // The owner's drain, later: each entry clears SCHEDULED and gives up its ref.
            let entries = std::mem::take(&mut *task.remote.lock().unwrap());
            assert!(entries <= 1, "a task was queued remotely twice");
            for _ in 0..entries {
                assert!(task.state.unset_scheduled().is_scheduled());
                task.ref_dec();
            }
            assert_eq!(task.frees.load(Ordering::Relaxed), 1);
        });
    }

    #[test]
    fn loom_remote_wake_by_value_complete_and_join() {
        run(false);
    }

    #[test]
    fn loom_remote_wake_by_ref_complete_and_join() {
        run(true);
    }
}
