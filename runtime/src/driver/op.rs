//! The op future and its lifecycle: the safety line of the runtime.
//!
//! Every SQE in flight has a slot in the driver's slab, and its `user_data` is the slot's
//! key. A slot is, in turn (see `Lifecycle`):
//! - `Waiting`: in the kernel, holding the waker of the task that awaits it (an op is
//!   submitted from its first poll, so it always has one);
//! - `Completed`: the CQE arrived and waits for the future's next poll;
//! - `Ignored`: the future was dropped while the kernel still owned its data; the slot holds
//!   that data until the final CQE, then frees it (and closes an fd the op produced);
//! - `Multi`: a multishot op's queue of CQEs and whether the kernel will post more.
//!
//! # Invariant
//! Memory the kernel may read or write belongs to the op's data (`T`), which lives in the
//! [`Op`] until the final CQE is consumed, or in the `Ignored` slot after the future is
//! dropped. It is never freed before the kernel's final CQE for the op has been reaped.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use io_uring::{cqueue, squeue};

use crate::context;

/// One completion: the kernel's result and flags for an op.
#[derive(Debug)]
pub struct Cqe {
    /// The result: a non-negative value, or the error the kernel returned.
    pub result: io::Result<u32>,
    /// The CQE's flags (`IORING_CQE_F_*`).
    pub flags: u32,
}

impl Cqe {
    /// The one place a raw CQE result becomes a result: negative values are `-errno`.
    pub(crate) fn from_raw(res: i32, flags: u32) -> Self {
        let result = if res < 0 {
            Err(io::Error::from_raw_os_error(-res))
        } else {
            Ok(res as u32)
        };
        Cqe { result, flags }
    }

    /// Whether the kernel will post more CQEs for this op (`IORING_CQE_F_MORE`).
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer the kernel picked, if any (`IORING_CQE_F_BUFFER`).
    pub fn buffer_id(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// The data of an op: everything the kernel reads or writes, and how the CQE becomes the
/// op's output.
///
/// Implement it to add an operation (this is how `net` and `fs` build theirs), then create
/// the op with [`Op::new`].
pub trait Completable: 'static {
    /// What awaiting the op gives.
    type Output;

    /// Whether a successful result is a new file descriptor the caller will own (accept,
    /// openat, socket). If the future is dropped before it sees such a result, the driver
    /// closes the fd, so it does not leak.
    const RETURNS_FD: bool = false;

    /// Turns the op's CQE into its output, giving back the data.
    fn complete(self, cqe: Cqe) -> Self::Output;
}

/// The state of one slab slot: see the module documentation.
pub(crate) enum Lifecycle {
    Waiting(Waker),
    Completed {
        res: i32,
        flags: u32,
    },
    Ignored {
        data: Box<dyn Any>,
        returns_fd: bool,
    },
    Multi(Box<MultiSlot>),
    IgnoredMulti {
        data: Box<dyn LateCqe>,
    },
}

impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lifecycle::Waiting(_) => f.write_str("Waiting"),
            Lifecycle::Completed { res, flags } => write!(f, "Completed({res}, {flags:#x})"),
            Lifecycle::Ignored { returns_fd, .. } => write!(f, "Ignored(fd: {returns_fd})"),
            Lifecycle::Multi(m) => {
                write!(f, "Multi(queued: {}, done: {})", m.queue.len(), m.done)
            }
            Lifecycle::IgnoredMulti { .. } => f.write_str("IgnoredMulti"),
        }
    }
}

/// A multishot op's slot: boxed, so the common single-shot slot stays small.
pub(crate) struct MultiSlot {
    pub(crate) waker: Option<Waker>,
    /// Raw (result, flags) of CQEs not yet yielded.
    pub(crate) queue: VecDeque<(i32, u32)>,
    /// The kernel posted the CQE without `F_MORE`: nothing more will come.
    pub(crate) done: bool,
}

/// What the driver does with a slot after a CQE: `#[must_use]` so no caller forgets one.
#[must_use]
pub(crate) enum Transition {
    /// Keep the slot.
    Keep,
    /// Keep the slot and wake this waker.
    Wake(Waker),
    /// The op is over: remove the slot (freeing ignored data), closing `fd` if set.
    Remove { close_fd: Option<i32> },
}

