//! Tasks: one allocation holding a header, the future, then its output.
//!
//! # Invariant
//! - One atomic word holds the state flags (low four bits) and the reference count (the
//!   rest, in units of `REF_ONE`). References are every [`RawTask`] (run-queue entries, the
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
//!   `POLL_REF`: the first clone of the task's own waker during the poll, or a wake by
//!   reference that needs a new queue entry, takes it over instead of incrementing the
//!   count. So a task that awaits one op per poll (clone, wake, poll) does no atomic
//!   read-modify-write at all.
//! - The stage (future or output) is touched by the owning core's thread, except the output
//!   after `COMPLETE`, which belongs to the join handle (see `join.rs`). The future is
//!   dropped on the owning thread (when the task finishes, is aborted, or the runtime shuts
//!   down) while the owner's task list still holds a reference, so the last reference,
//!   wherever it is dropped, only ever frees an empty stage.

use std::cell::Cell as StdCell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use futures::task::AtomicWaker;

use super::join::JoinError;
use super::{coop, Core, Shared};

const SCHEDULED: usize = 1;
const COMPLETE: usize = 2;
const CANCELLED: usize = 4;
const JOIN_INTEREST: usize = 8;
/// One reference, in the state word.
const REF_ONE: usize = 16;

/// Marks a task that is not (or no longer) in its core's task list.
pub(crate) const NOT_OWNED: usize = usize::MAX;

thread_local! {
    /// The task this thread is polling whose poll reference is still unclaimed (null when
    /// none): see the module invariant.
    static POLL_REF: StdCell<*const Header> = const { StdCell::new(std::ptr::null()) };
}

