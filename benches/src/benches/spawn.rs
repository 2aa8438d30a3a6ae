//! `bench spawn`: spawn and join of an empty task, this runtime vs tokio current-thread.

use std::io;
use std::time::Instant;

use crate::harness::cli::Opts;
use crate::harness::measure::{alternate, timed, Contestant, Measure, Plan, Tally};
use crate::harness::report::{Metric, Series, Table};

/// Tasks spawned before their handles are awaited, in the batched shape.
const BATCH: usize = 1_000;

/// Runs the benchmark and prints its tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let plan = Plan::new(opts, 1_000_000, BATCH as u64);
    let tokio_rt = tokio::runtime::Builder::new_current_thread().build()?;
    let rt = runtime::Builder::new().entries(256).build()?;

    for batched in [false, true] {
        let tally = Tally::default();
        let mut contestants = match batched {
            false => vec![
                Contestant::new("tokio current-thread", |n| tokio_serial(&tokio_rt, n)),
                Contestant::new("runtime", |n| runtime_serial(&rt, n, &tally)),
            ],
            true => vec![
                Contestant::new("tokio current-thread", |n| tokio_batched(&tokio_rt, n)),
                Contestant::new("runtime", |n| runtime_batched(&rt, n, &tally)),
            ],
        };
        let (series, n) = alternate(&mut contestants, plan)?;
        drop(contestants);
        let (shape, how) = match batched {
            false => ("serial", "each joined before the next spawn".to_string()),
            true => ("batched", format!("{BATCH} spawned, then all joined")),
        };
        let mut t = table(shape, &how, n, plan.runs, series);
        t.notes.push(tally.note("runtime"));
        println!("{}", t.render());
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
    let mut contestants = vec![
        Contestant::new("runtime cores(1)", |n| runtime_spread(1, n)),
        Contestant::new("runtime cores(2)", |n| runtime_spread(2, n)),
        Contestant::new("tokio multi-thread (2)", |n| tokio_spread(&tokio_rt, n)),
    ];
    let (series, n) = alternate(&mut contestants, plan)?;
    drop(contestants);
    let runs = plan.runs;
    let title = format!(
        "spawn (Send, CPU-bound): {n} tasks of {TASK_WORK} rounds of arithmetic from core 0, joined, median of \
         {runs} runs"
    );
    let notes = vec![
        "vs cores(1): how many times faster than the one-core runtime (wall time)".to_string(),
        "target: cores(2) >= 1.9x cores(1) and >= 0.95x tokio multi-thread".to_string(),
        "runtime::spawn queues Send tasks on the spawning core; an idle core takes never-polled ones (as tokio's multi-thread scheduler steals work)"
            .to_string(),
    ];
    let t = Table::new(
        title,
        Metric::NsPerOp("task"),
        "vs cores(1)",
        0,
        series,
        notes,
    );
    print!("{}", t.render());
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

fn runtime_spread(cores: usize, n: u64) -> io::Result<Measure> {
    let rt = runtime::Builder::new().cores(cores).build()?;
    rt.block_on(async move {
        let start = Instant::now();
        let handles: Vec<_> = (0..n).map(|_| runtime::spawn(async { work() })).collect();
        for handle in handles {
            std::hint::black_box(handle.await.map_err(io::Error::from)?);
        }
        Ok(Measure::since(n, start))
    })
}

fn tokio_spread(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let start = Instant::now();
        let handles: Vec<_> = (0..n).map(|_| tokio::spawn(async { work() })).collect();
        for handle in handles {
            std::hint::black_box(handle.await.map_err(io::Error::other)?);
        }
        Ok(Measure::since(n, start))
    })
}

fn table(shape: &str, how: &str, n: u64, runs: usize, series: Vec<Series>) -> Table {
    Table {
        title: format!("spawn ({shape}): {n} empty tasks per run ({how}), median of {runs} runs"),
        metric: Metric::NsPerOp("spawn+join"),
        ratio_label: "vs tokio".to_string(),
        baseline: 0,
        series,
        notes: vec![
            "vs tokio: how many times faster than tokio current-thread".to_string(),
            "target: runtime >= 1.5x faster than tokio current-thread".to_string(),
        ],
    }
}

fn joined<T>(res: Result<T, impl Sized>) -> io::Result<T> {
    res.map_err(|_| io::Error::other("empty task failed to join"))
}

fn runtime_serial(rt: &runtime::Runtime, n: u64, tally: &Tally) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        for _ in 0..n {
            joined(runtime::spawn_local(async {}).await)?;
        }
        Ok(n)
    }))
}

fn runtime_batched(rt: &runtime::Runtime, n: u64, tally: &Tally) -> io::Result<Measure> {
    let mut handles = Vec::with_capacity(BATCH);
    rt.block_on(timed(tally, async move {
        for _ in 0..n / BATCH as u64 {
            handles.extend((0..BATCH).map(|_| runtime::spawn_local(async {})));
            for handle in handles.drain(..) {
                joined(handle.await)?;
            }
        }
        Ok(n / BATCH as u64 * BATCH as u64)
    }))
}

fn tokio_serial(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let start = Instant::now();
        for _ in 0..n {
            tokio::spawn(async {}).await.map_err(io::Error::other)?;
        }
        Ok(Measure::since(n, start))
    })
}

fn tokio_batched(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let mut handles = Vec::with_capacity(BATCH);
        let start = Instant::now();
        for _ in 0..n / BATCH as u64 {
            handles.extend((0..BATCH).map(|_| tokio::spawn(async {})));
            for handle in handles.drain(..) {
                handle.await.map_err(io::Error::other)?;
            }
        }
        Ok(Measure::since(n / BATCH as u64 * BATCH as u64, start))
    })
}
