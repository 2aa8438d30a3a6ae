//! `bench read`: 4 KiB random reads at queue depth 32 from one file, page cache and O_DIRECT.
//!
//! Seed 003 (bio caching) measures random 4 KiB reads at depth 32. One file (1 GiB, 256 MiB
//! with `--quick`) is created under `$BENCH_DIR` or the temp dir, filled with non-zero data,
//! fsynced, read once end to end so the page cache holds it, shared by every contestant, and
//! removed at the end, on error too. Two variants: through the page cache, and with
//! `O_DIRECT` (skipped where the filesystem refuses it, as tmpfs does with `EINVAL`).
//! Contestants, alternated run by run in this process (see `harness.rs`), each reading for a
//! fixed window:
//! - `runtime 1 task x32`: one task keeping 32 `corering_fs::File::read_at` futures in flight, each
//!   with its own owned 4 KiB [`corering_fs::AlignedBuf`] and a random 4 KiB-aligned offset (xorshift,
//!   seeded), the next read started in a slot as soon as its last one completes. It measured
//!   about 5% faster through the page cache than 32 `spawn_local` tasks each looping one
//!   `read_at` (the same on `O_DIRECT`), so it is the row kept;
//! - `fio io_uring`: `fio --ioengine=io_uring --rw=randread --bs=4k --iodepth=32`, as a child
//!   process, its `read.iops` parsed (see `fio.rs`); skipped with a note when not installed;
//! - `tokio::fs`: 32 tasks on a tokio current-thread runtime, each with its own
//!   `tokio::fs::File`, `seek` then `read_exact` per read. Both go to tokio's blocking thread
//!   pool, which is what gives the current-thread runtime its concurrency (up to 32 reads in
//!   blocking threads at once), and is the cost being compared. With `O_DIRECT` the same, but
//!   tokio's internal buffer is a plain `Vec` and may be too badly aligned for the kernel: then
//!   the row falls back to `spawn_blocking(pread)` into an aligned buffer, and says so.
//!
//! Every contestant checks the clock once every [`CLOCK_EVERY`] reads and stops at the end
//! of its window; its rate is reads completed over the time until all of them finished.
//! Beside IOPS the table shows CPU time per read and CPUs busy (getrusage: `RUSAGE_SELF`
//! for the in-process rows, which counts io_uring's io-wq workers and tokio's blocking
//! threads, `RUSAGE_CHILDREN` for fio, which counts its start-up too): on a two-core machine
//! a row can be faster only by keeping both cores busy.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future as _};
use std::io::{self, Read as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use sysutil::{cpu_time, Who};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use crate::fio;
use crate::harness::{alternate, Contestant, Plan};
use crate::report::{self, format_rate, render_grid, Measure, Record, Row, Series, Summary, Tally};
use crate::Opts;

/// Bytes per read, and the alignment of every offset.
const BLOCK: usize = 4096;
/// Reads in flight at once, as in the seed.
const DEPTH: usize = 32;
/// Ring size of the runtime.
const ENTRIES: u32 = 256;
/// Each read loop looks at the clock once per this many reads.
const CLOCK_EVERY: u64 = 16;
/// The runtime's row.
const RUNTIME: &str = "runtime 1 task x32";
/// fio's row.
const FIO: &str = "fio io_uring";

/// Page cache or `O_DIRECT`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Cached,
    Direct,
}

impl Variant {
    fn flags(self) -> i32 {
        match self {
            Variant::Cached => 0,
            Variant::Direct => libc::O_DIRECT,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Variant::Cached => "page cache",
            Variant::Direct => "O_DIRECT",
        }
    }
}

/// Runs the benchmark and prints one table per variant.
pub fn run(opts: &Opts) -> io::Result<()> {
    let size: u64 = if opts.quick { 256 << 20 } else { 1 << 30 };
    let secs = opts.seconds.unwrap_or(if opts.quick { 1.0 } else { 3.0 });
    let window_ms = (secs * 1000.0).round().max(1.0) as u64;
    let plan = Plan {
        count: window_ms,
        warmup: (window_ms / 8).max(100),
        runs: opts.runs.unwrap_or(if opts.quick { 2 } else { 3 }),
        seconds: None,
        granule: 1,
    };
    let dir = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let file = TestFile::create(&dir, size)?;
    let fio = fio::find();
    let rt = runtime::Builder::new().entries(ENTRIES).build()?;
    let trt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    one_variant(Variant::Cached, &file, &rt, &trt, fio.as_deref(), plan)?;
    println!();
    match direct_refused(&file.path)? {
        Some(e) => println!(
            "read ({}): the filesystem under {} refuses O_DIRECT ({e}); variant skipped",
            Variant::Direct.label(),
            dir.display()
        ),
        None => one_variant(Variant::Direct, &file, &rt, &trt, fio.as_deref(), plan)?,
    }
    Ok(())
}

