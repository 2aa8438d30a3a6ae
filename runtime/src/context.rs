//! The per-thread context: everything the runtime keeps per thread, in one struct behind
//! one `thread_local!` (as tokio's `runtime/context.rs`), and the accessors the rest of the
//! crate reads it with.
//!
//! [`Context`] holds which core runs on this thread, as one [`Entry`]: the core's id and a
//! pointer to each of its parts, each part owned and read by its own layer (the executor's
//! `Core`, the driver's `RingContext`: the ring, its features and receive ring; the timers);
//! the running task's cooperative poll budget ([`coop`]); the poll reference of the task
//! being polled (see `executor::task`); and the core that lives on this thread. Every field
//! is a `Cell` of a plain value, so the thread-local needs no destructor and each access is
//! one thread-local address computation, with no lazy initialisation check: the hot paths
//! (the current core in a spawn, a wake or an op's submission) read one field with one
//! access.
//!
//! A leaf: it imports nothing of the crate. It keeps the parts' pointers untyped; each layer
//! casts its own (`executor::with_core`, `driver::with_driver` and kin, `time::with_timers`),
//! relying on this module's invariant, and the executor, which builds every part, builds the
//! [`Entry`]. It also keeps the process-wide registry of which cores live ([`CoreId`],
//! [`core_life`]).
//!
//! # Invariant
//! The current entry (`core`, `ring`, `timers`, `id`) describes the core whose loop runs on
//! this thread, for exactly as long as an [`Enter`] for it lives (the executor keeps one
//! across `block_on` and the runtime's shutdown; the core outlives it); its pointers are null
//! and its id none otherwise. Each non-null pointer points at that core's part of its type:
//! `core` at the executor's `Core`, `ring` at the driver's `RingContext`, `timers` at a
//! `RefCell<Timers>`. `home` is the entry of the core that lives on this thread (its ring is
//! bound to it), entered or not, from the moment its runtime is built (or its worker
//! starts) until its shutdown has ended; the core outlives that span and stays in place
//! (core 0 in the runtime's `Rc`, a worker's on its thread's stack frame).
//!
//! # Values that leave their core
//! A value that holds something of a core (an op in flight, a direct descriptor, a
//! registered buffer ring, an fd the readiness backend watches) may be dropped where that
//! core is not entered: after `block_on` returns, while a panic unwinds out of it, after the
//! runtime is gone. Such values are `!Send`, so the thread is the core's own, and
//! `driver::EnterHome` enters its home core for the drop: the value is released exactly as on the
//! core. Once the core has ended ([`core_life`]), every op it had was reaped, so what a value
//! still holds is released where it is (the ring and its table went with the core).

use std::cell::Cell;
use std::ptr;
use std::sync::Mutex;

/// Identifies one core (one ring and its loop) for the life of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CoreId(u64);

/// A core's parts, as a thread enters them (module invariant): the core's id and untyped
/// pointers to the executor's `Core`, the driver's `RingContext` and the core's
/// `RefCell<Timers>`. Built by the executor only.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) id: CoreId,
    pub(crate) core: *const (),
    pub(crate) ring: *const (),
    pub(crate) timers: *const (),
}

/// An [`Entry`] as the thread-local keeps it: the id's number (0: none) and the pointers.
type RawEntry = (u64, *const (), *const (), *const ());

/// No core: the id 0 is never given, and every pointer is null.
const NONE: RawEntry = (0, ptr::null(), ptr::null(), ptr::null());

impl CoreId {
    /// A new id, never given before in this process; the core is [`CoreLife::Live`] until
    /// [`CoreId::ended`].
    pub(crate) fn next() -> CoreId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = CoreId(NEXT.fetch_add(1, Ordering::Relaxed));
        lives().live.push(id.0);
        id
    }

    /// The core's shutdown has ended: every op it had is reaped (`clean`), or the kernel kept
    /// some and their memory was leaked.
    pub(crate) fn ended(self, clean: bool) {
        let mut l = lives();
        l.live.retain(|&id| id != self.0);
        if !clean {
            l.leaky.push(self.0);
        }
    }
}

/// Where a core is in its life, for a value dropped where it cannot reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CoreLife {
    /// Running (or shutting down), on its own thread.
    Live,
    /// Ended with every op reaped: the kernel touches nothing of its ops any more.
    Ended,
    /// Ended with ops the kernel never gave back: their memory must stay leaked.
    EndedLeaking,
}

