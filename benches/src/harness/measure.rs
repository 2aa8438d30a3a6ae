//! The measuring loop every benchmark shares.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::time::{Duration, Instant};

use sysutil::{pin_to, PinGuard};

use super::cli::Opts;
use super::progress::Measuring;
use super::report::Series;

/// One timed run of one contestant.
#[derive(Clone, Copy, Debug)]
pub struct Measure {
    /// Operations completed in the run.
    pub ops: u64,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// `io_uring_enter` calls made during the run, where the contestant can count them.
    pub enters: Option<u64>,
}

impl Measure {
    /// `ops` operations in `elapsed`, with `enters` `io_uring_enter` calls where counted.
    pub fn new(ops: u64, elapsed: Duration, enters: Option<u64>) -> Measure {
        Measure {
            ops,
            elapsed,
            enters,
        }
    }

    /// `ops` operations timed from `start` to now, enters not counted.
    pub fn since(ops: u64, start: Instant) -> Measure {
        Measure::new(ops, start.elapsed(), None)
    }

    /// Operations per second.
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    /// Nanoseconds per operation.
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.ops as f64
    }
}

/// Median, min and max of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples`; panics on an empty slice, which is a harness bug.
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "summary of no samples");
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Summary {
            median,
            min: s[0],
            max: s[n - 1],
        }
    }
}

/// The median of `samples`.
pub fn median(samples: &[f64]) -> f64 {
    Summary::of(samples).median
}

/// A named closure that performs a given number of operations and measures them.
pub struct Contestant<'a> {
    /// Printed in the table's first column.
    pub name: String,
    /// Runs `count` operations and returns the measurement.
    pub run: Box<dyn FnMut(u64) -> io::Result<Measure> + 'a>,
}

