//! `bench link`: chains of N linked NOPs (`IOSQE_IO_LINK`), ns per NOP, N = 10 and 100
//! (seed 004, the `nxt` propagation thread).
//!
//! The kernel starts each op of a chain when the one before it completes, so a chain is a
//! sequence, not a batch: the figure is what running the sequence costs per op. Contestants:
//! - `raw ring`: push N linked NOPs, one `submit_and_wait(N)`, drain.
//! - `runtime`: `runtime::driver::Link` over N `runtime::nop()` futures, awaited.
//! - `runtime, one by one`: the same N NOPs without links, each awaited before the next is
//!   made: what a chain saves over awaiting in turn.
//!
//! tokio has no linked ops (nor NOPs), so there is no tokio row.

use std::io;
use std::time::Instant;

use io_uring::{opcode, squeue};

use crate::harness::{alternate, Contestant, Plan};
use crate::raw::{drain_exact, RawRing};
use crate::report::{timed, Measure, Metric, Table, Tally};
use crate::Opts;

/// Runs the benchmark and prints its tables, one per chain length.
pub fn run(opts: &Opts) -> io::Result<()> {
    for (i, chain) in [10usize, 100].into_iter().enumerate() {
        if i > 0 {
            println!();
        }
        one(opts, chain)?;
    }
    Ok(())
}

fn one(opts: &Opts, chain: usize) -> io::Result<()> {
    let count = if opts.quick { 100_000 } else { 1_000_000 };
    let plan = Plan {
        count,
        warmup: count / 4,
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: opts.seconds,
        granule: chain as u64,
    };
    let mut raw = RawRing::new(256)?;
    let rt = runtime::Builder::new().entries(256).build()?;
    let raw_flags = raw.flags();
    let (tally, tally_serial) = (Tally::default(), Tally::default());
    let mut contestants = vec![
        Contestant::new("raw ring", |n| raw_chains(&mut raw, n, chain)),
        Contestant::new("runtime", |n| runtime_chains(&rt, n, chain, &tally)),
        Contestant::new("runtime, one by one", |n| {
            runtime_serial(&rt, n, &tally_serial)
        }),
    ];
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    let table = Table {
        title: format!(
            "link (N={chain}): chains of {chain} linked NOPs, {count} NOPs per run, median of {} runs",
            plan.runs
        ),
        metric: Metric::NsPerOp("nop"),
        ratio_label: "vs raw".to_string(),
        baseline: 0,
        series,
        notes: vec![
            format!("raw ring flags: {raw_flags}"),
            tally.note("runtime"),
            tally_serial.note("runtime, one by one"),
            "tokio: no linked ops, no row".to_string(),
            "target: runtime >= 0.8x raw".to_string(),
        ],
    };
    print!("{}", table.render());
    Ok(())
}

fn raw_chains(raw: &mut RawRing, count: u64, chain: usize) -> io::Result<Measure> {
    let link = opcode::Nop::new()
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(1);
    let mut batch = vec![link; chain];
    batch[chain - 1] = opcode::Nop::new().build().user_data(2);
    let ring = raw.ring();
    let mut enters = 0;
    let mut done = 0;
    let start = Instant::now();
    while done < count {
        // SAFETY: a NOP references no memory.
        unsafe { ring.submission().push_multiple(&batch) }
            .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
        ring.submit_and_wait(chain)?;
        enters += 1;
        drain_exact(ring, chain)?;
        done += chain as u64;
    }
    Ok(Measure {
        ops: done,
        elapsed: start.elapsed(),
        enters: Some(enters),
    })
}

fn runtime_chains(
    rt: &runtime::Runtime,
    count: u64,
    chain: usize,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        let mut done = 0;
        while done < count {
            let outputs = runtime::driver::Link::new((0..chain).map(|_| runtime::nop())).await?;
            for r in outputs {
                r?;
            }
            done += chain as u64;
        }
        Ok(done)
    }))
}

fn runtime_serial(rt: &runtime::Runtime, count: u64, tally: &Tally) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        for _ in 0..count {
            runtime::nop().await?;
        }
        Ok(count)
    }))
}
