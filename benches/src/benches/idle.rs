//! `bench idle`: what a `cores(2)` runtime costs while it has nothing to do.

use std::io;
use std::time::{Duration, Instant};

use sysutil::{cpu_time, PinGuard, Who};

use crate::harness::cli::Opts;
use crate::harness::output::record;
use crate::harness::report::{header, render_grid, Record, Row};

/// Cores of the runtime measured.
const CORES: usize = 2;

/// One core's counters and thread CPU time, read on that core.
#[derive(Clone, Copy, Debug)]
struct Snap {
    stats: runtime::CoreMetrics,
    cpu: Duration,
}

impl Snap {
    fn here() -> Snap {
        Snap {
            stats: runtime::core_metrics().expect("inside the runtime"),
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
    let secs = opts.seconds_or(1.0, 2.0);
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
    let mut rows = vec![header(&[
        "",
        "enters",
        "sqes",
        "cqes",
        "task polls",
        "remote wakes",
        "CPU us",
        "CPU % of wall",
    ])];
    let mut records = Vec::new();
    // One row, printed and recorded: its counters (none for the process) and CPU time over wall x `cores`.
    let mut add = |name: String, counts: &[(&str, u64)], cpu: Duration, cores: usize| {
        let (us, pct) = (cpu.as_secs_f64() * 1e6, pct(cpu, cores));
        let mut row = vec![name.clone()];
        row.extend(counts.iter().map(|(_, v)| v.to_string()));
        row.resize(6, "-".to_string());
        row.extend([format!("{us:.0}"), format!("{pct:.4}%")]);
        rows.push(row);
        let counts = counts.iter().map(|(k, v)| (k.to_string(), *v as f64));
        let extra = counts.chain([("cpu_us".to_string(), us)]).collect();
        records.push(Row {
            name,
            median: pct,
            min: pct,
            max: pct,
            extra,
            ..Row::default()
        });
    };
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let d = a.stats - b.stats;
        let counts = [
            ("enters", d.enters),
            ("sqes", d.sqes_submitted),
            ("cqes", d.cqes_reaped),
            ("task_polls", d.polls),
            ("remote_wakes", d.remote_wakes),
        ];
        add(
            format!("core {i} (thread)"),
            &counts,
            a.cpu.saturating_sub(b.cpu),
            1,
        );
    }
    add(format!("process, wall x {CORES}"), &[], process, CORES);
    let title = format!(
        "idle: runtime cores({CORES}), block_on(sleep({:.1} s)), measured {:.3} s wall",
        secs,
        wall.as_secs_f64()
    );
    println!("{title}");
    print!("{}", render_grid(&rows, 2));
    print!(
        "{}",
        record(Record::new(
            &title,
            "CPU % of wall",
            |v| format!("{v:.4}%"),
            records
        ))
    );
    println!(
        "  core rows: that core's counters and thread CPU (getrusage RUSAGE_THREAD, read on the core) between \
         snapshots just before and after the sleep (their own wake-ups included)"
    );
    println!(
        "  process row: getrusage RUSAGE_SELF user+sys over the sleep alone, every thread, as a share of wall time x \
         {CORES} cores"
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
