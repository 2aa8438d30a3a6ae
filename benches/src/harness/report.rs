//! Result tables: median, min and max over runs, ratios to a baseline row, enters per op, peak RSS.

use std::fmt::Write as _;

use serde::{Serialize, Serializer};

use super::measure::{Measure, Summary};
use super::output::record;

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

/// The median over alternation rounds of `row`'s rate divided by `base`'s in the same round.
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
    /// Figures a table prints beside the main ones (e.g. `server_cpu_us_per_op`).
    pub extra: Vec<(String, f64)>,
}

impl Series {
    /// A series with no runs yet.
    pub fn new(name: &str) -> Series {
        Series {
            name: name.to_string(),
            runs: Vec::new(),
            peak_rss_kib: 0,
            extra: Vec::new(),
        }
    }

    /// The rates of its runs, summarised.
    pub fn rates(&self) -> Summary {
        Summary::of(&self.runs.iter().map(Measure::rate).collect::<Vec<_>>())
    }

    /// `io_uring_enter` calls per operation over all runs, if the contestant counts them.
    pub fn enters_per_op(&self) -> Option<f64> {
        let (mut enters, mut ops) = (0, 0);
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
    pub ratio_label: &'static str,
    /// Index in `series` of the row every ratio is taken against.
    pub baseline: usize,
    /// One row per contestant.
    pub series: Vec<Series>,
    /// Lines printed under the table (targets, flags, caveats).
    pub notes: Vec<String>,
}

impl Table {
    /// Renders the table as aligned text and records it for `--json`, followed by the `--compare` lines, if any.
    pub fn render(&self) -> String {
        let (metric, base, tokio) = (self.metric, self.median(self.baseline), self.tokio_median());
        let mut head = header(&["", &format!("{} median", metric.label()), "min", "max"]);
        head.push(self.ratio_label.to_string());
        head.extend(tokio.map(|_| "vs tokio".to_string()));
        head.extend(["enters/op".to_string(), "peak RSS".to_string()]);
        let mut grid = vec![head];
        for (i, s) in self.series.iter().enumerate() {
            let sum = Summary::of(&self.values(i));
            let mut row = vec![s.name.clone()];
            row.extend([sum.median, sum.min, sum.max].map(|v| metric.format(v)));
            row.push(format!("{:.2}x", metric.speedup(sum.median, base)));
            row.extend(tokio.map(|t| format!("{:.2}x", metric.speedup(sum.median, t))));
            row.push(s.enters_per_op().map_or_else(|| "-".into(), format_per_op));
            row.push(format!("{:.1} MiB", s.peak_rss_kib as f64 / 1024.0));
            grid.push(row);
        }
        let mut out = format!("{}\n{}", self.title, render_grid(&grid, 2));
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        out + &record(self.record(base))
    }

    /// The figures `render` prints, for `--json` and `--compare`.
    fn record(&self, base: f64) -> Record {
        let (metric, tokio) = (self.metric, self.tokio_median());
        let rows = (self.series.iter().enumerate())
            .map(|(i, s)| {
                let sum = Summary::of(&self.values(i));
                let mut extra = vec![("runs".to_string(), s.runs.len() as f64)];
                extra.extend(
                    tokio.map(|t| ("ratio_vs_tokio".into(), metric.speedup(sum.median, t))),
                );
                extra.extend(s.extra.iter().cloned());
                Row::of(s, sum, Some(metric.speedup(sum.median, base)), extra)
            })
            .collect();
        Record::new(&self.title, metric.label(), move |v| metric.format(v), rows)
    }

    /// The median of the first tokio row, when the table has one and it is not already the baseline.
    fn tokio_median(&self) -> Option<f64> {
        let i = self
            .series
            .iter()
            .position(|s| in_family(&s.name, "tokio"))?;
        (i != self.baseline).then(|| self.median(i))
    }

