//! The op slots' states and every transition between them: what the driver does when an
//! op is submitted, polled, dropped, and when its CQE arrives.
//!
//! A slot is, in turn:
//! - `Waiting`: in the kernel, holding the waker of the task that awaits it (an op is
//!   submitted from its first poll, so it always has one);
//! - `Completed`: the CQE arrived and waits for the future's next poll;
//! - `Ignored`: the future was dropped while the kernel still owned its data; the slot holds
//!   that data until the final CQE, then frees it (and closes an fd or a direct descriptor
//!   the op produced);
//! - `Multi`: a multishot op's queue of CQEs and whether the kernel will post more;
//! - `IgnoredMulti`: a dropped multishot op's data, until its final CQE;
//! - `Detached`: a single-shot op left to run to its end ([`Op::detach`]): its data and the
//!   handler its CQE is given to.
//!
//! [`Op::detach`]: crate::ext::Op::detach
//!
//! | from | event | to |
//! |---|---|---|
//! | (none) | `submit_waiting` (first poll) | `Waiting` |
//! | `Waiting` | CQE (`complete_op`, in place) | `Completed` (task woken) |
//! | `Waiting` | `drop_op` | `Ignored` (+ `ASYNC_CANCEL`) |
//! | `Completed` | `poll_op` | freed (result returned) |
//! | `Completed` | `drop_op` | freed (data to the dead list; a produced fd closed) |
//! | `Ignored` | final CQE | freed (data to the dead list; a produced fd closed) |
//! | (none) | `submit_multi` | `Multi` |
//! | `Multi` | CQE | `Multi` (queued, waker woken); `done` without `F_MORE` |
//! | `Multi` | CQE filling its backlog | `Multi` (queued, woken, `ASYNC_CANCEL` queued once) |
//! | `Multi` | `poll_multi` of the final CQE | freed |
//! | `Multi` | `drop_multi` | `IgnoredMulti` (+ `ASYNC_CANCEL`), or freed if done |
//! | `IgnoredMulti` | CQE | its late handler; freed on the final one |
//! | `Waiting` | `detach_op` | `Detached` (no cancel) |
//! | `Completed` | `detach_op` | freed (the handler given the CQE; data to the dead list) |
//! | `Detached` | CQE | freed (the handler given the CQE; data to the dead list) |
//!
//! "A produced fd closed": a raw fd with `close(2)` at once; a direct descriptor (an index
//! in the ring's fixed-file table) with an `IORING_OP_CLOSE` the driver queues after the
//! reap pass ([`AfterReap`]), its CQE ignored.
//!
//! Data the driver frees goes to its dead list and is dropped by the caller after the
//! driver's borrow ends (see the parent module).

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};

use io_uring::{cqueue, squeue};

use super::late::LateCqe;
use super::queue::CqeQueue;
use super::{close_raw, Cqe};
use crate::driver::bufring::{BufRing, Claim};
use crate::driver::slots::Slots;
use crate::driver::Driver;

/// The state of one slab slot: see the module documentation.
pub(crate) enum Lifecycle {
    Waiting(Waker),
    Completed {
        res: i32,
        flags: u32,
    },
    Ignored {
        data: Box<dyn Any>,
        produces: Produces,
    },
    Multi(Box<MultiSlot>),
    IgnoredMulti {
        data: Box<dyn LateCqe>,
    },
    Detached {
        data: Box<dyn LateCqe>,
    },
}

impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lifecycle::Waiting(_) => f.write_str("Waiting"),
            Lifecycle::Completed { res, flags } => write!(f, "Completed({res}, {flags:#x})"),
            Lifecycle::Ignored { produces, .. } => write!(f, "Ignored({produces:?})"),
            Lifecycle::Multi(m) => {
                write!(f, "Multi(queued: {}, done: {})", m.queue.len(), m.done)
            }
            Lifecycle::IgnoredMulti { .. } => f.write_str("IgnoredMulti"),
            Lifecycle::Detached { .. } => f.write_str("Detached"),
        }
    }
}

/// What a successful result of an op is, for the driver to close when nobody takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Produces {
    /// Nothing to close (a count, a flag word).
    Nothing,
    /// A new fd (`Completable::RETURNS_FD`).
    Fd,
    /// A new direct descriptor, an index in the ring's fixed-file table
    /// (`Completable::RETURNS_FIXED`).
    Fixed,
}

impl Produces {
    /// The kind of `T`'s successful results.
    pub(crate) const fn of<T: super::Completable>() -> Produces {
        if T::RETURNS_FIXED {
            Produces::Fixed
        } else if T::RETURNS_FD {
            Produces::Fd
        } else {
            Produces::Nothing
        }
    }

