//! The task cell (header, then the future or its output), its per-type vtable, and
//! [`RawTask`], one counted reference to it: poll, finish, shutdown, the output's hand-over
//! to the join handle, and scheduling by reference. The invariants are the parent module's.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures::task::AtomicWaker;

use super::state::{RefDec, RemoteWake, State};
use super::waker::raw_waker;
use super::{set_poll_ref, take_poll_ref};
use crate::context::coop;
use crate::executor::join::JoinError;
use crate::executor::{Core, Id, Shared};
// The owner pointer is loom's under `--cfg loom` (the model of an abort racing a steal).
use crate::loom::sync::atomic::AtomicPtr as OwnerPtr;

/// Where a task was spawned.
pub(crate) type Loc = &'static std::panic::Location<'static>;

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
    pub(super) state: State,
    vtable: &'static Vtable,
    /// The owning core, where wakes send the task: one strong count of an `Arc<Shared>`
    /// (`Arc::into_raw`), freed with the task. Changed only by [`RawTask::rehome`], while
    /// the task has never been polled and waits in a stealable queue (so no waker exists,
    /// and an abort does not read it: see [`RawTask::abort`]); every other read happens
    /// after that change (the thief polls it, and hands wakers out, only afterwards).
    owner: OwnerPtr<Shared>,
    /// The task's id, for its handles and its `JoinError`.
    pub(crate) id: Id,
    /// The task's key in its core's task list, or `NOT_OWNED`. Owner thread only.
    pub(crate) owned_key: AtomicUsize,
    /// The task has an entry in its core's local queue. Owner thread only (relaxed loads
    /// and stores: an atomic only so the header may be shared).
    pub(super) queued: AtomicBool,
    /// The next task in the core's local queue (see [`LocalQueue`]). Owner thread only,
    /// relaxed, like `queued`.
    pub(super) next: AtomicPtr<Header>,
    join_waker: AtomicWaker,
    // Cold fields last: the wake and poll paths touch the ones above.
    /// Where it was spawned (`#[track_caller]`), for task dumps.
    pub(crate) location: Loc,
    /// When its core last started polling it (`Core::now_ns`), 0 before the first poll.
    /// Written by the owning core only; relaxed (read by that core's dumps).
    pub(crate) last_poll: AtomicU64,
    /// When its current run-queue entry was queued (`Core::clock_ns`), with the
    /// histograms on only; 0 otherwise. Owning core only, relaxed.
    pub(crate) queued_at: AtomicU64,
    /// The task's span (`task`, with its id, core and spawn site), entered on each poll.
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl Header {
    /// The owning core (see the field).
    #[inline(always)]
    pub(crate) fn owner(&self) -> &Shared {
        // SAFETY: the header holds a strong count of its owner for as long as it lives,
        // and the pointer changes only where nothing reads it (`RawTask::rehome`).
        unsafe { &*self.owner.load(Ordering::Relaxed) }
    }
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
    pub(super) ptr: NonNull<Header>,
}

// SAFETY: off its owning thread a task is only reached through its header's atomics and
// `Arc<Shared>` (see the module invariant); polling happens on the owning thread only.
unsafe impl Send for RawTask {}