    fn median(&self, i: usize) -> f64 {
        Summary::of(&self.values(i)).median
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

impl Row {
    /// `s`'s row with the figures `sum`, `ratio` and `extra`.
    pub fn of(s: &Series, sum: Summary, ratio: Option<f64>, extra: Vec<(String, f64)>) -> Row {
        let (name, enters_per_op) = (s.name.clone(), s.enters_per_op());
        let (median, min, max) = (sum.median, sum.min, sum.max);
        let peak_rss_bytes = Some(s.peak_rss_kib * 1024);
        Row {
            name,
            median,
            min,
            max,
            ratio,
            enters_per_op,
            peak_rss_bytes,
            extra,
        }
    }
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
    /// Prints a median as the table does (for `--compare` and `--markdown`).
    #[serde(skip)]
    pub format: Box<dyn Fn(f64) -> String + Send>,
    /// One per contestant.
    pub rows: Vec<Row>,
}

impl Record {
    /// A record of the table titled `title`, keyed by the title up to its first `:`.
    pub fn new(
        title: &str,
        metric: impl Into<String>,
        format: impl Fn(f64) -> String + Send + 'static,
        rows: Vec<Row>,
    ) -> Record {
        let name = title.split(':').next().unwrap_or(title).trim().to_string();
        Record {
            name,
            title: title.to_string(),
            metric: metric.into(),
            format: Box::new(format),
            rows,
        }
    }

    /// How many times better `row` is than the table's first row of the family `prefix`.
    pub fn vs(&self, row: &Row, prefix: &str) -> Option<f64> {
        let other = self.rows.iter().find(|r| in_family(&r.name, prefix))?;
        Some(row.ratio? / other.ratio?).filter(|q| q.is_finite())
    }
}

/// Aligns `rows` (the first is the header) in columns, the first left-aligned and the others right-aligned.
pub fn render_grid(rows: &[Vec<String>], indent: usize) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |c: usize| {
        rows.iter()
            .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
            .max()
    };
    let widths: Vec<usize> = (0..ncol).map(|c| width(c).unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let mut line = " ".repeat(indent.saturating_sub(2));
        for (c, (cell, w)) in row.iter().zip(&widths).enumerate() {
            let _ = if c == 0 {
                write!(line, "  {cell:<w$}")
            } else {
                write!(line, "  {cell:>w$}")
            };
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// A header row of a [`render_grid`] table from its column names.
pub fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `11_400_000.0` -> `11.40M`.
pub fn format_rate(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2}G", v / 1e9),
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.1}"),
    }
}

/// `0.03125` -> `0.0312 (1/32.0)`; zero prints as `0`.
pub fn format_per_op(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        format!("{v:.4} (1/{:.1})", 1.0 / v)
    }
}

/// Whether a row named `name` belongs to `family` ("raw", "tokio").
pub fn in_family(name: &str, family: &str) -> bool {
    name.strip_prefix(family)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn series(name: &str, secs: &[f64]) -> Series {
        let mut s = Series::new(name);
        let run = |&s: &f64| Measure::new(1000, Duration::from_secs_f64(s), None);
        s.runs = secs.iter().map(run).collect();
        s
    }

    /// A row's figures reach `--json` in order, `ratio_vs_tokio` and the series' own extras included.
    #[test]
    fn json_rows_and_paired_ratios() {
        let paired = paired_ratio(
            &series("rt", &[1.25, 2.5, 2.5]),
            &series("raw", &[1.0, 2.0, 2.0]),
        )
        .unwrap();
        assert!((paired - 0.8).abs() < 1e-9, "{paired}");
        let mut s = series("runtime", &[1.0]);
        s.extra.push(("server_cpu_us_per_op".to_string(), 3.5));
        let table = Table {
            title: "echo: \"a\" test".into(),
            metric: Metric::Rate("rt/s"),
            ratio_label: "vs x",
            baseline: 0,
            series: vec![s, series("tokio", &[2.0])],
            notes: vec![],
        };
        let text = serde_json::to_string(&table.record(1000.0)).unwrap();
        let want = concat!(
            r#"{"name":"echo","title":"echo: \"a\" test","metric":"rt/s","rows":[{"name":"runtime","median":1000.0,"#,
            r#""min":1000.0,"max":1000.0,"ratio":1.0,"enters_per_op":null,"peak_rss_bytes":0,"#,
            r#""extra":{"runs":1.0,"ratio_vs_tokio":2.0,"server_cpu_us_per_op":3.5}}"#
        );
        assert!(text.starts_with(want), "{text}");
    }
}