/// The cores of the process that are live, and those that ended leaking ops. A cold path:
/// read only by values dropped off their core.
struct Lives {
    live: Vec<u64>,
    leaky: Vec<u64>,
}

static LIVES: Mutex<Lives> = Mutex::new(Lives {
    live: Vec::new(),
    leaky: Vec::new(),
});

fn lives() -> std::sync::MutexGuard<'static, Lives> {
    LIVES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where core `id` is in its life.
pub(crate) fn core_life(id: CoreId) -> CoreLife {
    let l = lives();
    if l.live.contains(&id.0) {
        CoreLife::Live
    } else if l.leaky.contains(&id.0) {
        CoreLife::EndedLeaking
    } else {
        CoreLife::Ended
    }
}

/// Every per-thread pointer and state of the runtime (see the module documentation).
struct Context {
    /// The entered core's id (0: none), and its parts (module invariant).
    id: Cell<u64>,
    core: Cell<*const ()>,
    ring: Cell<*const ()>,
    timers: Cell<*const ()>,
    /// Ops the running task may still complete in this poll ([`coop`]).
    budget: Cell<u32>,
    /// The task this thread is polling whose poll reference is still unclaimed (its header's
    /// address, only ever compared), or null: see `executor::task`.
    poll_ref: Cell<*const ()>,
    /// The core that lives on this thread (its ring is bound to it), entered or not, from
    /// its build to the end of its shutdown, as its entry; `NONE` if none (module
    /// invariant). A second runtime on the thread is refused while it is set.
    home: Cell<RawEntry>,
    /// Task cells allocated minus freed on this thread (the task tests' leak check).
    #[cfg(all(test, not(loom)))]
    live_tasks: Cell<isize>,
}

// No destructor, so the thread-local needs no registration or state check on access.
const _: () = assert!(!std::mem::needs_drop::<Context>());

thread_local! {
    static CONTEXT: Context = const {
        Context {
            id: Cell::new(0),
            core: Cell::new(ptr::null()),
            ring: Cell::new(ptr::null()),
            timers: Cell::new(ptr::null()),
            budget: Cell::new(u32::MAX),
            poll_ref: Cell::new(ptr::null()),
            home: Cell::new(NONE),
            #[cfg(all(test, not(loom)))]
            live_tasks: Cell::new(0),
        }
    };
}

/// Makes a core this thread's current core for its lifetime (restoring the one before on
/// drop).
pub(crate) struct Enter {
    prev: RawEntry,
}

