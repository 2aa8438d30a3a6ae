//! fio as a contestant: found on `PATH`, run as a child process, its JSON report parsed.
//!
//! fio (<https://github.com/axboe/fio>) is the reference load generator for block and file
//! I/O, written by io_uring's author; its `io_uring` engine is the hand-tuned C loop a
//! runtime's file reads are measured against. Only `jobs[0].read.iops` and
//! `jobs[0].read.total_ios` are read from its `--output-format=json` report.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use crate::report::Measure;

/// The `fio` executable on `PATH`, if there is one.
pub fn find() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("fio"))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// One fio job: 4 KiB random reads of `file` at `depth` through the io_uring engine.
#[derive(Clone, Debug)]
pub struct Job {
    /// The fio executable.
    pub fio: PathBuf,
    /// The file to read (already laid out: fio reuses a file of the right size).
    pub file: PathBuf,
    /// The file's size in bytes (`--size`).
    pub size: u64,
    /// Block size in bytes (`--bs`).
    pub block: usize,
    /// Reads in flight (`--iodepth`).
    pub depth: usize,
    /// `O_DIRECT` (`--direct=1`) or the page cache.
    pub direct: bool,
}

impl Job {
    /// The command line for a run of `window` (fio takes `ms` suffixes on times).
    pub fn args(&self, window: Duration) -> Vec<String> {
        vec![
            "--name=read".to_string(),
            format!("--filename={}", self.file.display()),
            format!("--size={}", self.size),
            "--ioengine=io_uring".to_string(),
            "--rw=randread".to_string(),
            format!("--bs={}", self.block),
            format!("--iodepth={}", self.depth),
            format!("--direct={}", u8::from(self.direct)),
            // Keep the page cache: fio otherwise drops the file's pages before the run and
            // the "cached" figure measures the disk (shared/BENCHMARKS.md).
            "--invalidate=0".to_string(),
            // Offsets drawn with replacement, as the other contestants draw them, and without
            // the bookkeeping of a map of blocks already read.
            "--norandommap".to_string(),
            "--time_based".to_string(),
            format!("--runtime={}ms", window.as_millis().max(1)),
            "--output-format=json".to_string(),
        ]
    }

    /// Runs the job for `window`; the measure's rate is fio's `read.iops`.
    pub fn run(&self, window: Duration) -> io::Result<Measure> {
        let out = Command::new(&self.fio).args(self.args(window)).output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "fio failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim(),
                stdout.trim()
            )));
        }
        let (iops, total) = parse_read(&stdout).ok_or_else(|| {
            io::Error::other(format!("fio: no jobs[0].read.iops in its output: {stdout}"))
        })?;
        if iops <= 0.0 || total == 0 {
            return Err(io::Error::other(format!(
                "fio read nothing (iops {iops}, total_ios {total}): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        // ops / elapsed == iops exactly, and ops is what fio counted.
        Ok(Measure {
            ops: total,
            elapsed: Duration::from_secs_f64(total as f64 / iops),
            enters: None,
        })
    }
}

/// The part of fio's JSON report that is read.
#[derive(Deserialize)]
struct Report {
    jobs: Vec<JobReport>,
}

#[derive(Deserialize)]
struct JobReport {
    read: ReadReport,
}

#[derive(Deserialize)]
struct ReadReport {
    iops: f64,
    total_ios: u64,
}

/// `(read.iops, read.total_ios)` of the first job in fio's JSON report; fio may print notes
/// before the JSON (the report starts at the first line that starts with `{`) and after it.
fn parse_read(out: &str) -> Option<(f64, u64)> {
    let start = if out.starts_with('{') {
        0
    } else {
        out.find("\n{")? + 1
    };
    let mut reports = serde_json::Deserializer::from_str(&out[start..]).into_iter::<Report>();
    let report = reports.next()?.ok()?;
    let read = &report.jobs.first()?.read;
    Some((read.iops, read.total_ios))
}

/// `fio`'s path and `--version`, for the table's notes.
pub fn describe(fio: &Path) -> String {
    let version = Command::new(fio)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{} ({})", fio.display(), version)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"note: a line fio prints before the report
{
  "fio version" : "fio-3.33",
  "global options" : { "rw" : "read" },
  "jobs" : [
    {
      "jobname" : "read",
      "job options" : { "rw" : "randread", "bs" : "4k" },
      "read" : {
        "io_bytes" : 1638400,
        "bw" : 1600,
        "iops" : 400.5,
        "iops_min" : 1,
        "runtime" : 1000,
        "total_ios" : 400,
        "slat_ns" : { "min" : 1, "percentile" : { "1.000000" : 2 } }
      },
      "write" : { "iops" : 0.000000, "total_ios" : 0 }
    }
  ],
  "disk_util" : [ { "read_ios" : 12 } ]
}"#;

    #[test]
    fn parses_read_iops() {
        assert_eq!(parse_read(SAMPLE), Some((400.5, 400)));
        assert_eq!(
            parse_read(&format!("{SAMPLE}\nfio: a note after it")),
            Some((400.5, 400))
        );
        assert_eq!(parse_read("{}"), None);
        assert_eq!(parse_read("no report"), None);
    }

    #[test]
    fn args_name_the_job() {
        let job = Job {
            fio: PathBuf::from("fio"),
            file: PathBuf::from("/tmp/f"),
            size: 1 << 20,
            block: 4096,
            depth: 32,
            direct: true,
        };
        let args = job.args(Duration::from_millis(250));
        assert!(args.contains(&"--direct=1".to_string()));
        assert!(args.contains(&"--runtime=250ms".to_string()));
        assert!(args.contains(&"--iodepth=32".to_string()));
    }
}
