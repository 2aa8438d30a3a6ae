//! [`Op`]: the future of a single-shot op.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use io_uring::squeue;

use super::{Completable, Cqe, Prep};
use crate::context;

/// A future for one io_uring operation: pushes its SQE on first poll, resolves on its CQE.
///
/// Dropping it before the CQE never frees what the kernel may touch: its data moves into
/// the driver's ignored slot and an `IORING_OP_ASYNC_CANCEL` is queued.
///
/// ```
/// use runtime::ext::{Completable, Cqe, Op};
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
    state: State,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

/// Where an [`Op`] is in its life.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Not pushed yet: the first poll (or a chain's submission) pushes it.
    Unsubmitted,
    /// In flight in `core`'s ring, in slot `key`.
    Submitted { key: usize, core: context::CoreId },
    /// The output was returned: the op owns nothing the kernel may touch.
    Done,
}

// The op's data is never pinned in place (the kernel only sees heap memory it owns), so the
// future may move between polls.
impl<T: Completable, S: Prep> Unpin for Op<T, S> {}

impl<T: Completable> Op<T> {
    /// Creates an op from its data and its SQE. Nothing is submitted until the first poll.
    ///
    /// On the epoll backend the SQE is carried out by the readiness backend when its opcode
    /// is one that backend knows; any other opcode completes with an
    /// [`Unsupported`](std::io::ErrorKind::Unsupported) error that names it (see
    /// [`runtime::ext`, "Custom ops on the epoll backend"](crate::ext#custom-ops-on-the-epoll-backend)).
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
    /// use runtime::ext::{Completable, Cqe, Op, Prep};
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
            state: State::Unsubmitted,
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
        matches!(self.state, State::Unsubmitted)
    }

    /// Pushes the op's SQE now (with `link` added to its flags, for a chain), waiting with
    /// `waker`: the first poll, or a chain's submission. The caller has checked
    /// [`Op::is_fresh`].
    #[inline(always)]
    pub(crate) fn submit_on(
        &mut self,
        id: context::CoreId,
        driver: &mut crate::driver::Driver,
        waker: &Waker,
        link: Option<squeue::Flags>,
    ) {
        debug_assert!(self.is_fresh(), "{:?}", self.state);
        let prep = &mut self.prep;
        // The SQE is made inside the push, after the slot is taken: nothing opaque (a
        // foreign waker's clone) runs between making it and writing it into the ring, so
        // its fields go there as values.
        let key = driver.submit_waiting(
            || match link {
                None => prep.sqe(),
                Some(flags) => prep.sqe().flags(flags),
            },
            waker,
        );
        self.state = State::Submitted { key, core: id };
    }
}

impl<T: Completable, S: Prep> Future for Op<T, S> {
    type Output = T::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
        // Hot path: one look-up of the core, one borrow of its driver per poll.
        let this = self.get_mut();
        let (key, core) = match this.state {
            State::Submitted { key, core } => (key, core),
            State::Unsubmitted => {
                // SAFETY: the reference is used within this poll only.
                let (id, driver) = unsafe { crate::driver::current_driver() };
                // The first poll submits with the waker in place: the CQE cannot be there.
                this.submit_on(id, &mut driver.borrow_mut(), cx.waker(), None);
                return Poll::Pending;
            }
            State::Done => polled_after_completion(),
        };
        // SAFETY: as above.
        let (id, driver) = unsafe { crate::driver::current_driver() };
        if core != id {
            polled_on_other_core();
        }
        // The poll budget is checked (and spent) only once the CQE is there.
        let (res, flags) = std::task::ready!(driver.borrow_mut().poll_op(key, cx));
        this.state = State::Done;
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
        if let State::Submitted { key, core } = self.state {
            self.drop_in_flight(key, core);
        }
    }
}

impl<T: Completable, S: Prep> Op<T, S> {
    /// Lets the op run to its end without awaiting it: submitted now if it was not yet, it
    /// is not cancelled (as a drop would), and when its CQE arrives `done` is given it
    /// (inside the driver: it must not use the runtime; it may record the result and wake
    /// a task) and the op's data is freed right after. A write handed over this way frees
    /// its buffer as soon as it is sent, with no task woken for it, and is still sent if
    /// whatever started it goes away.
    ///
    /// Outside the runtime that owns the op (or after its completion was taken), `done` is
    /// never called.
    pub fn detach(mut self, done: impl FnOnce(Cqe) + 'static) {
        if let State::Unsubmitted = self.state {
            let Some(id) = context::current_core_id() else {
                return;
            };
            let noop = std::task::Waker::noop();
            // SAFETY: the reference is used within this call only.
            let (_, driver) = unsafe { crate::driver::current_driver() };
            self.submit_on(id, &mut driver.borrow_mut(), noop, None);
        }
        let State::Submitted { key, core } = self.state else {
            return;
        };
        self.state = State::Done;
        let Some(data) = self.data.take() else {
            return;
        };
        let detached = Box::new(super::late::Detached::new(data, done));
        if context::current_core_id() != Some(core) {
            return super::orphan::detach(key, core, detached);
        }
        crate::driver::with_driver_freeing(|d| d.detach_op(key, detached));
    }

    /// Dropped while submitted: the data goes to the driver until the final CQE.
    #[cold]
    fn drop_in_flight(&mut self, key: usize, core: context::CoreId) {
        let Some(data) = self.data.take() else {
            return;
        };
        if context::current_core_id() == Some(core) {
            crate::driver::with_driver_freeing(|d| {
                d.drop_op(key, Box::new(data), super::Produces::of::<T>())
            });
        } else {
            // Off its core: after `block_on` returned, after the runtime ended, ...
            super::orphan::drop_single(key, core, Box::new(data), super::Produces::of::<T>());
        }
    }
}
