//! `bench spawn`: spawn and join of an empty task, this runtime vs tokio current-thread.

use std::io;
use std::time::Instant;

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{timed, Measure, Plan, Tally};
use crate::harness::report::Metric;

/// Tasks spawned before their handles are awaited, in the batched shape.
const BATCH: usize = 1_000;

/// Runs the benchmark and prints its tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let plan = Plan::new(opts, 1_000_000, BATCH as u64);
    let tokio_rt = tokio::runtime::Builder::new_current_thread().build()?;
    let rt = runtime::Builder::new().entries(256).build()?;

    for batched in [false, true] {
        let tally = Tally::default();
        let (shape, how) = match batched {
            false => ("serial", "each joined before the next spawn".to_string()),
            true => ("batched", format!("{BATCH} spawned, then all joined")),
        };
        let title = format!("spawn ({shape}): {{n}} empty tasks per run ({how})");
        let table = Contest::new(title, Metric::NsPerOp("spawn+join"), "vs tokio")
            .row("tokio current-thread", |n| {
                tokio_joins(&tokio_rt, n, batched)
            })
            .row("runtime", |n| runtime_joins(&rt, n, batched, &tally))
            .note("vs tokio: how many times faster than tokio current-thread")
            .note("target: runtime >= 1.5x faster than tokio current-thread")
            .run(plan)?;
        table.print([tally.note("runtime")]);
        println!();
    }
    drop(rt);
    drop(tokio_rt);
    spread(opts)
}

/// Tasks in one run of the placement table.
const CPU_TASKS: u64 = 10_000;
/// Rounds of arithmetic per CPU-bound task (about 30 us on this machine).
const TASK_WORK: u64 = 20_000;

/// The placement table: `CPU_TASKS` CPU-bound `Send` tasks spawned from core 0, on a one-core runtime, a two-core
/// runtime (`spawn` queues them on core 0; idle core 1 takes never-polled ones) and tokio's multi-thread runtime with
/// two workers: wall time per task.
fn spread(opts: &Opts) -> io::Result<()> {
    let plan = Plan {
        count: CPU_TASKS,
        warmup: CPU_TASKS / 4,
        seconds: None,
        ..Plan::new(opts, 0, 1)
    };
    // One runtime per thread at a time: each run builds its own (outside the timed part).
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    let title = format!("spawn (Send, CPU-bound): {{n}} tasks of {TASK_WORK} rounds of arithmetic from core 0, joined");
    Contest::new(title, Metric::NsPerOp("task"), "vs cores(1)")
        .row("runtime cores(1)", |n| runtime_spread(1, n))
        .row("runtime cores(2)", |n| runtime_spread(2, n))
        .row("tokio multi-thread (2)", |n| tokio_spread(&tokio_rt, n))
        .note("vs cores(1): how many times faster than the one-core runtime (wall time)")
        .note("target: cores(2) >= 1.9x cores(1) and >= 0.95x tokio multi-thread")
        .note(
            "runtime::spawn queues Send tasks on the spawning core; an idle core takes never-polled ones (as \
             tokio's multi-thread scheduler steals work)",
        )
        .run(plan)?
        .print([]);
    Ok(())
}

/// About `TASK_WORK` rounds of arithmetic the optimizer cannot drop.
fn work() -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..TASK_WORK {
        x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

/// An async block: `n` [`work`] tasks spawned by `$spawn` from this task, then joined; the measurement.
macro_rules! spread {
    ($spawn:path, $n:expr) => {
        async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..$n).map(|_| $spawn(async { work() })).collect();
            for handle in handles {
                std::hint::black_box(handle.await.map_err(io::Error::other)?);
            }
            Ok(Measure::since($n, start))
        }
    };
}

fn runtime_spread(cores: usize, n: u64) -> io::Result<Measure> {
    let rt = runtime::Builder::new().cores(cores).build()?;
    rt.block_on(spread!(runtime::spawn, n))
}

fn tokio_spread(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    rt.block_on(spread!(tokio::spawn, n))
}

fn joined<T>(res: Result<T, impl Sized>) -> io::Result<T> {
    res.map_err(|_| io::Error::other("empty task failed to join"))
}

/// An async block: `n` spawn+joins of an empty task by `$spawn`, each joined before the next spawn or,
/// with `batched`, [`BATCH`] spawned and then all joined (`n` rounded down to whole batches), resolving to the count.
macro_rules! joins {
    ($spawn:path, $n:expr, $batched:expr) => {
        async move {
            if !$batched {
                for _ in 0..$n {
                    joined($spawn(async {}).await)?;
                }
                return Ok($n);
            }
            let mut handles = Vec::with_capacity(BATCH);
            for _ in 0..$n / BATCH as u64 {
                handles.extend((0..BATCH).map(|_| $spawn(async {})));
                for handle in handles.drain(..) {
                    joined(handle.await)?;
                }
            }
            Ok::<u64, io::Error>($n / BATCH as u64 * BATCH as u64)
        }
    };
}

fn runtime_joins(
    rt: &runtime::Runtime,
    n: u64,
    batched: bool,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, joins!(runtime::spawn_local, n, batched)))
}

fn tokio_joins(rt: &tokio::runtime::Runtime, n: u64, batched: bool) -> io::Result<Measure> {
    rt.block_on(async move {
        let start = Instant::now();
        Ok(Measure::since(
            joins!(tokio::spawn, n, batched).await?,
            start,
        ))
    })
}
