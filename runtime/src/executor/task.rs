//! Tasks: one allocation holding a header, the future, then its output.
//!
//! # Invariant
//! - One atomic word holds the state flags (low four bits) and the reference count (the
//!   rest, in units of `REF_ONE`), so the hot transitions are one atomic operation each.
//!   References are every [`RawTask`] (run-queue entries, the owner's task list, the join
//!   handle) and every waker. The cell is freed when the count reaches zero, on whichever
//!   thread.
//! - While a task is not complete, its core's task list holds a reference: that is what
//!   keeps it alive while it is polled (the poll gives up the run-queue entry's reference
//!   as it starts, in the same operation that clears `SCHEDULED`).
//! - The stage (future or output) is touched by the owning core's thread, except the output
//!   after `COMPLETE`, which belongs to the join handle (see `join.rs`). The future is
//!   dropped on the owning thread (when the task finishes, is aborted, or the runtime shuts
//!   down) while the owner's task list still holds a reference, so the last reference,
//!   wherever it is dropped, only ever frees an empty stage.
//! - `SCHEDULED` is set while a run-queue entry for the task exists (or is being pushed);
//!   a wake while it is set does nothing, so one wake is one queue push at most.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use futures::task::AtomicWaker;

use super::join::JoinError;
use super::{coop, Shared};

const SCHEDULED: usize = 1;
const COMPLETE: usize = 2;
const CANCELLED: usize = 4;
const JOIN_INTEREST: usize = 8;
/// One reference, in the state word.
const REF_ONE: usize = 16;

/// Marks a task that is not (or no longer) in its core's task list.
pub(crate) const NOT_OWNED: usize = usize::MAX;

/// The type-erased operations on one task type.
struct Vtable {
    poll: unsafe fn(NonNull<Header>),
    shutdown: unsafe fn(NonNull<Header>),
    take_output: unsafe fn(NonNull<Header>, *mut ()),
    drop_output: unsafe fn(NonNull<Header>),
    dealloc: unsafe fn(NonNull<Header>),
}

/// The part of a task every thread may touch.
#[repr(C)]
pub(crate) struct Header {
    state: AtomicUsize,
    vtable: &'static Vtable,
    /// The owning core: where wakes send the task.
    pub(crate) shared: Arc<Shared>,
    /// The task's key in its core's task list, or `NOT_OWNED`. Owner thread only.
    pub(crate) owned_key: AtomicUsize,
    join_waker: AtomicWaker,
}

enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

#[repr(C)]
struct Cell<F: Future> {
    header: Header,
    stage: std::cell::UnsafeCell<Stage<F>>,
}

/// One counted reference to a task.
pub(crate) struct RawTask {
    ptr: NonNull<Header>,
}

// SAFETY: off its owning thread a task is only reached through its header's atomics and
// `Arc<Shared>` (see the module invariant); polling happens on the owning thread only.
unsafe impl Send for RawTask {}

impl RawTask {
    /// Allocates a task for `future`, owned by `shared`'s core. Returns three references:
    /// for the run queue (the task starts scheduled), the task list, and the join handle.
    pub(crate) fn new<F: Future + 'static>(
        future: F,
        shared: Arc<Shared>,
    ) -> (RawTask, RawTask, RawTask) {
        let cell = Box::new(Cell {
            header: Header {
                state: AtomicUsize::new(SCHEDULED | JOIN_INTEREST | (3 * REF_ONE)),
                vtable: vtable::<F>(),
                shared,
                owned_key: AtomicUsize::new(NOT_OWNED),
                join_waker: AtomicWaker::new(),
            },
            stage: std::cell::UnsafeCell::new(Stage::Running(future)),
        });
        let ptr = NonNull::from(Box::leak(cell)).cast::<Header>();
        (RawTask { ptr }, RawTask { ptr }, RawTask { ptr })
    }

    fn header(&self) -> &Header {
        // SAFETY: the reference we hold keeps the cell alive.
        unsafe { self.ptr.as_ref() }
    }

    /// Polls the task once (owning thread only), consuming this run-queue reference.
    pub(crate) fn run(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: called by the owning core's loop, the only place tasks are polled; `poll`
        // takes over this reference (it is not dropped here).
        unsafe { (this.header().vtable.poll)(this.ptr) }
    }

    /// Drops the task's future at shutdown (owning thread only).
    pub(crate) fn shutdown(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: called by the owning core while it shuts down; `shutdown` takes over this
        // reference.
        unsafe { (this.header().vtable.shutdown)(this.ptr) }
    }

    pub(crate) fn set_owned_key(&self, key: usize) {
        self.header().owned_key.store(key, Ordering::Relaxed);
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.header().state.load(Ordering::Acquire) & COMPLETE != 0
    }

    pub(crate) fn abort(&self) {
        let prev = self.header().state.fetch_or(CANCELLED, Ordering::AcqRel);
        if prev & COMPLETE == 0 {
            // SAFETY: we hold a reference, so the header is alive.
            unsafe { schedule(self.ptr) };
        }
    }

    /// Registers the join waker; true once the output is ready.
    pub(crate) fn poll_join(&self, cx: &mut Context<'_>) -> bool {
        let h = self.header();
        if h.state.load(Ordering::Acquire) & COMPLETE != 0 {
            return true;
        }
        h.join_waker.register(cx.waker());
        h.state.load(Ordering::Acquire) & COMPLETE != 0
    }

    /// Moves the output into `*dst` (an `Option<Result<T, JoinError>>`), leaving it `None`
    /// if it was taken before.
    ///
    /// # Safety
    /// `COMPLETE` was seen, this is the join handle's reference, and `dst` points to an
    /// `Option<Result<F::Output, JoinError>>` for the task's future type `F`.
    pub(crate) unsafe fn take_output(&self, dst: *mut ()) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { (self.header().vtable.take_output)(self.ptr, dst) }
    }

    /// The join handle goes away: drop the output if it is there and nobody took it.
    pub(crate) fn drop_join(&self) {
        let prev = self
            .header()
            .state
            .fetch_and(!JOIN_INTEREST, Ordering::AcqRel);
        if prev & COMPLETE != 0 {
            // SAFETY: COMPLETE was set before we cleared JOIN_INTEREST, so the output is the
            // handle's to drop (join.rs invariant).
            unsafe { (self.header().vtable.drop_output)(self.ptr) }
        }
    }
}

