//! `bench sync`: channels, ns per message, on one core and across two.

use std::io;
use std::time::Instant;

use futures::{SinkExt, StreamExt};
use runtime::sync::local;

use super::pingpong::{cross_runtime, one_cpu_note, ping, pong, tokio_pingpong};
use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{runtime_on, tokio_on, two_cpus, Measure, Plan};
use crate::harness::report::Metric;

/// The channels' capacity in the send-then-recv loop: never full there.
const CAPACITY: usize = 1024;
const SYNC: &str = "runtime::sync::mpsc (tokio's)";
const LOCAL: &str = "runtime::sync::local::mpsc";
const FUTURES: &str = "futures::channel::mpsc";

/// Runs the benchmark and prints its tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let plan = |full: u64| Plan::new(opts, full, 1);
    let rt = runtime::Builder::new().build()?;
    let title = format!(
        "sync (one core, send then recv): {{n}} messages per run through a bounded channel ({CAPACITY}) in one task"
    );
    one_core(title, "msg")
        .row(SYNC, |n| send_recv_sync(&rt, n))
        .row(LOCAL, |n| send_recv_local(&rt, n))
        .row(FUTURES, |n| send_recv_futures(&rt, n))
        .run(plan(2_000_000))?
        .print([]);
    println!();
    let title = "sync (one core, ping-pong): {n} round trips per run between two tasks of one core (2 messages each, \
                 channels of capacity 1)";
    one_core(title, "rt")
        .row(SYNC, |n| ping_pong_sync(&rt, n))
        .row(LOCAL, |n| ping_pong_local(&rt, n))
        .row(FUTURES, |n| ping_pong_futures(&rt, n))
        .run(plan(500_000))?
        .print([]);
    println!();
    drop(rt);

    // Across cores. Building the runtime pins this thread (its core 0); restored at the end.
    let [a, b] = two_cpus();
    let (keep, rt) = runtime_on([a, b])?;
    let tokio_rt = tokio_on([a, b])?;
    let title = format!(
        "sync (across cores, ping-pong): {{n}} round trips per run between CPU {a} and CPU {b} (2 messages each, \
         channels of capacity 1)"
    );
    let table = Contest::new(title, Metric::NsPerOp("rt"), "vs tokio")
        .row("tokio multi-thread, tokio's mpsc", |n| {
            tokio_pingpong(&tokio_rt, n)
        })
        .row("runtime cores(2), runtime::sync::mpsc", |n| {
            Ok(cross_runtime!(rt, n, runtime::sync::mpsc::channel(1), send, recv)?.0)
        })
        .note("vs tokio: how many times faster than tokio's mpsc on a tokio multi-thread runtime")
        .note("enters/op: core 0's io_uring_enter calls per round trip (runtime::core_metrics)")
        .note("tokio may run both tasks on one worker (LIFO slot): its hops need not cross cores")
        .run(plan(20_000))?;
    drop((tokio_rt, rt, keep));
    table.print([]);
    one_cpu_note(a, b);
    Ok(())
}

/// A one-core table, ratios against its first row (`runtime::sync::mpsc`).
fn one_core<'a>(title: impl Into<String>, op: &'static str) -> Contest<'a> {
    Contest::new(title, Metric::NsPerOp(op), "vs sync::mpsc").note(
        "vs sync::mpsc: how many times faster than runtime::sync::mpsc (tokio's) on the same core",
    )
}

/// Times `n` iterations of `body` inside the runtime.
fn timed(
    rt: &runtime::Runtime,
    n: u64,
    body: impl std::future::Future<Output = io::Result<()>>,
) -> io::Result<Measure> {
    rt.block_on(async move {
        let start = Instant::now();
        body.await?;
        Ok(Measure::since(n, start))
    })
}

fn wrong() -> io::Error {
    io::Error::other("the channel returned the wrong value")
}

/// Defines `$send_recv(rt, n)`, `n` messages sent and received back in one task through a channel of [`CAPACITY`].
macro_rules! one_core {
    ($send_recv:ident, $ping_pong:ident, $chan:path, $one:expr, $send:ident, $recv:ident) => {
        fn $send_recv(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
            #[allow(unused_mut)]
            let (mut tx, mut rx) = $chan(CAPACITY);
            timed(rt, n, async move {
                // Hot path: one send and one receive per message.
                for i in 0..n {
                    tx.$send(i).await.map_err(io::Error::other)?;
                    if rx.$recv().await != Some(i) {
                        return Err(wrong());
                    }
                }
                Ok(())
            })
        }

        fn $ping_pong(rt: &runtime::Runtime, n: u64) -> io::Result<Measure> {
            #[allow(unused_mut)]
            let ((mut to_b, mut from_a), (mut to_a, mut from_b)) = ($chan($one), $chan($one));
            timed(rt, n, async move {
                let pong = runtime::spawn_local(async move {
                    pong!(v = from_a.$recv().await, to_a.$send(v + 1).await)
                });
                ping!(i in 0..n, to_b.$send(i).await, from_b.$recv().await);
                drop(to_b);
                pong.await.map_err(io::Error::other)
            })
        }
    };
}

one_core!(
    send_recv_sync,
    ping_pong_sync,
    runtime::sync::mpsc::channel::<u64>,
    1,
    send,
    recv
);
one_core!(
    send_recv_local,
    ping_pong_local,
    local::mpsc::channel::<u64>,
    1,
    send,
    recv
);
// futures' bounded channel holds capacity + 1 per sender; 0 makes it hold one value.
one_core!(
    send_recv_futures,
    ping_pong_futures,
    futures::channel::mpsc::channel::<u64>,
    0,
    send,
    next
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contestants_count_their_messages() {
        let rt = runtime::Builder::new().build().expect("runtime");
        let runs = [
            send_recv_sync,
            send_recv_local,
            send_recv_futures,
            ping_pong_sync,
            ping_pong_local,
            ping_pong_futures,
        ];
        for run in runs {
            assert_eq!(run(&rt, 100).expect("run").ops, 100);
        }
        drop(rt);
        let (keep, rt) = runtime_on(two_cpus()).expect("runtime");
        let (m, _, _) =
            cross_runtime!(rt, 100, runtime::sync::mpsc::channel(1), send, recv).unwrap();
        assert_eq!(m.ops, 100);
        drop((rt, keep));
    }
}
