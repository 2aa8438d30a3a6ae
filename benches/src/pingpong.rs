//! `bench pingpong`: a counter bounced between two cores, ns per round trip.
//!
//! One round trip: side A sends `i` to side B, B sends `i + 1` back, A checks it. A and B
//! sit on different CPUs, so every hop wakes the other core. Contestants, measured
//! alternately:
//! - `std threads`: the calling thread (CPU 0) and a thread pinned to CPU 1, through two
//!   `std::sync::mpsc::sync_channel(1)`, blocking `recv` on each side (the baseline);
//! - `runtime cores(2)`: the `block_on` future on core 0 and a task `spawn_on(1, ..)`,
//!   through two `futures::channel::mpsc::channel(1)`; each hop is a remote wake, which
//!   reaches the sleeping core as an `IORING_OP_MSG_RING` CQE;
//! - `tokio multi-thread`: 2 workers (pinned to CPU 0 and 1), both sides `tokio::spawn`ed,
//!   through two `tokio::sync::mpsc::channel(1)`. tokio's scheduler may run both tasks on
//!   one worker (a woken task goes to the waker's LIFO slot), so its hops need not cross
//!   cores at all: a reference for what a work-stealing runtime does here, not a like pair.
//!
//! The runtime's counters over each run: core 0's `runtime::stats()` read by the main
//! future, core 1's by the ponger task on core 1.

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use futures::{SinkExt, StreamExt};
use sysutil::{pin_to, PinGuard};

use crate::harness::{alternate, Contestant, Plan};
use crate::report::{Measure, Metric, Table};
use crate::Opts;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let count = if opts.quick { 10_000 } else { 100_000 };
    let plan = Plan {
        count,
        warmup: count / 4,
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: opts.seconds,
        granule: 1,
    };
    let allowed = sysutil::allowed_cpus();
    let a = allowed.first().copied().unwrap_or(0);
    let b = allowed.get(1).copied().unwrap_or(a);
    // Building the runtime pins this thread (its core 0) to CPU `a`; restored at the end.
    let keep = PinGuard::keep()?;
    pin_to(a)?;

    let rt = runtime::Builder::new().cores(2).cpus([a, b]).build()?;
    let std_pair = StdPair::start(b)?;
    let next_cpu = AtomicUsize::new(0);
    let cpus = [a, b];
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || {
            // Worker i on the i-th CPU (tokio starts its workers one by one).
            let i = next_cpu.fetch_add(1, Ordering::Relaxed);
            let _ = pin_to(cpus[i % 2]);
        })
        .build()?;

    let counters = Counters::default();
    let mut contestants = vec![
        Contestant::new("std threads", |n| std_pair.run(n)),
        Contestant::new("runtime cores(2)", |n| runtime_run(&rt, n, &counters)),
        Contestant::new("tokio multi-thread", |n| tokio_run(&tokio_rt, n)),
    ];
    let (series, n) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(tokio_rt);
    std_pair.stop()?;
    drop(rt);
    drop(keep);

    let table = Table {
        title: format!(
            "pingpong: {n} round trips per run between CPU {a} and CPU {b}, median of {} runs",
            plan.runs
        ),
        metric: Metric::NsPerOp("rt"),
        ratio_label: "vs std".to_string(),
        baseline: 0,
        series,
        notes: vec![
            "vs std: how many times faster than the std::sync::mpsc thread pair".to_string(),
            "enters/op: core 0's io_uring_enter calls per round trip (runtime::stats)".to_string(),
            counters.note(),
            "target: runtime cores(2) >= 2x faster than the std::sync::mpsc thread pair"
                .to_string(),
        ],
    };
    print!("{}", table.render());
    if a == b {
        println!("  (only one CPU allowed: both sides share it, nothing crosses cores)");
    }
    Ok(())
}

/// The runtime's counters summed over every run (warm-up included), per core.
#[derive(Default)]
struct Counters {
    trips: Cell<u64>,
    core0: Cell<runtime::Stats>,
    core1: Cell<runtime::Stats>,
}

impl Counters {
    fn add(&self, trips: u64, core0: runtime::Stats, core1: runtime::Stats) {
        let sum = |a: runtime::Stats, b: runtime::Stats| runtime::Stats {
            sqes_submitted: a.sqes_submitted + b.sqes_submitted,
            enters: a.enters + b.enters,
            cqes_reaped: a.cqes_reaped + b.cqes_reaped,
            tasks_polled: a.tasks_polled + b.tasks_polled,
            remote_wakes: a.remote_wakes + b.remote_wakes,
            tasks_alive: a.tasks_alive + b.tasks_alive,
        };
        self.trips.set(self.trips.get() + trips);
        self.core0.set(sum(self.core0.get(), core0));
        self.core1.set(sum(self.core1.get(), core1));
    }

    fn note(&self) -> String {
        let n = self.trips.get().max(1) as f64;
        let per = |s: runtime::Stats| {
            format!(
                "remote wakes {:.3}, enters {:.3}, sqes {:.3}, cqes {:.3}, task polls {:.3}",
                s.remote_wakes as f64 / n,
                s.enters as f64 / n,
                s.sqes_submitted as f64 / n,
                s.cqes_reaped as f64 / n,
                s.tasks_polled as f64 / n
            )
        };
        format!(
            "runtime per round trip (warm-up included): core 0: {}; core 1: {}",
            per(self.core0.get()),
            per(self.core1.get())
        )
    }
}