impl Drop for RawTask {
    fn drop(&mut self) {
        // SAFETY: this reference is counted in the state word.
        unsafe { drop_ref(self.ptr) }
    }
}

fn vtable<F: Future + 'static>() -> &'static Vtable {
    struct V<F>(std::marker::PhantomData<F>);
    impl<F: Future + 'static> V<F> {
        const VTABLE: Vtable = Vtable {
            poll: poll::<F>,
            shutdown: shutdown::<F>,
            take_output: take_output::<F>,
            drop_output: drop_output::<F>,
            dealloc: dealloc::<F>,
        };
    }
    &V::<F>::VTABLE
}

/// # Safety
/// `ptr` is a live `Cell<F>`, and the caller is on its owning thread (for the stage).
unsafe fn cell<'a, F: Future>(ptr: NonNull<Header>) -> &'a Cell<F> {
    // SAFETY: the header is the first field of a `#[repr(C)]` Cell<F>.
    unsafe { ptr.cast::<Cell<F>>().as_ref() }
}

unsafe fn poll<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: a live task (we hold the run-queue reference), on its owning thread.
    let cell = unsafe { cell::<F>(ptr) };
    // Hot path: give up the run-queue reference and clear SCHEDULED (set, since this entry
    // exists) in one operation; a wake during the poll queues the task again.
    let prev = cell
        .header
        .state
        .fetch_sub(REF_ONE | SCHEDULED, Ordering::AcqRel);
    debug_assert!(
        prev & SCHEDULED != 0,
        "queued task without SCHEDULED: {prev:#x}"
    );
    if prev & COMPLETE != 0 {
        // A stale entry: the task finished meanwhile, so nothing else keeps it alive.
        if prev & !(REF_ONE - 1) == REF_ONE {
            fence(Ordering::Acquire);
            // SAFETY: that was the last reference.
            unsafe { (cell.header.vtable.dealloc)(ptr) };
        }
        return;
    }
    // Not complete: the task list's reference keeps the cell alive through this poll.
    let out = if prev & CANCELLED != 0 {
        Err(JoinError::cancelled())
    } else {
        // SAFETY: the stage is the owning thread's while the task runs.
        let stage = unsafe { &mut *cell.stage.get() };
        let Stage::Running(fut) = stage else {
            unreachable!("task polled with its future gone, state {prev:#x}")
        };
        // SAFETY: the future lives in the heap cell and is never moved until it is dropped.
        let fut = unsafe { Pin::new_unchecked(fut) };
        // The waker borrows the task list's reference: no count is taken unless it is cloned.
        // SAFETY: the vtable's functions uphold RawWaker's contract for this header.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr)) });
        let mut cx = Context::from_waker(&waker);
        coop::reset();
        match catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx))) {
            Ok(Poll::Pending) => return,
            Ok(Poll::Ready(v)) => Ok(v),
            Err(payload) => Err(JoinError::panic(payload)),
        }
    };
    // SAFETY: on the owning thread; the task is not complete.
    unsafe { finish::<F>(ptr, out) };
}

