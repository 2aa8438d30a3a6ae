//! [`CqeQueue`]: a multishot op's CQEs not yet yielded, the first one held inline.
//!
//! A multishot op between two CQEs (a connection's receive waiting for the next message,
//! a listener's accept waiting for the next connection) holds an empty queue; one that is
//! read as its CQEs come holds at most one. Keeping that one inline means the common
//! conversation (one CQE queued, then taken) never allocates, and a parked connection's
//! slot holds no heap block for a queue: a `VecDeque` keeps the capacity its first push
//! gave it (four entries) for as long as the op lives. Only a backlog of two or more CQEs
//! (a burst the reader has not caught up with, an accept storm) spills into the deque.

use std::collections::VecDeque;

use crate::driver::bufring::Claim;

/// One queued CQE: its raw result and flags, and the provided buffers it filled.
pub(crate) type Queued = (i32, u32, Claim);

/// CQEs in the order the kernel posted them: `head` first, then `rest`.
#[derive(Default)]
pub(crate) struct CqeQueue {
    /// The oldest CQE; `None` only when the queue is empty (the invariant every method
    /// keeps: `rest` is empty whenever `head` is `None`).
    head: Option<Queued>,
    /// The ones after it, if more than one is queued.
    rest: VecDeque<Queued>,
}

impl CqeQueue {
    /// How many CQEs are queued.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// Whether none is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Queues `cqe` after the others.
    pub(crate) fn push_back(&mut self, cqe: Queued) {
        if self.head.is_none() {
            self.head = Some(cqe);
        } else {
            self.rest.push_back(cqe);
        }
    }

    /// Takes the oldest CQE.
    pub(crate) fn pop_front(&mut self) -> Option<Queued> {
        let head = self.head.take()?;
        self.head = self.rest.pop_front();
        Some(head)
    }

    /// Takes every queued CQE, oldest first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Queued> + '_ {
        self.head.take().into_iter().chain(self.rest.drain(..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(q: &mut CqeQueue) -> Vec<i32> {
        q.drain().map(|(res, _, _)| res).collect()
    }

    #[test]
    fn keeps_the_kernels_order_across_the_inline_head() {
        let mut q = CqeQueue::default();
        assert!(q.is_empty() && q.pop_front().is_none());
        for res in 0..5 {
            q.push_back((res, 0, Claim::Taken));
        }
        assert_eq!(q.len(), 5);
        assert_eq!(q.pop_front().map(|c| c.0), Some(0));
        assert_eq!(q.pop_front().map(|c| c.0), Some(1));
        q.push_back((5, 0, Claim::Taken));
        assert_eq!(q.len(), 4);
        assert_eq!(results(&mut q), [2, 3, 4, 5]);
        assert_eq!((q.is_empty(), q.len()), (true, 0));
    }

    #[test]
    fn one_at_a_time_never_allocates() {
        let mut q = CqeQueue::default();
        for res in 0..100 {
            q.push_back((res, 0, Claim::Taken));
            assert_eq!(q.pop_front().map(|c| c.0), Some(res));
        }
        assert_eq!(
            q.rest.capacity(),
            0,
            "a queue read as it fills stays inline"
        );
        q.push_back((7, 0, Claim::Taken));
        assert_eq!(results(&mut q), [7]);
    }
}
