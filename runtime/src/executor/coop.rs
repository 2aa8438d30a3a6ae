//! The cooperative poll budget: a task that keeps finding ops ready yields after a while,
//! so one busy task cannot starve the others or the ring.
//!
//! Each task poll starts with [`TASK_BUDGET`] units; every op that returns `Ready` spends
//! one. At zero, ops return `Pending` after waking their task, which goes to the back of the
//! run queue.

use std::cell::Cell;
use std::task::Context;

/// Ops a task may complete in one poll before it is made to yield.
pub(crate) const TASK_BUDGET: u32 = 128;

thread_local! {
    static BUDGET: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// Gives the next poll a fresh budget.
pub(crate) fn reset() {
    BUDGET.with(|b| b.set(TASK_BUDGET));
}

/// One unit for an op whose result is there (checked only then, so a pending op costs
/// nothing): `true` when spent, else the task is woken (it goes to the back of the run
/// queue) and the op must say `Pending`. One thread-local access.
#[inline]
pub(crate) fn try_spend(cx: &mut Context<'_>) -> bool {
    let spent = BUDGET.with(|b| match b.get() {
        0 => false,
        n => {
            b.set(n - 1);
            true
        }
    });
    if !spent {
        cx.waker().wake_by_ref();
    }
    spent
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[test]
    fn budget_runs_out_then_resets() {
        reset();
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..TASK_BUDGET {
            assert!(try_spend(&mut cx), "budget ran out early");
        }
        assert!(!try_spend(&mut cx), "try_spend stops at zero");
        assert!(!try_spend(&mut cx), "and stays there");
        reset();
        assert!(try_spend(&mut cx));
    }
}
