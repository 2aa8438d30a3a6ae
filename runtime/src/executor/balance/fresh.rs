//! Balance between cores: each core's queue of stealable tasks, and the set of cores asleep.
//!
//! A `Send` task spawned on a core with `runtime::spawn` is created owned by that core but
//! not yet adopted (not in its task list, `SCHEDULED` set as if remotely queued). The core
//! keeps the newest in its LIFO slot (core-local, never stolen: the child a task spawns and
//! then awaits runs next, on the same core) and pushes the one it displaces onto its
//! [`FreshQueue`]. The core takes from its own queue as it runs out of other work (and
//! every few tasks, so nothing waits behind a busy local queue); a core about to sleep takes
//! up to half of another core's queue first ([`FreshQueue::steal`]), makes itself the
//! tasks' owner (`RawTask::rehome`) and runs them.
//!
//! Only never-polled tasks move: such a task has no op in flight, no waker, nothing bound to
//! its core. Once a core polls a task, it never leaves that core.
//!
//! # Invariant (no lost wake-up)
//! A core about to sleep with stealing on registers in [`Idle`] (a store of the idle count,
//! then a `SeqCst` fence), then looks at every core's queue length once more before it
//! waits. A core that pushes a stealable task stores its queue's length, then (a `SeqCst`
//! fence, then a load of the idle count) wakes one sleeping core if there is any. The two
//! fences are ordered one way or the other in the single total order of `SeqCst`
//! operations, so one side's load sees the other side's store: either the sleeper finds
//! the task, or the pusher finds the sleeper. (Fences, not `SeqCst` loads and stores alone:
//! loom, which checks this below, models those as acquire/release.)

use std::collections::VecDeque;

use crate::executor::RawTask;
// loom's under `--cfg loom`: the tests below model the queue and the idle protocol.
use crate::loom::sync::atomic::{fence, AtomicUsize, Ordering};
use crate::loom::sync::{Mutex, MutexGuard};

/// Most tasks one steal takes (half the victim's queue, at most this many): enough to keep
/// the thief busy, few enough that the victim can take the rest back when it frees up.
pub(crate) const STEAL_MAX: usize = 32;

/// A task spawned on a core and never polled: the run-queue reference and the task-list
/// reference, as `RawTask::new` returned them (with `SCHEDULED` set).
pub(crate) struct Fresh {
    pub(crate) run: RawTask,
    pub(crate) list: RawTask,
}

impl Fresh {
    /// Ends a task that will never run (its core is gone): its never-polled `Send` future is
    /// dropped on this thread and its join handle reads "cancelled".
    pub(crate) fn cancel(self) {
        drop(self.run);
        self.list.shutdown();
    }
}

/// One core's stealable tasks (`T` is [`Fresh`] but for the loom tests).
pub(crate) struct FreshQueue<T = Fresh> {
    inner: Mutex<Inner<T>>,
    /// `inner.tasks.len()`, readable without the lock (see the invariant).
    len: AtomicUsize,
}

struct Inner<T> {
    tasks: VecDeque<T>,
    closed: bool,
}

impl<T> Default for FreshQueue<T> {
    fn default() -> Self {
        FreshQueue {
            inner: Mutex::new(Inner {
                tasks: VecDeque::new(),
                closed: false,
            }),
            len: AtomicUsize::new(0),
        }
    }
}

impl<T> FreshQueue<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tasks wait (a hint, except under the invariant's `SeqCst` protocol).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    /// Queues a task; gives it back if the queue is closed (its core shut down).
    pub(crate) fn push(&self, task: T) -> Result<(), T> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(task);
        }
        inner.tasks.push_back(task);
        self.len.store(inner.tasks.len(), Ordering::SeqCst);
        Ok(())
    }

    /// Queues every task of `tasks` (emptying it); gives them back if the queue is closed.
    pub(crate) fn push_all(&self, tasks: &mut Vec<T>) -> Vec<T> {
        let mut inner = self.lock();
        if inner.closed {
            return std::mem::take(tasks);
        }
        inner.tasks.extend(tasks.drain(..));
        self.len.store(inner.tasks.len(), Ordering::SeqCst);
        Vec::new()
    }

    /// The oldest task, for the queue's own core.
    pub(crate) fn pop(&self) -> Option<T> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut inner = self.lock();
        let task = inner.tasks.pop_front();
        self.len.store(inner.tasks.len(), Ordering::SeqCst);
        task
    }

    /// Up to half the queue (at least one task, at most [`STEAL_MAX`]), oldest first, for
    /// another core.
    pub(crate) fn steal(&self, into: &mut Vec<T>) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut inner = self.lock();
        let n = inner.tasks.len().div_ceil(2).min(STEAL_MAX);
        into.extend(inner.tasks.drain(..n));
        self.len.store(inner.tasks.len(), Ordering::SeqCst);
    }

    /// Calls `f` on every task waiting (for task dumps).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&T)) {
        self.lock().tasks.iter().for_each(&mut f);
    }

    /// Closes the queue (its core shuts down) and returns what was left in it.
    pub(crate) fn close(&self) -> VecDeque<T> {
        let mut inner = self.lock();
        inner.closed = true;
        self.len.store(0, Ordering::SeqCst);
        std::mem::take(&mut inner.tasks)
    }
}

