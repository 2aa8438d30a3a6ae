//! `bench sync`: channels of `runtime::sync`, ns per message on one core and per round trip
//! across two cores.
//!
//! Three tables, every contestant measured alternately in this process:
//! - one core, send then recv: one task sends a value into a bounded channel (capacity
//!   1024) and receives it back, `n` times: the channel's own cost, no wake. Contestants on
//!   a one-core runtime: `runtime::sync::mpsc` (tokio's), `runtime::sync::local::mpsc`,
//!   `futures::channel::mpsc`;
//! - one core, ping-pong: two tasks of the same core bounce a counter through two bounded
//!   channels of capacity 1; each round trip is two messages, two wakes and two task
//!   switches. The same contestants;
//! - across cores: the same ping-pong between the `block_on` future on core 0 and a task
//!   `spawn_on(1, ..)` of a `cores(2)` runtime through `runtime::sync::mpsc`, against
//!   tokio's own mpsc on a tokio multi-thread runtime with 2 workers pinned to the same two
//!   CPUs (tokio may run both tasks on one worker: see `bench pingpong`).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::{SinkExt, StreamExt};
use runtime::sync::local;
use sysutil::{pin_to, PinGuard};

use crate::harness::{alternate, Contestant, Plan};
use crate::report::{Measure, Metric, Table};
use crate::Opts;

/// The channels' capacity in the send-then-recv loop: never full there.
const CAPACITY: usize = 1024;

/// Runs the benchmark and prints its tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let runs = opts.runs.unwrap_or(if opts.quick { 3 } else { 5 });
    let plan = |count: u64| Plan {
        count,
        warmup: count / 4,
        runs,
        seconds: opts.seconds,
        granule: 1,
    };
    let rt = runtime::Builder::new().build()?;

    let mut contestants = vec![
        Contestant::new(SYNC, |n| send_recv_sync(&rt, n)),
        Contestant::new(LOCAL, |n| send_recv_local(&rt, n)),
        Contestant::new(FUTURES, |n| send_recv_futures(&rt, n)),
    ];
    let (series, n) = alternate(&mut contestants, plan(scale(opts, 2_000_000)))?;
    drop(contestants);
    let title = format!(
        "sync (one core, send then recv): {n} messages per run through a bounded channel \
         ({CAPACITY}) in one task, median of {runs} runs"
    );
    println!("{}", one_core_table(title, "msg", series).render());

    let mut contestants = vec![
        Contestant::new(SYNC, |n| ping_pong_sync(&rt, n)),
        Contestant::new(LOCAL, |n| ping_pong_local(&rt, n)),
        Contestant::new(FUTURES, |n| ping_pong_futures(&rt, n)),
    ];
    let (series, n) = alternate(&mut contestants, plan(scale(opts, 500_000)))?;
    drop(contestants);
    drop(rt);
    let title = format!(
        "sync (one core, ping-pong): {n} round trips per run between two tasks of one core \
         (2 messages each, channels of capacity 1), median of {runs} runs"
    );
    println!("{}", one_core_table(title, "rt", series).render());

    cross_core(plan(scale(opts, 20_000)))
}

const SYNC: &str = "runtime::sync::mpsc (tokio's)";
const LOCAL: &str = "runtime::sync::local::mpsc";
const FUTURES: &str = "futures::channel::mpsc";

/// `full` operations per run, a tenth with `--quick`.
fn scale(opts: &Opts, full: u64) -> u64 {
    if opts.quick {
        full / 10
    } else {
        full
    }
}

fn one_core_table(title: String, op: &'static str, series: Vec<crate::report::Series>) -> Table {
    Table {
        title,
        metric: Metric::NsPerOp(op),
        ratio_label: "vs sync::mpsc".to_string(),
        baseline: 0,
        series,
        notes: vec![
            "vs sync::mpsc: how many times faster than runtime::sync::mpsc (tokio's) on the same core"
                .to_string(),
        ],
    }
}

/// Times `n` iterations of `body` inside the runtime.
fn timed<F: std::future::Future<Output = io::Result<()>>>(
    rt: &runtime::Runtime,
    n: u64,
    body: F,
) -> io::Result<Measure> {
    rt.block_on(async move {
        let start = Instant::now();
        body.await?;
        Ok(Measure {
            ops: n,
            elapsed: start.elapsed(),
            enters: None,
        })
    })
}

fn wrong() -> io::Error {
    io::Error::other("the channel returned the wrong value")
}

fn send_recv_sync(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    let (tx, mut rx) = runtime::sync::mpsc::channel::<u64>(CAPACITY);
    timed(rt, n, async move {
        // Hot path: one send and one receive per message.
        for i in 0..n {
            tx.send(i).await.map_err(io::Error::other)?;
            if rx.recv().await != Some(i) {
                return Err(wrong());
            }
        }
        Ok(())
    })
}

fn send_recv_local(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    let (tx, mut rx) = local::mpsc::channel::<u64>(CAPACITY);
    timed(rt, n, async move {
        // Hot path: one send and one receive per message.
        for i in 0..n {
            tx.send(i).await.map_err(io::Error::other)?;
            if rx.recv().await != Some(i) {
                return Err(wrong());
            }
        }
        Ok(())
    })
}

fn send_recv_futures(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    let (mut tx, mut rx) = futures::channel::mpsc::channel::<u64>(CAPACITY);
    timed(rt, n, async move {
        // Hot path: one send and one receive per message.
        for i in 0..n {
            tx.send(i).await.map_err(io::Error::other)?;
            if rx.next().await != Some(i) {
                return Err(wrong());
            }
        }
        Ok(())
    })
}

