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
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

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

    /// The main column's unit, e.g. `nops/s` or `ns/spawn+join`.
    pub fn label(self) -> String {
        match self {
            Metric::Rate(unit) => unit.to_string(),
            Metric::NsPerOp(op) => format!("ns/{op}"),
        }
    }

    /// `v` as the table prints it.
    pub fn format(self, v: f64) -> String {
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

/// The median over alternation rounds of `row`'s rate divided by `base`'s in the same
/// round (run `i` of each was measured back to back): a drift in the machine's speed
/// between rounds, which these shared machines show, cancels in each pair, where the ratio
/// of two medians can catch each side in a different phase. `None` without paired runs.
pub fn paired_ratio(row: &Series, base: &Series) -> Option<f64> {
    let ratios: Vec<f64> = row
        .runs
        .iter()
        .zip(&base.runs)
        .map(|(r, b)| r.rate() / b.rate())
        .collect();
    (!ratios.is_empty()).then(|| Summary::of(&ratios).median)
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
    /// Figures a table prints beside the main ones (e.g. `server_cpu_us_per_op`), carried
    /// into the row's `extra` in `--json`.
    pub extra: Vec<(String, f64)>,
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
        let tokio = self.tokio_median();
        let mut header = vec![
            String::new(),
            format!("{} median", self.metric.label()),
            "min".to_string(),
            "max".to_string(),
            self.ratio_label.clone(),
        ];
        if tokio.is_some() {
            header.push("vs tokio".to_string());
        }
        header.extend(["enters/op".to_string(), "peak RSS".to_string()]);
        let mut rows = vec![header];
        for (i, s) in self.series.iter().enumerate() {
            let sum = Summary::of(&self.values(i));
            let mut row = vec![
                s.name.clone(),
                self.metric.format(sum.median),
                self.metric.format(sum.min),
                self.metric.format(sum.max),
                format!("{:.2}x", self.metric.speedup(sum.median, base)),
            ];
            if let Some(t) = tokio {
                row.push(format!("{:.2}x", self.metric.speedup(sum.median, t)));
            }
            row.extend([
                s.enters_per_op()
                    .map_or_else(|| "-".to_string(), format_per_op),
                format_kib(s.peak_rss_kib),
            ]);
            rows.push(row);
        }
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.title);
        out.push_str(&render_grid(&rows, 2));
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        out.push_str(&record(self.record(base)));
        out
    }

    /// The figures `render` prints, for `--json` and `--compare`.
    fn record(&self, base: f64) -> Record {
        let metric = self.metric;
        let rows =
            self.series
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let sum = Summary::of(&self.values(i));
                    Row {
                        name: s.name.clone(),
                        median: sum.median,
                        min: sum.min,
                        max: sum.max,
                        ratio: Some(metric.speedup(sum.median, base)),
                        enters_per_op: s.enters_per_op(),
                        peak_rss_bytes: Some(s.peak_rss_kib * 1024),
                        extra: std::iter::once(("runs".to_string(), s.runs.len() as f64))
                            .chain(self.tokio_median().map(|t| {
                                ("ratio_vs_tokio".to_string(), metric.speedup(sum.median, t))
                            }))
                            .chain(s.extra.iter().cloned())
                            .collect(),
                    }
                })
                .collect();
        Record {
            name: record_name(&self.title),
            title: self.title.clone(),
            metric: metric.label(),
            format: Box::new(move |v| metric.format(v)),
            rows,
        }
    }

    /// The median of the first tokio row, when the table has one and it is not already the
    /// baseline: the second ratio column ("vs tokio") every row gets then.
    fn tokio_median(&self) -> Option<f64> {
        let i = self
            .series
            .iter()
            .position(|s| in_family(&s.name, "tokio"))?;
        (i != self.baseline).then(|| Summary::of(&self.values(i)).median)
    }

    fn values(&self, i: usize) -> Vec<f64> {
        self.series[i]
            .runs
            .iter()
            .map(|m| self.metric.value(m))
            .collect()
    }
}

