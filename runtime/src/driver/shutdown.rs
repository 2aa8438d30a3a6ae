//! Shutting a core's ring down: every op the kernel still owns is cancelled and reaped
//! (or, if the kernel never gives it back, leaked, never freed under it), except the
//! detached ones (write-behind sends and writes: bytes already reported written), which
//! are given a while to finish first.

use std::task::Waker;
use std::time::{Duration, Instant};

use io_uring::opcode;

use super::op::Lifecycle;
use super::{Driver, CANCEL_TOKEN, WAKE_TOKEN};

/// How long shutdown waits for cancelled ops without any progress before it gives up on
/// them (their memory is then leaked, never freed under the kernel).
const SHUTDOWN_STALL: Duration = Duration::from_secs(10);

/// How long shutdown lets detached ops (write-behind: bytes a write already reported
/// written) run before it cancels them too: long enough for a file write or a send to a
/// peer that reads, bounded for a peer that never will.
pub(super) const DETACHED_LINGER: Duration = Duration::from_secs(2);

impl Driver {
    /// Starts shutdown: cancels every op still in flight and the wake read. Called with the
    /// tasks already dropped, so every op left is ignored or owned by a future outside them.
    /// Then call [`Driver::shutdown_step`] until it says done, dropping `take_dead` between.
    pub(crate) fn shutdown_start(&mut self) {
        self.shutting_down = true;
        let keys: Vec<usize> = self
            .ops
            .iter()
            .filter(|(_, s)| match s {
                Lifecycle::Completed { .. } => false,
                Lifecycle::Multi(m) => !m.done,
                // Bytes already reported written: let them go out (for a while).
                Lifecycle::Detached { .. } => false,
                _ => true,
            })
            .map(|(k, _)| k)
            .collect();
        for key in keys {
            self.cancel(key);
        }
        self.linger_until = Some(Instant::now() + DETACHED_LINGER);
        if self.wake_armed {
            let sqe = opcode::AsyncCancel::new(WAKE_TOKEN)
                .build()
                .user_data(CANCEL_TOKEN);
            self.push(sqe);
        }
        self.shutdown_progress = (self.in_flight(), self.wake_armed, Instant::now());
    }

    /// Waits a little for cancelled ops and reaps them; true once the kernel owns nothing
    /// of ours (or, after a long stall, what it still owns was leaked rather than freed).
    pub(crate) fn shutdown_step(&mut self) -> bool {
        let (last_n, last_armed, since) = self.shutdown_progress;
        if (last_n, last_armed) == (0, false) {
            return true;
        }
        self.park(true, Some(Duration::from_millis(50)));
        self.reap(Waker::wake);
        if self.linger_until.is_some_and(|t| Instant::now() >= t) {
            // Detached ops that did not finish in time (a peer that does not read): cancel.
            self.linger_until = None;
            let keys: Vec<usize> = self
                .ops
                .iter()
                .filter(|(_, s)| matches!(s, Lifecycle::Detached { .. }))
                .map(|(k, _)| k)
                .collect();
            for key in keys {
                self.cancel(key);
            }
        }
        let now = (self.in_flight(), self.wake_armed);
        if now != (last_n, last_armed) {
            self.shutdown_progress = (now.0, now.1, Instant::now());
            return now == (0, false);
        }
        if since.elapsed() > SHUTDOWN_STALL {
            // The kernel will not give these back: leak them rather than free memory it may
            // still write.
            crate::trace::rt_warn!(
                "{last_n} ops still in flight after shutdown; leaking their buffers"
            );
            std::mem::forget(std::mem::take(&mut self.ops));
            self.shutdown_leaked = true;
            std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
            self.shutdown_progress = (0, false, since);
            return true;
        }
        false
    }

    /// After [`Driver::shutdown_step`] said done: whether every op was reaped (nothing of
    /// theirs leaked under the kernel), and the slots that futures outliving the core still
    /// own (completed ops, finished multishot ones with queued CQEs), taken out for
    /// `op::stash` so those futures' drops can finish them.
    pub(crate) fn shutdown_end(&mut self) -> (bool, Vec<(usize, Lifecycle)>) {
        let keys: Vec<usize> = self.ops.iter().map(|(k, _)| k).collect();
        let slots = keys.into_iter().map(|k| (k, self.ops.remove(k))).collect();
        (!self.shutdown_leaked, slots)
    }
}