/// Takes over the poll's reference if `ptr` is the task this thread is polling and its
/// reference is unclaimed.
#[inline(always)]
fn take_poll_ref(ptr: *const Header) -> bool {
    POLL_REF.with(|r| {
        if r.get() == ptr {
            r.set(std::ptr::null());
            true
        } else {
            false
        }
    })
}

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
    /// The task has an entry in its core's local queue. Owner thread only (relaxed loads
    /// and stores: an atomic only so the header may be shared).
    queued: AtomicBool,
    /// The next task in the core's local queue (see [`LocalQueue`]). Owner thread only,
    /// relaxed, like `queued`.
    next: AtomicPtr<Header>,
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
    /// for the run queue (the task starts queued), the task list, and the join handle.
    /// `local`: the run-queue reference goes to the core's local queue (spawned on the
    /// owning thread); else to its remote queue, as a remote wake would.
    pub(crate) fn new<F: Future + 'static>(
        future: F,
        shared: Arc<Shared>,
        local: bool,
    ) -> (RawTask, RawTask, RawTask) {
        let queued_by = if local { 0 } else { SCHEDULED };
        let cell = Box::new(Cell {
            header: Header {
                state: AtomicUsize::new(queued_by | JOIN_INTEREST | (3 * REF_ONE)),
                vtable: vtable::<F>(),
                shared,
                owned_key: AtomicUsize::new(NOT_OWNED),
                queued: AtomicBool::new(local),
                next: AtomicPtr::new(std::ptr::null_mut()),
                join_waker: AtomicWaker::new(),
            },
            stage: std::cell::UnsafeCell::new(Stage::Running(future)),
        });
        let ptr = NonNull::from(Box::leak(cell)).cast::<Header>();
        #[cfg(test)]
        tests::LIVE.with(|n| n.set(n.get() + 1));
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

    /// A remote queue entry reaches the owning core's drain: `Some` (now a local entry) to
    /// push onto the local queue, or `None` when the task is already queued locally or has
    /// finished (the entry is then dropped). Owning thread only.
    pub(crate) fn into_local(self) -> Option<RawTask> {
        let h = self.header();
        // The entry leaves the remote queue: a remote wake from now on queues it again.
        let prev = h.state.fetch_and(!SCHEDULED, Ordering::AcqRel);
        if prev & COMPLETE != 0 || h.queued.load(Ordering::Relaxed) {
            return None;
        }
        h.queued.store(true, Ordering::Relaxed);
        Some(self)
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
    // SAFETY: a live task (we hold the local queue entry's reference), on its owning thread.
    let cell = unsafe { cell::<F>(ptr) };
    // Hot path: no atomic read-modify-write. The entry leaves the local queue (a wake from
    // now on queues the task again), and its reference becomes the poll's.
    cell.header.queued.store(false, Ordering::Relaxed);
    let state = cell.header.state.load(Ordering::Acquire);
    if state & COMPLETE != 0 {
        // A stale entry: the task finished meanwhile.
        // SAFETY: the entry's reference is given up.
        unsafe { drop_ref(ptr) };
        return;
    }
    // `holding`: the poll's reference is still ours (not taken over by a waker clone).
    let (out, holding) = if state & CANCELLED != 0 {
        (Err(JoinError::cancelled()), true)
    } else {
        // SAFETY: the stage is the owning thread's while the task runs.
        let stage = unsafe { &mut *cell.stage.get() };
        let Stage::Running(fut) = stage else {
            unreachable!("task polled with its future gone, state {state:#x}")
        };
        // SAFETY: the future lives in the heap cell and is never moved until it is dropped.
        let fut = unsafe { Pin::new_unchecked(fut) };
        // The waker borrows the poll's reference: no count is taken unless it is cloned,
        // and the first clone takes the poll's reference over (`POLL_REF`).
        // SAFETY: the vtable's functions uphold RawWaker's contract for this header.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker(ptr)) });
        let mut cx = Context::from_waker(&waker);
        coop::reset();
        POLL_REF.with(|r| r.set(ptr.as_ptr()));
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
            Err(payload) => (Err(JoinError::panic(payload)), holding),
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
    #[cfg(test)]
    tests::LIVE.with(|n| n.set(n.get() - 1));
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

/// Puts the task on a run queue unless it is already on one or finished (by reference: a
/// new reference is taken for the entry): the owner's local queue when called on the
/// owning thread (no lock, no syscall), else its remote queue.
///
/// # Safety
/// `ptr` is a live task (the caller holds a reference).
unsafe fn schedule(ptr: NonNull<Header>) {
    // SAFETY: the caller's reference keeps it alive.
    let header = unsafe { ptr.as_ref() };
    let local = super::on_owner(&header.shared, |core| {
        if !needs_local_entry(header) {
            return;
        }
        if !take_poll_ref(ptr.as_ptr()) {
            header.state.fetch_add(REF_ONE, Ordering::Relaxed);
        }
        push_local(core, header, RawTask { ptr });
    });
    if local.is_some() {
        return;
    }
    let prev = header.state.fetch_or(SCHEDULED, Ordering::AcqRel);
    if prev & (SCHEDULED | COMPLETE) != 0 {
        return;
    }
    header.state.fetch_add(REF_ONE, Ordering::Relaxed);
    header.shared.push_remote(RawTask { ptr });
}

/// Whether a local wake must queue the task: not queued either way, not finished. Owning
/// thread only.
#[inline(always)]
fn needs_local_entry(header: &Header) -> bool {
    !header.queued.load(Ordering::Relaxed)
        && header.state.load(Ordering::Acquire) & (SCHEDULED | COMPLETE) == 0
}

/// Pushes a local queue entry (`task`, its reference). Owning thread only.
#[inline(always)]
fn push_local(core: &Core, header: &Header, task: RawTask) {
    header.queued.store(true, Ordering::Relaxed);
    core.queue.push(task);
}

/// A core's local run queue: a FIFO list threaded through the queued tasks' headers
/// (`Header::next`), each entry owning one reference. Owner thread only.
///
/// A task is in it at most once: every push is of a task whose `queued` flag was just set
/// from clear (`push_local`, `RawTask::into_local`, a local spawn), and the flag is cleared
/// only by the poll that follows the entry's pop. So one link per task suffices, a push is
/// three stores and a pop two loads and two stores: no capacity to check, no index to wrap,
/// no borrow flag (nothing runs while a push or pop is half done).
pub(crate) struct LocalQueue {
    head: StdCell<*const Header>,
    tail: StdCell<*const Header>,
}

impl LocalQueue {
    pub(crate) fn new() -> Self {
        LocalQueue {
            head: StdCell::new(std::ptr::null()),
            tail: StdCell::new(std::ptr::null()),
        }
    }

    /// Appends `task`, whose `queued` flag the caller just set; the entry keeps its
    /// reference.
    #[inline(always)]
    pub(crate) fn push(&self, task: RawTask) {
        let task = ManuallyDrop::new(task);
        let p = task.ptr.as_ptr();
        // SAFETY: the entry's reference keeps the header alive.
        unsafe { &*p }
            .next
            .store(std::ptr::null_mut(), Ordering::Relaxed);
        let tail = self.tail.get();
        if tail.is_null() {
            self.head.set(p);
        } else {
            // SAFETY: the tail is an entry of this queue, alive by its reference.
            unsafe { &*tail }.next.store(p, Ordering::Relaxed);
        }
        self.tail.set(p);
    }

    /// Takes the first entry, with its reference.
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<RawTask> {
        let head = NonNull::new(self.head.get().cast_mut())?;
        // SAFETY: the head is an entry of this queue, alive by its reference.
        let next = unsafe { head.as_ref() }.next.load(Ordering::Relaxed);
        self.head.set(next);
        if next.is_null() {
            self.tail.set(std::ptr::null());
        }
        Some(RawTask { ptr: head })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.get().is_null()
    }
}

impl Drop for LocalQueue {
    fn drop(&mut self) {
        // Dropping the entries gives up their references.
        while self.pop().is_some() {}
    }
}

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

/// Clones a waker, inlining the clone of our task wakers (the op submit path).
#[inline(always)]
pub(crate) fn clone_waker(w: &Waker) -> Waker {
    if std::ptr::eq(w.vtable(), &WAKER_VTABLE) {
        // SAFETY: as for `wake`: `waker_clone` takes a new reference to the header.
        unsafe { Waker::from_raw(waker_clone(w.data())) }
    } else {
        w.clone()
    }
}

static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

fn raw_waker(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr() as *const (), &WAKER_VTABLE)
}

#[inline(always)]
unsafe fn waker_clone(p: *const ()) -> RawWaker {
    // SAFETY: a waker holds (or borrows) a reference, so the header is alive.
    let header = unsafe { &*(p as *const Header) };
    // Hot path: the task's own waker cloned during its poll takes the poll's reference.
    if !take_poll_ref(p as *const Header) {
        header.state.fetch_add(REF_ONE, Ordering::Relaxed);
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
    let local = super::on_owner(&header.shared, |core| {
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
            let prev = header.state.fetch_or(SCHEDULED, Ordering::AcqRel);
            if prev & (SCHEDULED | COMPLETE) == 0 {
                header.shared.push_remote(RawTask { ptr });
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

#[cfg(test)]
mod tests {
    //! The reference protocol: every path that takes over, hands on or gives up a reference
    //! ends with every task cell freed (`LIVE` counts the cells this thread allocated and
    //! freed; each test runs on its own thread and frees its cells there).
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    use std::task::{Poll, Waker};

    thread_local! {
        pub(super) static LIVE: Cell<isize> = const { Cell::new(0) };
    }

    fn live() -> isize {
        LIVE.with(Cell::get)
    }

    /// A future that parks `times` times, each time leaving a clone of its waker in `slot`
    /// (plus `extra` more clones that it drops at once), and counts its polls.
    fn parking(
        slot: Rc<RefCell<Option<Waker>>>,
        times: usize,
        extra: usize,
        polls: Rc<Cell<usize>>,
    ) -> impl std::future::Future<Output = usize> {
        let mut left = times;
        std::future::poll_fn(move |cx| {
            polls.set(polls.get() + 1);
            if left == 0 {
                return Poll::Ready(polls.get());
            }
            left -= 1;
            for _ in 0..extra {
                drop(cx.waker().clone());
            }
            *slot.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    /// The waker the `parking` task left in `slot`, once it has parked.
    async fn parked(slot: &RefCell<Option<Waker>>) -> Waker {
        loop {
            if let Some(w) = slot.borrow_mut().take() {
                return w;
            }
            crate::yield_now().await;
        }
    }

    #[test]
    fn the_local_queue_runs_tasks_in_wake_order_and_frees_every_entry() {
        let rt = crate::Runtime::new().unwrap();
        let before = live();
        let order = Rc::new(RefCell::new(Vec::new()));
        let o = order.clone();
        rt.block_on(async move {
            let handles: Vec<_> = (0..5)
                .map(|id| {
                    let o = o.clone();
                    crate::spawn_local(async move {
                        for _ in 0..3 {
                            o.borrow_mut().push(id);
                            crate::yield_now().await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        });
        // Each round, every task yields (a wake by reference: a push at the tail) in the
        // order it ran, so the queue hands them out in that order again.
        let want: Vec<i32> = (0..3).flat_map(|_| 0..5).collect();
        assert_eq!(*order.borrow(), want);
        // Tasks left queued when the runtime drops: their entries give up their references.
        rt.block_on(async {
            for _ in 0..4 {
                drop(crate::spawn_local(async { crate::yield_now().await }));
            }
        });
        drop(rt);
        assert_eq!(live(), before, "a task cell leaked (or was freed twice)");
    }

    #[test]
    fn a_cloned_waker_takes_the_polls_reference_and_every_cell_is_freed() {
        let rt = crate::Runtime::new().unwrap();
        let before = live();
        let slot = Rc::new(RefCell::new(None::<Waker>));
        let polls = Rc::new(Cell::new(0));
        let task_slot = slot.clone();
        let task_polls = polls.clone();
        let n = rt.block_on(async move {
            let h = crate::spawn_local(parking(task_slot, 3, 2, task_polls));
            for _ in 0..3 {
                // Let the task park, then wake it by value (its reference becomes the entry's).
                let w = parked(&slot).await;
                w.wake();
            }
            h.await.unwrap()
        });
        assert_eq!(n, 4, "three parks and the final poll");
        drop(rt);
        assert_eq!(live(), before, "a task cell leaked (or was freed twice)");
    }

    #[test]
    fn wakes_by_reference_and_duplicate_wakes_queue_once_and_free_everything() {
        let rt = crate::Runtime::new().unwrap();
        let before = live();
        let polls = Rc::new(Cell::new(0));
        let p = polls.clone();
        rt.block_on(async move {
            let h = crate::spawn_local(async move {
                for _ in 0..100 {
                    // A wake by reference during the poll needs an entry: it takes the poll's
                    // reference; the two after it find the task queued.
                    std::future::poll_fn(|cx| {
                        p.set(p.get() + 1);
                        if p.get() % 2 == 1 {
                            cx.waker().wake_by_ref();
                            cx.waker().wake_by_ref();
                            // By value, through a clone (the clone's reference goes).
                            let clone = cx.waker().clone();
                            clone.wake();
                            Poll::Pending
                        } else {
                            Poll::Ready(())
                        }
                    })
                    .await;
                }
            });
            h.await.unwrap();
        });
        assert_eq!(
            polls.get(),
            200,
            "each triple wake caused exactly one more poll"
        );
        drop(rt);
        assert_eq!(live(), before);
    }

    #[test]
    fn a_waker_kept_past_the_task_and_one_woken_from_another_thread_free_the_cell() {
        let rt = crate::Runtime::new().unwrap();
        let before = live();
        let slot = Rc::new(RefCell::new(None::<Waker>));
        let polls = Rc::new(Cell::new(0));
        let (task_slot, task_polls) = (slot.clone(), polls.clone());
        let kept = rt.block_on(async move {
            let h = crate::spawn_local(parking(task_slot, 1, 0, task_polls));
            let w = parked(&slot).await;
            let kept = w.clone();
            // Woken by value from a plain thread: the remote path (SCHEDULED, remote queue).
            std::thread::spawn(move || w.wake()).join().unwrap();
            h.await.unwrap();
            kept
        });
        // The task is done and its runtime gone; this waker still holds the cell.
        assert_eq!(live(), before + 1);
        kept.wake_by_ref();
        drop(kept);
        drop(rt);
        assert_eq!(live(), before);
    }

    #[test]
    fn aborting_a_task_that_is_queued_locally_and_remotely_frees_it() {
        let rt = crate::Runtime::new().unwrap();
        let before = live();
        let slot = Rc::new(RefCell::new(None::<Waker>));
        let polls = Rc::new(Cell::new(0));
        let (task_slot, task_polls) = (slot.clone(), polls.clone());
        let cancelled = rt.block_on(async move {
            let h = crate::spawn_local(parking(task_slot, 10, 0, task_polls));
            let w = parked(&slot).await;
            // A remote entry (SCHEDULED), a local wake that finds it and does nothing, then
            // an abort: the task ends cancelled, polled no more than once after.
            let remote = w.clone();
            std::thread::spawn(move || remote.wake()).join().unwrap();
            w.wake_by_ref();
            h.abort();
            drop(w);
            h.await.unwrap_err().is_cancelled()
        });
        assert!(cancelled);
        assert_eq!(
            polls.get(),
            1,
            "the aborted task's future was not polled again"
        );
        drop(rt);
        assert_eq!(live(), before);
    }
}