impl Lifecycle {
    /// Applies a CQE to the slot.
    pub(crate) fn complete(&mut self, res: i32, flags: u32) -> Transition {
        match self {
            Lifecycle::Waiting(_) => {
                match std::mem::replace(self, Lifecycle::Completed { res, flags }) {
                    Lifecycle::Waiting(w) => Transition::Wake(w),
                    _ => unreachable!(),
                }
            }
            Lifecycle::Ignored { returns_fd, .. } => Transition::Remove {
                close_fd: (*returns_fd && res >= 0).then_some(res),
            },
            Lifecycle::Multi(m) => {
                m.done = !cqueue::more(flags);
                m.queue.push_back((res, flags));
                match m.waker.take() {
                    Some(w) => Transition::Wake(w),
                    None => Transition::Keep,
                }
            }
            Lifecycle::IgnoredMulti { data } => {
                data.late(res, flags);
                if cqueue::more(flags) {
                    Transition::Keep
                } else {
                    Transition::Remove { close_fd: None }
                }
            }
            Lifecycle::Completed { res: first, .. } => {
                panic!("second CQE (res {res}, flags {flags:#x}) for a single-shot op already completed with {first}")
            }
        }
    }
}

/// What the data of a dropped multishot op does with each CQE that still arrives.
pub(crate) trait LateCqe: 'static {
    fn late(&self, res: i32, flags: u32);
}

/// Data whose late CQEs carry nothing to release.
struct Plain<T>(#[allow(dead_code)] T);

impl<T: 'static> LateCqe for Plain<T> {
    fn late(&self, _res: i32, _flags: u32) {}
}

/// Data whose late successful CQEs are new fds (multishot accept): they are closed.
struct ClosesFd<T>(#[allow(dead_code)] T);

impl<T: 'static> LateCqe for ClosesFd<T> {
    fn late(&self, res: i32, _flags: u32) {
        if res >= 0 {
            close_raw(res);
        }
    }
}

struct Releasing<T>(T);

impl<T: Release> LateCqe for Releasing<T> {
    fn late(&self, res: i32, flags: u32) {
        self.0.release(Cqe::from_raw(res, flags));
    }
}

/// Multishot op data that must give back what a CQE carries (a provided buffer, say) when
/// the CQE arrives after the op was dropped, or was queued and never yielded.
///
/// `release` runs inside the driver: it must not use the runtime (no ops, no spawns).
pub trait Release: 'static {
    /// Gives back what `cqe` carries.
    fn release(&self, cqe: Cqe);
}

/// Closes an fd the kernel produced for an op nobody awaits any more.
pub(crate) fn close_raw(fd: i32) {
    // SAFETY: the fd was created by the kernel for a dropped op; nothing else owns it.
    unsafe { libc::close(fd) };
}

enum State<T> {
    /// Built, not yet pushed: pushed on the first poll, on the polling core.
    Unsubmitted { data: T, sqe: squeue::Entry },
    /// In flight in `core`'s ring, in slot `key`.
    Submitted {
        data: T,
        key: usize,
        core: context::CoreId,
    },
    /// A multishot op's final CQE was yielded: the kernel is done with the data.
    Finished(T),
    /// The output was returned.
    Done,
}

/// How an op keeps its SQE until the first poll pushes it.
///
/// A built [`squeue::Entry`] (what [`Op::new`] takes) is stored in the op and copied into the
/// SQ ring at submission. A `Prep` that makes the SQE when asked (a unit struct for a
/// constant SQE, or one holding the few fields it needs) lets the submission write it
/// straight into the ring: the op future is smaller, and the ring slot is filled with the
/// fields themselves instead of a copy read back from the stores that just built it (a
/// failed store-to-load forward stalls the CPU ~15 cycles). [`Op::with_prep`] takes one.
pub trait Prep: 'static {
    /// Makes the op's SQE (its `user_data` is overwritten). Called once, at submission,
    /// inside the driver: it must not use the runtime (no ops, no spawns). If it panics,
    /// nothing is submitted and the panic reaches the op's poller.
    fn sqe(&mut self) -> squeue::Entry;
}

