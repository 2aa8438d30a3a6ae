//! Runtime metrics, the reading side: [`RuntimeMetrics`], every core's [`CoreMetrics`]
//! (`crate::stats`: what each core counts and how it publishes it) readable from any thread,
//! under tokio's names where the meaning is the same, its histograms and the blocking
//! pool's figures, and all of it as Prometheus text. After the runtime is dropped the cores'
//! blocks keep their last values.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::executor::CoreSet;
use crate::stats::{CoreMetrics, BUCKETS, RESOLUTION};

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

    /// Core `worker`'s counters: read now on that core's own thread (inside its loop, or on
    /// the runtime's thread between `block_on`s for core 0), else as the core last published
    /// them (at most 10 ms old while it works); `None` if the runtime has no such core.
    pub fn core(&self, worker: usize) -> Option<CoreMetrics> {
        let core = self.set.get(worker)?;
        let mut m = crate::executor::live_metrics(core).unwrap_or_else(|| core.metrics.load());
        // Read now: other threads push onto this queue.
        m.remote_queue_depth = core.remote_depth() as u64;
        Some(m)
    }

    /// The sum over every core.
    pub fn total(&self) -> CoreMetrics {
        let mut total = CoreMetrics::default();
        for i in 0..self.num_workers() {
            if let Some(m) = self.core(i) {
                total += m;
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
            let gauge = CoreMetrics::is_gauge(field);
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