/// One row of a recorded table, as `--json` writes it (non-finite figures as `null`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The contestant.
    pub name: String,
    /// Median of the main metric over the measured runs.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// The ratio column (how many times better than the baseline), where there is one.
    pub ratio: Option<f64>,
    /// `io_uring_enter` calls per operation, where counted.
    pub enters_per_op: Option<f64>,
    /// Peak RSS in bytes, where measured.
    pub peak_rss_bytes: Option<u64>,
    /// Further named figures of the row (a JSON object, in this order).
    #[serde(serialize_with = "as_map")]
    pub extra: Vec<(String, f64)>,
}

/// `extra` as a JSON object whose keys keep their order.
fn as_map<S: Serializer>(pairs: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// One printed table's figures, as `--json` writes them.
#[derive(Serialize)]
pub struct Record {
    /// Key of the table in the JSON file, e.g. `nop` or `spawn (serial)`.
    pub name: String,
    /// The table's title line.
    pub title: String,
    /// The main column's unit (`nops/s`, `ns/op`, ...).
    pub metric: String,
    /// Prints a median as the table does (for `--compare`).
    #[serde(skip)]
    pub format: Box<dyn Fn(f64) -> String + Send>,
    /// One per contestant.
    pub rows: Vec<Row>,
}

impl Record {
    /// The row the ratios are taken against: the first whose ratio is exactly 1 (a median
    /// divided by itself).
    pub fn baseline(&self) -> Option<&Row> {
        self.rows.iter().find(|r| r.ratio == Some(1.0))
    }

    /// How many times better `row` is than the table's first row of the family `prefix`
    /// (`raw`, `tokio`: see [`in_family`]): the quotient of the two rows' ratios to the baseline, so it
    /// holds for rates and for times alike. `None` without such a row or ratios.
    pub fn vs(&self, row: &Row, prefix: &str) -> Option<f64> {
        let other = self.rows.iter().find(|r| in_family(&r.name, prefix))?;
        let q = row.ratio? / other.ratio?;
        q.is_finite().then_some(q)
    }
}

/// A table's key: its title up to the first `:` (`nop`, `spawn (serial)`, `read (cached)`).
pub fn record_name(title: &str) -> String {
    title.split(':').next().unwrap_or(title).trim().to_string()
}

/// Every table recorded so far in this process, for `--json`.
static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());

/// What `--compare` reads of an earlier `--json` file: each table's rows' medians (other
/// fields are ignored; a row whose median is `null` is skipped).
#[derive(Debug, Deserialize)]
struct Baseline {
    benchmarks: Vec<OldTable>,
}

#[derive(Debug, Deserialize)]
struct OldTable {
    #[serde(default)]
    name: String,
    #[serde(default)]
    rows: Vec<OldRow>,
}

#[derive(Debug, Deserialize)]
struct OldRow {
    #[serde(default)]
    name: String,
    median: Option<f64>,
}

/// The file `--compare` named: its path as given, and its tables.
static BASELINE: Mutex<Option<(String, Baseline)>> = Mutex::new(None);

/// Loads the `--compare` file; every table recorded afterwards is compared with it.
pub fn load_baseline(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--compare {path}: {e}"))?;
    let old = serde_json::from_str(&text).map_err(|e| format!("--compare {path}: {e}"))?;
    *BASELINE.lock().unwrap_or_else(|e| e.into_inner()) = Some((path.to_string(), old));
    Ok(())
}

/// Records a printed table for `--json`; returns the `--compare` lines to print under it
/// (empty without `--compare`, or when the old file lacks the table or all its rows).
///
/// A table whose name an earlier table of this process already took (`echo` at two message
/// sizes) is recorded as `echo #2`, `echo #3`, ..., so that `--compare` matches each table
/// with its own counterpart rather than with the first of the name.
pub fn record(mut rec: Record) -> String {
    let mut records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    let taken = records
        .iter()
        .filter(|r| r.name == rec.name || r.name.starts_with(&format!("{} #", rec.name)))
        .count();
    if taken > 0 {
        rec.name = format!("{} #{}", rec.name, taken + 1);
    }
    let out = compare(&rec);
    records.push(rec);
    out
}

fn compare(rec: &Record) -> String {
    let guard = BASELINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((path, old)) = guard.as_ref() else {
        return String::new();
    };
    let Some(table) = old.benchmarks.iter().find(|t| t.name == rec.name) else {
        return String::new();
    };
    let mut out = String::new();
    for row in &rec.rows {
        let Some(before) = table
            .rows
            .iter()
            .find(|r| r.name == row.name)
            .and_then(|r| r.median)
        else {
            continue;
        };
        let _ = writeln!(
            out,
            "  {}",
            compare_line(path, &row.name, before, row.median, &rec.format)
        );
    }
    out
}