    /// What a CQE's result `res` holds that must be closed, if anything.
    pub(super) fn produced(self, res: i32) -> Option<Produced> {
        match self {
            _ if res < 0 => None,
            Produces::Nothing => None,
            Produces::Fd => Some(Produced::Fd(res)),
            Produces::Fixed => Some(Produced::Fixed(res as u32)),
        }
    }
}

/// A file a dropped op produced, which the driver closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Produced {
    /// A raw fd: `close(2)`.
    Fd(i32),
    /// A direct descriptor: an `IORING_OP_CLOSE` on its index, queued after the reap pass.
    Fixed(u32),
}

/// What a reap pass leaves the driver to do once the CQ is drained (it cannot push SQEs
/// while it walks the CQ).
#[derive(Debug, Default)]
pub(crate) struct AfterReap {
    /// Multishot ops whose backlog filled: cancelled.
    pub(crate) throttled: Vec<usize>,
    /// Direct descriptors produced for ops nobody awaits any more: closed through the ring.
    pub(crate) fixed_closes: Vec<u32>,
}

/// A multishot op's slot: boxed, so the common single-shot slot stays small.
pub(crate) struct MultiSlot {
    pub(crate) waker: Option<Waker>,
    /// Raw (result, flags) of CQEs not yet yielded, with the provided buffers each filled.
    pub(crate) queue: CqeQueue,
    /// The buffer ring the op picks from, if it named it: each CQE's buffers are taken out
    /// of the ring as it is reaped (see [`BufRing::take_each`]).
    pub(crate) ring: Option<BufRing>,
    /// The kernel posted the CQE without `F_MORE`: nothing more will come.
    pub(crate) done: bool,
    /// Queued CQEs at which the driver cancels the op (0: no limit), so that a reader who
    /// stops reading holds a bounded number of completions (and of provided buffers).
    pub(crate) backlog: u16,
    /// The backlog cancel was queued.
    pub(crate) throttled: bool,
}

/// What the driver does with a slot after a CQE: `#[must_use]` so no caller forgets one.
#[must_use]
pub(crate) enum Transition {
    /// Keep the slot.
    Keep,
    /// Keep the slot and wake this waker.
    Wake(Waker),
    /// Keep the slot, wake the waker if any, and cancel the op: its backlog is full.
    Throttle(Option<Waker>),
    /// The op is over: remove the slot (freeing ignored data), closing what it produced.
    Remove { close: Option<Produced> },
}

impl Lifecycle {
    /// Whether the kernel still owns the op (its final CQE has not been reaped): the one
    /// in-flight check, for shutdown's cancels and its progress count.
    pub(crate) fn in_flight(&self) -> bool {
        match self {
            Lifecycle::Completed { .. } => false,
            Lifecycle::Multi(m) => !m.done,
            Lifecycle::Waiting(_)
            | Lifecycle::Ignored { .. }
            | Lifecycle::IgnoredMulti { .. }
            | Lifecycle::Detached { .. } => true,
        }
    }

    /// Applies a CQE to a slot not waiting for it (the reap's fast path, `complete_op`,
    /// handles `Waiting` in place). A dropped multishot op's late CQE that carries a direct
    /// descriptor adds it to `fixed_closes`.
    pub(crate) fn complete(
        &mut self,
        res: i32,
        flags: u32,
        fixed_closes: &mut Vec<u32>,
    ) -> Transition {
        match self {
            Lifecycle::Ignored { produces, .. } => Transition::Remove {
                close: produces.produced(res),
            },
            Lifecycle::Multi(m) => {
                m.done = !cqueue::more(flags);
                let bufs = match &m.ring {
                    Some(ring) => ring.claim(res, flags),
                    None => Claim::Unclaimed,
                };
                m.queue.push_back((res, flags, bufs));
                if m.backlog != 0
                    && !m.done
                    && !m.throttled
                    && m.queue.len() >= usize::from(m.backlog)
                {
                    m.throttled = true;
                    return Transition::Throttle(m.waker.take());
                }
                match m.waker.take() {
                    Some(w) => Transition::Wake(w),
                    None => Transition::Keep,
                }
            }
            Lifecycle::IgnoredMulti { data } => {
                // Reaped in order: a late CQE's buffers are claimed (and returned) now.
                if let Some(index) = data.late(Cqe::from_raw(res, flags)) {
                    fixed_closes.push(index);
                }
                if cqueue::more(flags) {
                    Transition::Keep
                } else {
                    Transition::Remove { close: None }
                }
            }
            Lifecycle::Detached { data } => {
                // The handler only records the result and wakes; the data is freed once the
                // driver's borrow ends (the dead list).
                let _ = data.late(Cqe::from_raw(res, flags));
                Transition::Remove { close: None }
            }
            Lifecycle::Completed { res: first, .. } => {
                panic!("second CQE (res {res}, flags {flags:#x}) for a single-shot op already completed with {first}")
            }
            // `complete_op` moves a waiting slot to `Completed` in place before calling this.
            Lifecycle::Waiting(_) => unreachable!("a waiting slot reached Lifecycle::complete"),
        }
    }
}

