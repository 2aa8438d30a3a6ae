//! What a core counts about itself: [`CoreMetrics`], the one set of counters (tokio's
//! `RuntimeMetrics` names where the meaning is the same, plus what only a ring can tell),
//! the block each core publishes them into for other threads, the poll-time and
//! schedule-delay histograms, and the metrics' clock. A leaf: the driver, the executor and
//! `metrics` (the reading side, `RuntimeMetrics`) import it.
//!
//! Each core keeps its counters in plain fields on its own thread (no atomics on the hot
//! paths): the loop's in `executor::measure`'s `LoopStats`, the ring's in the driver's
//! counters. One maintenance step of the loop (`Core::maintain`) publishes them into the
//! core's [`Published`] block, a few relaxed stores, every [`PUBLISH_INTERVAL`] (10 ms)
//! while the core works, once more when it falls idle with something unpublished, and when
//! a `block_on` returns. On the core's own thread a read takes them live instead.
//!
//! [`Stats`], the older seven-field view, is kept as a deprecated conversion of
//! [`CoreMetrics`].

use std::ops::Sub;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One core's counters, or the sum over cores
/// ([`RuntimeMetrics::total`](crate::RuntimeMetrics::total)).
///
/// Read on the core's own thread ([`core_metrics`](crate::core_metrics), or
/// [`RuntimeMetrics::core`](crate::RuntimeMetrics::core) there) they are the values now;
/// elsewhere, as the core last published them (at most 10 ms old while it
/// works). Subtract two snapshots for the figures of the span between them (the gauges keep
/// the later value):
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let before = runtime::core_metrics().unwrap();
///     for _ in 0..10 {
///         runtime::ext::raw::nop().await.unwrap();
///     }
///     let d = runtime::core_metrics().unwrap() - before;
///     assert!(d.sqes_submitted >= 10 && d.cqes_reaped >= 10);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Counters count since the core started; the gauges (`alive_tasks`, `local_queue_depth`,
/// `remote_queue_depth`, `ops_in_flight`, `recv_ring_buffers`, `recv_ring_buffers_out`,
/// `fixed_files_in_use`)
/// are values at that moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoreMetrics {
    /// Task polls (tokio: `worker_poll_count`).
    pub polls: u64,
    /// Tasks spawned from this core's thread, by any spawn call (tokio:
    /// `spawned_tasks_count`).
    pub spawned_tasks: u64,
    /// Tasks on this core not finished yet, those waiting to be adopted included (tokio:
    /// `num_alive_tasks`).
    pub alive_tasks: u64,
    /// Never-polled tasks this core took from other cores (tokio: `worker_steal_count`).
    pub stolen_tasks: u64,
    /// Tasks ready to run in the core's local queue (tokio: `worker_local_queue_depth`).
    pub local_queue_depth: u64,
    /// Wakes and spawns from other threads waiting in the core's remote queue (tokio:
    /// `global_queue_depth`, per core here).
    pub remote_queue_depth: u64,
    /// Waits in the kernel (tokio: `worker_park_count`).
    pub parks: u64,
    /// Time not waiting in the kernel since the core started (tokio:
    /// `worker_total_busy_duration`), in nanoseconds.
    pub busy_ns: u64,
    /// Wakes that came from other threads.
    pub remote_wakes: u64,
    /// SQEs pushed to the ring (ops, cancels, wake reads, MSG_RINGs).
    pub sqes_submitted: u64,
    /// `io_uring_enter` calls, waiting or not (`parks` of them waited).
    pub enters: u64,
    /// CQEs reaped.
    pub cqes_reaped: u64,
    /// Times the kernel held overflowed CQEs to flush (the CQ was full).
    pub cq_overflows: u64,
    /// Times the SQ was full and had to be submitted before a push.
    pub sq_full_waits: u64,
    /// Ops in flight (started, final CQE not reaped).
    pub ops_in_flight: u64,
    /// `ASYNC_CANCEL`s sent (dropped ops, timeouts, shutdown).
    pub cancellations: u64,
    /// Receives that found the core's receive ring empty (`ENOBUFS`).
    pub recv_ring_enobufs: u64,
    /// Times the core's receive ring doubled.
    pub recv_ring_growths: u64,
    /// Buffers in the core's receive ring.
    pub recv_ring_buffers: u64,
    /// Buffers of the receive ring out of it (holding received bytes not yet consumed).
    pub recv_ring_buffers_out: u64,
    /// `IORING_OP_MSG_RING` wakes this core sent to others.
    pub msg_ring_sent: u64,
    /// `IORING_OP_MSG_RING` wakes this core received.
    pub msg_ring_received: u64,
    /// Slots of the ring's fixed-file table held by direct descriptors the program owns
    /// (accepted or opened into the table, not closed yet).
    pub fixed_files_in_use: u64,
    /// Time the core's thread ran on its CPU, in nanoseconds (the kernel's
    /// `/proc/thread-self/schedstat`, read when the core publishes its metrics: up to 10 ms
    /// old; 0 where the kernel keeps no such counter).
    pub cpu_run_ns: u64,
    /// Time the core's thread was ready to run but waited for its CPU while other threads
    /// had it, in nanoseconds (as `cpu_run_ns`): what a CPU shared with a load generator,
    /// a neighbour or a hog costs the core ([`cpu_contention`](crate::ext::cpu_contention)
    /// is its recent share).
    pub cpu_wait_ns: u64,
}