/// `vs old.json: raw ring 11.59M -> 11.62M (+0.3%)`, with ` !` beyond ±5%.
fn compare_line(
    path: &str,
    name: &str,
    before: f64,
    now: f64,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let change = 100.0 * (now - before) / before;
    let mark = if change.is_finite() && change.abs() <= 5.0 {
        ""
    } else {
        " !"
    };
    let pct = if change.is_finite() {
        format!("{change:+.1}%")
    } else {
        "n/a".to_string()
    };
    format!(
        "vs {path}: {name} {} -> {} ({pct}){mark}",
        fmt(before),
        fmt(now)
    )
}

/// The `--json` document.
#[derive(Serialize)]
struct Doc<'a> {
    schema: u32,
    /// When it was written, `2024-05-01T12:34:56Z`.
    date: String,
    kernel: &'a str,
    cpus: &'a [usize],
    benchmarks: &'a [Record],
}

/// Every recorded table as a JSON document (schema 1), indented by two spaces, for `--json`.
pub fn json_text(kernel: &str, cpus: &[usize]) -> String {
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    let doc = Doc {
        schema: 1,
        date: rfc3339(OffsetDateTime::now_utc()),
        kernel,
        cpus,
        benchmarks: &records,
    };
    let mut text = serde_json::to_string_pretty(&doc).expect("a Doc is always serializable");
    text.push('\n');
    text
}

/// Writes every recorded table to `path` as SVG bar charts (see `svg.rs`).
pub fn write_svg(path: &str) -> std::io::Result<()> {
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::write(path, crate::svg::render(&records))
}

/// Every recorded row in one markdown table (`--markdown`): benchmark, row, median as the
/// table prints it, unit, ratios to the table's raw ring and tokio rows (where it has them),
/// `io_uring_enter` calls per op.
pub fn markdown_summary() -> String {
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    markdown(&records)
}

fn markdown(records: &[Record]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let ratio = |r: Option<f64>| {
        r.filter(|r| r.is_finite())
            .map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"))
    };
    let mut out = String::from(
        "| benchmark | row | figure | unit | vs raw | vs tokio | enters/op |\n\
         |---|---|---:|---|---:|---:|---:|\n",
    );
    for rec in records {
        for row in &rec.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&rec.name),
                cell(&row.name),
                cell(&(rec.format)(row.median)),
                cell(&rec.metric),
                ratio(rec.vs(row, "raw")),
                ratio(rec.vs(row, "tokio")),
                row.enters_per_op
                    .filter(|v| v.is_finite())
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.4}")),
            );
        }
    }
    out
}