impl RawTask {
    /// Allocates a task for `future`, owned by `shared`'s core. Returns three references:
    /// for the run queue (the task starts queued), the task list, and the join handle.
    /// `local`: the run-queue reference goes to the core's local queue (spawned on the
    /// owning thread); else to its remote queue, as a remote wake would. `id` is the task's
    /// id (`Core::next_task_id` on a core's thread, else `Id::next`).
    pub(crate) fn new<F: Future + 'static>(
        future: F,
        shared: Arc<Shared>,
        local: bool,
        id: Id,
        location: Loc,
    ) -> (RawTask, RawTask, RawTask) {
        #[cfg(feature = "tracing")]
        let core_index = shared.index;
        let cell = Box::new(Cell {
            header: Header {
                state: State::new(!local),
                vtable: vtable::<F>(),
                owner: OwnerPtr::new(Arc::into_raw(shared).cast_mut()),
                id,
                location,
                last_poll: AtomicU64::new(0),
                queued_at: AtomicU64::new(0),
                #[cfg(feature = "tracing")]
                span: tracing::trace_span!(
                    target: "runtime::task",
                    "task",
                    id = %id,
                    core = core_index,
                    spawned_at = %location,
                ),
                owned_key: AtomicUsize::new(NOT_OWNED),
                queued: AtomicBool::new(local),
                next: AtomicPtr::new(std::ptr::null_mut()),
                join_waker: AtomicWaker::new(),
            },
            stage: std::cell::UnsafeCell::new(Stage::Running(future)),
        });
        let ptr = NonNull::from(Box::leak(cell)).cast::<Header>();
        #[cfg(all(test, not(loom)))]
        crate::context::count_live_tasks(1);
        (RawTask { ptr }, RawTask { ptr }, RawTask { ptr })
    }

    fn header(&self) -> &Header {
        // SAFETY: the reference we hold keeps the cell alive.
        unsafe { self.ptr.as_ref() }
    }

    /// Makes `to` the task's owning core: a task taken from another core's stealable queue
    /// (`cores::Fresh`), before the thief adopts it.
    ///
    /// Only for a task that was never polled and whose queue entry (`SCHEDULED` set since
    /// its creation) the caller holds: no waker exists and no abort reads the owner until
    /// the entry is taken (`into_local`, after this), so nothing else reads it meanwhile.
    pub(crate) fn rehome(&self, to: &Arc<Shared>) {
        let h = self.header();
        debug_assert!(
            h.state.load().is_scheduled(),
            "rehome of a task not in a queue"
        );
        let new = Arc::into_raw(to.clone()).cast_mut();
        let old = h.owner.swap(new, Ordering::AcqRel);
        // SAFETY: `old` is the strong count the header held (from `Arc::into_raw`), and
        // nothing else reads it (see above).
        drop(unsafe { Arc::from_raw(old) });
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

    /// A remote queue entry reaches the owning core's drain: `Some` (now a local entry) to
    /// push onto the local queue, or `None` when the task is already queued locally or has
    /// finished (the entry is then dropped). Owning thread only.
    pub(crate) fn into_local(self) -> Option<RawTask> {
        let h = self.header();
        // The entry leaves the remote queue: a remote wake from now on queues it again.
        let prev = h.state.unset_scheduled();
        if prev.is_complete() || h.queued.load(Ordering::Relaxed) {
            return None;
        }
        h.queued.store(true, Ordering::Relaxed);
        Some(self)
    }

    /// Another counted reference to the same task (an `AbortHandle`'s).
    pub(crate) fn clone_ref(&self) -> RawTask {
        self.header().state.ref_inc();
        RawTask { ptr: self.ptr }
    }

    pub(crate) fn set_owned_key(&self, key: usize) {
        self.header().owned_key.store(key, Ordering::Relaxed);
    }

    /// The task's id.
    pub(crate) fn id(&self) -> Id {
        self.header().id
    }

    /// Where the task was spawned, and when its core last started polling it (0: never).
    pub(crate) fn dump_info(&self) -> (Loc, u64) {
        let h = self.header();
        (h.location, h.last_poll.load(Ordering::Relaxed))
    }

    /// Notes when the task's run-queue entry was queued (histograms on).
    #[inline(always)]
    pub(crate) fn set_queued_at(&self, now_ns: u64) {
        self.header().queued_at.store(now_ns, Ordering::Relaxed);
    }

    /// When the task's run-queue entry was queued (0: not noted).
    pub(crate) fn queued_at(&self) -> u64 {
        self.header().queued_at.load(Ordering::Relaxed)
    }

    /// Notes that the task's core starts polling it at `now_ns`.
    #[inline(always)]
    pub(crate) fn set_last_poll(&self, now_ns: u64) {
        self.header().last_poll.store(now_ns, Ordering::Relaxed);
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.header().state.load().is_complete()
    }

    pub(crate) fn abort(&self) {
        let prev = self.header().state.cancel();
        // An entry still waits in a remote or stealable queue (`SCHEDULED`): whoever takes
        // it polls the task, sees `CANCELLED` (the take's read-modify-write of the state
        // comes after this one) and finishes it. Nothing to schedule, and the owner is not
        // read: a stealable task's owner may be changing (`rehome`).
        if !prev.is_complete() && !prev.is_scheduled() {
            // SAFETY: we hold a reference, so the header is alive.
            unsafe { schedule(self.ptr) };
        }
    }

    /// Registers the join waker; true once the output is ready.
    pub(crate) fn poll_join(&self, cx: &mut Context<'_>) -> bool {
        let h = self.header();
        if h.state.load().is_complete() {
            return true;
        }
        h.join_waker.register(cx.waker());
        h.state.load().is_complete()
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
        if self.header().state.unset_join_interest().is_complete() {
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
    // SAFETY: a live task (we hold the local queue entry's reference), on its owning thread.
    let cell = unsafe { cell::<F>(ptr) };
    // Hot path: no atomic read-modify-write. The entry leaves the local queue (a wake from
    // now on queues the task again), and its reference becomes the poll's.
    cell.header.queued.store(false, Ordering::Relaxed);
    let state = cell.header.state.load();
    if state.is_complete() {
        // A stale entry: the task finished meanwhile.
        // SAFETY: the entry's reference is given up.
        unsafe { drop_ref(ptr) };
        return;
    }
    // `holding`: the poll's reference is still ours (not taken over by a waker clone).
    let (out, holding) = if state.is_cancelled() {
        (Err(JoinError::cancelled(cell.header.id)), true)
    } else {
        // SAFETY: the stage is the owning thread's while the task runs.
        let stage = unsafe { &mut *cell.stage.get() };
        let Stage::Running(fut) = stage else {
            unreachable!("task polled with its future gone, state {state:?}")
        };
        // SAFETY: the future lives in the heap cell and is never moved until it is dropped.
        let fut = unsafe { Pin::new_unchecked(fut) };
        // The waker borrows the poll's reference: no count is taken unless it is cloned,
        // and the first clone takes the poll's reference over (`set_poll_ref`).
        // SAFETY: the vtable's functions uphold RawWaker's contract for this header.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr)) });
        let mut cx = Context::from_waker(&waker);
        #[cfg(feature = "tracing")]
        let _entered = cell.header.span.enter();
        coop::reset();
        set_poll_ref(ptr.as_ptr());
        let polled = catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx)));
        let holding = take_poll_ref(ptr.as_ptr());
        match polled {
            Ok(Poll::Pending) => {
                if holding {
                    // SAFETY: the poll's reference, which nobody took over; the task list's
                    // keeps the task alive.
                    unsafe { drop_ref(ptr) };
                }
                return;
            }
            Ok(Poll::Ready(v)) => (Ok(v), holding),
            Err(payload) => (Err(JoinError::panic(cell.header.id, payload)), holding),
        }
    };
    // SAFETY: on the owning thread; the task is not complete.
    unsafe { finish::<F>(ptr, out) };
    if holding {
        // SAFETY: the poll's reference; this may free the task.
        unsafe { drop_ref(ptr) };
    }
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
        (Ok(_), Err(payload)) => Err(JoinError::panic(cell.header.id, payload)),
        (out, _) => out,
    };
    // SAFETY: as above; written before COMPLETE is published.
    unsafe { *stage = Stage::Finished(out) };
    if !cell.header.state.complete().has_join_interest() {
        // Nobody will take the output: drop it here, on the owning thread.
        // SAFETY: the handle is gone, so the output is ours.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { *stage = Stage::Consumed }));
    } else {
        cell.header.join_waker.wake();
    }
    let key = cell.header.owned_key.swap(NOT_OWNED, Ordering::Relaxed);
    if key != NOT_OWNED {
        // Last: this may free the task.
        crate::executor::release_owned(key);
    }
}