macro_rules! published {
    ($($field:ident),* $(,)?) => {
        /// One core's [`CoreMetrics`] as its thread last published them.
        #[derive(Default)]
        pub(crate) struct Published {
            $($field: AtomicU64,)*
        }

        impl Published {
            /// Stores a new snapshot (the owning core's thread only).
            pub(crate) fn store(&self, m: &CoreMetrics) {
                $(self.$field.store(m.$field, Ordering::Relaxed);)*
            }

            /// The last snapshot stored.
            pub(crate) fn load(&self) -> CoreMetrics {
                CoreMetrics { $($field: self.$field.load(Ordering::Relaxed),)* }
            }
        }

        impl std::ops::AddAssign for CoreMetrics {
            /// Field-by-field sum (of counts, and of gauges: the figures of two cores
            /// together), as [`RuntimeMetrics::total`](crate::RuntimeMetrics::total) adds
            /// every core's.
            fn add_assign(&mut self, o: CoreMetrics) {
                $(self.$field += o.$field;)*
            }
        }

        impl CoreMetrics {
            /// Subtracts `o`'s counts (saturating); the gauges keep their values.
            fn sub_counts(&mut self, o: &CoreMetrics) {
                $(if !CoreMetrics::is_gauge(stringify!($field)) {
                    self.$field = self.$field.saturating_sub(o.$field);
                })*
            }

            /// (name, value) of each field, in declaration order.
            pub(crate) fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($field), self.$field),)*]
            }
        }
    };
}

published!(
    polls,
    spawned_tasks,
    alive_tasks,
    stolen_tasks,
    local_queue_depth,
    remote_queue_depth,
    parks,
    busy_ns,
    remote_wakes,
    sqes_submitted,
    enters,
    cqes_reaped,
    cq_overflows,
    sq_full_waits,
    ops_in_flight,
    cancellations,
    recv_ring_enobufs,
    recv_ring_growths,
    recv_ring_buffers,
    recv_ring_buffers_out,
    msg_ring_sent,
    msg_ring_received,
    fixed_files_in_use,
    cpu_run_ns,
    cpu_wait_ns,
);

/// Fields that are values at a moment, not counts since the start.
pub(crate) const GAUGES: [&str; 7] = [
    "alive_tasks",
    "local_queue_depth",
    "remote_queue_depth",
    "ops_in_flight",
    "recv_ring_buffers",
    "recv_ring_buffers_out",
    "fixed_files_in_use",
];

impl CoreMetrics {
    /// Whether `field` is a gauge (a value at a moment) rather than a count since the start.
    pub(crate) fn is_gauge(field: &str) -> bool {
        GAUGES.contains(&field)
    }
}

impl std::ops::Add for CoreMetrics {
    type Output = CoreMetrics;

    /// Field-by-field sum (see the `AddAssign` impl).
    fn add(mut self, rhs: CoreMetrics) -> CoreMetrics {
        self += rhs;
        self
    }
}

impl Sub for CoreMetrics {
    type Output = CoreMetrics;

    /// The counts of the span between `rhs` and `self`; the gauges keep `self`'s values.
    fn sub(self, rhs: CoreMetrics) -> CoreMetrics {
        let mut d = self;
        d.sub_counts(&rhs);
        d
    }
}