impl Prep for squeue::Entry {
    #[inline(always)]
    fn sqe(&mut self) -> squeue::Entry {
        self.clone()
    }
}

/// A future for one io_uring operation: pushes its SQE on first poll, resolves on its CQE.
///
/// Dropping it before the CQE never frees what the kernel may touch: its data moves into
/// the driver's ignored slot and an `IORING_OP_ASYNC_CANCEL` is queued.
///
/// ```
/// use runtime::driver::{Completable, Cqe, Op};
/// use io_uring::opcode;
///
/// struct MyNop;
/// impl Completable for MyNop {
///     type Output = std::io::Result<u32>;
///     fn complete(self, cqe: Cqe) -> Self::Output {
///         cqe.result
///     }
/// }
///
/// let rt = runtime::Runtime::new().unwrap();
/// let res = rt.block_on(async {
///     // SAFETY: a NOP points at no memory.
///     unsafe { Op::new(MyNop, opcode::Nop::new().build()) }.await
/// });
/// assert_eq!(res.unwrap(), 0);
/// ```
pub struct Op<T: Completable, S: Prep = squeue::Entry> {
    /// The SQE (or what makes it), until it is pushed.
    prep: S,
    /// The op's data; `None` once the output was returned.
    data: Option<T>,
    /// The slot key once submitted, else `NOT_SUBMITTED`.
    key: usize,
    core: Option<context::CoreId>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

const NOT_SUBMITTED: usize = usize::MAX;

// The op's data is never pinned in place (the kernel only sees heap memory it owns), so the
// future may move between polls.
impl<T: Completable, S: Prep> Unpin for Op<T, S> {}

impl<T: Completable> Op<T> {
    /// Creates an op from its data and its SQE. Nothing is submitted until the first poll.
    ///
    /// # Safety
    /// Every pointer in `sqe` must point into memory owned by `data` that keeps its address
    /// when `data` is moved (the heap block of a `Vec` or `Box`, a `'static`), and stays valid
    /// until `data` is dropped. The SQE's `user_data` is overwritten.
    pub unsafe fn new(data: T, sqe: squeue::Entry) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { Op::with_prep(data, sqe) }
    }
}

impl<T: Completable, S: Prep> Op<T, S> {
    /// Creates an op from its data and what makes its SQE at submission (see [`Prep`]).
    /// Nothing is submitted until the first poll.
    ///
    /// ```
    /// use runtime::driver::{Completable, Cqe, Op, Prep};
    /// use io_uring::{opcode, squeue};
    ///
    /// struct MyNop;
    /// impl Completable for MyNop {
    ///     type Output = std::io::Result<u32>;
    ///     fn complete(self, cqe: Cqe) -> Self::Output {
    ///         cqe.result
    ///     }
    /// }
    /// struct NopSqe;
    /// impl Prep for NopSqe {
    ///     fn sqe(&mut self) -> squeue::Entry {
    ///         opcode::Nop::new().build()
    ///     }
    /// }
    ///
    /// let rt = runtime::Runtime::new().unwrap();
    /// // SAFETY: a NOP points at no memory.
    /// let res = rt.block_on(unsafe { Op::with_prep(MyNop, NopSqe) });
    /// assert_eq!(res.unwrap(), 0);
    /// ```
    ///
    /// # Safety
    /// As for [`Op::new`], for every SQE `prep` makes.
    pub unsafe fn with_prep(data: T, prep: S) -> Self {
        Op {
            prep,
            data: Some(data),
            key: NOT_SUBMITTED,
            core: None,
            _not_sync: PhantomData,
        }
    }

    /// The op's data, while the op is not finished.
    pub fn data(&self) -> Option<&T> {
        self.data.as_ref()
    }

    /// Whether the op was never submitted and still owns its data: only then may its SQE
    /// be pushed (after completion the SQE still points at memory given back to the user).
    pub(crate) fn is_fresh(&self) -> bool {
        self.key == NOT_SUBMITTED && self.data.is_some()
    }

