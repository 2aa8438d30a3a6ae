//! `bench link`: chains of N linked NOPs (`IOSQE_IO_LINK`), N = 10 and 100, ns per NOP.

use std::io;

use runtime::ext::{raw::nop, Link};

use io_uring::{opcode, squeue};

use crate::harness::cli::Opts;
use crate::harness::measure::{alternate, timed, Contestant, Measure, Plan, Tally};
use crate::harness::raw::RawRing;
use crate::harness::report::{Metric, Table};

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
    let plan = Plan::new(opts, 1_000_000, chain as u64);
    let mut raw = RawRing::new(256)?;
    let rt = runtime::Builder::new().entries(256).build()?;
    let raw_flags = raw.flags();
    let (tally, tally_serial) = (Tally::default(), Tally::default());
    let link = opcode::Nop::new().build().flags(squeue::Flags::IO_LINK);
    let mut batch = vec![link.user_data(1); chain];
    batch[chain - 1] = opcode::Nop::new().build().user_data(2);
    let mut contestants = vec![
        // SAFETY: a NOP references no memory. One `submit_and_wait(N)` per chain.
        Contestant::new("raw ring", |n| unsafe { raw.batches(n, &batch) }),
        Contestant::new("runtime", |n| runtime_chains(&rt, n, chain, &tally)),
        Contestant::new("runtime, one by one", |n| {
            runtime_serial(&rt, n, &tally_serial)
        }),
    ];
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    let title = format!(
        "link (N={chain}): chains of {chain} linked NOPs, {count} NOPs per run, median of {} runs",
        plan.runs
    );
    let notes = vec![
        format!("raw ring flags: {raw_flags}"),
        tally.note("runtime"),
        tally_serial.note("runtime, one by one"),
        "tokio: no linked ops, no row".to_string(),
        "target: runtime >= 0.8x raw".to_string(),
    ];
    let table = Table::new(title, Metric::NsPerOp("nop"), "vs raw", 0, series, notes);
    print!("{}", table.render());
    Ok(())
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
            let outputs = Link::new((0..chain).map(|_| nop())).await?;
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
            nop().await?;
        }
        Ok(count)
    }))
}