/// The cores of a runtime that sleep (or are about to) with stealing on.
pub(crate) struct Idle {
    cores: Mutex<Vec<usize>>,
    /// `cores.len()`, readable without the lock.
    count: AtomicUsize,
}

impl Default for Idle {
    fn default() -> Self {
        Idle {
            cores: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
        }
    }
}

impl Idle {
    fn lock(&self) -> MutexGuard<'_, Vec<usize>> {
        self.cores.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Core `index` is about to sleep.
    pub(crate) fn enter(&self, index: usize) {
        let mut cores = self.lock();
        if !cores.contains(&index) {
            cores.push(index);
        }
        self.count.store(cores.len(), Ordering::SeqCst);
        drop(cores);
        // The sleeper's side of the invariant: the caller's look at the queues comes after.
        fence(Ordering::SeqCst);
    }

    /// Core `index` is awake (whether or not a waker took it off the list).
    pub(crate) fn leave(&self, index: usize) {
        let mut cores = self.lock();
        if let Some(at) = cores.iter().position(|&c| c == index) {
            cores.swap_remove(at);
            self.count.store(cores.len(), Ordering::SeqCst);
        }
    }

    /// Takes a sleeping core other than `except` off the list, for its caller to wake.
    pub(crate) fn take_one(&self, except: usize) -> Option<usize> {
        // The pusher's side of the invariant: the caller's queue push comes before.
        fence(Ordering::SeqCst);
        if self.count.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut cores = self.lock();
        let at = cores.iter().position(|&c| c != except)?;
        let index = cores.swap_remove(at);
        self.count.store(cores.len(), Ordering::SeqCst);
        Some(index)
    }
}

/// The queue and the idle protocol under loom's model checker (`scripts/loom.sh`): every
/// interleaving, and every ordering the atomics allow.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{FreshQueue, Idle};
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    /// A core pushes a stealable task while another goes to sleep: either the sleeper sees
    /// the task on its last look, or the pusher finds the sleeper and wakes it.
    #[test]
    fn loom_a_pushed_task_never_waits_beside_a_sleeping_core() {
        loom::model(|| {
            let queue = Arc::new(FreshQueue::<u32>::default());
            let idle = Arc::new(Idle::default());
            let woken = Arc::new(AtomicBool::new(false));
            let pusher = {
                let (queue, idle, woken) = (queue.clone(), idle.clone(), woken.clone());
                thread::spawn(move || {
                    assert!(queue.push(7).is_ok());
                    if idle.take_one(0) == Some(1) {
                        woken.store(true, Ordering::SeqCst);
                    }
                })
            };
            idle.enter(1);
            let sees = queue.len() > 0;
            pusher.join().unwrap();
            assert!(
                sees || woken.load(Ordering::SeqCst),
                "the sleeper missed the task and nobody woke it"
            );
            idle.leave(1);
        });
    }

    /// The owner pops while a thief steals: every task is taken exactly once, and the
    /// length the lock-free reads see ends at zero.
    #[test]
    fn loom_owner_and_thief_take_each_task_once() {
        loom::model(|| {
            let queue = Arc::new(FreshQueue::<u32>::default());
            for i in 0..3 {
                assert!(queue.push(i).is_ok());
            }
            let thief = {
                let queue = queue.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    queue.steal(&mut got);
                    got
                })
            };
            let mut mine = Vec::new();
            while let Some(t) = queue.pop() {
                mine.push(t);
            }
            let mut all = thief.join().unwrap();
            all.extend(mine);
            all.extend(queue.close());
            all.sort_unstable();
            assert_eq!(all, vec![0, 1, 2]);
            assert_eq!(queue.len(), 0);
        });
    }
}
