//! Runtime metrics: what every core did, readable from any thread (`Runtime::metrics`,
//! `Handle::metrics`), under tokio's `RuntimeMetrics` names where the meaning is the same,
//! plus what only a ring can tell.
//!
//! Each core keeps its counters in plain fields on its own thread (no atomics on the hot
//! paths) and publishes them into its [`Published`] block once per loop iteration, after
//! the reap: a few relaxed stores. A reader sees each core as of its last iteration; a core
//! that sleeps has published everything before it slept. After the runtime is dropped the
//! blocks keep their last values.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cores::CoreSet;

/// One core's counters as of its last loop iteration, or the sum over cores
/// ([`RuntimeMetrics::total`]).
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

        impl CoreMetrics {
            /// Field-by-field sum.
            fn add(&mut self, o: &CoreMetrics) {
                $(self.$field += o.$field;)*
            }

            /// (name, value) of each field, in declaration order.
            fn fields(&self) -> Vec<(&'static str, u64)> {
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
);

/// Fields that are values at a moment, not counts since the start.
const GAUGES: [&str; 7] = [
    "alive_tasks",
    "local_queue_depth",
    "remote_queue_depth",
    "ops_in_flight",
    "recv_ring_buffers",
    "recv_ring_buffers_out",
    "fixed_files_in_use",
];

/// A runtime's metrics, readable from any thread, before and after the runtime is dropped
/// (then each core keeps its last values). Cheap to clone.
///
/// The per-core methods take the core's index (`worker`, as tokio's do) and read 0 for a
/// core the runtime does not have; [`core`](RuntimeMetrics::core) says `None` instead.
///
/// ```
/// let rt = runtime::Builder::new().cores(2).build()?;
/// let metrics = rt.metrics();
/// rt.block_on(async {
///     runtime::spawn(async {}).await.unwrap();
///     runtime::ext::raw::nop().await.unwrap();
/// });
/// assert_eq!(metrics.num_workers(), 2);
/// assert!(metrics.spawned_tasks_count() >= 1);
/// assert!(metrics.total().cqes_reaped >= 1);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct RuntimeMetrics {
    set: Arc<CoreSet>,
}

impl std::fmt::Debug for RuntimeMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeMetrics")
            .field("cores", &self.num_workers())
            .field("total", &self.total())
            .finish()
    }
}

impl RuntimeMetrics {
    pub(crate) fn new(set: Arc<CoreSet>) -> RuntimeMetrics {
        RuntimeMetrics { set }
    }

    /// How many cores the runtime has (tokio: worker threads).
    pub fn num_workers(&self) -> usize {
        self.set.len()
    }

    /// Core `worker`'s counters as of its last loop iteration; `None` if the runtime has
    /// no such core.
    pub fn core(&self, worker: usize) -> Option<CoreMetrics> {
        let core = self.set.get(worker)?;
        let mut m = core.metrics.load();
        // Read now: other threads push onto this queue.
        m.remote_queue_depth = core.remote_depth() as u64;
        Some(m)
    }

    /// The sum over every core.
    pub fn total(&self) -> CoreMetrics {
        let mut total = CoreMetrics::default();
        for i in 0..self.num_workers() {
            if let Some(m) = self.core(i) {
                total.add(&m);
            }
        }
        total
    }

    fn field(&self, worker: usize, f: fn(&CoreMetrics) -> u64) -> u64 {
        self.core(worker).as_ref().map_or(0, f)
    }

    /// Tasks not finished yet, on every core.
    pub fn num_alive_tasks(&self) -> usize {
        self.total().alive_tasks as usize
    }

    /// Tasks spawned since the runtime started, from every core's thread.
    pub fn spawned_tasks_count(&self) -> u64 {
        self.total().spawned_tasks
    }

