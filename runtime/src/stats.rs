//! Per-core counters: what the loop did, so batching is visible.

use std::ops::Sub;

/// A snapshot of one core's counters since it started.
///
/// Subtract two snapshots for the figures of the span between them:
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// let before = rt.stats();
/// rt.block_on(async {
///     for _ in 0..10 {
///         runtime::ext::raw::nop().await.unwrap();
///     }
/// });
/// let d = rt.stats() - before;
/// assert!(d.sqes_submitted >= 10 && d.cqes_reaped >= 10);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// SQEs pushed to the ring (ops, cancels, wake reads).
    pub sqes_submitted: u64,
    /// `io_uring_enter` system calls.
    pub enters: u64,
    /// CQEs reaped.
    pub cqes_reaped: u64,
    /// Task polls.
    pub tasks_polled: u64,
    /// Wakes that came from other threads.
    pub remote_wakes: u64,
    /// Tasks on this core that have not finished yet (spawned, not completed or aborted):
    /// a gauge, not a counter. A difference of two snapshots keeps the later one's value.
    pub tasks_alive: u64,
    /// Never-polled `Send` tasks this core took from other cores' queues to run
    /// ([`Placement::Local`](crate::Placement::Local)).
    pub tasks_stolen: u64,
}

impl Sub for Stats {
    type Output = Stats;

    fn sub(self, rhs: Stats) -> Stats {
        Stats {
            sqes_submitted: self.sqes_submitted - rhs.sqes_submitted,
            enters: self.enters - rhs.enters,
            cqes_reaped: self.cqes_reaped - rhs.cqes_reaped,
            tasks_polled: self.tasks_polled - rhs.tasks_polled,
            remote_wakes: self.remote_wakes - rhs.remote_wakes,
            tasks_alive: self.tasks_alive,
            tasks_stolen: self.tasks_stolen - rhs.tasks_stolen,
        }
    }
}
