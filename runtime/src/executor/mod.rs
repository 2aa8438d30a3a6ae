//! The executor: one core's run queue, task list, wakers, and the loop.
//!
//! The loop (ARCHITECTURE.md, "The loop"), one [`Core::tick`] at a time:
//! 1. run ready tasks, at most [`TASKS_PER_TICK`], so one busy core still serves its ring;
//! 2. submit queued SQEs: without waiting if anything is ready, else one wait carrying the
//!    next timer's deadline as its timeout;
//! 3. reap the whole CQ in one pass and wake each op's task.
//!
//! A wake on the core's own thread is a push onto the local queue (no syscall, no lock, no
//! allocation, no atomic read-modify-write: see `task`). A wake from another thread pushes
//! onto the core's remote queue and wakes the core's ring (MSG_RING, or its eventfd, on
//! which the driver keeps a read armed), once per batch.
//!
//! The thread's current core is the context's (`context::Enter`, entered for exactly as
//! long as a `block_on` or the runtime's shutdown is on the stack); ops, timers and spawns
//! reach their core through it.

mod balance;
mod contention;
mod dump;
mod id;
mod join;
mod join_set;
mod measure;
mod owner;
mod remote;
mod spawn;
mod task;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use slab::Slab;

use crate::context::{self, coop, Entry};
use crate::driver::bufring::CoreRing;
use crate::driver::{Driver, RingConfig, RingContext};
use crate::time::Timers;
pub(crate) use balance::Fresh;
pub use contention::{cpu_contention, cpu_demand};
pub use dump::{dump, dump_all, TaskDump};
pub use id::Id;
pub(crate) use id::IdBlock;
pub use join::{AbortHandle, JoinError, JoinHandle};
pub use join_set::JoinSet;
use measure::LoopStats;
pub use owner::CoreOwner;
pub(crate) use remote::{CoreSet, Shared};
pub(crate) use spawn::blocking_job;
pub use spawn::{
    cores, current_core, spawn, spawn_blocking, spawn_local, spawn_on, spawn_on_local, yield_now,
    Placement,
};
use task::LocalQueue;
pub(crate) use task::{Loc, RawTask};

/// Tasks run per loop iteration before the ring is served again.
pub(crate) const TASKS_PER_TICK: usize = 128;

/// How long a core that was just woken from another thread watches for the next such wake
/// before it sleeps in the kernel (only then: an idle core never spins).
///
/// Kept by measurement (`bench pingpong`, cross-core round trip, 2 CPUs): 0 us gives
/// 47-49 us per round trip (every message wakes a sleeping CPU, 2 enters per trip), 20 us
/// 5.5-6.7 us, 60 us 6.5-6.6 us (no better, more CPU burnt).
const SPIN_AFTER_REMOTE_WAKE: std::time::Duration = std::time::Duration::from_micros(20);

/// One core: its ring, its queues, its timers. Lives on its thread only.
pub(crate) struct Core {
    pub(crate) shared: Arc<Shared>,
    /// What ops, fds and buffer rings reach through the thread's context: the id
    /// (`shared.id`, kept here so the op hot path reads it without going through the
    /// `Arc`), the driver, its features, the receive ring.
    pub(crate) ctx: RingContext,
    /// The core's timers (`time` reaches them through the thread's context).
    timers: RefCell<Timers>,
    /// Every core of this core's runtime, for `spawn_on`.
    pub(crate) set: Arc<CoreSet>,
    queue: LocalQueue,
    /// The newest `Send` task spawned here, never stolen (`balance`).
    slot: RefCell<Option<Fresh>>,
    /// Slot tasks run in a row.
    slot_runs: Cell<u8>,
    /// Tasks picked, for `balance`'s turn of the stealable queue.
    picks: Cell<u32>,
    /// The loop's counters and clocks, published by its maintenance step (`measure`).
    stats: LoopStats,
    /// `set.balances()`, fixed at creation: false on one core or under round-robin
    /// placement, where the loop skips the slot and the stealable queues.
    balances: bool,
    owned: RefCell<Slab<RawTask>>,
    spare_wakers: RefCell<Vec<Waker>>,
    /// The last turn of the loop took tasks woken from another thread: this turn ran them,
    /// and their answer's answer is likely close behind (see [`SPIN_AFTER_REMOTE_WAKE`]).
    remote_last: Cell<bool>,
    /// The ids this core gives the tasks it spawns (a block taken from the process-wide
    /// counter now and then, so a spawn touches no shared atomic).
    task_ids: IdBlock,
}

