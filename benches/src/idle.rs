//! `bench idle`: what a multi-core runtime costs while it has nothing to do.
//!
//! Builds a runtime with `cores(2)`, takes a snapshot of each core (its `runtime::stats()`
//! and its thread's CPU time, getrusage(2) `RUSAGE_THREAD`, read on the core itself: core 1's
//! through a `spawn_on(1, ..)` task), then `block_on`s one sleep of 2 s (1 s with `--quick`)
//! and takes the snapshots again. The process's CPU time over the sleep (`RUSAGE_SELF`, user
//! and system, every thread) is printed as a share of wall time x cores; the snapshots' own
//! wake-ups sit at the window's edges and cost each core an enter or two.

use std::io;
use std::time::{Duration, Instant};

use sysutil::{cpu_time, PinGuard, Who};

use crate::report::{self, render_grid, Record, Row};
use crate::Opts;

/// Cores of the runtime measured.
const CORES: usize = 2;

/// One core's counters and thread CPU time, read on that core.
#[derive(Clone, Copy, Debug)]
struct Snap {
    stats: runtime::Stats,
    cpu: Duration,
}

impl Snap {
    fn here() -> Snap {
        Snap {
            stats: runtime::stats().expect("inside the runtime"),
            cpu: cpu_time(Who::Thread),
        }
    }
}

/// A snapshot of every core, in core order.
fn snap_all(rt: &runtime::Runtime) -> io::Result<Vec<Snap>> {
    rt.block_on(async {
        let mut snaps = vec![Snap::here()];
        for core in 1..CORES {
            let s = runtime::spawn_on(core, async { Snap::here() }).await;
            snaps.push(s.map_err(io::Error::other)?);
        }
        Ok(snaps)
    })
}

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let secs = opts.seconds.unwrap_or(if opts.quick { 1.0 } else { 2.0 });
    let window = Duration::from_secs_f64(secs);
    // Building the runtime pins this thread (its core 0); restored at the end.
    let keep = PinGuard::keep()?;
    let rt = runtime::Builder::new().cores(CORES).build()?;
    // A first round of snapshots wakes every core once, so all are up and settled.
    snap_all(&rt)?;
    let before = snap_all(&rt)?;
    let cpu0 = cpu_time(Who::Process);
    let start = Instant::now();
    rt.block_on(runtime::sleep(window));
    let wall = start.elapsed();
    let process = cpu_time(Who::Process).saturating_sub(cpu0);
    let after = snap_all(&rt)?;
    drop(rt);
    drop(keep);

    let pct = |cpu: Duration, cores: usize| {
        100.0 * cpu.as_secs_f64() / (wall.as_secs_f64() * cores as f64)
    };
    let mut rows = vec![[
        "",
        "enters",
        "sqes",
        "cqes",
        "task polls",
        "remote wakes",
        "CPU us",
        "CPU % of wall",
    ]
    .map(String::from)
    .to_vec()];
    let one = |name: String, pct: f64, extra: Vec<(String, f64)>| Row {
        name,
        median: pct,
        min: pct,
        max: pct,
        extra,
        ..Row::default()
    };
    let mut records = Vec::new();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let d = a.stats - b.stats;
        let cpu = a.cpu.saturating_sub(b.cpu);
        let n = |v: u64| v as f64;
        records.push(one(
            format!("core {i} (thread)"),
            pct(cpu, 1),
            vec![
                ("enters".to_string(), n(d.enters)),
                ("sqes".to_string(), n(d.sqes_submitted)),
                ("cqes".to_string(), n(d.cqes_reaped)),
                ("task_polls".to_string(), n(d.tasks_polled)),
                ("remote_wakes".to_string(), n(d.remote_wakes)),
                ("cpu_us".to_string(), cpu.as_secs_f64() * 1e6),
            ],
        ));
        rows.push(vec![
            format!("core {i} (thread)"),
            d.enters.to_string(),
            d.sqes_submitted.to_string(),
            d.cqes_reaped.to_string(),
            d.tasks_polled.to_string(),
            d.remote_wakes.to_string(),
            format!("{:.0}", cpu.as_secs_f64() * 1e6),
            format!("{:.4}%", pct(cpu, 1)),
        ]);
    }
    rows.push(vec![
        format!("process, wall x {CORES}"),
        "-".to_string(),
        "-".to_string(),
        "-".to_string(),
        "-".to_string(),
        "-".to_string(),
        format!("{:.0}", process.as_secs_f64() * 1e6),
        format!("{:.4}%", pct(process, CORES)),
    ]);
    records.push(one(
        format!("process, wall x {CORES}"),
        pct(process, CORES),
        vec![("cpu_us".to_string(), process.as_secs_f64() * 1e6)],
    ));
    let title = format!(
        "idle: runtime cores({CORES}), block_on(sleep({:.1} s)), measured {:.3} s wall",
        secs,
        wall.as_secs_f64()
    );
    println!("{title}");
    print!("{}", render_grid(&rows, 2));
    print!(
        "{}",
        report::record(Record {
            name: report::record_name(&title),
            title,
            metric: "CPU % of wall".to_string(),
            format: Box::new(|v| format!("{v:.4}%")),
            rows: records,
        })
    );
    println!(
        "  core rows: that core's counters and thread CPU (getrusage RUSAGE_THREAD, read on the \
         core) between snapshots just before and after the sleep (their own wake-ups included)"
    );
    println!(
        "  process row: getrusage RUSAGE_SELF user+sys over the sleep alone, every thread, as a \
         share of wall time x {CORES} cores"
    );
    println!(
        "  target: an idle runtime under 1% CPU: {}",
        if pct(process, CORES) < 1.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}