/// Drops the future, stores the output, sets `COMPLETE`, wakes the joiner, and leaves the
/// core's task list.
///
/// # Safety
/// On the owning thread, with the task not complete.
unsafe fn finish<F: Future>(ptr: NonNull<Header>, out: Result<F::Output, JoinError>) {
    // SAFETY: forwarded.
    let cell = unsafe { cell::<F>(ptr) };
    let stage = cell.stage.get();
    // Dropping the future runs user code that may panic; the task then reports that panic.
    // SAFETY: the stage is ours until COMPLETE is set.
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { *stage = Stage::Consumed }));
    let out = match (out, dropped) {
        (Ok(_), Err(payload)) => Err(JoinError::panic(payload)),
        (out, _) => out,
    };
    // SAFETY: as above; written before COMPLETE is published.
    unsafe { *stage = Stage::Finished(out) };
    let prev = cell.header.state.fetch_or(COMPLETE, Ordering::AcqRel);
    if prev & JOIN_INTEREST == 0 {
        // Nobody will take the output: drop it here, on the owning thread.
        // SAFETY: the handle is gone, so the output is ours.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { *stage = Stage::Consumed }));
    } else {
        cell.header.join_waker.wake();
    }
    let key = cell.header.owned_key.swap(NOT_OWNED, Ordering::Relaxed);
    if key != NOT_OWNED {
        // Last: this may free the task.
        super::release_owned(key);
    }
}

unsafe fn shutdown<F: Future>(ptr: NonNull<Header>) {
    let _list_ref = RawTask { ptr };
    // SAFETY: a live task, on its owning thread.
    let cell = unsafe { cell::<F>(ptr) };
    // No poll may run it after this: mark it scheduled-and-complete only via finish.
    if cell.header.state.load(Ordering::Acquire) & COMPLETE == 0 {
        // SAFETY: on the owning thread; not complete.
        unsafe { finish::<F>(ptr, Err(JoinError::cancelled())) };
    }
}

unsafe fn take_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    // SAFETY: the caller saw COMPLETE and holds the join reference (the output is its).
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: as above.
    let stage = unsafe { &mut *cell.stage.get() };
    if let Stage::Finished(out) = std::mem::replace(stage, Stage::Consumed) {
        // SAFETY: the caller passes an Option<Result<F::Output, JoinError>>.
        unsafe { *dst.cast::<Option<Result<F::Output, JoinError>>>() = Some(out) };
    }
}

unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: the caller owns the output (join.rs invariant).
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: as above.
    unsafe { *cell.stage.get() = Stage::Consumed };
}

unsafe fn dealloc<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: the last reference is gone; the cell came from Box::leak in `RawTask::new`.
    drop(unsafe { Box::from_raw(ptr.cast::<Cell<F>>().as_ptr()) });
}

/// # Safety
/// `ptr` is a live task and the caller gives up one counted reference.
unsafe fn drop_ref(ptr: NonNull<Header>) {
    // SAFETY: the reference keeps the header alive until the decrement.
    let header = unsafe { ptr.as_ref() };
    if header.state.fetch_sub(REF_ONE, Ordering::AcqRel) & !(REF_ONE - 1) == REF_ONE {
        fence(Ordering::Acquire);
        // SAFETY: that was the last reference.
        unsafe { (header.vtable.dealloc)(ptr) };
    }
}

/// Puts the task on a run queue unless it is already on one or finished: the owner's local
/// queue when called on the owning thread (no lock, no syscall), else its remote queue.
///
/// # Safety
/// `ptr` is a live task (the caller holds a reference).
unsafe fn schedule(ptr: NonNull<Header>) {
    // SAFETY: the caller's reference keeps it alive.
    let header = unsafe { ptr.as_ref() };
    let prev = header.state.fetch_or(SCHEDULED, Ordering::AcqRel);
    if prev & (SCHEDULED | COMPLETE) != 0 {
        return;
    }
    header.state.fetch_add(REF_ONE, Ordering::Relaxed);
    super::schedule(RawTask { ptr }, &header.shared);
}

static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

fn raw_waker(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr() as *const (), &WAKER_VTABLE)
}

unsafe fn waker_clone(p: *const ()) -> RawWaker {
    // SAFETY: a waker holds (or borrows) a reference, so the header is alive.
    let header = unsafe { &*(p as *const Header) };
    header.state.fetch_add(REF_ONE, Ordering::Relaxed);
    RawWaker::new(p, &WAKER_VTABLE)
}

unsafe fn waker_wake(p: *const ()) {
    // SAFETY: `p` came from `raw_waker`, so it is a non-null header.
    let ptr = unsafe { NonNull::new_unchecked(p as *mut Header) };
    // SAFETY: as above; the waker's reference is alive until it is handed on or dropped.
    let header = unsafe { ptr.as_ref() };
    // Hot path: the waker's own reference becomes the run-queue entry's, so a wake by value
    // costs one atomic operation.
    let prev = header.state.fetch_or(SCHEDULED, Ordering::AcqRel);
    if prev & (SCHEDULED | COMPLETE) != 0 {
        // SAFETY: the waker's reference is given up.
        unsafe { drop_ref(ptr) };
        return;
    }
    super::schedule(RawTask { ptr }, &header.shared);
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
