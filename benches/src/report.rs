//! Result tables: median, min and max over runs, ratios to a baseline row, peak RSS.
//!
//! Every figure a table prints comes from runs measured side by side in one process (see
//! `shared/BENCHMARKS.md`), so the ratio column is the number to read; absolute rates vary by
//! up to 25% between runs on the shared machines.
//!
//! Peak RSS is the process's high-water mark, `VmHWM` in `/proc/self/status` (proc(5)), reset
//! before every measured run by writing `5` to `/proc/self/clear_refs`, so a row shows the
//! largest peak seen during its own runs (the whole process's memory at that moment, runtime,
//! raw ring and harness alike). Where the reset or the file is unavailable it falls back to
//! getrusage(2)'s `ru_maxrss`, which only grows and, unlike `VmHWM`, survives execve(2): under
//! `cargo run` it reports cargo's own peak.

use std::cell::Cell;
use std::fmt::Write as _;
use std::time::Duration;

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
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Summary {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

/// What a table's main column measures.
#[derive(Clone, Copy, Debug)]
pub enum Metric {
    /// Operations per second, higher is better; the label names the operation (`nops/s`).
    Rate(&'static str),
    /// Nanoseconds per operation, lower is better; the label names the operation.
    NsPerOp(&'static str),
}

impl Metric {
    fn value(self, m: &Measure) -> f64 {
        match self {
            Metric::Rate(_) => m.rate(),
            Metric::NsPerOp(_) => m.ns_per_op(),
        }
    }

    fn label(self) -> String {
        match self {
            Metric::Rate(unit) => unit.to_string(),
            Metric::NsPerOp(op) => format!("ns/{op}"),
        }
    }

    fn format(self, v: f64) -> String {
        match self {
            Metric::Rate(_) => format_rate(v),
            Metric::NsPerOp(_) => format!("{v:.1}"),
        }
    }

    /// How many times better `row` is than `base`: >1 means `row` is faster.
    fn speedup(self, row: f64, base: f64) -> f64 {
        match self {
            Metric::Rate(_) => row / base,
            Metric::NsPerOp(_) => base / row,
        }
    }
}

/// All runs of one contestant, as the harness collected them.
#[derive(Clone, Debug)]
pub struct Series {
    /// The contestant's name as printed in the first column.
    pub name: String,
    /// The measured runs (warm-up excluded).
    pub runs: Vec<Measure>,
    /// The largest process peak RSS in KiB seen during this contestant's runs.
    pub peak_rss_kib: u64,
}

impl Series {
    /// `io_uring_enter` calls per operation over all runs, if the contestant counts them.
    pub fn enters_per_op(&self) -> Option<f64> {
        let mut enters = 0;
        let mut ops = 0;
        for m in &self.runs {
            enters += m.enters?;
            ops += m.ops;
        }
        (ops > 0).then(|| enters as f64 / ops as f64)
    }
}

/// A printable result table.
#[derive(Debug)]
pub struct Table {
    /// The first line printed, naming the benchmark and its parameters.
    pub title: String,
    /// What the main columns measure.
    pub metric: Metric,
    /// Header of the ratio column, e.g. `vs raw`.
    pub ratio_label: String,
    /// Index in `series` of the row every ratio is taken against.
    pub baseline: usize,
    /// One row per contestant.
    pub series: Vec<Series>,
    /// Lines printed under the table (targets, flags, caveats).
    pub notes: Vec<String>,
}

impl Table {
    /// Renders the table as aligned text.
    pub fn render(&self) -> String {
        let base = Summary::of(&self.values(self.baseline)).median;
        let mut rows = vec![vec![
            String::new(),
            format!("{} median", self.metric.label()),
            "min".to_string(),
            "max".to_string(),
            self.ratio_label.clone(),
            "enters/op".to_string(),
            "peak RSS".to_string(),
        ]];
        for (i, s) in self.series.iter().enumerate() {
            let sum = Summary::of(&self.values(i));
            rows.push(vec![
                s.name.clone(),
                self.metric.format(sum.median),
                self.metric.format(sum.min),
                self.metric.format(sum.max),
                format!("{:.2}x", self.metric.speedup(sum.median, base)),
                s.enters_per_op()
                    .map_or_else(|| "-".to_string(), format_per_op),
                format_kib(s.peak_rss_kib),
            ]);
        }
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.title);
        out.push_str(&render_grid(&rows, 2));
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        out
    }

    fn values(&self, i: usize) -> Vec<f64> {
        self.series[i]
            .runs
            .iter()
            .map(|m| self.metric.value(m))
            .collect()
    }
}

/// Aligns `rows` (the first is the header) in columns, the first left-aligned and the others
/// right-aligned, each line indented by `indent` spaces.
pub fn render_grid(rows: &[Vec<String>], indent: usize) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |cell| cell.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = " ".repeat(indent.saturating_sub(2));
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "  {cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// Sums of the runtime's counters (`runtime::Stats` deltas) over a contestant's runs, to show
/// per operation what the loop did: SQEs, CQEs, task polls and enters.
#[derive(Debug, Default)]
pub struct Tally {
    ops: Cell<u64>,
    sqes: Cell<u64>,
    cqes: Cell<u64>,
    polls: Cell<u64>,
    enters: Cell<u64>,
}

impl Tally {
    /// Adds one run of `ops` operations whose counters moved by `delta`.
    pub fn add(&self, ops: u64, delta: runtime::Stats) {
        let bump = |c: &Cell<u64>, v: u64| c.set(c.get() + v);
        bump(&self.ops, ops);
        bump(&self.sqes, delta.sqes_submitted);
        bump(&self.cqes, delta.cqes_reaped);
        bump(&self.polls, delta.tasks_polled);
        bump(&self.enters, delta.enters);
    }

    /// `name per op: sqes 1.000, cqes 1.000, task polls 1.031, enters 0.0312`.
    pub fn note(&self, name: &str) -> String {
        let ops = self.ops.get().max(1) as f64;
        let per = |c: &Cell<u64>| c.get() as f64 / ops;
        format!(
            "{name} per op (warm-up included): sqes {:.3}, cqes {:.3}, task polls {:.3}, enters {:.4}",
            per(&self.sqes),
            per(&self.cqes),
            per(&self.polls),
            per(&self.enters)
        )
    }
}

/// Peak resident set size of this process in KiB since the last [`reset_peak_rss`]:
/// `VmHWM` from `/proc/self/status`, else getrusage's `ru_maxrss` (KiB on Linux).
pub fn peak_rss_kib() -> u64 {
    vm_hwm_kib().unwrap_or_else(max_rss_kib)
}

/// Resets the high-water mark [`peak_rss_kib`] reads (`/proc/self/clear_refs`, Linux 4.0);
/// returns whether it could.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn max_rss_kib() -> u64 {
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the call to fill.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(usage.ru_maxrss).unwrap_or(0)
}

/// `11_400_000.0` -> `11.40M`.
pub fn format_rate(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

/// `0.03125` -> `0.0312 (1/32.0)`; zero prints as `0`.
fn format_per_op(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        format!("{v:.4} (1/{:.1})", 1.0 / v)
    }
}

/// KiB -> `12.3 MiB`.
fn format_kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_odd_and_even() {
        let s = Summary::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
    }

    #[test]
    fn speedup_direction() {
        assert_eq!(Metric::Rate("x").speedup(2.0, 4.0), 0.5);
        assert_eq!(Metric::NsPerOp("x").speedup(2.0, 4.0), 2.0);
    }

    #[test]
    fn rss_is_positive() {
        assert!(peak_rss_kib() > 0);
        reset_peak_rss();
        assert!(peak_rss_kib() > 0);
    }
}
