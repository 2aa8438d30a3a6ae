//! `bench nop`: 32 IORING_OP_NOP kept in flight, raw ring vs this runtime.
//!
//! Seed 001 (SKIP_CQWAKE) measures NOP throughput with a batch of 32 in flight. A NOP does no
//! work in the kernel, so the figure is pure submission, completion and dispatch overhead: the
//! raw ring's rate is the limit, and the runtime's ratio to it is what its op futures, wakers
//! and scheduler cost. Contestants:
//! - `raw ring`: push 32, one `submit_and_wait(32)`, drain the CQ (see `raw.rs`).
//! - `runtime 32 tasks`: 32 `spawn_local` tasks, each awaiting `runtime::nop()` in a loop.
//! - `runtime 1 task`: one task keeping 32 `nop()` futures in flight, polled by hand.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::harness::{alternate, Contestant, Plan};
use crate::raw::RawRing;
use crate::report::{paired_ratio, Measure, Metric, Table, Tally};
use crate::Opts;

/// NOPs in flight at once, as in the seed.
const DEPTH: usize = 32;
/// Ring size for both the raw ring and the runtime.
const ENTRIES: u32 = 256;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let count = if opts.quick { 200_000 } else { 2_000_000 };
    let plan = Plan {
        count,
        warmup: count / 4,
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: opts.seconds,
        granule: DEPTH as u64,
    };
    let mut raw = RawRing::new(ENTRIES)?;
    let rt = runtime::Builder::new().entries(ENTRIES).build()?;
    let raw_flags = raw.flags();
    let rt_flags = rt.flags().to_string();

    let (tally_tasks, tally_single) = (Tally::default(), Tally::default());
    let mut contestants = vec![
        Contestant::new("raw ring", |n| raw.nops(n, DEPTH)),
        Contestant::new("runtime 32 tasks", |n| tasks(&rt, n, &tally_tasks)),
        Contestant::new("runtime 1 task x32", |n| single_task(&rt, n, &tally_single)),
    ];
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    let paired: Vec<String> = series[1..]
        .iter()
        .filter_map(|s| Some(format!("{} {:.2}x", s.name, paired_ratio(s, &series[0])?)))
        .collect();
    let table = Table {
        title: format!(
            "nop: {DEPTH} IORING_OP_NOP in flight, {count} nops per run, median of {} runs",
            plan.runs
        ),
        metric: Metric::Rate("nops/s"),
        ratio_label: "vs raw".to_string(),
        baseline: 0,
        series,
        notes: vec![
            format!("raw ring flags: {raw_flags}"),
            format!("runtime flags:  {rt_flags}"),
            tally_tasks.note("runtime 32 tasks"),
            tally_single.note("runtime 1 task x32"),
            format!(
                "vs raw, median of the per-round ratios (drift between rounds cancels): {}",
                paired.join(", ")
            ),
            "target: runtime >= 0.75x raw, <= 1/16 enters per nop".to_string(),
        ],
    };
    print!("{}", table.render());
    Ok(())
}

/// `count` NOPs over `DEPTH` tasks, each awaiting one NOP at a time.
fn tasks(rt: &runtime::Runtime, count: u64, tally: &Tally) -> io::Result<Measure> {
    let per_task = count / DEPTH as u64;
    rt.block_on(async move {
        let before = runtime::stats().expect("inside the runtime");
        let start = Instant::now();
        let handles: Vec<_> = (0..DEPTH)
            .map(|_| {
                runtime::spawn_local(async move {
                    for _ in 0..per_task {
                        runtime::nop().await?;
                    }
                    Ok::<(), io::Error>(())
                })
            })
            .collect();
        for handle in handles {
            match handle.await {
                Ok(result) => result?,
                Err(_) => return Err(io::Error::other("nop task failed to join")),
            }
        }
        let elapsed = start.elapsed();
        let delta = runtime::stats().expect("inside the runtime") - before;
        tally.add(per_task * DEPTH as u64, delta);
        Ok(Measure {
            ops: per_task * DEPTH as u64,
            elapsed,
            enters: Some(delta.enters),
        })
    })
}

/// `count` NOPs from one task that keeps `DEPTH` of them in flight.
fn single_task(rt: &runtime::Runtime, count: u64, tally: &Tally) -> io::Result<Measure> {
    rt.block_on(async move {
        let before = runtime::stats().expect("inside the runtime");
        let start = Instant::now();
        let done = InFlight::new(DEPTH, count, runtime::nop).await?;
        let elapsed = start.elapsed();
        let delta = runtime::stats().expect("inside the runtime") - before;
        tally.add(done, delta);
        Ok(Measure {
            ops: done,
            elapsed,
            enters: Some(delta.enters),
        })
    })
}

/// Keeps up to `depth` futures from `make` in flight until `total` have completed; resolves
/// to the number completed, or the first error.
///
/// Each slot's box is reused: a completed future is overwritten in place by the next one, so
/// the steady state allocates nothing.
struct InFlight<F, Fut> {
    make: F,
    slots: Vec<Option<Pin<Box<Fut>>>>,
    to_start: u64,
    done: u64,
}

impl<F, Fut> InFlight<F, Fut>
where
    F: FnMut() -> Fut,
{
    fn new(depth: usize, total: u64, mut make: F) -> Self {
        let first = total.min(depth as u64);
        let slots = (0..first).map(|_| Some(Box::pin(make()))).collect();
        InFlight {
            make,
            slots,
            to_start: total - first,
            done: 0,
        }
    }
}

impl<F, Fut> Future for InFlight<F, Fut>
where
    F: FnMut() -> Fut + Unpin,
    Fut: Future<Output = io::Result<()>>,
{
    type Output = io::Result<u64>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // `InFlight` is `Unpin`: the futures themselves sit in pinned boxes.
        let this = self.get_mut();
        let mut live = 0;
        for slot in &mut this.slots {
            while let Some(fut) = slot {
                match fut.as_mut().poll(cx) {
                    Poll::Pending => {
                        live += 1;
                        break;
                    }
                    Poll::Ready(result) => {
                        if let Err(e) = result {
                            return Poll::Ready(Err(e));
                        }
                        this.done += 1;
                        if this.to_start > 0 {
                            this.to_start -= 1;
                            // Poll the replacement at once so its SQE is queued this round.
                            fut.set((this.make)());
                        } else {
                            *slot = None;
                        }
                    }
                }
            }
        }
        if live == 0 {
            Poll::Ready(Ok(this.done))
        } else {
            Poll::Pending
        }
    }
}
