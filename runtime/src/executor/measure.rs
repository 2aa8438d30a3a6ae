//! What a core measures about itself: its clock for the metrics, the run-queue stamp and
//! the measured poll of the histograms, and the publishing of its counters for
//! `RuntimeMetrics` (`crate::metrics`).

use std::sync::atomic::Ordering;

use super::{Core, RawTask};

impl Core {
    /// The core's clock for the metrics: nanoseconds since it started, plus one (0 means
    /// "not noted").
    #[inline]
    pub(super) fn clock_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64 + 1
    }

    /// Queues `task` to run, noting when (histograms on).
    #[inline(always)]
    pub(crate) fn enqueue(&self, task: RawTask) {
        if self.histograms {
            task.set_queued_at(self.clock_ns());
        }
        self.queue.push(task);
    }

    /// Polls `task`, recording its schedule delay and poll time.
    #[cold]
    #[inline(never)]
    pub(super) fn run_measured(&self, task: RawTask) {
        let start = self.clock_ns();
        let queued = task.queued_at();
        if queued != 0 {
            self.hists.delay.record(start.saturating_sub(queued));
        }
        task.run();
        self.hists.poll.record(self.clock_ns() - start);
    }

    /// Publishes the core's counters for `RuntimeMetrics` (a few relaxed stores).
    pub(super) fn publish_metrics(&self) {
        if self.histograms {
            self.hists.publish(&self.shared.histograms);
        }
        let d = self.ctx.driver.borrow();
        let c = d.counters;
        let (buffers, out, starved) = self.ctx.recv_ring.borrow().counts();
        let (grown, starved_before) = self.ctx.recv_grown.get();
        let slot = u64::from(self.slot.borrow().is_some());
        self.shared.metrics.store(&crate::CoreMetrics {
            polls: self.tasks_polled.get(),
            spawned_tasks: self.spawned.get(),
            alive_tasks: self.owned.borrow().len() as u64 + slot + self.shared.fresh.len() as u64,
            stolen_tasks: self.stolen.get(),
            local_queue_depth: self.queue.len() as u64,
            remote_queue_depth: 0,
            parks: c.waits,
            busy_ns: crate::metrics::busy_ns(self.started_ns, c.waited_ns),
            remote_wakes: self.shared.remote_wakes.load(Ordering::Relaxed),
            sqes_submitted: c.sqes,
            enters: c.enters,
            cqes_reaped: c.cqes,
            cq_overflows: c.cq_overflows,
            sq_full_waits: c.sq_full,
            ops_in_flight: d.ops_in_flight() as u64,
            cancellations: c.cancels,
            recv_ring_enobufs: starved_before + starved,
            recv_ring_growths: grown,
            recv_ring_buffers: buffers,
            recv_ring_buffers_out: out,
            msg_ring_sent: c.msg_rings_sent,
            msg_ring_received: c.msg_rings_received,
            fixed_files_in_use: self.ctx.fixed_in_use.get(),
        });
    }
}
