//! fio as a row of `bench read`: found on `PATH`, run as a child process, its JSON report parsed.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use super::read::{BLOCK, DEPTH};
use crate::harness::measure::Measure;

/// The `fio` executable on `PATH`, if there is one.
pub fn find() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &PathBuf| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("fio"))
        .find(executable)
}

/// One fio job: random reads of `file` through the io_uring engine, [`BLOCK`] bytes at depth [`DEPTH`].
#[derive(Clone, Debug)]
pub struct Job {
    /// The fio executable.
    pub fio: PathBuf,
    /// The file to read (already laid out: fio reuses a file of the right size).
    pub file: PathBuf,
    /// The file's size in bytes (`--size`).
    pub size: u64,
    /// `O_DIRECT` (`--direct=1`) or the page cache.
    pub direct: bool,
}

impl Job {
    /// The command line for a run of `window` (fio takes `ms` suffixes on times): the page cache kept.
    pub fn args(&self, window: Duration) -> Vec<String> {
        let (file, size, direct) = (self.file.display(), self.size, u8::from(self.direct));
        let ms = window.as_millis().max(1);
        [
            "--name=read".to_string(),
            format!("--filename={file}"),
            format!("--size={size}"),
            "--ioengine=io_uring".into(),
            "--rw=randread".into(),
            format!("--bs={BLOCK}"),
            format!("--iodepth={DEPTH}"),
            format!("--direct={direct}"),
            "--invalidate=0".into(),
            "--norandommap".into(),
            "--time_based".into(),
            format!("--runtime={ms}ms"),
            "--output-format=json".into(),
        ]
        .to_vec()
    }

    /// Runs the job for `window`; the measure's rate is fio's `read.iops`.
    pub fn run(&self, window: Duration) -> io::Result<Measure> {
        let out = Command::new(&self.fio).args(self.args(window)).output()?;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "fio failed ({}): {}{}",
                out.status,
                stderr.trim(),
                stdout.trim()
            )));
        }
        let no_iops =
            || io::Error::other(format!("fio: no jobs[0].read.iops in its output: {stdout}"));
        let (iops, total) = parse_read(&stdout).ok_or_else(no_iops)?;
        if iops <= 0.0 || total == 0 {
            let msg = format!(
                "fio read nothing (iops {iops}, total_ios {total}): {}",
                stderr.trim()
            );
            return Err(io::Error::other(msg));
        }
        // ops / elapsed == iops exactly, and ops is what fio counted.
        Ok(Measure::new(
            total,
            Duration::from_secs_f64(total as f64 / iops),
            None,
        ))
    }
}

/// The part of fio's JSON report that is read: `jobs[].read.{iops,total_ios}`.
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

/// `(read.iops, read.total_ios)` of the first job in fio's JSON report; fio may print notes before the JSON.
fn parse_read(out: &str) -> Option<(f64, u64)> {
    let start = if out.starts_with('{') {
        0
    } else {
        out.find("\n{")? + 1
    };
    let report: Report = serde_json::Deserializer::from_str(&out[start..])
        .into_iter()
        .next()?
        .ok()?;
    let read = &report.jobs.first()?.read;
    Some((read.iops, read.total_ios))
}

/// `fio`'s path and `--version`, for the table's notes.
pub fn describe(fio: &Path) -> String {
    let version = Command::new(fio).arg("--version").output();
    let version = version
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{} ({version})", fio.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_read_iops() {
        let report = r#"{ "fio version": "fio-3.33", "jobs": [ { "jobname": "read",
            "read": { "io_bytes": 1638400, "iops": 400.5, "total_ios": 400 },
            "write": { "iops": 0.0, "total_ios": 0 } } ] }"#;
        let noted = format!("note: a line before the report\n{report}\nfio: a note after it");
        assert_eq!(parse_read(report), Some((400.5, 400)));
        assert_eq!(parse_read(&noted), Some((400.5, 400)));
        assert_eq!(parse_read("{}"), None);
        assert_eq!(parse_read("no report"), None);
    }
}
