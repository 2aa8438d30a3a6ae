//! The current core's ring, as the ops, fds and buffer rings reach it: [`RingContext`] (the
//! driver's part of a core: its id, driver, features and receive ring) and the accessors
//! that find it through the thread's context (`crate::context`, which keeps it as an untyped
//! pointer; the executor, which owns each core's `RingContext`, enters it).

use std::cell::{Cell, RefCell};

use super::bufring::CoreRing;
use super::{Driver, Features};
use crate::context::{self, CoreId};

/// What ops, fds and buffer rings need of their core. Lives on its core's thread, in the
/// executor's `Core`; the thread's context points at it while the core is entered.
pub(crate) struct RingContext {
    pub(crate) id: CoreId,
    pub(crate) driver: RefCell<Driver>,
    /// The driver's features, copied out so reading them needs no borrow of the driver.
    pub(crate) features: Features,
    /// The core's shared receive ring (`bufring::core_ring`), made on first use.
    pub(crate) recv_ring: RefCell<CoreRing>,
    /// How often the receive ring grew, and the `ENOBUFS` its replaced rings saw (for the
    /// metrics; the current ring counts its own).
    pub(crate) recv_grown: Cell<(u64, u64)>,
    /// Direct descriptors of this ring's table owned by a `SharedFd` (for the metrics).
    pub(crate) fixed_in_use: Cell<u64>,
}

/// Runs `f` on the current core's ring context; `None` outside a runtime.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&RingContext) -> R) -> Option<R> {
    let p = context::ring_ptr();
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null `ring` pointer points at the entered core's `RingContext`, alive
    // while it is entered on this thread (`context`'s invariant); the reference does not
    // leave this call.
    Some(f(unsafe { &*p.cast::<RingContext>() }))
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
/// entered (`context`'s invariant), which outlasts any one poll on this thread.
#[inline(always)]
pub(crate) unsafe fn current_driver<'a>() -> (CoreId, &'a RefCell<Driver>) {
    let p = context::ring_ptr();
    if p.is_null() {
        outside_runtime();
    }
    // SAFETY: non-null, so the entered core's `RingContext`, alive while it is entered
    // (`context`'s invariant); the caller bounds the reference's use.
    let ctx = unsafe { &*p.cast::<RingContext>() };
    (ctx.id, &ctx.driver)
}

#[cold]
#[inline(never)]
fn outside_runtime() -> ! {
    panic!("an io_uring op was used outside of a runtime")
}