/// `t` in UTC to the second, `2024-05-01T12:34:56Z` (empty past the year 9999).
fn rfc3339(t: OffsetDateTime) -> String {
    t.to_offset(UtcOffset::UTC)
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
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

/// Runs `work` (which resolves to the number of operations it did) inside a runtime, timing
/// it and adding the runtime's counter deltas to `tally`: the measuring frame every runtime
/// contestant shares.
pub async fn timed(
    tally: &Tally,
    work: impl std::future::Future<Output = std::io::Result<u64>>,
) -> std::io::Result<Measure> {
    let before = runtime::stats().expect("inside the runtime");
    let start = std::time::Instant::now();
    let ops = work.await?;
    let elapsed = start.elapsed();
    let delta = runtime::stats().expect("inside the runtime") - before;
    tally.add(ops, delta);
    Ok(Measure {
        ops,
        elapsed,
        enters: Some(delta.enters),
    })
}

/// Peak resident set size of this process in KiB since the last [`reset_peak_rss`]:
/// `VmHWM` from `/proc/self/status`, else getrusage's `ru_maxrss` (KiB on Linux).
pub fn peak_rss_kib() -> u64 {
    vm_hwm_kib().unwrap_or_else(sysutil::max_rss_kib)
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

/// Whether a row named `name` belongs to `family` ("raw", "tokio"): the name is the family
/// or starts with it and a space ("raw ring", "tokio current-thread"), so a peer such as
/// "tokio-uring" is not taken for tokio.
pub fn in_family(name: &str, family: &str) -> bool {
    name.strip_prefix(family)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
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
    fn a_series_extra_figure_reaches_its_json_row() {
        let mut s = Series {
            extra: Vec::new(),
            name: "runtime".to_string(),
            runs: vec![Measure {
                ops: 1000,
                elapsed: Duration::from_secs(1),
                enters: None,
            }],
            peak_rss_kib: 0,
        };
        s.extra.push(("server_cpu_us_per_op".to_string(), 3.5));
        let table = Table {
            title: "echo: a test".to_string(),
            metric: Metric::Rate("rt/s"),
            ratio_label: "vs x".to_string(),
            baseline: 0,
            series: vec![s],
            notes: Vec::new(),
        };
        let rec = table.record(1000.0);
        let extra = &rec.rows[0].extra;
        assert!(
            extra.contains(&("server_cpu_us_per_op".to_string(), 3.5)),
            "{extra:?}"
        );
    }

    #[test]
    fn paired_ratio_cancels_drift_between_rounds() {
        let series = |name: &str, secs: &[f64]| Series {
            extra: Vec::new(),
            name: name.to_string(),
            runs: secs
                .iter()
                .map(|&s| Measure {
                    ops: 1000,
                    elapsed: Duration::from_secs_f64(s),
                    enters: None,
                })
                .collect(),
            peak_rss_kib: 0,
        };
        // The machine halves its speed after round 1; each pair stays at 0.8x.
        let base = series("raw", &[1.0, 2.0, 2.0]);
        let row = series("rt", &[1.25, 2.5, 2.5]);
        let paired = paired_ratio(&row, &base).unwrap();
        assert!((paired - 0.8).abs() < 1e-9, "{paired}");
        assert_eq!(paired_ratio(&series("x", &[]), &base), None);
    }

    #[test]
    fn speedup_direction() {
        assert_eq!(Metric::Rate("x").speedup(2.0, 4.0), 0.5);
        assert_eq!(Metric::NsPerOp("x").speedup(2.0, 4.0), 2.0);
    }

    #[test]
    fn dates_and_names() {
        let at = |secs: i64, nanos: i64| {
            rfc3339(
                OffsetDateTime::from_unix_timestamp(secs).unwrap()
                    + time::Duration::nanoseconds(nanos),
            )
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(at(19_723 * 86_400, 0), "2024-01-01T00:00:00Z");
        assert_eq!(
            at(19_782 * 86_400 + 45_296, 999_999_999),
            "2024-02-29T12:34:56Z"
        );
        assert_eq!(record_name("spawn (serial): 1000 tasks"), "spawn (serial)");
        assert_eq!(record_name("nop"), "nop");
    }

    #[test]
    fn compare_lines() {
        let f = |v: f64| format_rate(v);
        assert_eq!(
            compare_line("a.json", "raw ring", 11.59e6, 11.62e6, &f),
            "vs a.json: raw ring 11.59M -> 11.62M (+0.3%)"
        );
        assert_eq!(
            compare_line("a.json", "x", 100.0, 90.0, &f),
            "vs a.json: x 100.0 -> 90.0 (-10.0%) !"
        );
    }

    #[test]
    fn record_round_trips() {
        let rec = Record {
            name: "nop".into(),
            title: "nop: \"32\" in flight".into(),
            metric: "nops/s".into(),
            format: Box::new(format_rate),
            rows: vec![Row {
                name: "raw ring".into(),
                median: 1.5e7,
                min: f64::NAN,
                max: 2e7,
                ratio: None,
                enters_per_op: Some(0.03125),
                peak_rss_bytes: Some(4096),
                extra: vec![("runs".into(), 5.0), ("b".into(), 1.5), ("a".into(), 2.5)],
            }],
        };
        let text = serde_json::to_string(&rec).unwrap();
        assert_eq!(
            text,
            r#"{"name":"nop","title":"nop: \"32\" in flight","metric":"nops/s","rows":[{"name":"raw ring","median":15000000.0,"min":null,"max":20000000.0,"ratio":null,"enters_per_op":0.03125,"peak_rss_bytes":4096,"extra":{"runs":5.0,"b":1.5,"a":2.5}}]}"#
        );
    }

    /// `--compare` reads the file the last full run wrote (`benches/results/`), and the
    /// files this build writes.
    #[test]
    fn baseline_reads_committed_and_written_files() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/2026-12-01-all.json");
        let old: Baseline = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let echo2 = old.benchmarks.iter().find(|t| t.name == "echo #2").unwrap();
        assert_eq!(echo2.rows[0].name, "runtime");
        assert!(echo2.rows[0].median.is_some_and(|m| m > 0.0));

        record(rec("baseline test table", "x", &[("a", 1.0), ("b", 2.0)]));
        let new: Baseline = serde_json::from_str(&json_text("6.1", &[0, 1])).unwrap();
        let table = new
            .benchmarks
            .iter()
            .find(|t| t.name == "baseline test table")
            .unwrap();
        assert_eq!(table.rows[1].median, Some(2e6));

        let err = serde_json::from_str::<Baseline>(r#"{"schema": 1}"#).unwrap_err();
        assert!(err.to_string().contains("benchmarks"), "{err}");
    }

    fn rec(name: &str, metric: &str, rows: &[(&str, f64)]) -> Record {
        Record {
            name: name.into(),
            title: format!("{name}: test"),
            metric: metric.into(),
            format: Box::new(format_rate),
            rows: rows
                .iter()
                .map(|&(name, ratio)| Row {
                    name: name.into(),
                    median: 1e6 * ratio,
                    ratio: Some(ratio),
                    enters_per_op: (name != "tokio").then_some(0.03125),
                    ..Row::default()
                })
                .collect(),
        }
    }

    #[test]
    fn ratios_between_any_two_rows() {
        // Baseline tokio, as in `echo`: the raw ring row still gives a "vs raw" figure.
        let r = rec(
            "echo",
            "rt/s",
            &[("tokio", 1.0), ("raw ring", 1.5), ("rt", 0.75)],
        );
        assert_eq!(r.baseline().map(|b| b.name.as_str()), Some("tokio"));
        assert_eq!(r.vs(&r.rows[2], "raw"), Some(0.5));
        assert_eq!(r.vs(&r.rows[2], "tokio"), Some(0.75));
        assert_eq!(r.vs(&r.rows[2], "fio"), None);
        assert!(in_family("tokio current-thread", "tokio") && in_family("tokio", "tokio"));
        assert!(!in_family("tokio-uring", "tokio") && in_family("raw ring multishot", "raw"));
    }

    #[test]
    fn markdown_rows() {
        let recs = [
            rec(
                "poll",
                "req/s",
                &[("raw ring", 1.0), ("a|b", 0.5), ("tokio", 0.4)],
            ),
            rec(
                "echo-cores",
                "rt/s",
                &[("cores(1)", 1.0), ("cores(2)", 2.0)],
            ),
        ];
        let md = markdown(&recs);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 2 + 5, "{md}");
        assert_eq!(
            lines[0],
            "| benchmark | row | figure | unit | vs raw | vs tokio | enters/op |"
        );
        assert_eq!(
            lines[3],
            "| poll | a\\|b | 500.0k | req/s | 0.50x | 1.25x | 0.0312 |"
        );
        assert_eq!(
            lines[4],
            "| poll | tokio | 400.0k | req/s | 0.40x | 1.00x | - |"
        );
        assert_eq!(
            lines[6],
            "| echo-cores | cores(2) | 2.00M | rt/s | - | - | 0.0312 |"
        );
    }

    #[test]
    fn repeated_table_names_get_a_number() {
        let name = "dedupe test table";
        assert_eq!(record(rec(name, "x", &[("a", 1.0)])), "");
        record(rec(name, "x", &[("a", 1.0)]));
        record(rec(name, "x", &[("a", 1.0)]));
        let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
        let names: Vec<&str> = records
            .iter()
            .map(|r| r.name.as_str())
            .filter(|n| n.starts_with(name))
            .collect();
        assert_eq!(
            names,
            [name, "dedupe test table #2", "dedupe test table #3"]
        );
    }

    #[test]
    fn rss_is_positive() {
        assert!(peak_rss_kib() > 0);
        reset_peak_rss();
        assert!(peak_rss_kib() > 0);
    }
}
