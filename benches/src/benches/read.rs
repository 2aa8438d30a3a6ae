//! `bench read`: 4 KiB random reads at depth 32 from one file, through the page cache and with `O_DIRECT`.

use std::cell::{Cell, RefCell};
use std::io::{self, Read as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use sysutil::{cpu_time, Who};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use super::fio;
use crate::harness::cli::Opts;
use crate::harness::measure::{
    alternate, in_flight, median, timed, tokio_current, Contestant, Measure, Plan, Tally,
};
use crate::harness::output::record;
use crate::harness::report::{
    format_per_op, format_rate, header, render_grid, Record, Row, Series,
};

/// Bytes per read, and the alignment of every offset.
pub(super) const BLOCK: usize = 4096;
/// Reads in flight at once, as in the RFC.
pub(super) const DEPTH: usize = 32;
/// Each read loop looks at the clock once per this many reads.
const CLOCK_EVERY: u64 = 16;
/// The runtime's row.
const RUNTIME: &str = "runtime 1 task x32";
/// fio's row.
const FIO: &str = "fio io_uring";

/// Runs the benchmark and prints one table per variant (page cache, `O_DIRECT`).
pub fn run(opts: &Opts) -> io::Result<()> {
    let size: u64 = if opts.quick { 256 << 20 } else { 1 << 30 };
    let plan = Plan {
        runs: opts.runs_or(2, 3),
        ..Plan::window(opts, opts.seconds_or(1.0, 3.0), 8, 100)
    };
    let dir = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let file = TestFile::create(&dir, size)?;
    let rt = runtime::Builder::new().entries(256).build()?;
    let trt = tokio_current()?;
    one_variant(false, &file, &rt, &trt, plan)?;
    println!();
    // Opening with O_DIRECT fails with EINVAL on filesystems without direct I/O.
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&file.path)
    {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let dir = dir.display();
            println!("read (O_DIRECT): the filesystem under {dir} refuses O_DIRECT ({e}); variant skipped");
            Ok(())
        }
        opened => opened.and_then(|_| one_variant(true, &file, &rt, &trt, plan)),
    }
}

