//! Linked ops: a chain of SQEs the kernel runs one after another (`IOSQE_IO_LINK`).
//!
//! The kernel starts each op of a chain only when the one before it completed successfully;
//! when one fails (or is cancelled), the rest complete with `ECANCELED`. A chain must reach
//! the kernel in one submission, so [`Link`] pushes all its SQEs inside one borrow of the
//! driver, after making room in the SQ for the whole chain. If an op's `Prep` panics midway,
//! the SQEs already pushed are taken back out of the SQ (see `push_chain`): a half-built
//! chain would end in `IO_LINK` and tie the next SQE anyone pushes to itself.

use std::future::Future;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use io_uring::squeue::Flags;

use io_uring::squeue;

use super::{Completable, Lifecycle, Op, Prep};
use crate::context;
use crate::driver::Driver;

/// A future for a chain of linked ops of one kind; resolves to each op's output, in order.
///
/// Every op keeps its own lifecycle: dropping the chain drops each op, which parks its data
/// until its final CQE and cancels it (cancelling the head of a chain cancels the rest). To
/// link ops of different kinds, give them one data type (an enum implementing
/// [`Completable`]).
///
/// If an op's [`Prep`] panics while the chain is submitted, the panic reaches the poller and
/// nothing of the chain reaches the kernel: the ops before it count as cancelled, and the
/// chain, polled again, resolves to an `InvalidInput` error.
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// let outputs = rt.block_on(async {
///     runtime::ext::Link::new((0..10).map(|_| runtime::ext::raw::nop())).await
/// });
/// let outputs = outputs.unwrap();
/// assert_eq!(outputs.len(), 10);
/// assert!(outputs.iter().all(|r| r.is_ok()));
/// ```
pub struct Link<T: Completable, S: Prep = squeue::Entry> {
    ops: Vec<Op<T, S>>,
    outputs: Vec<T::Output>,
    flag: Flags,
    submitted: bool,
}

// The ops are `Unpin` (see `Op`), and so is everything else here.
impl<T: Completable, S: Prep> Unpin for Link<T, S> {}

impl<T: Completable, S: Prep> Link<T, S> {
    /// Chains `ops` in order with `IOSQE_IO_LINK`. Nothing is submitted until the first
    /// poll. A chain longer than the ring's SQ, or holding an op that was already polled,
    /// resolves to an `InvalidInput` error.
    pub fn new(ops: impl IntoIterator<Item = Op<T, S>>) -> Self {
        let ops: Vec<Op<T, S>> = ops.into_iter().collect();
        Link {
            outputs: Vec::with_capacity(ops.len()),
            ops,
            flag: Flags::IO_LINK,
            submitted: false,
        }
    }

    /// Links with `IOSQE_IO_HARDLINK` instead: a failing op does not cancel the rest.
    pub fn hard(mut self) -> Self {
        self.flag = Flags::IO_HARDLINK;
        self
    }

    /// The number of ops in the chain.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the chain has no ops.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<T: Completable, S: Prep> Future for Link<T, S> {
    type Output = io::Result<Vec<T::Output>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if !this.submitted {
            if !this.ops.iter().all(Op::is_fresh) {
                // Its SQE may point at a buffer already given back: never push it again.
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "an op in a chain was already polled; a chain takes fresh ops only",
                )));
            }
            let flag = this.flag;
            let ops = &mut this.ops;
            crate::driver::with_core_driver(|id, driver| {
                driver.reserve_sq(ops.len())?;
                push_chain(id, driver, ops, cx.waker(), flag);
                Ok::<(), io::Error>(())
            })?;
            this.submitted = true;
        }
        // The kernel completes a chain in order: poll from the first op not yet done.
        while this.outputs.len() < this.ops.len() {
            let op = &mut this.ops[this.outputs.len()];
            match Pin::new(op).poll(cx) {
                Poll::Ready(out) => this.outputs.push(out),
                Poll::Pending => {
                    // Nothing to do until the rest of the chain completes: let the next wait
                    // ask the kernel for all of it.
                    let left = this.ops.len() - this.outputs.len();
                    crate::driver::with_core_driver(|_, driver| driver.expect_batch(left));
                    return Poll::Pending;
                }
            }
        }
        this.ops.clear();
        Poll::Ready(Ok(std::mem::take(&mut this.outputs)))
    }
}

/// Pushes the chain's SQEs back to back, each but the last with `flag`; `reserve_sq` made
/// room for all of them.
///
/// If an op's `Prep` panics, the SQEs already pushed are taken back out of the SQ before the
/// panic goes on, so the SQ is as if the chain had never been pushed (its last SQE would
/// otherwise carry `IO_LINK` and pull the next SQE anyone pushes into the broken chain).
/// Their ops' slots are completed with `ECANCELED`, as the kernel completes the rest of a
/// chain that failed, and are freed when the ops are dropped; the op whose `Prep` panicked
/// has already given its slot back.
fn push_chain<T: Completable, S: Prep>(
    id: context::CoreId,
    driver: &mut Driver,
    ops: &mut [Op<T, S>],
    waker: &Waker,
    flag: Flags,
) {
    let mark = driver.sq.tail();
    let last = ops.len().saturating_sub(1);
    let pushed = catch_unwind(AssertUnwindSafe(|| {
        for (i, op) in ops.iter_mut().enumerate() {
            op.submit_on(id, driver, waker, (i < last).then_some(flag));
        }
    }));
    let Err(panic) = pushed else {
        return;
    };
    // SAFETY: nothing entered the kernel since `mark`: the SQ had room for the whole chain,
    // so no push submitted to make room, and only the driver (borrowed here by us alone)
    // calls io_uring_enter.
    let keys = unsafe { driver.sq.take_back(mark) };
    for key in keys {
        driver.counters.sqes -= 1;
        driver.ops[key as usize] = Lifecycle::Completed {
            res: -libc::ECANCELED,
            flags: 0,
        };
    }
    resume_unwind(panic)
}