impl Driver {
    /// Takes a slot for a single-shot op, already waiting with `waker`, and pushes the SQE
    /// `make` makes.
    #[inline(always)]
    pub(crate) fn submit_waiting(
        &mut self,
        make: impl FnOnce() -> squeue::Entry,
        waker: &Waker,
    ) -> usize {
        // Hot path: the slot is written in place, then the SQE is made and written straight
        // into the ring with its `user_data` (see sq.rs).
        let key = self.ops.insert_with(|| Lifecycle::Waiting(waker.clone()));
        self.counters.sqes += 1;
        if self.sq.is_full() {
            self.make_room();
        }
        // `make` is an op's `Prep`: if it panics, no SQE is pushed, so its slot must go too
        // (no CQE would ever free it). The compiler drops the catch where `make` cannot
        // panic (a constant SQE, a copied one).
        let sqe = match catch_unwind(AssertUnwindSafe(make)) {
            Ok(sqe) => sqe.user_data(key as u64),
            Err(panic) => {
                self.counters.sqes -= 1;
                drop(self.ops.remove(key));
                resume_unwind(panic)
            }
        };
        crate::trace::rt_trace_op!("submit", key);
        // SAFETY: not full (just checked, or room made); the SQE points only into memory
        // its op owns until the final CQE (the contract of `Op::new`).
        unsafe { self.sq.push(sqe) };
        key
    }

    /// Takes a slot for a multishot op and pushes its SQE.
    pub(crate) fn submit_multi(
        &mut self,
        sqe: squeue::Entry,
        backlog: u16,
        ring: Option<BufRing>,
    ) -> usize {
        let key = self.ops.insert(Lifecycle::Multi(Box::new(MultiSlot {
            waker: None,
            queue: Default::default(),
            ring,
            done: false,
            backlog,
            throttled: false,
        })));
        crate::trace::rt_trace_op!("submit multishot", key);
        self.push(sqe.user_data(key as u64));
        key
    }

    /// Polls a single-shot op's slot: its CQE's raw result and flags (spending a unit of the
    /// task's poll budget), or `Pending` with the waker stored (or, out of budget, with the
    /// task woken to yield). Raw, so the result comes back in registers.
    #[inline(always)]
    pub(crate) fn poll_op(&mut self, key: usize, cx: &mut Context<'_>) -> Poll<(i32, u32)> {
        let slot = &mut self.ops[key];
        match slot {
            Lifecycle::Waiting(w) => {
                if !w.will_wake(cx.waker()) {
                    *w = cx.waker().clone();
                }
                Poll::Pending
            }
            Lifecycle::Completed { res, flags } => {
                if !crate::context::coop::try_spend(cx) {
                    // Out of budget: the task was woken and yields; the CQE stays here.
                    return Poll::Pending;
                }
                let raw = (*res, *flags);
                // Hot path: a `Completed` slot owns nothing, so it is freed without being
                // read out or dropped.
                self.ops.forget(key);
                Poll::Ready(raw)
            }
            other => panic!("single-shot op polled in state {other:?}"),
        }
    }