fn one_variant(
    direct: bool,
    file: &TestFile,
    rt: &runtime::Runtime,
    trt: &tokio::runtime::Runtime,
    plan: Plan,
) -> io::Result<()> {
    let flags = if direct { libc::O_DIRECT } else { 0 };
    let blocks = file.size / BLOCK as u64;
    let rfile = match rt.block_on(
        corering_fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&file.path),
    ) {
        Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => {
            println!("read (O_DIRECT): the runtime's open refuses O_DIRECT ({e}); skipped");
            return Ok(());
        }
        opened => opened?,
    };
    // tokio::fs reads into its own unaligned buffer, so with O_DIRECT it fails with EINVAL.
    let tokio_name = ["tokio::fs", "tokio spawn_blocking pread"][usize::from(direct)];
    if !direct {
        trt.block_on(async {
            tokio::fs::File::open(&file.path)
                .await?
                .read_exact(&mut [0u8; BLOCK])
                .await
        })?;
    }
    let seed = Cell::new(0x5eed_0000_u64);
    let next_seed = || {
        seed.set(seed.get() + 1);
        seed.get()
    };
    let tally = Tally::default();
    let fio_path = fio::find();
    let job = fio_path.as_ref().map(|fio| fio::Job {
        fio: fio.clone(),
        file: file.path.clone(),
        size: file.size,
        direct,
    });
    let ms = Duration::from_millis;
    let cpu: [RefCell<Vec<Duration>>; 3] = Default::default();
    let mut contestants = vec![Contestant::new(RUNTIME, |n| {
        with_cpu(Who::Process, &cpu[0], || {
            runtime_reads(rt, &rfile, blocks, ms(n), next_seed(), &tally)
        })
    })];
    if let Some(job) = &job {
        contestants.push(Contestant::new(FIO, |n| {
            with_cpu(Who::Children, &cpu[1], || job.run(ms(n)))
        }));
    }
    contestants.push(Contestant::new(tokio_name, |n| {
        with_cpu(Who::Process, &cpu[2], || {
            tokio_reads(trt, &file.path, direct, blocks, ms(n), next_seed())
        })
    }));
    let (series, _) = alternate(&mut contestants, plan)?;
    drop(contestants);
    // The first CPU figure of each contestant is its warm-up run's; fio's row may be absent.
    let cpu: Vec<Vec<Duration>> = (cpu.into_iter())
        .map(|c| c.into_inner().into_iter().skip(1).collect())
        .filter(|c: &Vec<Duration>| !c.is_empty())
        .collect();
    let title = format!(
        "read ({}): {} KiB random reads, depth {DEPTH}, {} MiB file, {:.1} s runs, median of {} runs",
        if direct { "O_DIRECT" } else { "page cache" },
        BLOCK / 1024,
        file.size >> 20,
        plan.count as f64 / 1000.0,
        plan.runs
    );
    print!("{}", render(&title, &series, &cpu, job.is_some()));
    let rate = |name: &str| {
        series
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.rates().median)
    };
    let us = rate(RUNTIME).unwrap_or(0.0);
    let verdict = |r: Option<f64>, bar: f64| {
        r.map_or("n/a".into(), |r| {
            format!(
                "{:.2}x ({})",
                us / r,
                if us / r >= bar { "met" } else { "missed" }
            )
        })
    };
    let (fio_vs, tokio_vs) = (verdict(rate(FIO), 0.9), verdict(rate(tokio_name), 3.0));
    println!("  target: >= 0.9x fio's IOPS and >= 3x tokio::fs; here {fio_vs} fio, {tokio_vs} {tokio_name}");
    println!("  file: {} ({})", file.path.display(), file.created);
    println!(
        "  {RUNTIME}: ring flags {}; one task, {DEPTH} read_at futures in pinned boxes, each slot's box and 4 KiB \
         AlignedBuf reused",
        rt.flags()
    );
    println!("  {}", tally.note(RUNTIME));
    if let (Some(fio), Some(job)) = (&fio_path, &job) {
        println!(
            "  fio: {}; {}",
            fio::describe(fio),
            job.args(ms(plan.count)).join(" ")
        );
    }
    let how = match direct {
        false => ", each its own tokio::fs::File, seek + read_exact per read (two trips to the blocking pool per read)",
        true => {
            "; tokio::fs::File gets EINVAL here (its buffer is not aligned for O_DIRECT), so each read is \
                 spawn_blocking(pread) into an aligned buffer"
        }
    };
    println!("  {tokio_name}: tokio current-thread runtime, {DEPTH} tasks{how}");
    Ok(())
}

/// The table: IOPS, ratios to fio and to the tokio row, enters, CPU per read and CPUs busy.
fn render(title: &str, series: &[Series], cpu: &[Vec<Duration>], have_fio: bool) -> String {
    let (fio, tokio) = (series.iter().position(|s| s.name == FIO), series.len() - 1);
    let vs = |i: usize, b: usize| series[i].rates().median / series[b].rates().median;
    // CPU microseconds per read, and CPU time over wall time (1.0: one core kept busy).
    let per_run = |i: usize, f: fn(&Measure, &Duration) -> f64| {
        let v: Vec<f64> = series[i]
            .runs
            .iter()
            .zip(&cpu[i])
            .map(|(m, c)| f(m, c))
            .collect();
        median(&v)
    };
    let head = [
        "",
        "IOPS median",
        "min",
        "max",
        "vs fio",
        "vs tokio",
        "enters/read",
    ];
    let (mut grid, mut rows) = (vec![header(&head)], Vec::new());
    grid[0].extend(["CPU us/read", "CPUs busy"].map(String::from));
    for (i, s) in series.iter().enumerate() {
        let per_read = per_run(i, |m, c| c.as_secs_f64() * 1e6 / m.ops.max(1) as f64);
        let busy = per_run(i, |m, c| {
            c.as_secs_f64() / m.elapsed.as_secs_f64().max(1e-9)
        });
        let sum = s.rates();
        let mut row = vec![s.name.clone()];
        row.extend([sum.median, sum.min, sum.max].map(format_rate));
        row.push(fio.map_or("-".into(), |f| format!("{:.2}x", vs(i, f))));
        row.push(format!("{:.2}x", vs(i, tokio)));
        row.push(s.enters_per_op().map_or("-".into(), format_per_op));
        row.extend([per_read, busy].map(|v| format!("{v:.2}")));
        grid.push(row);
        let mut extra = vec![
            ("cpu_us_per_read".into(), per_read),
            ("cpus_busy".into(), busy),
        ];
        extra.extend(fio.map(|f| ("vs_fio".to_string(), vs(i, f))));
        rows.push(Row::of(s, sum, Some(vs(i, tokio)), extra));
    }
    let mut out = format!("{title}\n{}", render_grid(&grid, 2));
    if !have_fio {
        out.push_str("  fio: not installed (apt-get install fio)\n");
    }
    out + &record(Record::new(title, "IOPS", format_rate, rows))
}