/// One run of the runtime contestant: a fresh ponger on core 1, `n` timed round trips.
fn runtime_run(rt: &runtime::Runtime, n: u64, counters: &Counters) -> io::Result<Measure> {
    rt.block_on(async move {
        let (mut to_b, mut from_a) = futures::channel::mpsc::channel::<u64>(1);
        let (mut to_a, mut from_b) = futures::channel::mpsc::channel::<u64>(1);
        let pong = runtime::spawn_on(1, async move {
            let before = runtime::stats().expect("on core 1");
            // Hot path: one receive and one send per round trip.
            while let Some(v) = from_a.next().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
            runtime::stats().expect("on core 1") - before
        });
        // One untimed round trip: the ponger is running on core 1 before the clock starts.
        to_b.send(0).await.map_err(io::Error::other)?;
        from_b.next().await;
        let before = runtime::stats().expect("on core 0");
        let start = Instant::now();
        // Hot path: one send and one receive per round trip.
        for i in 1..=n {
            to_b.send(i).await.map_err(io::Error::other)?;
            if from_b.next().await != Some(i + 1) {
                return Err(io::Error::other("the ponger answered the wrong count"));
            }
        }
        let elapsed = start.elapsed();
        let core0 = runtime::stats().expect("on core 0") - before;
        drop(to_b);
        let core1 = pong.await.map_err(io::Error::other)?;
        counters.add(n, core0, core1);
        Ok(Measure {
            ops: n,
            elapsed,
            enters: Some(core0.enters),
        })
    })
}

/// One run of the tokio contestant: both sides spawned onto the workers.
fn tokio_run(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let (to_b, mut from_a) = tokio::sync::mpsc::channel::<u64>(1);
        let (to_a, mut from_b) = tokio::sync::mpsc::channel::<u64>(1);
        let pong = tokio::spawn(async move {
            while let Some(v) = from_a.recv().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        let ping = tokio::spawn(async move {
            to_b.send(0).await.map_err(io::Error::other)?;
            from_b.recv().await;
            let start = Instant::now();
            for i in 1..=n {
                to_b.send(i).await.map_err(io::Error::other)?;
                if from_b.recv().await != Some(i + 1) {
                    return Err(io::Error::other("the ponger answered the wrong count"));
                }
            }
            Ok(start.elapsed())
        });
        let elapsed = ping.await.map_err(io::Error::other)??;
        pong.await.map_err(io::Error::other)?;
        Ok(Measure {
            ops: n,
            elapsed,
            enters: None,
        })
    })
}

/// The std contestant: a ponger thread pinned to its CPU, alive for the whole benchmark.
struct StdPair {
    to_b: SyncSender<u64>,
    from_b: Receiver<u64>,
    thread: JoinHandle<io::Result<()>>,
}

impl StdPair {
    fn start(cpu: usize) -> io::Result<StdPair> {
        let (to_b, from_a) = sync_channel::<u64>(1);
        let (to_a, from_b) = sync_channel::<u64>(1);
        let thread = std::thread::Builder::new()
            .name("pingpong-std".to_string())
            .spawn(move || {
                pin_to(cpu)?;
                // Hot path: one blocking receive and one send per round trip.
                while let Ok(v) = from_a.recv() {
                    if to_a.send(v + 1).is_err() {
                        break;
                    }
                }
                Ok(())
            })?;
        Ok(StdPair {
            to_b,
            from_b,
            thread,
        })
    }

    fn run(&self, n: u64) -> io::Result<Measure> {
        let gone = || io::Error::other("the std ponger thread is gone");
        let start = Instant::now();
        for i in 0..n {
            self.to_b.send(i).map_err(|_| gone())?;
            if self.from_b.recv().map_err(|_| gone())? != i + 1 {
                return Err(io::Error::other("the ponger answered the wrong count"));
            }
        }
        Ok(Measure {
            ops: n,
            elapsed: start.elapsed(),
            enters: None,
        })
    }

    fn stop(self) -> io::Result<()> {
        drop(self.to_b);
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => Err(io::Error::other("the std ponger thread panicked")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contestants_count_round_trips() {
        let keep = PinGuard::keep().expect("affinity");
        let rt = runtime::Builder::new().cores(2).build().expect("runtime");
        let counters = Counters::default();
        let m = runtime_run(&rt, 100, &counters).expect("runtime run");
        assert_eq!(m.ops, 100);
        assert_eq!(counters.trips.get(), 100);
        assert!(counters.core0.get().remote_wakes > 0);
        drop(rt);
        drop(keep);

        let pair = StdPair::start(0).expect("std pair");
        assert_eq!(pair.run(100).expect("std run").ops, 100);
        pair.stop().expect("stop");

        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("tokio");
        assert_eq!(tokio_run(&tokio_rt, 100).expect("tokio run").ops, 100);
    }
}
