//! The per-thread context: everything the runtime keeps per thread, in one struct behind
//! one `thread_local!` (as tokio's `runtime/context.rs`), and the accessors the rest of the
//! crate reads it with.
//!
//! [`Context`] holds which core's loop runs on this thread (the executor's [`Core`], whose
//! [`CoreContext`] is what ops, timers and buffer rings reach: the core's id, driver,
//! timers and receive ring), the running task's cooperative poll budget ([`coop`]), the poll
//! reference of the task being polled (see `executor::task`), and whether a runtime lives on
//! this thread. Every field is a `Cell` of a plain value, so the thread-local needs no
//! destructor and each access is one thread-local address computation, with no lazy
//! initialisation check: the hot paths (the current core in a spawn, a wake or an op's
//! submission) read one field with one access.
//!
//! A leaf: `driver`, `time`, `buf` and `executor` import it, and it calls none of them (it
//! names the types it points at, `Core`, `Driver`, `Timers`, `CoreRing`, and reads their
//! fields, nothing more). The executor builds each core's `CoreContext` and enters the core
//! around its loop.
//!
//! # Invariant
//! `core` points at the core whose loop runs on this thread, for exactly as long as an
//! [`Enter`] for it lives (the executor keeps one across `block_on` and the runtime's
//! shutdown; the core outlives it); it is null otherwise. `home` points at the core that
//! lives on this thread (its ring is bound to it), entered or not, from the moment its
//! runtime is built (or its worker starts) until its shutdown has ended; the core outlives
//! that span and stays in place (core 0 in the runtime's `Rc`, a worker's on its thread's
//! stack frame).
//!
//! # Values that leave their core
//! A value that holds something of a core (an op in flight, a direct descriptor, a
//! registered buffer ring, an fd the readiness backend watches) may be dropped where that
//! core is not entered: after `block_on` returns, while a panic unwinds out of it, after the
//! runtime is gone. Such values are `!Send`, so the thread is the core's own, and
//! `driver::EnterHome` enters its home core for the drop: the value is released exactly as on the
//! core. Once the core has ended ([`core_life`]), every op it had was reaped, so what a value
//! still holds is released where it is (the ring and its table went with the core).

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::Mutex;

use crate::driver::bufring::CoreRing;
use crate::driver::{Driver, Features};
use crate::executor::Core;
use crate::time::Timers;

/// Identifies one core (one ring and its loop) for the life of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CoreId(u64);

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

/// What ops, timers and buffer rings need of their core. Lives on its core's thread, in
/// its [`Core`].
pub(crate) struct CoreContext {
    pub(crate) id: CoreId,
    pub(crate) driver: RefCell<Driver>,
    pub(crate) timers: RefCell<Timers>,
    /// The driver's features, copied out so reading them needs no borrow of the driver.
    pub(crate) features: Features,
    /// The core's shared receive ring (`buf::core_ring`), made on first use.
    pub(crate) recv_ring: RefCell<CoreRing>,
    /// How often the receive ring grew, and the `ENOBUFS` its replaced rings saw (for the
    /// metrics; the current ring counts its own).
    pub(crate) recv_grown: Cell<(u64, u64)>,
    /// Direct descriptors of this ring's table owned by a `SharedFd` (for the metrics).
    pub(crate) fixed_in_use: Cell<u64>,
}

/// Every per-thread pointer and state of the runtime (see the module documentation).
struct Context {
    /// The core whose loop runs on this thread; null outside one (module invariant).
    core: Cell<*const Core>,
    /// Ops the running task may still complete in this poll ([`coop`]).
    budget: Cell<u32>,
    /// The task this thread is polling whose poll reference is still unclaimed (its header's
    /// address, only ever compared), or null: see `executor::task`.
    poll_ref: Cell<*const ()>,
    /// The core that lives on this thread (its ring is bound to it), entered or not, from
    /// its build to the end of its shutdown; null if none (module invariant). A second
    /// runtime on the thread is refused while it is set.
    home: Cell<*const Core>,
    /// Task cells allocated minus freed on this thread (the task tests' leak check).
    #[cfg(all(test, not(loom)))]
    live_tasks: Cell<isize>,
}

// No destructor, so the thread-local needs no registration or state check on access.
const _: () = assert!(!std::mem::needs_drop::<Context>());

thread_local! {
    static CONTEXT: Context = const {
        Context {
            core: Cell::new(ptr::null()),
            budget: Cell::new(u32::MAX),
            poll_ref: Cell::new(ptr::null()),
            home: Cell::new(ptr::null()),
            #[cfg(all(test, not(loom)))]
            live_tasks: Cell::new(0),
        }
    };
}

/// Makes `core` this thread's current core for its lifetime (restoring the one before on
/// drop).
pub(crate) struct Enter {
    prev: *const Core,
}

