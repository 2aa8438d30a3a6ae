//! [`MultiOp`]: the stream of CQEs of a multishot op.

use std::marker::PhantomData;
use std::task::{Context, Poll};

use io_uring::squeue;

use super::late::{ClosesFd, ClosesFixed, LateCqe, Plain, Releasing};
use super::{Cqe, Release};
use crate::context;

enum State<T> {
    /// Built, not yet pushed: pushed on the first poll, on the polling core.
    /// The SQE is boxed: a multishot op is armed rarely, and lives long in whatever holds
    /// it (a socket's read state), which the 64 bytes inline would grow for its whole life.
    Unsubmitted { data: T, sqe: Box<squeue::Entry> },
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

/// A multishot op: one SQE, many CQEs, until one arrives without `IORING_CQE_F_MORE`.
///
/// `poll_next` yields each CQE in order; the data stays with the op (or, once it is dropped,
/// with the driver) until the final CQE.
pub struct MultiOp<T: 'static> {
    state: State<T>,
    /// How the data handles CQEs after a drop.
    late: fn(T) -> Box<dyn LateCqe>,
    /// Queued CQEs at which the driver cancels the op (0: no limit).
    backlog: u16,
    /// The incremental buffer ring the op picks from ([`MultiOp::with_buf_ring`]), handed
    /// to the driver at submission.
    buf_ring: Option<crate::driver::bufring::BufRing>,
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
    /// As for [`Op::new`](crate::ext::Op::new); in addition `sqe` must be a multishot
    /// opcode (or one that may post several CQEs, such as `SEND_ZC`).
    pub unsafe fn new(data: T, sqe: squeue::Entry, returns_fd: bool) -> Self {
        MultiOp {
            state: State::Unsubmitted {
                data,
                sqe: Box::new(sqe),
            },
            late: if returns_fd {
                |t| Box::new(ClosesFd(t))
            } else {
                |t| Box::new(Plain(t))
            },
            backlog: 0,
            buf_ring: None,
            _not_sync: PhantomData,
        }
    }

    /// Creates a multishot op whose successful results are new direct descriptors: indexes
    /// in the ring's fixed-file table (a multishot accept with `IORING_FILE_INDEX_ALLOC`).
    /// Those that arrive after the op is dropped, or that were queued and never yielded,
    /// are closed by the driver through the ring (`IORING_OP_CLOSE` on the index). Nothing
    /// is submitted until the first poll.
    ///
    /// # Safety
    /// As for [`MultiOp::new`].
    pub unsafe fn new_direct_fds(data: T, sqe: squeue::Entry) -> Self {
        MultiOp {
            state: State::Unsubmitted {
                data,
                sqe: Box::new(sqe),
            },
            late: |t| Box::new(ClosesFixed(t)),
            backlog: 0,
            buf_ring: None,
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
            state: State::Unsubmitted {
                data,
                sqe: Box::new(sqe),
            },
            late: |t| Box::new(Releasing(t)),
            backlog: 0,
            buf_ring: None,
            _not_sync: PhantomData,
        }
    }

    /// Bounds the CQEs that may wait unread: when `n` are queued (not yet yielded by
    /// [`poll_next_cqe`](MultiOp::poll_next_cqe)), the driver cancels the op, which then
    /// ends with `ECANCELED` after the CQEs already posted; the reader re-arms when it wants
    /// more. A multishot receive uses this so a connection nobody reads cannot take every
    /// provided buffer. `0` (the default) is no limit. Takes effect at submission.
    pub fn with_backlog(mut self, n: u16) -> Self {
        self.backlog = n;
        self
    }

    /// Names the provided-buffer ring the op's SQE picks from: the driver then takes each
    /// CQE's buffers out of the ring as it reaps it, in the order the kernel posted them,
    /// and the CQE carries them ([`BufRing::take_each`](crate::buf::BufRing::take_each)
    /// hands them out). Needed for bundles, whose buffers are found by their positions in
    /// the ring (positions that buffers returned later may take), and for an incremental
    /// ring ([`BufRing::incremental`](crate::buf::BufRing::incremental)), whose offsets
    /// ([`Cqe::buf_offset`]) only that order tells. Takes effect at submission.
    pub fn with_buf_ring(mut self, ring: &crate::driver::bufring::BufRing) -> Self {
        self.buf_ring = Some(ring.clone());
        self
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
                let ring = self.buf_ring.take();
                let key = crate::driver::with_driver(|d| {
                    d.submit_multi((**sqe).clone(), self.backlog, ring)
                });
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
        match crate::driver::with_driver(|d| d.poll_multi(key, cx)) {
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
                crate::driver::with_driver(|d| d.cancel(key));
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
            let data = (self.late)(data);
            if context::current_core_id() == Some(core) {
                crate::driver::with_driver_freeing(|d| d.drop_multi(key, data));
            } else {
                super::orphan::drop_multi(key, core, data);
            }
        }
    }
}