/// Runs `f`, pushing the CPU time `who` spent meanwhile onto `log`.
fn with_cpu(
    who: Who,
    log: &RefCell<Vec<Duration>>,
    f: impl FnOnce() -> io::Result<Measure>,
) -> io::Result<Measure> {
    let before = cpu_time(who);
    let m = f()?;
    log.borrow_mut().push(cpu_time(who).saturating_sub(before));
    Ok(m)
}

/// A random `BLOCK`-aligned offset in a file of `blocks` blocks.
fn offset(rng: &mut fastrand::Rng, blocks: u64) -> u64 {
    rng.u64(..blocks) * BLOCK as u64
}

/// A whole block or an error: a short read of this file means something is wrong.
fn whole(res: io::Result<usize>, pos: u64) -> io::Result<()> {
    match res? {
        BLOCK => Ok(()),
        n => Err(io::Error::other(format!(
            "short read: {n} of {BLOCK} bytes at offset {pos}"
        ))),
    }
}

/// The runtime: one task keeping `DEPTH` `read_at` futures in flight (`in_flight`) until `window` ends.
fn runtime_reads(
    rt: &runtime::Runtime,
    file: &corering_fs::File,
    blocks: u64,
    window: Duration,
    seed: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        let (deadline, mut rng, mut ops) = (
            Instant::now() + window,
            fastrand::Rng::with_seed(seed),
            0u64,
        );
        let read = |buf, pos| {
            file.read_at(buf, pos)
                .map(move |(res, buf)| (res, buf, pos))
        };
        let mut first = Vec::with_capacity(DEPTH);
        for _ in 0..DEPTH {
            first.push(read(
                corering_fs::AlignedBuf::with_capacity(BLOCK)?,
                offset(&mut rng, blocks),
            ));
        }
        let mut stop = false;
        in_flight(first, |(res, buf, pos)| {
            whole(res, pos)?;
            ops += 1;
            stop |= ops.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline;
            Ok((!stop).then(|| read(buf, offset(&mut rng, blocks))))
        })
        .await?;
        Ok(ops)
    }))
}

/// The tokio row: `DEPTH` tasks on the current-thread runtime until `window` ends.
fn tokio_reads(
    trt: &tokio::runtime::Runtime,
    path: &Path,
    direct: bool,
    blocks: u64,
    window: Duration,
    seed: u64,
) -> io::Result<Measure> {
    let flags = if direct { libc::O_DIRECT } else { 0 };
    trt.block_on(async move {
        // Opened before the clock starts: the loop, not 32 opens, is measured.
        let mut files = Vec::with_capacity(DEPTH);
        for _ in 0..DEPTH {
            let mut open = tokio::fs::OpenOptions::new();
            files.push(open.read(true).custom_flags(flags).open(path).await?);
        }
        let start = Instant::now();
        let handles: Vec<_> = (files.into_iter().zip(0u64..))
            .map(|(f, i)| {
                let rng = fastrand::Rng::with_seed(seed.wrapping_mul(64) + i);
                tokio::spawn(tokio_task(f, direct, rng, blocks, start + window))
            })
            .collect();
        let mut ops = 0;
        for handle in handles {
            ops += handle.await.map_err(io::Error::other)??;
        }
        Ok(Measure::since(ops, start))
    })
}