fn ping_pong_sync(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    use runtime::sync::mpsc::channel;
    let ((to_b, mut from_a), (to_a, mut from_b)) = (channel::<u64>(1), channel::<u64>(1));
    timed(rt, n, async move {
        let pong = runtime::spawn_local(async move {
            while let Some(v) = from_a.recv().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        for i in 0..n {
            to_b.send(i).await.map_err(io::Error::other)?;
            if from_b.recv().await != Some(i + 1) {
                return Err(wrong());
            }
        }
        drop(to_b);
        pong.await.map_err(io::Error::other)
    })
}

fn ping_pong_local(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    use local::mpsc::channel;
    let ((to_b, mut from_a), (to_a, mut from_b)) = (channel::<u64>(1), channel::<u64>(1));
    timed(rt, n, async move {
        let pong = runtime::spawn_local(async move {
            while let Some(v) = from_a.recv().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        for i in 0..n {
            to_b.send(i).await.map_err(io::Error::other)?;
            if from_b.recv().await != Some(i + 1) {
                return Err(wrong());
            }
        }
        drop(to_b);
        pong.await.map_err(io::Error::other)
    })
}

fn ping_pong_futures(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    use futures::channel::mpsc::channel;
    // futures' bounded channel holds capacity + 1 per sender; 0 makes it hold one value.
    let ((mut to_b, mut from_a), (mut to_a, mut from_b)) = (channel::<u64>(0), channel::<u64>(0));
    timed(rt, n, async move {
        let pong = runtime::spawn_local(async move {
            while let Some(v) = from_a.next().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        for i in 0..n {
            to_b.send(i).await.map_err(io::Error::other)?;
            if from_b.next().await != Some(i + 1) {
                return Err(wrong());
            }
        }
        drop(to_b);
        pong.await.map_err(io::Error::other)
    })
}

/// The cross-core table: `runtime::sync::mpsc` on cores(2) vs tokio's mpsc on tokio.
fn cross_core(plan: Plan) -> io::Result<()> {
    let allowed = sysutil::allowed_cpus();
    let a = allowed.first().copied().unwrap_or(0);
    let b = allowed.get(1).copied().unwrap_or(a);
    // Building the runtime pins this thread (its core 0) to CPU `a`; restored at the end.
    let keep = PinGuard::keep()?;
    pin_to(a)?;
    let rt = runtime::Builder::new().cores(2).cpus([a, b]).build()?;
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

    let mut contestants = vec![
        Contestant::new("tokio multi-thread, tokio's mpsc", |n| {
            cross_tokio(&tokio_rt, n)
        }),
        Contestant::new("runtime cores(2), runtime::sync::mpsc", |n| {
            cross_runtime(&rt, n)
        }),
    ];
    let (series, n) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(tokio_rt);
    drop(rt);
    drop(keep);
    let table = Table {
        title: format!(
            "sync (across cores, ping-pong): {n} round trips per run between CPU {a} and CPU \
             {b} (2 messages each, channels of capacity 1), median of {} runs",
            plan.runs
        ),
        metric: Metric::NsPerOp("rt"),
        ratio_label: "vs tokio".to_string(),
        baseline: 0,
        series,
        notes: vec![
            "vs tokio: how many times faster than tokio's mpsc on a tokio multi-thread runtime"
                .to_string(),
            "enters/op: core 0's io_uring_enter calls per round trip (runtime::stats)".to_string(),
            "tokio may run both tasks on one worker (LIFO slot): its hops need not cross cores"
                .to_string(),
        ],
    };
    print!("{}", table.render());
    if a == b {
        println!("  (only one CPU allowed: both sides share it, nothing crosses cores)");
    }
    Ok(())
}

fn cross_runtime(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
    use runtime::sync::mpsc::channel;
    let ((to_b, mut from_a), (to_a, mut from_b)) = (channel::<u64>(1), channel::<u64>(1));
    rt.block_on(async move {
        let pong = runtime::spawn_on(1, async move {
            while let Some(v) = from_a.recv().await {
                if to_a.send(v + 1).await.is_err() {
                    break;
                }
            }
        });
        // One untimed round trip: the ponger is running on core 1 before the clock starts.
        to_b.send(0).await.map_err(io::Error::other)?;
        from_b.recv().await;
        let before = runtime::stats().expect("on core 0");
        let start = Instant::now();
        for i in 1..=n {
            to_b.send(i).await.map_err(io::Error::other)?;
            if from_b.recv().await != Some(i + 1) {
                return Err(wrong());
            }
        }
        let elapsed = start.elapsed();
        let enters = (runtime::stats().expect("on core 0") - before).enters;
        drop(to_b);
        pong.await.map_err(io::Error::other)?;
        Ok(Measure {
            ops: n,
            elapsed,
            enters: Some(enters),
        })
    })
}

fn cross_tokio(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    use tokio::sync::mpsc::channel;
    let ((to_b, mut from_a), (to_a, mut from_b)) = (channel::<u64>(1), channel::<u64>(1));
    rt.block_on(async move {
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
                    return Err(wrong());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contestants_count_their_messages() {
        let rt = runtime::Builder::new().build().expect("runtime");
        for run in [
            send_recv_sync,
            send_recv_local,
            send_recv_futures,
            ping_pong_sync,
            ping_pong_local,
            ping_pong_futures,
        ] {
            assert_eq!(run(&rt, 100).expect("run").ops, 100);
        }
        drop(rt);
        let keep = PinGuard::keep().expect("affinity");
        let rt = runtime::Builder::new().cores(2).build().expect("runtime");
        assert_eq!(cross_runtime(&rt, 100).expect("cross").ops, 100);
        drop(rt);
        drop(keep);
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("tokio");
        assert_eq!(cross_tokio(&tokio_rt, 100).expect("tokio").ops, 100);
    }
}
