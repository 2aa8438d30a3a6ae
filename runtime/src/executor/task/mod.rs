//! Tasks: one allocation holding a header, the future, then its output.
//!
//! - `state`: the state word (flags and reference count) and its named transitions;
//! - `raw`: the task cell, its vtable, `RawTask` (one counted reference), poll, finish,
//!   and scheduling by reference;
//! - `waker`: the waker vtable, and the inlined wake and clone the reap and submit paths use;
//! - `queue`: the core's local run queue, threaded through the task headers.
//!
//! # Invariant
//! - One atomic word holds the state flags (low four bits) and the reference count (the
//!   rest), changed only through `state`'s transitions. References are every [`RawTask`] (run-queue entries, the
//!   owner's task list, the join handle, the poll's own) and every waker. The cell is freed
//!   when the count reaches zero, on whichever thread.
//! - While a task is not complete, its core's task list holds a reference.
//! - A task is queued in one of two ways, and each way dedups its own wakes:
//!   - **local** (a wake on the owning core's thread, inside its loop): `queued` is set
//!     while the task has an entry in the core's local queue. It is only touched on that
//!     thread, so it costs no atomic operation; a local wake that finds `queued`,
//!     `SCHEDULED` or `COMPLETE` set does nothing.
//!   - **remote** (any other thread): `SCHEDULED` is set (`fetch_or`) while an entry waits
//!     in the core's remote queue. The core's drain clears it (`fetch_and`) as it moves the
//!     entry to the local queue, or drops the entry when `queued` is already set.
//!
//!   Either way, a wake after a poll began is followed by another poll: `queued` is cleared
//!   as the poll starts, before the future looks at anything, and a set `SCHEDULED` means a
//!   drain (and then a poll) is still to come.
//! - The poll holds one reference (the local queue entry's) for its duration, published in
//!   the thread's context (`context::set_poll_ref`): the first clone of the task's own waker during the poll, or a wake by
//!   reference that needs a new queue entry, takes it over instead of incrementing the
//!   count. So a task that awaits one op per poll (clone, wake, poll) does no atomic
//!   read-modify-write at all.
//! - The stage (future or output) is touched by the owning core's thread, except the output
//!   after `COMPLETE`, which belongs to the join handle (see `join.rs`). The future is
//!   dropped on the owning thread (when the task finishes, is aborted, or the runtime shuts
//!   down) while the owner's task list still holds a reference, so the last reference,
//!   wherever it is dropped, only ever frees an empty stage.

#[cfg(all(test, loom))]
mod loom_steal;
mod queue;
mod raw;
mod state;
#[cfg(all(test, not(loom)))]
mod tests;
mod waker;

pub(crate) use queue::LocalQueue;
pub(crate) use raw::{Header, Loc, RawTask, NOT_OWNED};
pub(crate) use waker::wake;

use crate::context;

/// Publishes `ptr` as the task this thread polls, its poll reference unclaimed (null when
/// the poll is over); the pointer lives in the thread's context.
#[inline(always)]
fn set_poll_ref(ptr: *const Header) {
    context::set_poll_ref(ptr.cast());
}

/// Takes over the poll's reference if `ptr` is the task this thread is polling and its
/// reference is unclaimed.
#[inline(always)]
fn take_poll_ref(ptr: *const Header) -> bool {
    context::take_poll_ref(ptr.cast())
}
