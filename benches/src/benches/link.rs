//! `bench link`: chains of N linked NOPs (`IOSQE_IO_LINK`), N = 10 and 100, ns per NOP.

use std::io;

use runtime::ext::{raw::nop, Link};

use io_uring::{opcode, squeue};

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{timed, Measure, Plan, Tally};
use crate::harness::raw::RawRing;
use crate::harness::report::Metric;

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
    let title = format!("link (N={chain}): chains of {chain} linked NOPs, {{n}} NOPs per run");
    Contest::new(title, Metric::NsPerOp("nop"), "vs raw")
        // SAFETY: a NOP references no memory. One `submit_and_wait(N)` per chain.
        .row("raw ring", |n| unsafe { raw.batches(n, &batch) })
        .row("runtime", |n| runtime_chains(&rt, n, chain, &tally))
        .row("runtime, one by one", |n| {
            runtime_serial(&rt, n, &tally_serial)
        })
        .note(format!("raw ring flags: {raw_flags}"))
        .run(plan)?
        .print([
            tally.note("runtime"),
            tally_serial.note("runtime, one by one"),
            "tokio: no linked ops, no row".to_string(),
            "target: runtime >= 0.8x raw".to_string(),
        ]);
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