    /// Pushes the op's SQE now (with `link` added to its flags, for a chain), waiting with
    /// `waker`: the first poll, or a chain's submission. The caller has checked
    /// [`Op::is_fresh`].
    #[inline(always)]
    pub(crate) fn submit_on(
        &mut self,
        id: context::CoreId,
        driver: &mut super::Driver,
        waker: &Waker,
        link: Option<squeue::Flags>,
    ) {
        debug_assert_eq!(self.key, NOT_SUBMITTED);
        let prep = &mut self.prep;
        // The SQE is made inside the push, after the slot is taken: nothing opaque (a
        // foreign waker's clone) runs between making it and writing it into the ring, so
        // its fields go there as values.
        self.key = driver.submit_waiting(
            || match link {
                None => prep.sqe(),
                Some(flags) => prep.sqe().flags(flags),
            },
            waker,
        );
        self.core = Some(id);
    }
}

impl<T: Completable, S: Prep> Future for Op<T, S> {
    type Output = T::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
        // Hot path: one look-up of the core, one borrow of its driver per poll.
        let this = self.get_mut();
        let key = this.key;
        if key == NOT_SUBMITTED {
            if this.data.is_none() {
                polled_after_completion();
            }
            // SAFETY: the reference is used within this poll only.
            let (id, driver) = unsafe { context::current_driver() };
            // The first poll submits with the waker in place: the CQE cannot be there yet.
            this.submit_on(id, &mut driver.borrow_mut(), cx.waker(), None);
            return Poll::Pending;
        }
        // SAFETY: as above.
        let (id, driver) = unsafe { context::current_driver() };
        if this.core != Some(id) {
            polled_on_other_core();
        }
        // The poll budget is checked (and spent) only once the CQE is there.
        let (res, flags) = std::task::ready!(driver.borrow_mut().poll_op(key, cx));
        this.key = NOT_SUBMITTED;
        let Some(data) = this.data.take() else {
            polled_after_completion()
        };
        Poll::Ready(data.complete(Cqe::from_raw(res, flags)))
    }
}

#[cold]
#[inline(never)]
fn polled_after_completion() -> ! {
    panic!("op polled after it completed")
}

#[cold]
#[inline(never)]
fn polled_on_other_core() -> ! {
    panic!("an io_uring op was polled on a different core than the one it was submitted on")
}

impl<T: Completable, S: Prep> Drop for Op<T, S> {
    #[inline]
    fn drop(&mut self) {
        // Hot path (inlined): a completed or never-submitted op owns nothing in the kernel.
        if self.key != NOT_SUBMITTED {
            self.drop_in_flight();
        }
    }
}

impl<T: Completable, S: Prep> Op<T, S> {
    /// Dropped while submitted: the data goes to the driver until the final CQE.
    #[cold]
    fn drop_in_flight(&mut self) {
        let Some(data) = self.data.take() else {
            return;
        };
        let key = self.key;
        if self.core.is_some() && context::current_core_id() == self.core {
            context::with_driver_freeing(|d| d.drop_op(key, Box::new(data), T::RETURNS_FD));
        } else {
            // Dropped off its core (or after its runtime shut down without reaping it,
            // which shutdown never does): the kernel may still own the data, so it is
            // leaked rather than freed.
            std::mem::forget(data);
        }
    }
}

/// A multishot op: one SQE, many CQEs, until one arrives without `IORING_CQE_F_MORE`.
///
/// `poll_next` yields each CQE in order; the data stays with the op (or, once it is dropped,
/// with the driver) until the final CQE.
pub struct MultiOp<T: 'static> {
    state: State<T>,
    /// How the data handles CQEs after a drop.
    late: fn(T) -> Box<dyn LateCqe>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl<T: 'static> Unpin for MultiOp<T> {}