/// The older view of one core's counters: seven fields of [`CoreMetrics`] under other names.
#[deprecated(
    since = "0.1.0",
    note = "read `CoreMetrics` instead: `runtime::core_metrics()` on a core, \
            `Runtime::metrics().core(i)` from anywhere (`tasks_polled` is `polls`, \
            `tasks_alive` is `alive_tasks`, `tasks_stolen` is `stolen_tasks`)"
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// [`CoreMetrics::sqes_submitted`].
    pub sqes_submitted: u64,
    /// [`CoreMetrics::enters`].
    pub enters: u64,
    /// [`CoreMetrics::cqes_reaped`].
    pub cqes_reaped: u64,
    /// [`CoreMetrics::polls`].
    pub tasks_polled: u64,
    /// [`CoreMetrics::remote_wakes`].
    pub remote_wakes: u64,
    /// [`CoreMetrics::alive_tasks`] (a gauge: a difference keeps the later value).
    pub tasks_alive: u64,
    /// [`CoreMetrics::stolen_tasks`].
    pub tasks_stolen: u64,
}

#[allow(deprecated)]
impl From<CoreMetrics> for Stats {
    fn from(m: CoreMetrics) -> Stats {
        Stats {
            sqes_submitted: m.sqes_submitted,
            enters: m.enters,
            cqes_reaped: m.cqes_reaped,
            tasks_polled: m.polls,
            remote_wakes: m.remote_wakes,
            tasks_alive: m.alive_tasks,
            tasks_stolen: m.stolen_tasks,
        }
    }
}

#[allow(deprecated)]
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

/// Buckets of the poll-time and schedule-delay histograms (tokio's default: linear).
pub(crate) const BUCKETS: usize = 10;
/// Width of each bucket but the last, which takes everything above (tokio's default).
pub(crate) const RESOLUTION: Duration = Duration::from_micros(100);

/// One core's histogram as it records it (its own thread only).
#[derive(Default)]
pub(crate) struct LocalHistogram {
    counts: [std::cell::Cell<u64>; BUCKETS],
    sum_ns: std::cell::Cell<u64>,
}

impl LocalHistogram {
    /// Counts one value.
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        let i = ((ns / RESOLUTION.as_nanos() as u64) as usize).min(BUCKETS - 1);
        self.counts[i].set(self.counts[i].get() + 1);
        self.sum_ns.set(self.sum_ns.get() + ns);
    }

    fn publish(&self, to: &SharedHistogram) {
        for (c, a) in self.counts.iter().zip(&to.counts) {
            a.store(c.get(), Ordering::Relaxed);
        }
        to.sum_ns.store(self.sum_ns.get(), Ordering::Relaxed);
    }
}

/// One core's histogram as it last published it.
#[derive(Default)]
pub(crate) struct SharedHistogram {
    pub(crate) counts: [AtomicU64; BUCKETS],
    pub(crate) sum_ns: AtomicU64,
}

/// A core's poll-time and schedule-delay histograms, recorded and published.
#[derive(Default)]
pub(crate) struct Histograms {
    pub(crate) poll: LocalHistogram,
    pub(crate) delay: LocalHistogram,
}

impl Histograms {
    pub(crate) fn publish(&self, to: &[SharedHistogram; 2]) {
        self.poll.publish(&to[0]);
        self.delay.publish(&to[1]);
    }
}

/// The metrics' clock: `CLOCK_MONOTONIC_COARSE` in nanoseconds (a vDSO read of a few ns,
/// advancing once per kernel tick). Differences of it are unbiased estimates of the time
/// between two reads (the tick's phase is random), so summed waits come out right; one
/// wait's own figure is within a tick.
pub(crate) fn coarse_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes one timespec, which `ts` is, alive for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How often a busy core publishes its metrics (and how soon after it falls idle).
pub(crate) const PUBLISH_INTERVAL: Duration = Duration::from_millis(10);

/// A core's busy time: the wall time since `started_ns` (`coarse_ns`) less its waits.
pub(crate) fn busy_ns(started_ns: u64, waited_ns: u64) -> u64 {
    coarse_ns()
        .saturating_sub(started_ns)
        .saturating_sub(waited_ns)
}