    /// Polls a multishot op's slot: its next CQE (spending a unit of the poll budget), or
    /// `Pending` with the waker stored (or, out of budget, with the task woken to yield). The
    /// slot is freed when its final CQE is taken.
    pub(crate) fn poll_multi(&mut self, key: usize, cx: &mut Context<'_>) -> Poll<Cqe> {
        let Lifecycle::Multi(m) = &mut self.ops[key] else {
            panic!("multishot op polled in state {:?}", self.ops[key])
        };
        let MultiSlot { waker, queue, .. } = &mut **m;
        if !queue.is_empty() && !crate::context::coop::try_spend(cx) {
            // Out of budget: the task was woken and yields; the CQEs stay queued.
            return Poll::Pending;
        }
        match queue.pop_front() {
            Some((res, flags, bufs)) => {
                let cqe = Cqe::claimed(res, flags, bufs);
                if !cqe.more() {
                    self.ops.remove(key);
                }
                Poll::Ready(cqe)
            }
            None => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }

    /// The future of a single-shot op was dropped: park its data until the final CQE.
    pub(crate) fn drop_op(&mut self, key: usize, data: Box<dyn std::any::Any>, produces: Produces) {
        match &self.ops[key] {
            Lifecycle::Waiting(_) => {
                self.ops[key] = Lifecycle::Ignored { data, produces };
                self.cancel(key);
            }
            Lifecycle::Completed { .. } => {
                // Completed, never collected: the kernel is done with the data.
                if let Lifecycle::Completed { res, .. } = self.ops.remove(key) {
                    match produces.produced(res) {
                        Some(Produced::Fd(fd)) => close_raw(fd),
                        Some(Produced::Fixed(index)) => self.close_fixed(index),
                        None => {}
                    }
                }
                self.dead.push(data);
            }
            other => panic!("single-shot op dropped in state {other:?}"),
        }
    }

    /// A single-shot op is left to run to its end ([`Op::detach`]): `data` (its data and
    /// the handler of its CQE) waits in the slot for the CQE, or, if it is already here,
    /// is given it now. Nothing is cancelled.
    ///
    /// [`Op::detach`]: crate::ext::Op::detach
    pub(crate) fn detach_op(&mut self, key: usize, data: Box<dyn LateCqe>) {
        match &self.ops[key] {
            Lifecycle::Waiting(_) => self.ops[key] = Lifecycle::Detached { data },
            Lifecycle::Completed { .. } => {
                if let Lifecycle::Completed { res, flags } = self.ops.remove(key) {
                    let _ = data.late(Cqe::from_raw(res, flags));
                }
                self.dead.push(Box::new(data));
            }
            other => panic!("single-shot op detached in state {other:?}"),
        }
    }

    /// A multishot op was dropped: its queued CQEs go to `data`'s late handler (closing fds,
    /// returning buffers), and the data waits in the slot for the final CQE.
    pub(crate) fn drop_multi(&mut self, key: usize, data: Box<dyn LateCqe>) {
        let Lifecycle::Multi(m) = &mut self.ops[key] else {
            panic!("multishot op dropped in state {:?}", self.ops[key])
        };
        let mut fixed_closes = Vec::new();
        for (res, flags, bufs) in m.queue.drain() {
            fixed_closes.extend(data.late(Cqe::claimed(res, flags, bufs)));
        }
        let done = m.done;
        for index in fixed_closes {
            self.close_fixed(index);
        }
        if done {
            self.ops.remove(key);
            self.dead.push(Box::new(data));
        } else {
            self.ops[key] = Lifecycle::IgnoredMulti { data };
            self.cancel(key);
        }
    }

    /// Ops the kernel still owns (their final CQE has not been reaped).
    pub(in crate::driver) fn in_flight(&self) -> usize {
        self.ops.iter().filter(|(_, s)| s.in_flight()).count()
    }
}

/// Applies an op's CQE to its slot: wakes its waiter, or frees what a dropped op left.
/// Always inlined: each backend's reap loop gets its own copy (on io_uring, a call per CQE
/// cost about 20 instructions per NOP under callgrind).
#[inline(always)]
pub(crate) fn complete_op(
    ops: &mut Slots<Lifecycle>,
    dead: &mut Vec<Box<dyn std::any::Any>>,
    key: usize,
    res: i32,
    flags: u32,
    wake: &mut impl FnMut(Waker),
    after: &mut AfterReap,
) {
    crate::trace::rt_trace_op!("complete", key, res, flags);
    let Some(slot) = ops.get_mut(key) else {
        panic!("CQE (res {res}, flags {flags:#x}) for op slot {key}, which is empty")
    };
    // Hot path: a single-shot op's task waits; the waker is moved out and the slot rewritten
    // in place (no `Transition` built and matched, no stack copy of the slot).
    if let Lifecycle::Waiting(waker) = slot {
        // SAFETY: the waker is read out of the slot, which is overwritten at once without
        // being dropped, so the waker is owned exactly once (by `w`).
        let w = unsafe { std::ptr::read(waker) };
        // SAFETY: `slot` is a valid, exclusive reference; its old value (the waker, now
        // moved out) must not be dropped, which `ptr::write` guarantees.
        unsafe { std::ptr::write(slot, Lifecycle::Completed { res, flags }) };
        // Wakers only queue their task (ours) or set a flag; none re-enters the driver,
        // so they are woken in the same pass.
        wake(w);
        return;
    }
    match slot.complete(res, flags, &mut after.fixed_closes) {
        Transition::Keep => {}
        Transition::Wake(w) => w.wake(),
        Transition::Throttle(w) => {
            after.throttled.push(key);
            if let Some(w) = w {
                w.wake();
            }
        }
        Transition::Remove { close } => {
            match close {
                Some(Produced::Fd(fd)) => close_raw(fd),
                Some(Produced::Fixed(index)) => after.fixed_closes.push(index),
                None => {}
            }
            match ops.remove(key) {
                Lifecycle::Ignored { data, .. } => dead.push(data),
                Lifecycle::IgnoredMulti { data } | Lifecycle::Detached { data } => {
                    dead.push(Box::new(data))
                }
                other => drop(other),
            }
        }
    }
}