impl<T: 'static> MultiOp<T> {
    /// Creates a multishot op. Nothing is submitted until the first poll.
    ///
    /// `returns_fd` says whether successful results are new fds (multishot accept): those
    /// that arrive after the op is dropped are closed by the driver.
    ///
    /// # Safety
    /// As for [`Op::new`]; in addition `sqe` must be a multishot opcode (or one that may post
    /// several CQEs, such as `SEND_ZC`).
    pub unsafe fn new(data: T, sqe: squeue::Entry, returns_fd: bool) -> Self {
        MultiOp {
            state: State::Unsubmitted { data, sqe },
            late: if returns_fd {
                |t| Box::new(ClosesFd(t))
            } else {
                |t| Box::new(Plain(t))
            },
            _not_sync: PhantomData,
        }
    }

    /// Creates a multishot op whose data gives back, through [`Release`], what the CQEs it
    /// never yields carry (after a drop). Nothing is submitted until the first poll.
    ///
    /// # Safety
    /// As for [`MultiOp::new`].
    pub unsafe fn new_releasing(data: T, sqe: squeue::Entry) -> Self
    where
        T: Release,
    {
        MultiOp {
            state: State::Unsubmitted { data, sqe },
            late: |t| Box::new(Releasing(t)),
            _not_sync: PhantomData,
        }
    }

    /// The op's data. `None` after the final CQE was yielded.
    pub fn data(&self) -> Option<&T> {
        match &self.state {
            State::Unsubmitted { data, .. }
            | State::Submitted { data, .. }
            | State::Finished(data) => Some(data),
            State::Done => None,
        }
    }

    /// The op's data back, once the kernel is done with it: after the final CQE was
    /// yielded, or if the op was never submitted. `None` while it is in flight (dropping
    /// the op then hands the data to the driver until the final CQE).
    pub fn into_data(mut self) -> Option<T> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Finished(data) | State::Unsubmitted { data, .. } => Some(data),
            other => {
                self.state = other;
                None
            }
        }
    }

    /// Whether the op was pushed to the kernel and has not yet posted its final CQE.
    pub fn is_armed(&self) -> bool {
        matches!(self.state, State::Submitted { .. })
    }

    /// Polls for the next CQE; `None` once the final one was yielded.
    pub fn poll_next_cqe(&mut self, cx: &mut Context<'_>) -> Poll<Option<Cqe>> {
        let core = context::current_core_id()
            .unwrap_or_else(|| panic!("an io_uring op was polled outside of a runtime"));
        match &mut self.state {
            State::Unsubmitted { sqe, .. } => {
                let key = context::with_driver(|d| d.submit_multi(sqe.clone()));
                let State::Unsubmitted { data, .. } =
                    std::mem::replace(&mut self.state, State::Done)
                else {
                    unreachable!()
                };
                self.state = State::Submitted { data, key, core };
            }
            State::Submitted { core: owner, .. } => assert!(
                *owner == core,
                "an io_uring op was polled on a different core than the one it was submitted on"
            ),
            State::Finished(_) | State::Done => return Poll::Ready(None),
        }
        let State::Submitted { key, .. } = &self.state else {
            unreachable!()
        };
        let key = *key;
        // The poll budget is checked (and spent) only once a CQE is there.
        match context::with_driver(|d| d.poll_multi(key, cx)) {
            Poll::Ready(cqe) => {
                if !cqe.more() {
                    if let State::Submitted { data, .. } =
                        std::mem::replace(&mut self.state, State::Done)
                    {
                        self.state = State::Finished(data);
                    }
                }
                Poll::Ready(Some(cqe))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Stops the op: queues an `ASYNC_CANCEL`; the CQEs that were queued and the final one
    /// are still yielded by `poll_next_cqe`.
    pub fn cancel(&mut self) {
        if let State::Submitted { key, core, .. } = &self.state {
            if context::current_core_id() == Some(*core) {
                let key = *key;
                context::with_driver(|d| d.cancel(key));
            }
        }
    }
}

impl<T: 'static> Drop for MultiOp<T> {
    fn drop(&mut self) {
        if let State::Submitted { .. } = self.state {
            let State::Submitted { data, key, core } =
                std::mem::replace(&mut self.state, State::Done)
            else {
                unreachable!()
            };
            if context::current_core_id() == Some(core) {
                let data = (self.late)(data);
                context::with_driver_freeing(|d| d.drop_multi(key, data));
            } else {
                std::mem::forget(data);
            }
        }
    }
}