/// Runs `f` on the current core; `None` outside a runtime. One thread-local access.
#[inline(always)]
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    let p = context::core_ptr();
    if p.is_null() {
        None
    } else {
        // SAFETY: a non-null `core` pointer points at the entered core's `Core`, alive while
        // it is entered on this thread (`context`'s invariant, built by `Core::entry`); the
        // reference does not leave this call.
        Some(f(unsafe { &*p.cast::<Core>() }))
    }
}

/// Runs `f` with the core that lives on this thread, entered or not; `None` if none does.
fn with_home<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    let p = context::home_core_ptr();
    // SAFETY: a non-null home pointer points at the `Core` that lives on this thread, alive
    // and in place while it is set (`context`'s invariant, set from `Core::entry`); the
    // reference does not leave this call.
    (!p.is_null()).then(|| f(unsafe { &*p.cast::<Core>() }))
}

/// Runs `f` with the current core if it is `owner`'s: this thread runs that core's loop (a
/// wake here is local). `None` on any other thread, or outside the loop. One thread-local
/// access.
#[inline]
fn on_owner<R>(owner: &Shared, f: impl FnOnce(&Core) -> R) -> Option<R> {
    with_core(|core| std::ptr::eq(Arc::as_ptr(&core.shared), owner).then(|| f(core))).flatten()
}

/// `shared`'s core's metrics read now, if this thread runs that core (inside its loop, or
/// its home thread between `block_on`s) and nothing of it is borrowed; else `None`.
pub(crate) fn live_metrics(shared: &Shared) -> Option<crate::CoreMetrics> {
    let on = |core: &Core| std::ptr::eq(Arc::as_ptr(&core.shared), shared);
    match with_core(|core| on(core).then(|| core.snapshot())) {
        Some(Some(m)) => m,
        // This thread runs another core's loop: `shared`'s is elsewhere.
        Some(None) => None,
        None => with_home(|core| on(core).then(|| core.snapshot()).flatten()).flatten(),
    }
}

/// A finished task leaves its core's task list (`task::raw` calls this).
fn release_owned(key: usize) {
    let removed = with_core(|c| c.owned.borrow_mut().try_remove(key));
    // Dropped after the borrow ends: this may free the task.
    drop(removed);
}

/// The waker of the future passed to `block_on`.
struct MainWaker {
    woken: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if context::current_core_id() != Some(self.shared.id) {
            self.shared.remote_wakes.fetch_add(1, Ordering::Relaxed);
            self.shared.notify();
        }
    }
}

impl Core {
    pub(crate) fn new(want: &RingConfig, index: usize, set: Arc<CoreSet>) -> io::Result<Core> {
        let shared = Arc::new(Shared::new(index)?);
        // The readiness backend's file ops run on the runtime's blocking pool.
        let pool = set.pool.clone();
        let offload: crate::driver::readiness::Offload = Arc::new(move |job| pool.spawn(job));
        let driver = Driver::new(want, shared.event_fd.as_raw_fd(), Some(offload))?;
        let features = driver.features();
        let balances = set.balances();
        let histograms = set.histograms;
        shared.ring_fd.store(driver.ring_fd(), Ordering::Release);
        Ok(Core {
            ctx: RingContext {
                id: shared.id,
                driver: RefCell::new(driver),
                features,
                recv_ring: RefCell::new(CoreRing::default()),
                recv_grown: Cell::new((0, 0)),
                fixed_in_use: Cell::new(0),
            },
            timers: RefCell::new(Timers::default()),
            shared,
            set,
            queue: LocalQueue::new(),
            slot: RefCell::new(None),
            slot_runs: Cell::new(0),
            picks: Cell::new(0),
            stats: LoopStats::new(histograms),
            balances,
            owned: RefCell::new(Slab::with_capacity(256)),
            spare_wakers: RefCell::new(Vec::new()),
            remote_last: Cell::new(false),
            task_ids: IdBlock::new(),
        })
    }