/// One tokio task's reads until `deadline`: `seek` + `read_exact` through `tokio::fs::File`, or with `direct`
/// `spawn_blocking(pread)` into an aligned buffer (the `O_DIRECT` row).
async fn tokio_task(
    mut f: tokio::fs::File,
    direct: bool,
    mut rng: fastrand::Rng,
    blocks: u64,
    deadline: Instant,
) -> io::Result<u64> {
    let (mut buf, mut aligned, mut n) = (
        vec![0u8; BLOCK],
        corering_fs::AlignedBuf::with_capacity(BLOCK)?,
        0u64,
    );
    aligned.set_len(BLOCK);
    let std = match direct {
        true => Some(Arc::new(f.try_clone().await?.into_std().await)),
        false => None,
    };
    loop {
        let pos = offset(&mut rng, blocks);
        if let Some(file) = std.clone() {
            let read =
                tokio::task::spawn_blocking(move || (file.read_at(&mut aligned, pos), aligned));
            let res;
            (res, aligned) = read.await.map_err(io::Error::other)?;
            whole(res, pos)?;
        } else {
            f.seek(SeekFrom::Start(pos)).await?;
            f.read_exact(&mut buf).await?;
        }
        n += 1;
        if n.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline {
            return Ok(n);
        }
    }
}

/// The benchmark's file, in the page cache; removed on drop.
struct TestFile {
    path: PathBuf,
    size: u64,
    /// How creating it went, for the notes.
    created: String,
}

impl TestFile {
    fn create(dir: &Path, size: u64) -> io::Result<TestFile> {
        let path = dir.join(format!("bench-read-{}.dat", std::process::id()));
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path);
        let mut f = created
            .map_err(|e| io::Error::new(e.kind(), format!("create {}: {e}", path.display())))?;
        // From here on the file is removed however this ends.
        let mut file = TestFile {
            path,
            size,
            created: String::new(),
        };
        let (start, mut rng, mut chunk) = (
            Instant::now(),
            fastrand::Rng::with_seed(size),
            vec![0u8; 1 << 20],
        );
        let mut left = size;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                word.copy_from_slice(&(rng.u64(..) | 0x0101_0101_0101_0101).to_ne_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
        let (written, start) = (start.elapsed(), Instant::now());
        let (mut f, mut total) = (std::fs::File::open(&file.path)?, 0u64);
        loop {
            match f.read(&mut chunk)? {
                0 => break,
                n => total += n as u64,
            }
        }
        if total != size {
            return Err(io::Error::other(format!(
                "{}: read back {total} of {size} bytes",
                file.path.display()
            )));
        }
        let (w, r) = (written.as_secs_f64(), start.elapsed().as_secs_f64());
        file.created =
            format!("written and fsynced in {w:.2} s, read into the page cache in {r:.2} s");
        Ok(file)
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            eprintln!("bench read: could not remove {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_test_file() {
        let (mut rng, blocks) = (fastrand::Rng::with_seed(1), 1000);
        let offs: std::collections::HashSet<u64> =
            (0..10_000).map(|_| offset(&mut rng, blocks)).collect();
        assert!(offs
            .iter()
            .all(|o| o % BLOCK as u64 == 0 && *o < blocks * BLOCK as u64));
        assert!(offs.len() > 900, "poorly spread: {}", offs.len());
        let file = TestFile::create(&std::env::temp_dir(), 8 * BLOCK as u64).unwrap();
        let data = std::fs::read(&file.path).unwrap();
        assert!(data.len() == 8 * BLOCK && data.iter().all(|&b| b != 0));
        let path = file.path.clone();
        drop(file);
        assert!(!path.exists());
    }
}
