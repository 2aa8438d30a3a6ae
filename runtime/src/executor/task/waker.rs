//! The task waker: its vtable, and the wake that the loop hands the driver's reap (a vtable
//! compare, then inlined code when the waker is one of ours).

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::raw::{drop_ref, needs_local_entry, push_local, schedule, Header, RawTask};
use super::state::RemoteWake;
use super::take_poll_ref;

/// Wakes by value, calling this module's wake directly (inlined, no call through the
/// vtable) when `w` is one of our task wakers; the reap loop's hot path.
#[inline(always)]
pub(crate) fn wake(w: Waker) {
    if std::ptr::eq(w.vtable(), &WAKER_VTABLE) {
        let w = ManuallyDrop::new(w);
        // SAFETY: a waker with our vtable was made by `raw_waker`/`waker_clone`: its data is
        // a task header and it holds one reference, which `waker_wake` takes over (the
        // waker itself is not dropped).
        unsafe { waker_wake(w.data()) };
    } else {
        w.wake();
    }
}

static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

pub(super) fn raw_waker(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr() as *const (), &WAKER_VTABLE)
}

#[inline(always)]
unsafe fn waker_clone(p: *const ()) -> RawWaker {
    // SAFETY: a waker holds (or borrows) a reference, so the header is alive.
    let header = unsafe { &*(p as *const Header) };
    // Hot path: the task's own waker cloned during its poll takes the poll's reference.
    if !take_poll_ref(p as *const Header) {
        header.state.ref_inc();
    }
    RawWaker::new(p, &WAKER_VTABLE)
}

#[inline(always)]
unsafe fn waker_wake(p: *const ()) {
    // SAFETY: `p` came from `raw_waker`, so it is a non-null header.
    let ptr = unsafe { NonNull::new_unchecked(p as *mut Header) };
    // SAFETY: as above; the waker's reference is alive until it is handed on or dropped.
    let header = unsafe { ptr.as_ref() };
    // Hot path (a CQE waking its task on the same core): the waker's reference becomes the
    // local queue entry's; no atomic read-modify-write.
    let local = crate::executor::on_owner(header.owner(), |core| {
        if needs_local_entry(header) {
            push_local(core, header, RawTask { ptr });
            true
        } else {
            false
        }
    });
    match local {
        Some(true) => return,
        Some(false) => {}
        None => {
            if header.state.schedule_remote_by_val() == RemoteWake::Push {
                header.owner().push_remote(RawTask { ptr });
                return;
            }
        }
    }
    // Already queued (or finished): the waker's reference is given up.
    // SAFETY: that reference is ours.
    unsafe { drop_ref(ptr) };
}

unsafe fn waker_wake_by_ref(p: *const ()) {
    // SAFETY: `p` came from `raw_waker`, so it is a non-null header.
    let ptr = unsafe { NonNull::new_unchecked(p as *mut Header) };
    // SAFETY: the waker's reference keeps the task alive.
    unsafe { schedule(ptr) };
}

unsafe fn waker_drop(p: *const ()) {
    // SAFETY: `p` came from `raw_waker`; the waker's reference is given up.
    unsafe { drop_ref(NonNull::new_unchecked(p as *mut Header)) };
}