/// `Some(error)` when opening `path` with `O_DIRECT` fails with `EINVAL` (tmpfs and other
/// filesystems without direct I/O), `None` when it opens; other errors are errors.
fn direct_refused(path: &Path) -> io::Result<Option<io::Error>> {
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(_) => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Some(e)),
        Err(e) => Err(e),
    }
}

/// How the tokio row reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TokioMode {
    /// `tokio::fs::File`: `seek` then `read_exact`.
    Fs,
    /// `spawn_blocking` of a `pread` into an aligned buffer (`O_DIRECT` where `tokio::fs`
    /// cannot).
    BlockingPread,
}

impl TokioMode {
    fn name(self) -> &'static str {
        match self {
            TokioMode::Fs => "tokio::fs",
            TokioMode::BlockingPread => "tokio spawn_blocking pread",
        }
    }
}

fn one_variant(
    variant: Variant,
    file: &TestFile,
    rt: &runtime::Runtime,
    trt: &tokio::runtime::Runtime,
    fio: Option<&Path>,
    plan: Plan,
) -> io::Result<()> {
    let blocks = file.size / BLOCK as u64;
    let rfile = match rt.block_on(
        corering_fs::OpenOptions::new()
            .read(true)
            .custom_flags(variant.flags())
            .open(&file.path),
    ) {
        Ok(f) => Rc::new(f),
        Err(e) if variant == Variant::Direct && e.raw_os_error() == Some(libc::EINVAL) => {
            println!("read (O_DIRECT): the runtime's open refuses O_DIRECT ({e}); skipped");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    // tokio::fs reads into its own unaligned buffer, so with O_DIRECT it fails with EINVAL,
    // except when the allocator happens to return a block aligned enough: probing once would
    // make the row flaky, so O_DIRECT always takes the spawn_blocking(pread) path.
    let tokio_mode = if variant == Variant::Direct {
        TokioMode::BlockingPread
    } else {
        tokio_probe(trt, &file.path, variant)?;
        TokioMode::Fs
    };
    let seed = Cell::new(0x5eed_0000_u64);
    let next_seed = || {
        seed.set(seed.get() + 1);
        seed.get()
    };
    let tally = Tally::default();
    let job = fio.map(|fio| fio::Job {
        fio: fio.to_path_buf(),
        file: file.path.clone(),
        size: file.size,
        block: BLOCK,
        depth: DEPTH,
        direct: variant == Variant::Direct,
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
    contestants.push(Contestant::new(tokio_mode.name(), |n| {
        with_cpu(Who::Process, &cpu[2], || {
            tokio_reads(
                trt,
                &file.path,
                variant,
                tokio_mode,
                blocks,
                ms(n),
                next_seed(),
            )
        })
    }));
    let (series, _) = alternate(&mut contestants, plan)?;
    drop(contestants);
    // The first CPU figure of each contestant is its warm-up run's; fio's row may be absent.
    let cpu: Vec<Vec<Duration>> = cpu
        .into_iter()
        .map(|c| c.into_inner().into_iter().skip(1).collect())
        .filter(|c: &Vec<Duration>| !c.is_empty())
        .collect();

    let title = format!(
        "read ({}): {} KiB random reads, depth {DEPTH}, {} MiB file, {:.1} s runs, \
         median of {} runs",
        variant.label(),
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
            .map(|s| Summary::of(&s.runs.iter().map(Measure::rate).collect::<Vec<_>>()).median)
    };
    let us = rate(RUNTIME).unwrap_or(0.0);
    let verdict = |r: Option<f64>, bar: f64| match r {
        Some(r) => format!(
            "{:.2}x ({})",
            us / r,
            if us / r >= bar { "met" } else { "missed" }
        ),
        None => "n/a".to_string(),
    };
    println!(
        "  target: >= 0.9x fio's IOPS and >= 3x tokio::fs; here {} fio, {} {}",
        verdict(rate(FIO), 0.9),
        verdict(rate(tokio_mode.name()), 3.0),
        tokio_mode.name()
    );
    println!("  file: {} ({})", file.path.display(), file.created);
    println!(
        "  {RUNTIME}: ring flags {}; one task, {DEPTH} read_at futures in pinned boxes, \
         each slot's box and 4 KiB AlignedBuf reused",
        rt.flags()
    );
    println!("  {}", tally.note(RUNTIME));
    if let (Some(fio), Some(job)) = (fio, &job) {
        println!(
            "  fio: {}; {}",
            fio::describe(fio),
            job.args(ms(plan.count)).join(" ")
        );
    }
    println!(
        "  {}: tokio current-thread runtime, {DEPTH} tasks{}",
        tokio_mode.name(),
        match tokio_mode {
            TokioMode::Fs =>
                ", each its own tokio::fs::File, seek + read_exact per read (two trips to \
                 the blocking pool per read)",
            TokioMode::BlockingPread =>
                "; tokio::fs::File gets EINVAL here (its buffer is not aligned for O_DIRECT), \
                 so each read is spawn_blocking(pread) into an aligned buffer",
        }
    );
    Ok(())
}

/// The table: IOPS median, min and max, ratios to fio and to the tokio row, enters per read.
fn render(title: &str, series: &[Series], cpu: &[Vec<Duration>], have_fio: bool) -> String {
    let sums: Vec<Summary> = series
        .iter()
        .map(|s| Summary::of(&s.runs.iter().map(Measure::rate).collect::<Vec<_>>()))
        .collect();
    let fio = series.iter().position(|s| s.name == FIO);
    let tokio = series.len() - 1;
    let ratio = |i: usize, base: Option<usize>| match base {
        Some(b) => format!("{:.2}x", sums[i].median / sums[b].median),
        None => "-".to_string(),
    };
    let mut rows = vec![[
        "",
        "IOPS median",
        "min",
        "max",
        "vs fio",
        "vs tokio",
        "enters/read",
        "CPU us/read",
        "CPUs busy",
    ]
    .map(String::from)
    .to_vec()];
    for (i, s) in series.iter().enumerate() {
        rows.push(vec![
            s.name.clone(),
            format_rate(sums[i].median),
            format_rate(sums[i].min),
            format_rate(sums[i].max),
            ratio(i, fio),
            ratio(i, Some(tokio)),
            s.enters_per_op()
                .map_or_else(|| "-".to_string(), |v| format!("{v:.4} (1/{:.1})", 1.0 / v)),
            format!("{:.2}", median(cpu_per_read(&s.runs, &cpu[i]))),
            format!("{:.2}", median(cpu_busy(&s.runs, &cpu[i]))),
        ]);
    }
    let mut out = format!("{title}\n");
    out.push_str(&render_grid(&rows, 2));
    if !have_fio {
        out.push_str("  fio: not installed (apt-get install fio)\n");
    }
    let rows = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut extra = vec![
                (
                    "cpu_us_per_read".to_string(),
                    median(cpu_per_read(&s.runs, &cpu[i])),
                ),
                ("cpus_busy".to_string(), median(cpu_busy(&s.runs, &cpu[i]))),
            ];
            if let Some(f) = fio {
                extra.push(("vs_fio".to_string(), sums[i].median / sums[f].median));
            }
            Row {
                name: s.name.clone(),
                median: sums[i].median,
                min: sums[i].min,
                max: sums[i].max,
                ratio: Some(sums[i].median / sums[tokio].median),
                enters_per_op: s.enters_per_op(),
                peak_rss_bytes: Some(s.peak_rss_kib * 1024),
                extra,
            }
        })
        .collect();
    out.push_str(&report::record(Record {
        name: report::record_name(title),
        title: title.to_string(),
        metric: "IOPS".to_string(),
        format: Box::new(format_rate),
        rows,
    }));
    out
}

/// CPU microseconds per read of each run.
fn cpu_per_read(runs: &[Measure], cpu: &[Duration]) -> Vec<f64> {
    runs.iter()
        .zip(cpu)
        .map(|(m, c)| c.as_secs_f64() * 1e6 / m.ops.max(1) as f64)
        .collect()
}

/// CPU time over wall time of each run: 1.0 is one core kept busy.
fn cpu_busy(runs: &[Measure], cpu: &[Duration]) -> Vec<f64> {
    runs.iter()
        .zip(cpu)
        .map(|(m, c)| c.as_secs_f64() / m.elapsed.as_secs_f64().max(1e-9))
        .collect()
}

fn median(v: Vec<f64>) -> f64 {
    Summary::of(&v).median
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

/// A small xorshift64* generator: random block numbers without a dependency.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (multiply-shift, no modulo bias worth the name).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// A random `BLOCK`-aligned offset in a file of `blocks` blocks.
    fn offset(&mut self, blocks: u64) -> u64 {
        self.below(blocks) * BLOCK as u64
    }
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

/// The runtime: one task keeping `DEPTH` `read_at` futures in flight until `window` ends.
///
/// Each slot's boxed future is overwritten in place by the next read as soon as it
/// completes (and polled at once, so its SQE joins this round's batch): the steady state
/// allocates nothing.
fn runtime_reads(
    rt: &runtime::Runtime,
    file: &Rc<corering_fs::File>,
    blocks: u64,
    window: Duration,
    seed: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(async move {
        let before = runtime::stats().expect("inside the runtime");
        let start = Instant::now();
        let deadline = start + window;
        let mut rng = XorShift::new(seed);
        let file: &corering_fs::File = file;
        let read = |buf: corering_fs::AlignedBuf, pos: u64| file.read_at(buf, pos);
        let mut slots = Vec::with_capacity(DEPTH);
        for _ in 0..DEPTH {
            let pos = rng.offset(blocks);
            let fut = Box::pin(read(corering_fs::AlignedBuf::with_capacity(BLOCK)?, pos));
            slots.push((Some(fut), pos));
        }
        let mut ops = 0u64;
        let mut stop = false;
        poll_fn(|cx| {
            let mut live = 0;
            for (slot, pos) in &mut slots {
                while let Some(fut) = slot {
                    let Poll::Ready((res, buf)) = fut.as_mut().poll(cx) else {
                        live += 1;
                        break;
                    };
                    if let Err(e) = whole(res, *pos) {
                        return Poll::Ready(Err(e));
                    }
                    ops += 1;
                    if ops.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline {
                        stop = true;
                    }
                    if stop {
                        *slot = None;
                    } else {
                        *pos = rng.offset(blocks);
                        fut.set(read(buf, *pos));
                    }
                }
            }
            if live == 0 {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        })
        .await?;
        let elapsed = start.elapsed();
        let delta = runtime::stats().expect("inside the runtime") - before;
        tally.add(ops, delta);
        Ok(Measure {
            ops,
            elapsed,
            enters: Some(delta.enters),
        })
    })
}

/// One `tokio::fs` read of the file with the variant's flags: `EINVAL` says tokio cannot
/// do `O_DIRECT` here.
fn tokio_probe(trt: &tokio::runtime::Runtime, path: &Path, variant: Variant) -> io::Result<()> {
    trt.block_on(async {
        let mut f = tokio::fs::OpenOptions::new()
            .read(true)
            .custom_flags(variant.flags())
            .open(path)
            .await?;
        let mut buf = vec![0u8; BLOCK];
        f.read_exact(&mut buf).await?;
        Ok(())
    })
}

/// The tokio row: `DEPTH` tasks on the current-thread runtime until `window` ends.
fn tokio_reads(
    trt: &tokio::runtime::Runtime,
    path: &Path,
    variant: Variant,
    mode: TokioMode,
    blocks: u64,
    window: Duration,
    seed: u64,
) -> io::Result<Measure> {
    trt.block_on(async move {
        // Opened before the clock starts: the loop, not 32 opens, is measured.
        let mut files = Vec::with_capacity(DEPTH);
        for _ in 0..DEPTH {
            let f = tokio::fs::OpenOptions::new()
                .read(true)
                .custom_flags(variant.flags())
                .open(path)
                .await?;
            files.push(f);
        }
        let start = Instant::now();
        let deadline = start + window;
        let handles: Vec<_> = files
            .into_iter()
            .zip(0u64..)
            .map(|(f, i)| {
                let rng = XorShift::new(seed.wrapping_mul(64) + i);
                match mode {
                    TokioMode::Fs => tokio::spawn(tokio_fs_loop(f, rng, blocks, deadline)),
                    TokioMode::BlockingPread => {
                        tokio::spawn(blocking_pread_loop(f, rng, blocks, deadline))
                    }
                }
            })
            .collect();
        let mut ops = 0;
        for handle in handles {
            ops += handle.await.map_err(io::Error::other)??;
        }
        Ok(Measure {
            ops,
            elapsed: start.elapsed(),
            enters: None,
        })
    })
}

/// `seek` + `read_exact` through `tokio::fs::File` until `deadline`.
async fn tokio_fs_loop(
    mut f: tokio::fs::File,
    mut rng: XorShift,
    blocks: u64,
    deadline: Instant,
) -> io::Result<u64> {
    let mut buf = vec![0u8; BLOCK];
    let mut n = 0u64;
    loop {
        f.seek(SeekFrom::Start(rng.offset(blocks))).await?;
        f.read_exact(&mut buf).await?;
        n += 1;
        if n.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline {
            return Ok(n);
        }
    }
}

/// `spawn_blocking(pread)` into an aligned buffer until `deadline` (O_DIRECT fallback).
async fn blocking_pread_loop(
    f: tokio::fs::File,
    mut rng: XorShift,
    blocks: u64,
    deadline: Instant,
) -> io::Result<u64> {
    let f = Arc::new(f.into_std().await);
    let mut buf = corering_fs::AlignedBuf::with_capacity(BLOCK)?;
    buf.set_len(BLOCK);
    let mut n = 0u64;
    loop {
        let pos = rng.offset(blocks);
        let file = f.clone();
        let (res, back) = tokio::task::spawn_blocking(move || {
            let res = file.read_at(&mut buf, pos);
            (res, buf)
        })
        .await
        .map_err(io::Error::other)?;
        buf = back;
        whole(res, pos)?;
        n += 1;
        if n.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline {
            return Ok(n);
        }
    }
}

/// The benchmark's file: created, filled, synced and read into the page cache by
/// [`TestFile::create`]; removed on drop (an error or a panic unwinding included).
struct TestFile {
    path: PathBuf,
    size: u64,
    /// How creating it went, for the notes.
    created: String,
}

impl TestFile {
    fn create(dir: &Path, size: u64) -> io::Result<TestFile> {
        let path = dir.join(format!("bench-read-{}.dat", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("create {}: {e}", path.display())))?;
        // From here on the file is removed however this ends.
        let mut file = TestFile {
            path,
            size,
            created: String::new(),
        };
        let start = Instant::now();
        let mut rng = XorShift::new(size);
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                // Every byte non-zero: no block reads as a hole.
                word.copy_from_slice(&(rng.next() | 0x0101_0101_0101_0101).to_ne_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
        drop(f);
        let written = start.elapsed();
        let start = Instant::now();
        let mut f = std::fs::File::open(&file.path)?;
        let mut total = 0u64;
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
        file.created = format!(
            "written and fsynced in {:.2} s, read into the page cache in {:.2} s",
            written.as_secs_f64(),
            start.elapsed().as_secs_f64()
        );
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
    fn offsets_are_aligned_and_in_range() {
        let mut rng = XorShift::new(1);
        let blocks = 1000;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let off = rng.offset(blocks);
            assert_eq!(off % BLOCK as u64, 0);
            assert!(off < blocks * BLOCK as u64);
            seen.insert(off);
        }
        assert!(seen.len() > 900, "poorly spread: {}", seen.len());
    }

    #[test]
    fn test_file_is_filled_and_removed() {
        let dir = std::env::temp_dir();
        let file = TestFile::create(&dir, 8 * BLOCK as u64).unwrap();
        let data = std::fs::read(&file.path).unwrap();
        assert_eq!(data.len(), 8 * BLOCK);
        assert!(data.iter().all(|&b| b != 0));
        let path = file.path.clone();
        drop(file);
        assert!(!path.exists());
    }
}
