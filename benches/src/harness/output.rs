//! Where results go besides the terminal.

use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use super::report::Record;

/// Every table recorded so far in this process, for `--json` and `--markdown`.
static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());
/// The file `--compare` named: its path as given, and its tables.
static BASELINE: Mutex<Option<(String, Baseline)>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `--compare` reads of an earlier `--json` file: each table's name and rows, each row's name and median.
#[derive(Debug, Deserialize)]
struct Baseline {
    benchmarks: Vec<Old>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Old {
    name: String,
    median: Option<f64>,
    rows: Vec<Old>,
}

/// Loads the `--compare` file; every table recorded afterwards is compared with it.
pub fn load_baseline(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--compare {path}: {e}"))?;
    let old = serde_json::from_str(&text).map_err(|e| format!("--compare {path}: {e}"))?;
    *lock(&BASELINE) = Some((path.to_string(), old));
    Ok(())
}

/// Records a printed table for `--json`; returns the `--compare` lines to print under it.
pub fn record(mut rec: Record) -> String {
    let mut records = lock(&RECORDS);
    let numbered = format!("{} #", rec.name);
    let taken = records
        .iter()
        .filter(|r| r.name == rec.name || r.name.starts_with(&numbered))
        .count();
    if taken > 0 {
        rec.name = format!("{} #{}", rec.name, taken + 1);
    }
    let mut out = String::new();
    if let Some((path, old)) = lock(&BASELINE).as_ref() {
        let table = old.benchmarks.iter().find(|t| t.name == rec.name);
        for row in &rec.rows {
            let before = table.and_then(|t| t.rows.iter().find(|r| r.name == row.name));
            if let Some(before) = before.and_then(|r| r.median) {
                let line = compare_line(path, &row.name, before, row.median, &rec.format);
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    records.push(rec);
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
    let (pct, mark) = match change.is_finite() {
        true => (
            format!("{change:+.1}%"),
            if change.abs() <= 5.0 { "" } else { " !" },
        ),
        false => ("n/a".to_string(), " !"),
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
    // UTC to the second (empty past the year 9999).
    let now = OffsetDateTime::now_utc()
        .to_offset(UtcOffset::UTC)
        .replace_nanosecond(0)
        .ok();
    let date = now
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default();
    let doc = Doc {
        schema: 1,
        date,
        kernel,
        cpus,
        benchmarks: &lock(&RECORDS),
    };
    serde_json::to_string_pretty(&doc).expect("a Doc is always serializable") + "\n"
}

/// Every recorded row in one markdown table (`--markdown`).
pub fn markdown_summary() -> String {
    markdown(&lock(&RECORDS))
}

fn markdown(records: &[Record]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let num =
        |v: Option<f64>, f: fn(f64) -> String| v.filter(|v| v.is_finite()).map_or("-".into(), f);
    let ratio = |r: f64| format!("{r:.2}x");
    let mut out = String::from(
        "| benchmark | row | figure | unit | vs raw | vs tokio | enters/op |\n\
         |---|---|---:|---|---:|---:|---:|\n",
    );
    for rec in records {
        for row in &rec.rows {
            let (raw, tokio) = (
                num(rec.vs(row, "raw"), ratio),
                num(rec.vs(row, "tokio"), ratio),
            );
            let enters = num(row.enters_per_op, |v| format!("{v:.4}"));
            let (name, figure) = (cell(&rec.name), cell(&(rec.format)(row.median)));
            let (row, unit) = (cell(&row.name), cell(&rec.metric));
            let _ = writeln!(
                out,
                "| {name} | {row} | {figure} | {unit} | {raw} | {tokio} | {enters} |"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::report::{format_rate, Row};

    fn rec(name: &str, rows: &[(&str, f64)]) -> Record {
        let row = |&(name, ratio): &(&str, f64)| Row {
            name: name.into(),
            median: 1e6 * ratio,
            ratio: Some(ratio),
            enters_per_op: (name != "tokio").then_some(0.03125),
            ..Row::default()
        };
        Record::new(
            &format!("{name}: test"),
            "x/s",
            format_rate,
            rows.iter().map(row).collect(),
        )
    }

    #[test]
    fn compare_and_markdown_lines() {
        let f = |v: f64| format_rate(v);
        let line = compare_line("a.json", "raw ring", 11.59e6, 11.62e6, &f);
        assert_eq!(line, "vs a.json: raw ring 11.59M -> 11.62M (+0.3%)");
        let line = compare_line("a.json", "x", 100.0, 90.0, &f);
        assert_eq!(line, "vs a.json: x 100.0 -> 90.0 (-10.0%) !");
        let md = markdown(&[rec(
            "poll",
            &[("raw ring", 1.0), ("a|b", 0.5), ("tokio", 0.4)],
        )]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[3],
            "| poll | a\\|b | 500.0k | x/s | 0.50x | 1.25x | 0.0312 |"
        );
        assert_eq!(
            lines[4],
            "| poll | tokio | 400.0k | x/s | 0.40x | 1.00x | - |"
        );
    }

    /// `--compare` reads the file the last full run wrote (`benches/results/`) and the files this build writes.
    #[test]
    fn baseline_reads_committed_and_written_files() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/2026-12-01-all.json");
        let old: Baseline = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let echo2 = old.benchmarks.iter().find(|t| t.name == "echo #2").unwrap();
        assert!(echo2.rows[0].median.is_some_and(|m| m > 0.0));
        for _ in 0..2 {
            record(rec("baseline test", &[("a", 1.0), ("b", 2.0)]));
        }
        let new: Baseline = serde_json::from_str(&json_text("6.1", &[0, 1])).unwrap();
        let table = new
            .benchmarks
            .iter()
            .find(|t| t.name == "baseline test #2")
            .unwrap();
        assert_eq!(table.rows[1].median, Some(2e6));
    }
}