impl Enter {
    /// Enters the core `entry` describes. The caller keeps that core alive and in place while
    /// the guard lives (module invariant).
    pub(crate) fn new(entry: Entry) -> Enter {
        Enter {
            prev: swap((entry.id.0, entry.core, entry.ring, entry.timers)),
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        swap(self.prev);
    }
}

/// Sets the current entry, returning the one before.
fn swap(e: RawEntry) -> RawEntry {
    CONTEXT.with(|c| {
        (
            c.id.replace(e.0),
            c.core.replace(e.1),
            c.ring.replace(e.2),
            c.timers.replace(e.3),
        )
    })
}

/// Whether this thread runs a core's loop (inside `block_on` or the runtime's shutdown).
#[inline]
pub(crate) fn entered() -> bool {
    !CONTEXT.with(|c| c.core.get()).is_null()
}

/// The current core's id, or `None` outside a runtime. One thread-local access.
#[inline]
pub(crate) fn current_core_id() -> Option<CoreId> {
    match CONTEXT.with(|c| c.id.get()) {
        0 => None,
        id => Some(CoreId(id)),
    }
}

/// The entered core's executor part (the `Core`), or null outside one (module invariant:
/// the executor casts it).
#[inline(always)]
pub(crate) fn core_ptr() -> *const () {
    CONTEXT.with(|c| c.core.get())
}

/// The entered core's id and driver part (the `RingContext`), or null outside one (module
/// invariant: the driver casts it). One thread-local access.
#[inline(always)]
pub(crate) fn ring_ptr() -> *const () {
    CONTEXT.with(|c| c.ring.get())
}

/// The entered core's timers (a `RefCell<Timers>`), or null outside one (module
/// invariant: `time` casts it).
#[inline]
pub(crate) fn timers_ptr() -> *const () {
    CONTEXT.with(|c| c.timers.get())
}

/// Marks `task` (a task header's address) as the task this thread polls, its poll
/// reference unclaimed; null clears it.
#[inline(always)]
pub(crate) fn set_poll_ref(task: *const ()) {
    CONTEXT.with(|c| c.poll_ref.set(task));
}

/// Takes over the poll's reference if `task` is the task this thread is polling and its
/// reference is unclaimed. One thread-local access.
#[inline(always)]
pub(crate) fn take_poll_ref(task: *const ()) -> bool {
    CONTEXT.with(|c| {
        if c.poll_ref.get() == task {
            c.poll_ref.set(ptr::null());
            true
        } else {
            false
        }
    })
}

/// Whether a runtime's core lives on this thread.
pub(crate) fn runtime_alive() -> bool {
    CONTEXT.with(|c| c.home.get().0) != 0
}

/// Records that the core `entry` describes lives on this thread (its runtime was built or
/// its worker started), or, with `None`, that its shutdown has ended. The caller keeps the
/// core alive and in place until it clears it (module invariant).
pub(crate) fn set_home(entry: Option<Entry>) {
    let e = entry.map_or(NONE, |e| (e.id.0, e.core, e.ring, e.timers));
    CONTEXT.with(|c| c.home.set(e));
}

/// The executor part (the `Core`) of the core that lives on this thread, entered or not;
/// null if none does (module invariant).
pub(crate) fn home_core_ptr() -> *const () {
    CONTEXT.with(|c| c.home.get().1)
}

/// Enters this thread's home core when no core is entered (a value dropped after `block_on`
/// returned, or while a panic unwinds out of it), for as long as the guard lives; `None`
/// where a core is entered already or none lives on this thread. See
/// `driver::EnterHome`, which gives the ring a turn when it leaves.
pub(crate) fn enter_home() -> Option<Enter> {
    let home = CONTEXT.with(|c| {
        if c.core.get().is_null() {
            c.home.get()
        } else {
            NONE
        }
    });
    // The home entry stays valid while it is set (module invariant).
    (home.0 != 0).then(|| Enter { prev: swap(home) })
}

#[cfg(all(test, not(loom)))]
pub(crate) fn count_live_tasks(delta: isize) {
    CONTEXT.with(|c| c.live_tasks.set(c.live_tasks.get() + delta));
}

/// Task cells allocated minus freed on this thread (test builds only).
#[cfg(all(test, not(loom)))]
pub(crate) fn live_tasks() -> isize {
    CONTEXT.with(|c| c.live_tasks.get())
}

pub(crate) mod coop {
    //! The cooperative poll budget: a task that keeps finding ops ready yields after a
    //! while, so one busy task cannot starve the others or the ring.
    //!
    //! Each task poll starts with [`TASK_BUDGET`] units; every op that returns `Ready`
    //! spends one. At zero, ops return `Pending` after waking their task, which goes to the
    //! back of the run queue. The budget is a field of the thread's context.

    use std::task::Context;

    use super::CONTEXT;

    /// Ops a task may complete in one poll before it is made to yield.
    pub(crate) const TASK_BUDGET: u32 = 128;

    /// Gives the next poll a fresh budget.
    pub(crate) fn reset() {
        CONTEXT.with(|c| c.budget.set(TASK_BUDGET));
    }

    /// One unit for an op whose result is there (checked only then, so a pending op costs
    /// nothing): `true` when spent, else the task is woken (it goes to the back of the run
    /// queue) and the op must say `Pending`. One thread-local access.
    #[inline]
    pub(crate) fn try_spend(cx: &mut Context<'_>) -> bool {
        let spent = CONTEXT.with(|c| match c.budget.get() {
            0 => false,
            n => {
                c.budget.set(n - 1);
                true
            }
        });
        if !spent {
            cx.waker().wake_by_ref();
        }
        spent
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::task::Waker;

        #[test]
        fn budget_runs_out_then_resets() {
            reset();
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..TASK_BUDGET {
                assert!(try_spend(&mut cx), "budget ran out early");
            }
            assert!(!try_spend(&mut cx), "try_spend stops at zero");
            assert!(!try_spend(&mut cx), "and stays there");
            reset();
            assert!(try_spend(&mut cx));
        }
    }
}
