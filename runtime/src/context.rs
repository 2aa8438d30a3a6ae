//! The per-thread core context: which core's loop runs on this thread, and the parts of it
//! that ops, timers and buffer rings reach ([`CoreContext`]: the core's id, driver and
//! timers); and the cooperative poll budget ([`coop`]).
//!
//! A leaf: `driver`, `time`, `buf` and `executor` import it, and it calls none of them (it
//! names the `Driver` and `Timers` types it holds, nothing more). The executor owns each
//! core's `CoreContext` and enters it around its loop.
//!
//! # Invariant
//! `CURRENT` points at the context of the core whose loop runs on this thread, for exactly
//! as long as an [`Enter`] for it lives (the executor keeps one across `block_on` and the
//! runtime's shutdown); ops, timers and buffer rings reach their core through it.

use std::cell::{Cell, RefCell};
use std::ptr;

use crate::driver::{Driver, Features};
use crate::time::Timers;

/// Identifies one core (one ring and its loop) for the life of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CoreId(u64);

impl CoreId {
    /// A new id, never given before in this process.
    pub(crate) fn next() -> CoreId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        CoreId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What ops, timers and buffer rings need of their core. Lives on its core's thread.
pub(crate) struct CoreContext {
    pub(crate) id: CoreId,
    pub(crate) driver: RefCell<Driver>,
    pub(crate) timers: RefCell<Timers>,
    /// The driver's features, copied out so reading them needs no borrow of the driver.
    pub(crate) features: Features,
}

thread_local! {
    static CURRENT: Cell<*const CoreContext> = const { Cell::new(ptr::null()) };
}

/// Makes `ctx` this thread's current core context for its lifetime (restoring the one
/// before on drop).
pub(crate) struct Enter {
    prev: *const CoreContext,
}

impl Enter {
    /// Enters `ctx`. The caller keeps `ctx` alive and in place while the guard lives.
    pub(crate) fn new(ctx: &CoreContext) -> Enter {
        Enter {
            prev: CURRENT.with(|c| c.replace(ctx)),
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// Runs `f` on the current core's context; `None` outside a runtime.
#[inline]
fn with_current<R>(f: impl FnOnce(&CoreContext) -> R) -> Option<R> {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        None
    } else {
        // SAFETY: CURRENT is non-null only while its context is alive and entered on this
        // thread (module invariant).
        Some(f(unsafe { &*p }))
    }
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

/// Runs `f` with the current core's driver.
///
/// # Panics
/// Outside a runtime, or re-entered from inside the driver (a broken invariant).
pub(crate) fn with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> R {
    with_current(|c| f(&mut c.driver.borrow_mut()))
        .unwrap_or_else(|| panic!("an io_uring op was used outside of a runtime"))
}

/// Runs `f` with the current core's driver if this thread runs a core and the driver is not
/// borrowed (a wake from inside the driver, while it reaps); else `None`.
pub(crate) fn try_with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> Option<R> {
    with_current(|c| c.driver.try_borrow_mut().ok().map(|mut d| f(&mut d))).flatten()
}

/// Runs `f` with the current core's driver, then drops the data of ops that finished
/// meanwhile, outside the borrow (for op drops: an op's data may run user code when
/// dropped, which may use the driver).
pub(crate) fn with_driver_freeing<R>(f: impl FnOnce(&mut Driver) -> R) -> R {
    let (r, dead) = with_driver(|d| {
        let r = f(d);
        (r, d.take_dead())
    });
    drop(dead);
    r
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
/// inliner to weigh: an op's poll then flattens into its task's).
///
/// # Panics
/// Outside a runtime.
///
/// # Safety
/// The reference must not be kept past the caller's scope: the context lives only while
/// its core is entered (module invariant), which outlasts any one poll on this thread.
#[inline(always)]
pub(crate) unsafe fn current_driver<'a>() -> (CoreId, &'a RefCell<Driver>) {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        outside_runtime();
    }
    // SAFETY: non-null, so a live, entered context (module invariant); the caller bounds
    // the reference's use.
    let ctx = unsafe { &*p };
    (ctx.id, &ctx.driver)
}

#[cold]
#[inline(never)]
fn outside_runtime() -> ! {
    panic!("an io_uring op was polled outside of a runtime")
}

/// Runs `f` with the current core's timers; `None` outside a runtime.
pub(crate) fn with_timers<R>(f: impl FnOnce(&mut Timers, CoreId) -> R) -> Option<R> {
    with_current(|c| f(&mut c.timers.borrow_mut(), c.id))
}

pub(crate) mod coop {
    //! The cooperative poll budget: a task that keeps finding ops ready yields after a
    //! while, so one busy task cannot starve the others or the ring.
    //!
    //! Each task poll starts with [`TASK_BUDGET`] units; every op that returns `Ready`
    //! spends one. At zero, ops return `Pending` after waking their task, which goes to the
    //! back of the run queue.

    use std::cell::Cell;
    use std::task::Context;

    /// Ops a task may complete in one poll before it is made to yield.
    pub(crate) const TASK_BUDGET: u32 = 128;

    thread_local! {
        static BUDGET: Cell<u32> = const { Cell::new(u32::MAX) };
    }

    /// Gives the next poll a fresh budget.
    pub(crate) fn reset() {
        BUDGET.with(|b| b.set(TASK_BUDGET));
    }

    /// One unit for an op whose result is there (checked only then, so a pending op costs
    /// nothing): `true` when spent, else the task is woken (it goes to the back of the run
    /// queue) and the op must say `Pending`. One thread-local access.
    #[inline]
    pub(crate) fn try_spend(cx: &mut Context<'_>) -> bool {
        let spent = BUDGET.with(|b| match b.get() {
            0 => false,
            n => {
                b.set(n - 1);
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