impl Enter {
    /// Enters `core`. The caller keeps `core` alive and in place while the guard lives.
    pub(crate) fn new(core: &Core) -> Enter {
        Enter {
            prev: CONTEXT.with(|c| c.core.replace(core)),
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CONTEXT.with(|c| c.core.set(self.prev));
    }
}

/// Whether this thread runs a core's loop (inside `block_on` or the runtime's shutdown).
#[inline]
pub(crate) fn entered() -> bool {
    !CONTEXT.with(|c| c.core.get()).is_null()
}

/// Runs `f` on the current core; `None` outside a runtime. One thread-local access.
#[inline(always)]
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    let p = CONTEXT.with(|c| c.core.get());
    if p.is_null() {
        None
    } else {
        // SAFETY: `core` is non-null only while its core is alive and entered on this
        // thread (module invariant); the reference does not leave this call.
        Some(f(unsafe { &*p }))
    }
}

/// Runs `f` on the current core's context; `None` outside a runtime.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&CoreContext) -> R) -> Option<R> {
    with_core(|core| f(&core.ctx))
}

/// The current core's id, or `None` outside a runtime.
#[inline]
pub(crate) fn current_core_id() -> Option<CoreId> {
    with_current(|c| c.id)
}

/// The current core's ring features, or `None` outside a runtime.
#[inline]
pub(crate) fn current_features() -> Option<Features> {
    with_current(|c| c.features)
}

/// Runs `f` with the current core's driver. Op data the driver frees meanwhile stays on
/// its dead list: a caller that may free some drops `Driver::take_dead` after this returns
/// (see `driver::with_driver_freeing`).
///
/// # Panics
/// Outside a runtime, or re-entered from inside the driver (a broken invariant).
pub(crate) fn with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> R {
    with_current(|c| f(&mut c.driver.borrow_mut())).unwrap_or_else(|| outside_runtime())
}

/// Runs `f` with the current core's driver if this thread runs a core and the driver is not
/// borrowed (a wake from inside the driver, while it reaps); else `None`.
pub(crate) fn try_with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> Option<R> {
    with_current(|c| c.driver.try_borrow_mut().ok().map(|mut d| f(&mut d))).flatten()
}

/// Runs `f` with the current core's id and driver (a chain's submission and polls).
///
/// # Panics
/// Outside a runtime.
#[inline]
pub(crate) fn with_core_driver<R>(f: impl FnOnce(CoreId, &mut Driver) -> R) -> R {
    // SAFETY: the reference is used only within this call.
    let (id, driver) = unsafe { current_driver() };
    f(id, &mut driver.borrow_mut())
}

/// The current core's id and driver, for the op futures' hot path (no closure for the
/// inliner to weigh: an op's poll then flattens into its task's). One thread-local access.
///
/// # Panics
/// Outside a runtime.
///
/// # Safety
/// The reference must not be kept past the caller's scope: the core lives only while it is
/// entered (module invariant), which outlasts any one poll on this thread.
#[inline(always)]
pub(crate) unsafe fn current_driver<'a>() -> (CoreId, &'a RefCell<Driver>) {
    let p = CONTEXT.with(|c| c.core.get());
    if p.is_null() {
        outside_runtime();
    }
    // SAFETY: non-null, so a live, entered core (module invariant); the caller bounds the
    // reference's use.
    let ctx = unsafe { &(*p).ctx };
    (ctx.id, &ctx.driver)
}

#[cold]
#[inline(never)]
fn outside_runtime() -> ! {
    panic!("an io_uring op was used outside of a runtime")
}

/// Runs `f` with the current core's timers; `None` outside a runtime.
pub(crate) fn with_timers<R>(f: impl FnOnce(&mut Timers, CoreId) -> R) -> Option<R> {
    with_current(|c| f(&mut c.timers.borrow_mut(), c.id))
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
    !CONTEXT.with(|c| c.home.get()).is_null()
}

/// Records that `core` lives on this thread (its runtime was built or its worker started),
/// or, with `None`, that its shutdown has ended. The caller keeps the core alive and in
/// place until it clears it (module invariant).
pub(crate) fn set_home(core: Option<&Core>) {
    CONTEXT.with(|c| c.home.set(core.map_or(ptr::null(), |c| c as *const Core)));
}

/// Runs `f` with the core that lives on this thread (entered or not); `None` if none does.
pub(crate) fn with_home<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    let home = CONTEXT.with(|c| c.home.get());
    // SAFETY: a non-null `home` is alive and in place (module invariant); the reference does
    // not leave this call.
    (!home.is_null()).then(|| f(unsafe { &*home }))
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
            ptr::null()
        }
    });
    // SAFETY: a non-null `home` is alive and in place (module invariant).
    (!home.is_null()).then(|| Enter::new(unsafe { &*home }))
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
