//! The measuring loop shared by every benchmark: warm-up, then contestants alternated.
//!
//! `shared/BENCHMARKS.md` asks for side-by-side ratios on a noisy shared machine, so each
//! contestant runs once as a warm-up (page faults, caches, ring and slab growth), and then the
//! measured runs go A B C, A B C, ... so a slow stretch of the machine hits every contestant
//! alike. The process's peak RSS is reset before each measured run and read after it.
//! Each contestant is a closure that performs a given number of operations and reports
//! how long that took. A progress bar on stderr (`progress.rs`) follows the runs.

use std::io;

use crate::progress::Measuring;
use crate::report::{peak_rss_kib, reset_peak_rss, Measure, Series};

/// A named closure that performs `count` operations and measures them.
pub struct Contestant<'a> {
    /// Printed in the table's first column.
    pub name: String,
    /// Runs `count` operations and returns the measurement.
    pub run: Box<dyn FnMut(u64) -> io::Result<Measure> + 'a>,
}

impl<'a> Contestant<'a> {
    /// Wraps a closure under a name.
    pub fn new(
        name: impl Into<String>,
        run: impl FnMut(u64) -> io::Result<Measure> + 'a,
    ) -> Contestant<'a> {
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
    /// When set, `count` is recalibrated after the warm-up so that the first contestant's
    /// run takes about this many seconds.
    pub seconds: Option<f64>,
    /// Counts are multiples of this (the queue depth, a batch size).
    pub granule: u64,
}

impl Plan {
    fn round(&self, n: u64) -> u64 {
        (n / self.granule).max(1) * self.granule
    }
}

/// Warms every contestant up, then runs them alternately; returns one series per contestant
/// and the per-run count actually used.
pub fn alternate(contestants: &mut [Contestant<'_>], plan: Plan) -> io::Result<(Vec<Series>, u64)> {
    let mut count = plan.round(plan.count);
    let mut series: Vec<Series> = contestants
        .iter()
        .map(|c| Series {
            name: c.name.clone(),
            runs: Vec::with_capacity(plan.runs),
            peak_rss_kib: 0,
            extra: Vec::new(),
        })
        .collect();
    let progress = Measuring::new((contestants.len() * (1 + plan.runs)) as u64);
    let mut done = 0;
    for (i, c) in contestants.iter_mut().enumerate() {
        progress.run(done, &c.name, "warm-up");
        done += 1;
        let m = (c.run)(plan.round(plan.warmup))?;
        if i == 0 {
            if let Some(secs) = plan.seconds {
                count = plan.round((m.rate() * secs) as u64);
            }
        }
    }
    for run in 0..plan.runs {
        for (c, s) in contestants.iter_mut().zip(series.iter_mut()) {
            progress.run(done, &c.name, &format!("run {}/{}", run + 1, plan.runs));
            done += 1;
            reset_peak_rss();
            let m = (c.run)(count)?;
            s.runs.push(m);
            s.peak_rss_kib = s.peak_rss_kib.max(peak_rss_kib());
        }
    }
    Ok((series, count))
}