unsafe fn shutdown<F: Future>(ptr: NonNull<Header>) {
    let _list_ref = RawTask { ptr };
    // SAFETY: a live task, on its owning thread.
    let cell = unsafe { cell::<F>(ptr) };
    // No poll may run it after this: mark it scheduled-and-complete only via finish.
    if !cell.header.state.load().is_complete() {
        // SAFETY: on the owning thread; not complete.
        unsafe { finish::<F>(ptr, Err(JoinError::cancelled(cell.header.id))) };
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
    #[cfg(all(test, not(loom)))]
    crate::context::count_live_tasks(-1);
    // SAFETY: the last reference is gone; the header's strong count of its owner goes too.
    drop(unsafe { Arc::from_raw(ptr.as_ref().owner.load(Ordering::Acquire)) });
    // SAFETY: the last reference is gone; the cell came from Box::leak in `RawTask::new`.
    drop(unsafe { Box::from_raw(ptr.cast::<Cell<F>>().as_ptr()) });
}

/// # Safety
/// `ptr` is a live task and the caller gives up one counted reference.
pub(super) unsafe fn drop_ref(ptr: NonNull<Header>) {
    // SAFETY: the reference keeps the header alive until the decrement.
    let header = unsafe { ptr.as_ref() };
    if header.state.ref_dec() == RefDec::Last {
        // SAFETY: that was the last reference.
        unsafe { (header.vtable.dealloc)(ptr) };
    }
}

/// Puts the task on a run queue unless it is already on one or finished (by reference: a
/// new reference is taken for the entry): the owner's local queue when called on the
/// owning thread (no lock, no syscall), else its remote queue.
///
/// # Safety
/// `ptr` is a live task (the caller holds a reference).
pub(super) unsafe fn schedule(ptr: NonNull<Header>) {
    // SAFETY: the caller's reference keeps it alive.
    let header = unsafe { ptr.as_ref() };
    let local = crate::executor::on_owner(header.owner(), |core| {
        if !needs_local_entry(header) {
            return;
        }
        if !take_poll_ref(ptr.as_ptr()) {
            header.state.ref_inc();
        }
        push_local(core, header, RawTask { ptr });
    });
    if local.is_some() {
        return;
    }
    // One read-modify-write: the flag and the entry's reference together.
    if header.state.schedule_remote_by_ref() == RemoteWake::Push {
        header.owner().push_remote(RawTask { ptr });
    }
}

/// Whether a local wake must queue the task: not queued either way, not finished. Owning
/// thread only.
#[inline(always)]
pub(super) fn needs_local_entry(header: &Header) -> bool {
    !header.queued.load(Ordering::Relaxed) && header.state.load().needs_entry()
}

/// Pushes a local queue entry (`task`, its reference). Owning thread only.
#[inline(always)]
pub(super) fn push_local(core: &Core, header: &Header, task: RawTask) {
    header.queued.store(true, Ordering::Relaxed);
    core.enqueue(task);
}