    /// Times core `worker` waited in the kernel.
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.field(worker, |m| m.parks)
    }

    /// Time core `worker` spent not waiting in the kernel.
    pub fn worker_total_busy_duration(&self, worker: usize) -> Duration {
        Duration::from_nanos(self.field(worker, |m| m.busy_ns))
    }

    /// Task polls on core `worker`.
    pub fn worker_poll_count(&self, worker: usize) -> u64 {
        self.field(worker, |m| m.polls)
    }

    /// Never-polled tasks core `worker` took from other cores.
    pub fn worker_steal_count(&self, worker: usize) -> u64 {
        self.field(worker, |m| m.stolen_tasks)
    }

    /// Tasks ready to run in core `worker`'s local queue.
    pub fn worker_local_queue_depth(&self, worker: usize) -> usize {
        self.field(worker, |m| m.local_queue_depth) as usize
    }

    /// Wakes and spawns from other threads waiting in every core's remote queue.
    pub fn global_queue_depth(&self) -> usize {
        self.total().remote_queue_depth as usize
    }

    /// Threads of the blocking pool alive (running a job or idle).
    pub fn num_blocking_threads(&self) -> usize {
        self.set.pool.counts().0
    }

    /// Threads of the blocking pool waiting for work.
    pub fn num_idle_blocking_threads(&self) -> usize {
        self.set.pool.counts().1
    }

    /// Jobs waiting for a blocking-pool thread.
    pub fn blocking_queue_depth(&self) -> usize {
        self.set.pool.counts().2
    }

    /// Jobs queued on the blocking pool since the runtime started (`spawn_blocking`, and
    /// the file ops the epoll backend runs there).
    pub fn blocking_jobs_count(&self) -> u64 {
        self.set.pool.counts().3
    }

    /// Whether the runtime records the poll-time and schedule-delay histograms
    /// ([`Builder::metrics_histograms`](crate::Builder::metrics_histograms)).
    pub fn poll_time_histogram_enabled(&self) -> bool {
        self.set.histograms
    }

    /// How many buckets the histograms have (10).
    pub fn poll_time_histogram_num_buckets(&self) -> usize {
        BUCKETS
    }

    /// The range of durations bucket `bucket` counts: 100 µs wide, the last one open
    /// (`Duration::MAX` as its end), as tokio's default.
    pub fn poll_time_histogram_bucket_range(&self, bucket: usize) -> std::ops::Range<Duration> {
        let b = bucket.min(BUCKETS - 1) as u32;
        let start = RESOLUTION * b;
        let end = if b as usize == BUCKETS - 1 {
            Duration::MAX
        } else {
            start + RESOLUTION
        };
        start..end
    }

    fn hist(&self, worker: usize, which: usize, bucket: usize) -> u64 {
        let Some(core) = self.set.get(worker) else {
            return 0;
        };
        core.histograms[which]
            .counts
            .get(bucket)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Polls of core `worker` that took a time in bucket `bucket`'s range (0 when the
    /// histograms are off, or there is no such core or bucket).
    pub fn poll_time_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.hist(worker, 0, bucket)
    }

    /// Polls of core `worker` that began a time in bucket `bucket`'s range after their task
    /// was queued to run (woken, spawned): the schedule delay.
    pub fn schedule_delay_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.hist(worker, 1, bucket)
    }

    /// Every figure in the Prometheus text format (version 0.0.4): one series per core with
    /// a `core` label, named `runtime_<field>` (counters end in `_total`), then the blocking
    /// pool's. For a `/metrics` endpoint:
    ///
    /// ```
    /// let rt = runtime::Runtime::new()?;
    /// let text = rt.metrics().prometheus();
    /// assert!(text.contains("runtime_polls_total{core=\"0\"}"));
    /// assert!(text.contains("# TYPE runtime_alive_tasks gauge"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn prometheus(&self) -> String {
        let cores: Vec<CoreMetrics> = (0..self.num_workers())
            .filter_map(|i| self.core(i))
            .collect();
        let mut out = String::new();
        let Some(first) = cores.first() else {
            return out;
        };
        for (k, (field, _)) in first.fields().into_iter().enumerate() {
            let gauge = GAUGES.contains(&field);
            let name = if gauge {
                format!("runtime_{field}")
            } else {
                format!("runtime_{field}_total")
            };
            let kind = if gauge { "gauge" } else { "counter" };
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (i, m) in cores.iter().enumerate() {
                let _ = writeln!(out, "{name}{{core=\"{i}\"}} {}", m.fields()[k].1);
            }
        }
        if self.set.histograms {
            self.write_histograms(&mut out);
        }
        let (threads, idle, queued, jobs) = self.set.pool.counts();
        for (name, kind, v) in [
            ("runtime_blocking_threads", "gauge", threads as u64),
            ("runtime_blocking_idle_threads", "gauge", idle as u64),
            ("runtime_blocking_queue_depth", "gauge", queued as u64),
            ("runtime_blocking_jobs_total", "counter", jobs),
        ] {
            let _ = writeln!(out, "# TYPE {name} {kind}\n{name} {v}");
        }
        out
    }
}

/// Buckets of the poll-time and schedule-delay histograms (tokio's default: linear).
pub(crate) const BUCKETS: usize = 10;
/// Width of each bucket but the last, which takes everything above (tokio's default).
const RESOLUTION: Duration = Duration::from_micros(100);

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
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
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

impl RuntimeMetrics {
    /// The histograms as Prometheus histograms (cumulative buckets, in seconds).
    fn write_histograms(&self, out: &mut String) {
        for (which, name) in [
            (0, "runtime_poll_time_seconds"),
            (1, "runtime_schedule_delay_seconds"),
        ] {
            let _ = writeln!(out, "# TYPE {name} histogram");
            for worker in 0..self.num_workers() {
                let Some(core) = self.set.get(worker) else {
                    continue;
                };
                let h = &core.histograms[which];
                let mut cumulative = 0;
                for (b, count) in h.counts.iter().enumerate() {
                    cumulative += count.load(Ordering::Relaxed);
                    let le = if b == BUCKETS - 1 {
                        "+Inf".to_string()
                    } else {
                        format!("{}", (RESOLUTION * (b as u32 + 1)).as_secs_f64())
                    };
                    let _ = writeln!(
                        out,
                        "{name}_bucket{{core=\"{worker}\",le=\"{le}\"}} {cumulative}"
                    );
                }
                let sum = h.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
                let _ = writeln!(out, "{name}_sum{{core=\"{worker}\"}} {sum}");
                let _ = writeln!(out, "{name}_count{{core=\"{worker}\"}} {cumulative}");
            }
        }
    }
}
