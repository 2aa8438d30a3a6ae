//! An op dropped or detached where its core is not entered (see `context`'s "Values that
//! leave their core").
//!
//! On its core's own thread (after `block_on` returned, while a panic unwinds out of it)
//! the thread's home core is entered for the drop ([`EnterHome`]) and the op goes through
//! the same transition as on the core: its data waits in an ignored slot for the final CQE,
//! its cancel is submitted, and the ring gets a turn. Once the core has ended, every op it
//! had was reaped: the slots whose futures outlived it were stashed here on its thread
//! ([`stash`]), and the future's drop finishes them (closing an fd a completed accept or
//! open produced, handing queued multishot CQEs to the op's late handler) and frees the
//! data. A core still live on another thread (a `Send` op moved away mid-flight) cannot be
//! reached: its data is leaked, never freed under the kernel; so is a core's that ended with
//! ops the kernel never gave back.

use std::any::Any;
use std::cell::RefCell;

use super::late::LateCqe;
use super::lifecycle::{Lifecycle, Produced, Produces};
use super::{close_raw, Cqe};
use crate::context::{self, CoreId, CoreLife};
use crate::driver::{with_driver_freeing, EnterHome};

thread_local! {
    /// The slots of ended cores whose futures still lived when the core ended, by core and
    /// key, on the core's thread.
    static LEFTOVERS: RefCell<Vec<(CoreId, usize, Lifecycle)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `slots` (taken from core `core`'s driver after its shutdown reaped every op) for
/// the futures that still own them.
pub(crate) fn stash(core: CoreId, slots: Vec<(usize, Lifecycle)>) {
    if slots.is_empty() {
        return;
    }
    LEFTOVERS.with(|l| {
        l.borrow_mut()
            .extend(slots.into_iter().map(|(key, slot)| (core, key, slot)))
    });
}

/// The stashed slot `key` of ended core `core`, if any.
fn take(core: CoreId, key: usize) -> Option<Lifecycle> {
    LEFTOVERS
        .try_with(|l| {
            let mut l = l.borrow_mut();
            let i = l.iter().position(|(c, k, _)| *c == core && *k == key)?;
            Some(l.swap_remove(i).2)
        })
        .ok()
        .flatten()
}

/// Whether core `core` ended with every op reaped; else its ops' data must be leaked. Logs
/// the leak of a live core's op (moved to another thread mid-flight).
fn ended(core: CoreId) -> bool {
    match context::core_life(core) {
        CoreLife::Ended => true,
        CoreLife::EndedLeaking => false,
        CoreLife::Live => {
            crate::trace::rt_warn!(
                "an op in flight was dropped on a thread that does not run its core; its \
                 buffers are leaked rather than freed under the kernel"
            );
            false
        }
    }
}

/// A single-shot op in flight (slot `key` of core `core`) dropped off its core.
#[cold]
pub(super) fn drop_single(key: usize, core: CoreId, data: Box<dyn Any>, produces: Produces) {
    let _home = EnterHome::new();
    if context::current_core_id() == Some(core) {
        with_driver_freeing(|d| d.drop_op(key, data, produces));
        return;
    }
    if !ended(core) {
        std::mem::forget(data);
        return;
    }
    if let Some(Lifecycle::Completed { res, .. }) = take(core, key) {
        // A direct descriptor went with the ring's table.
        if let Some(Produced::Fd(fd)) = produces.produced(res) {
            close_raw(fd);
        }
    }
    drop(data);
}

/// A single-shot op in flight detached off its core: its handler gets the CQE if the core
/// can still be reached or stashed it.
#[cold]
pub(super) fn detach(key: usize, core: CoreId, data: Box<dyn LateCqe>) {
    let _home = EnterHome::new();
    if context::current_core_id() == Some(core) {
        with_driver_freeing(|d| d.detach_op(key, data));
        return;
    }
    if !ended(core) {
        std::mem::forget(data);
        return;
    }
    if let Some(Lifecycle::Completed { res, flags }) = take(core, key) {
        let _ = data.late(Cqe::from_raw(res, flags));
    }
    drop(data);
}

/// A multishot op in flight dropped off its core: CQEs still queued in its slot go to its
/// late handler (closing the fds it produced, returning its buffers).
#[cold]
pub(super) fn drop_multi(key: usize, core: CoreId, data: Box<dyn LateCqe>) {
    let _home = EnterHome::new();
    if context::current_core_id() == Some(core) {
        with_driver_freeing(|d| d.drop_multi(key, data));
        return;
    }
    if !ended(core) {
        std::mem::forget(data);
        return;
    }
    if let Some(Lifecycle::Multi(mut m)) = take(core, key) {
        for (res, flags, bufs) in m.queue.drain() {
            // A direct descriptor it hands back went with the ring's table.
            let _ = data.late(Cqe::claimed(res, flags, bufs));
        }
    }
    drop(data);
}