    /// The core's parts, for the thread's context to enter (`context`'s invariant: each
    /// pointer at the part of the type its layer casts it to).
    pub(crate) fn entry(&self) -> Entry {
        Entry {
            id: self.ctx.id,
            core: (self as *const Core).cast(),
            ring: (&self.ctx as *const RingContext).cast(),
            timers: (&self.timers as *const RefCell<Timers>).cast(),
        }
    }

    fn spawn<F>(&self, future: F, loc: Loc) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
    {
        let (run, list, join) =
            RawTask::new(future, self.shared.clone(), true, self.next_task_id(), loc);
        let key = self.owned.borrow_mut().insert(list);
        run.set_owned_key(key);
        self.enqueue(run);
        JoinHandle::new(join)
    }

    /// Spawns from outside `block_on`, on the core's own thread.
    #[track_caller]
    pub(crate) fn spawn_outside<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
    {
        self.spawn(future, std::panic::Location::caller())
    }

    /// An id for a task spawned from this core's thread.
    #[inline]
    pub(crate) fn next_task_id(&self) -> Id {
        LoopStats::count(&self.stats.spawned, 1);
        self.task_ids.next()
    }

    /// Runs `future` to completion, running the core's tasks and ring meanwhile.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        assert!(
            !context::entered(),
            "cannot start a runtime's block_on from inside a runtime: this thread already \
             runs one (await the future instead, or spawn it)"
        );
        let _enter = context::Enter::new(self.entry());
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            shared: self.shared.clone(),
        });
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            if main.woken.swap(false, Ordering::AcqRel) {
                coop::reset();
                if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                    // A task waiting in the slot would wait for this thread's next
                    // `block_on`: an idle core may take it instead.
                    self.release_slot();
                    self.publish_metrics();
                    // Hand the kernel what the last poll queued (a MSG_RING wake of another
                    // core, say) before this thread stops entering it.
                    self.ctx.driver.borrow_mut().park(false, None);
                    return v;
                }
            }
            self.tick(&main.woken);
        }
    }

    /// One turn of the loop: run, submit (maybe wait), reap.
    fn tick(&self, main_woken: &AtomicBool) {
        // 1. Run ready tasks, up to a budget; then tasks woken from other threads join the
        // local queue, and due timers wake theirs.
        self.run_tasks();
        let remote = self.shared.notified.load(Ordering::Acquire);
        if remote {
            self.drain_remote();
        }
        let mut wakers = std::mem::take(&mut *self.spare_wakers.borrow_mut());
        let deadline = self.timers.borrow_mut().fire(&mut wakers);
        for w in wakers.drain(..) {
            w.wake();
        }
        *self.spare_wakers.borrow_mut() = wakers;

        // 2. Submit; wait in the kernel only when nothing is ready. A core with nothing to
        // run takes stealable tasks from another core first, and registers as idle (then
        // looks once more) before it waits.
        // Watch for the next remote wake before sleeping when this turn took one (the main
        // future, polled before the turn, has answered it already) or the last one did (the
        // tasks it took ran in this turn's `run_tasks` and may have answered).
        let conversing = self.remote_last.replace(remote) || remote;
        let balances = self.balances;
        let mut ready = self.ready(main_woken)
            || (balances && self.steal())
            || (conversing && self.spin_for_wake(main_woken));
        let idle = balances && !ready;
        if idle {
            ready = !self.go_idle() || self.ready(main_woken);
        }
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let now = crate::stats::coarse_ns();
        let timeout = self.maintain(ready, now, timeout);
        let mut driver = self.ctx.driver.borrow_mut();
        self.stats.clock.set(driver.park_at(!ready, timeout, now));
        if idle {
            self.set.idle.leave(self.shared.index);
        }

        // 3. Reap the whole CQ in one pass, waking each op's task as its CQE is seen.
        if driver.reap(task::wake) > 0 {
            self.stats.dirty.set(true);
        }
        let dead = driver.take_dead();
        let failed = driver.take_failed_msg_rings();
        drop(driver);
        drop(dead);
        for index in failed {
            if let Some(target) = self.set.get(index) {
                target.wake_by_eventfd();
            }
        }
    }

    /// Polls ready tasks, at most `TASKS_PER_TICK`.
    fn run_tasks(&self) {
        let mut polled = 0;
        let mut now = 0;
        while polled < TASKS_PER_TICK {
            let Some(task) = self.next_task() else {
                break;
            };
            if polled == 0 {
                // The loop's latest clock reading (no read here): each poll's time for the
                // task dumps, early by at most one loop iteration.
                now = self.stats.clock.get().saturating_sub(self.stats.started_ns) + 1;
                self.stats.dirty.set(true);
            }
            polled += 1;
            task.set_last_poll(now);
            if self.stats.histograms {
                self.run_measured(task);
            } else {
                task.run();
            }
        }
        LoopStats::count(&self.stats.polls, polled as u64);
    }

    /// Whether there is work without waiting: a queued task, the main future, a remote wake.
    fn ready(&self, main_woken: &AtomicBool) -> bool {
        !self.queue.is_empty()
            || self.has_fresh()
            || main_woken.load(Ordering::Acquire)
            || self.shared.notified.load(Ordering::Acquire)
    }

    /// Another thread just woke this core: the next wake is likely close behind (a
    /// cross-core conversation). Hands the kernel what is queued (a wake of that peer, say),
    /// then watches the wake flags a few microseconds before sleeping, so neither side pays
    /// the cost of waking a sleeping CPU on every message. True if a wake came.
    fn spin_for_wake(&self, main_woken: &AtomicBool) -> bool {
        self.ctx.driver.borrow_mut().park(false, None);
        let start = Instant::now();
        while start.elapsed() < SPIN_AFTER_REMOTE_WAKE {
            if self.shared.notified.load(Ordering::Acquire) || main_woken.load(Ordering::Acquire) {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    fn drain_remote(&self) {
        // `drain` clears `notified` first, so a value sent back after this drain wakes the
        // core again (the remote queue's invariant).
        let drained = self.shared.drain();
        // Values sent back to be dropped here (the core is entered).
        self.shared.orphans.drain();
        for (run, list) in drained.spawns {
            // Spawned from another thread: it joins this core's task list here.
            let key = self.owned.borrow_mut().insert(list);
            run.set_owned_key(key);
            // It arrives as a remote entry (SCHEDULED set since `RawTask::new`, so no wake
            // queued it locally meanwhile) and becomes a local one; `None` cannot happen
            // here, and would only drop the entry (the task list holds the task).
            if let Some(run) = run.into_local() {
                self.enqueue(run);
            }
        }
        for task in drained.tasks {
            // Remote entries become local ones, or go when the task is queued already or
            // finished (dropping one frees at most an empty cell: the module invariant of
            // `task`).
            if let Some(task) = task.into_local() {
                self.enqueue(task);
            }
        }
    }

    /// Drops every task, closes the remote queue, cancels and reaps every op.
    pub(crate) fn shutdown(&self) {
        let _enter = context::Enter::new(self.entry());
        loop {
            // Never-polled tasks first (their drops may spawn more, which end here too).
            let fresh = self.cancel_fresh();
            let tasks: Vec<RawTask> = self.owned.borrow_mut().drain().collect();
            if tasks.is_empty() && !fresh {
                break;
            }
            for t in tasks {
                t.set_owned_key(task::NOT_OWNED);
                t.shutdown();
            }
        }
        while let Some(task) = self.queue.pop() {
            drop(task);
        }
        self.shared.ring_fd.store(-1, Ordering::Release);
        let left = self.shared.close();
        self.shared.orphans.close();
        drop(left.tasks);
        for (run, list) in left.spawns {
            drop(run);
            list.shutdown();
        }
        let timers = std::mem::take(&mut *self.timers.borrow_mut());
        drop(timers);
        self.ctx.driver.borrow_mut().shutdown_start();
        loop {
            let mut driver = self.ctx.driver.borrow_mut();
            let done = driver.shutdown_step();
            let dead = driver.take_dead();
            drop(driver);
            drop(dead);
            if done {
                break;
            }
        }
        // Every op is reaped: the core's receive ring can be unregistered and freed.
        let ring = std::mem::take(&mut *self.ctx.recv_ring.borrow_mut());
        drop(ring);
        // Values that outlive the core (returned from `block_on`, kept past the runtime)
        // find their ops' slots on this thread and know the kernel is done with them.
        let (clean, leftovers) = self.ctx.driver.borrow_mut().shutdown_end();
        crate::driver::op::stash(self.ctx.id, leftovers);
        self.ctx.id.ended(clean);
    }
}