impl<'a> Contestant<'a> {
    /// Wraps a closure under a name.
    pub fn new(name: impl Into<String>, run: impl FnMut(u64) -> io::Result<Measure> + 'a) -> Self {
        Contestant {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// How many operations to run, how often, and in what unit counts must come.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Operations per measured run (rounded down to a multiple of `granule`).
    pub count: u64,
    /// Operations in each contestant's warm-up run.
    pub warmup: u64,
    /// Measured runs per contestant.
    pub runs: usize,
    /// When set, `count` is recalibrated after the warm-up so that the first contestant's run takes about this many
    /// seconds.
    pub seconds: Option<f64>,
    /// Counts are multiples of this (the queue depth, a batch size).
    pub granule: u64,
}

impl Plan {
    /// The usual plan: `full` operations per run (a tenth with `--quick`), a quarter of that as the warm-up, `--runs`.
    pub fn new(opts: &Opts, full: u64, granule: u64) -> Plan {
        let count = if opts.quick { full / 10 } else { full };
        let runs = opts.runs_or(3, 5);
        Plan {
            count,
            warmup: count / 4,
            runs,
            seconds: opts.seconds,
            granule,
        }
    }

    /// A plan whose count is a window in milliseconds: `--seconds`, else `secs`.
    pub fn window(opts: &Opts, secs: f64, warmup_div: u64, min_warmup: u64) -> Plan {
        let ms = (opts.seconds.unwrap_or(secs) * 1000.0).round().max(1.0) as u64;
        let warmup = (ms / warmup_div).max(min_warmup);
        Plan {
            count: ms,
            warmup,
            runs: opts.runs_or(3, 5),
            seconds: None,
            granule: 1,
        }
    }

    fn round(&self, n: u64) -> u64 {
        (n / self.granule).max(1) * self.granule
    }
}

/// Warms every contestant up, then runs them alternately.
pub fn alternate(contestants: &mut [Contestant<'_>], plan: Plan) -> io::Result<(Vec<Series>, u64)> {
    let mut count = plan.round(plan.count);
    let mut series: Vec<Series> = contestants.iter().map(|c| Series::new(&c.name)).collect();
    let progress = Measuring::new((contestants.len() * (1 + plan.runs)) as u64);
    let mut done = 0;
    for (i, c) in contestants.iter_mut().enumerate() {
        progress.run(done, &c.name, "warm-up");
        done += 1;
        let m = (c.run)(plan.round(plan.warmup))?;
        if let (0, Some(secs)) = (i, plan.seconds) {
            count = plan.round((m.rate() * secs) as u64);
        }
    }
    for run in 0..plan.runs {
        for (c, s) in contestants.iter_mut().zip(series.iter_mut()) {
            progress.run(done, &c.name, &format!("run {}/{}", run + 1, plan.runs));
            done += 1;
            // `/proc/self/clear_refs` (Linux 4.0) resets `VmHWM`, which `peak_rss_kib` reads.
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            s.runs.push((c.run)(count)?);
            s.peak_rss_kib = s.peak_rss_kib.max(peak_rss_kib());
        }
    }
    Ok((series, count))
}

/// Peak resident set size of this process in KiB: `VmHWM` of `/proc/self/status`, else getrusage's `ru_maxrss`.
pub fn peak_rss_kib() -> u64 {
    sysutil::proc_status_kib(None, "VmHWM").unwrap_or_else(|_| sysutil::max_rss_kib())
}

/// Sums of the runtime's counters (`runtime::CoreMetrics` deltas) over a contestant's runs.
#[derive(Debug, Default)]
pub struct Tally {
    ops: Cell<u64>,
    stats: Cell<runtime::CoreMetrics>,
}

impl Tally {
    /// Adds one run of `ops` operations whose counters moved by `delta`.
    pub fn add(&self, ops: u64, delta: runtime::CoreMetrics) {
        self.ops.set(self.ops.get() + ops);
        self.stats.set(self.stats.get() + delta);
    }

    /// `name per op: sqes 1.000, cqes 1.000, task polls 1.031, enters 0.0312`.
    pub fn note(&self, name: &str) -> String {
        let (s, ops) = (self.stats.get(), self.ops.get().max(1) as f64);
        let per = |v: u64| v as f64 / ops;
        let (sqes, cqes, polls) = (per(s.sqes_submitted), per(s.cqes_reaped), per(s.polls));
        let enters = per(s.enters);
        let head = format!("{name} per op (warm-up included)");
        format!("{head}: sqes {sqes:.3}, cqes {cqes:.3}, task polls {polls:.3}, enters {enters:.4}")
    }
}

/// Runs `work` (which resolves to the number of operations it did) inside a runtime.
pub async fn timed(
    tally: &Tally,
    work: impl Future<Output = io::Result<u64>>,
) -> io::Result<Measure> {
    let before = runtime::core_metrics().expect("inside the runtime");
    let start = Instant::now();
    let ops = work.await?;
    let elapsed = start.elapsed();
    let delta = runtime::core_metrics().expect("inside the runtime") - before;
    tally.add(ops, delta);
    Ok(Measure::new(ops, elapsed, Some(delta.enters)))
}

/// Keeps the futures of `slots` in flight, each in its own box.
pub async fn in_flight<F: Future>(
    slots: impl IntoIterator<Item = F>,
    mut next: impl FnMut(F::Output) -> io::Result<Option<F>>,
) -> io::Result<()> {
    let mut slots: Vec<_> = slots.into_iter().map(|f| Some(Box::pin(f))).collect();
    std::future::poll_fn(|cx| {
        let mut live = 0;
        for slot in &mut slots {
            while let Some(fut) = slot {
                let std::task::Poll::Ready(out) = fut.as_mut().poll(cx) else {
                    live += 1;
                    break;
                };
                match next(out)? {
                    Some(f) => fut.set(f),
                    None => *slot = None,
                }
            }
        }
        if live == 0 {
            std::task::Poll::Ready(Ok(()))
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// The two CPUs a two-sided benchmark uses (server and client, core 0 and core 1).
pub fn two_cpus() -> [usize; 2] {
    let allowed = sysutil::allowed_cpus();
    let a = allowed.first().copied().unwrap_or(0);
    [a, allowed.get(1).copied().unwrap_or(a)]
}

/// A `cores(2)` runtime on `cpus` built from this thread, which becomes its core 0 pinned to `cpus[0]`.
pub fn runtime_on(cpus: [usize; 2]) -> io::Result<(PinGuard, runtime::Runtime)> {
    let keep = PinGuard::keep()?;
    pin_to(cpus[0])?;
    Ok((keep, runtime::Builder::new().cores(2).cpus(cpus).build()?))
}

/// A tokio current-thread runtime with its I/O and time drivers.
pub fn tokio_current() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// tokio's multi-thread runtime with two workers and its timer, worker i pinned to `cpus[i]` (tokio starts its workers one by one).
pub fn tokio_on(cpus: [usize; 2]) -> io::Result<tokio::runtime::Runtime> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_time()
        .worker_threads(2)
        .on_thread_start(move || {
            let _ = pin_to(cpus[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2]);
        });
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_peak_rss() {
        let s = Summary::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(peak_rss_kib() > 0);
    }
}
