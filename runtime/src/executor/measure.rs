//! What a core measures about itself: the loop's counters and clocks ([`LoopStats`]), the
//! run-queue stamp and the measured poll of the histograms, the live snapshot of every
//! counter ([`Core::snapshot`]), and the one maintenance step that publishes it for other
//! threads ([`Core::maintain`]; the types and the published block are `crate::stats`).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::contention::CpuClock;
use super::{Core, RawTask};
use crate::stats::{busy_ns, coarse_ns, CoreMetrics, Histograms, PUBLISH_INTERVAL};

/// The loop's counters and clocks, in one place (the ring's are the driver's `counters`).
/// Plain cells: only the core's thread touches them.
pub(crate) struct LoopStats {
    /// Task polls.
    pub(super) polls: Cell<u64>,
    /// Tasks spawned from this core's thread (ids handed out).
    pub(super) spawned: Cell<u64>,
    /// Tasks taken from other cores' stealable queues.
    pub(super) stolen: Cell<u64>,
    /// When the core started (the histograms' clock counts from it).
    started: Instant,
    /// `coarse_ns` when the core started (busy time, task dumps' poll times).
    pub(super) started_ns: u64,
    /// The latest `coarse_ns` reading of the loop (before its park, or after its wait).
    pub(super) clock: Cell<u64>,
    /// When the core last published its metrics (`coarse_ns`).
    published_at: Cell<u64>,
    /// Whether the core did anything since it last published.
    pub(super) dirty: Cell<bool>,
    /// Whether the histograms are recorded (`Builder::metrics_histograms`), fixed at
    /// creation, and the histograms themselves.
    pub(super) histograms: bool,
    hists: Histograms,
    /// The thread's time on and waiting for its CPU (read when the metrics are published).
    cpu: CpuClock,
}

impl LoopStats {
    pub(super) fn new(histograms: bool) -> LoopStats {
        let now = coarse_ns();
        LoopStats {
            polls: Cell::new(0),
            spawned: Cell::new(0),
            stolen: Cell::new(0),
            started: Instant::now(),
            started_ns: now,
            clock: Cell::new(now),
            published_at: Cell::new(0),
            dirty: Cell::new(true),
            histograms,
            hists: Histograms::default(),
            cpu: CpuClock::open(),
        }
    }

    /// Adds `n` to a counter.
    #[inline(always)]
    pub(super) fn count(cell: &Cell<u64>, n: u64) {
        cell.set(cell.get() + n);
    }
}

impl Core {
    /// The core's clock for the histograms: nanoseconds since it started, plus one (0 means
    /// "not noted").
    #[inline]
    fn clock_ns(&self) -> u64 {
        self.stats.started.elapsed().as_nanos() as u64 + 1
    }

    /// Queues `task` to run, noting when (histograms on).
    #[inline(always)]
    pub(crate) fn enqueue(&self, task: RawTask) {
        if self.stats.histograms {
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
            self.stats.hists.delay.record(start.saturating_sub(queued));
        }
        task.run();
        self.stats.hists.poll.record(self.clock_ns() - start);
    }

    /// The loop's maintenance step, once per iteration before it parks, at `now`
    /// (`coarse_ns`): publishes the metrics every [`PUBLISH_INTERVAL`] while the core works
    /// (publishing on every iteration cost 2-3% of `bench nop`); a core about to wait
    /// (`!ready`) with something unpublished gets its wait shortened to the rest of the
    /// interval, so it wakes once to publish it: at rest, readers see the core as it is.
    /// Returns the wait's timeout.
    pub(super) fn maintain(
        &self,
        ready: bool,
        now: u64,
        timeout: Option<Duration>,
    ) -> Option<Duration> {
        let s = &self.stats;
        if !s.dirty.get() {
            return timeout;
        }
        let since = now.saturating_sub(s.published_at.get());
        if since >= PUBLISH_INTERVAL.as_nanos() as u64 {
            self.publish_metrics();
            s.published_at.set(now);
            s.dirty.set(false);
            timeout
        } else if !ready {
            let left = PUBLISH_INTERVAL.saturating_sub(Duration::from_nanos(since));
            Some(timeout.map_or(left, |t| t.min(left)))
        } else {
            timeout
        }
    }

    /// Publishes the core's counters for other threads (a few relaxed stores).
    pub(super) fn publish_metrics(&self) {
        self.stats.cpu.sample(&self.shared.contention);
        if self.stats.histograms {
            self.stats.hists.publish(&self.shared.histograms);
        }
        if let Some(m) = self.snapshot() {
            self.shared.metrics.store(&m);
        }
    }

    /// Every counter of the core, now; `None` while its driver is borrowed (a read from
    /// inside the driver, which a waker run during a reap could attempt).
    pub(crate) fn snapshot(&self) -> Option<CoreMetrics> {
        let d = self.ctx.driver.try_borrow().ok()?;
        let c = d.counters;
        let (buffers, out, starved) = self.ctx.recv_ring.try_borrow().ok()?.counts();
        let (grown, starved_before) = self.ctx.recv_grown.get();
        let s = &self.stats;
        let slot = u64::from(self.slot.try_borrow().ok()?.is_some());
        let owned = self.owned.try_borrow().ok()?.len() as u64;
        let (cpu_run, cpu_wait) = s.cpu.totals();
        Some(CoreMetrics {
            polls: s.polls.get(),
            spawned_tasks: s.spawned.get(),
            alive_tasks: owned + slot + self.shared.fresh.len() as u64,
            stolen_tasks: s.stolen.get(),
            local_queue_depth: self.queue.len() as u64,
            remote_queue_depth: self.shared.remote_depth() as u64,
            parks: c.waits,
            busy_ns: busy_ns(s.started_ns, c.waited_ns),
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
            cpu_run_ns: cpu_run,
            cpu_wait_ns: cpu_wait,
        })
    }
}
