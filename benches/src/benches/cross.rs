//! Work that crosses cores, this runtime at `cores(2)` against tokio's multi-thread runtime
//! with two workers (both pinned to the same two CPUs), run by `bench pingpong` after its own
//! table:
//! - spawn + join of a `Send` child from a task, latency per spawn+join (p50, p99);
//! - an `mpsc(1)` ping-pong between two tasks both placed by `spawn`, ns per round trip;
//! - wake then compute: a task wakes a task parked on the other core, then computes for
//!   100 us; how long after the wake the woken task runs (p50, p99).
//!
//! Rounds alternate the runtimes (A B A B); each figure is the median over rounds.

use std::io;
use std::time::{Duration, Instant};

use super::pingpong::{ping, pong};
use crate::harness::cli::Opts;
use crate::harness::measure::{runtime_on, tokio_on, two_cpus};

/// How long the waker computes after its wake.
const COMPUTE: Duration = Duration::from_micros(100);

/// Runs the three measurements and prints their tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let [a, b] = two_cpus();
    let (keep, rt) = runtime_on([a, b])?;
    let tokio_rt = tokio_on([a, b])?;
    let rounds = opts.runs.unwrap_or(if opts.quick { 3 } else { 5 });
    let scale = if opts.quick { 10 } else { 1 };

    let spawns = 20_000 / scale;
    let trips = 20_000 / scale;
    let wakes = 2_000 / scale;
    let mut rows: [Vec<[f64; 2]>; 6] = Default::default();
    for _ in 0..rounds {
        rows[0].push(quantiles(rt.block_on(on_runtime::spawn_join(spawns))?));
        rows[1].push(quantiles(tokio_rt.block_on(on_tokio::spawn_join(spawns))?));
        rows[2].push([rt.block_on(on_runtime::pingpong(trips))?, 0.0]);
        rows[3].push([tokio_rt.block_on(on_tokio::pingpong(trips))?, 0.0]);
        rows[4].push(quantiles(rt.block_on(on_runtime::wake(wakes))?));
        rows[5].push(quantiles(tokio_rt.block_on(on_tokio::wake(wakes))?));
    }
    drop(tokio_rt);
    drop((rt, keep));
    let med = |i: usize, j: usize| {
        let mut v: Vec<f64> = rows[i].iter().map(|r| r[j]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "cross-core: runtime cores(2) vs tokio multi-thread (2 workers), CPUs {a} and {b}, median of {rounds} alternating rounds"
    );
    println!(
        "  {:<46} {:>10} {:>10} {:>10}",
        "", "p50 us", "p99 us", "p50 vs tokio"
    );
    let names = [
        format!("spawn+join of a Send child ({spawns}/round)"),
        format!(
            "wake, then compute {} us ({wakes}/round)",
            COMPUTE.as_micros()
        ),
    ];
    for (name, base) in names.iter().zip([0, 4]) {
        for (who, i) in [("runtime", base), ("tokio", base + 1)] {
            println!(
                "  {:<46} {:>10.2} {:>10.2} {:>10.2}x",
                format!("{name}: {who}"),
                med(i, 0) / 1e3,
                med(i, 1) / 1e3,
                med(i, 0) / med(base + 1, 0)
            );
        }
    }
    println!(
        "  {:<46} {:>10.2} {:>10} {:>10.2}x",
        format!("mpsc(1) ping-pong, spawned pair ({trips}/round): runtime"),
        med(2, 0) / 1e3,
        "-",
        med(2, 0) / med(3, 0)
    );
    println!(
        "  {:<46} {:>10.2} {:>10} {:>10.2}x",
        "mpsc(1) ping-pong: tokio",
        med(3, 0) / 1e3,
        "-",
        1.0
    );
    println!("  ping-pong: mean us per round trip (no p99); vs tokio: this row's p50 over tokio's (<1: faster)");
    println!(
        "  target: spawn+join p50 <= 1.5x tokio's; the ping-pong and the wake latency reported"
    );
    Ok(())
}

/// p50 and p99 of `ns`, in ns.
fn quantiles(mut ns: Vec<f64>) -> [f64; 2] {
    ns.sort_by(f64::total_cmp);
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q) as usize];
    [at(0.5), at(0.99)]
}

fn lost<E>(_: E) -> io::Error {
    io::Error::other("a benchmark task failed")
}

/// Spins the CPU for `d`.
fn compute(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The three shapes on one runtime, as a module of async fns. `$spawn` places a task as that runtime's `spawn`
/// does; `$on0` and `$on1` (each a function and, in brackets, its arguments before the future) on core 0 and core 1 where the runtime can say so; `$sleep`
/// its timer; `$oneshot` and `$mpsc` its channels, `$recv` the receiving method of the latter.
macro_rules! shapes {
    ($m:ident, $spawn:path, $on0:path [$($a0:expr)?], $on1:path [$($a1:expr)?], $sleep:path, $oneshot:path,
     $mpsc:path, $recv:ident) => {
        mod $m {
            use super::*;
            #[allow(unused_imports)]
            use futures::{SinkExt as _, StreamExt as _};

            /// Spawn + join latencies of a `Send` child, from a task spawned on core 0.
            pub async fn spawn_join(n: usize) -> io::Result<Vec<f64>> {
                $spawn(async move {
                    let mut ns = Vec::with_capacity(n);
                    for i in 0..n {
                        let start = Instant::now();
                        let v = $spawn(async move { i + 1 }).await.map_err(lost)?;
                        ns.push(start.elapsed().as_nanos() as f64);
                        std::hint::black_box(v);
                    }
                    Ok(ns)
                })
                .await
                .map_err(lost)?
            }

            /// Mean ns per round trip of an `mpsc(1)` ping-pong between two tasks both placed by `spawn`.
            pub async fn pingpong(n: usize) -> io::Result<f64> {
                #[allow(unused_mut)]
                let ((mut to_b, mut from_a), (mut to_a, mut from_b)) = ($mpsc(1), $mpsc(1));
                let pong =
                    $spawn(async move { pong!(v = from_a.$recv().await, to_a.send(v + 1).await) });
                let ping = $spawn(async move {
                    let start = Instant::now();
                    ping!(i in 0..n, to_b.send(i).await, from_b.$recv().await);
                    Ok::<_, io::Error>(start.elapsed())
                });
                let elapsed = ping.await.map_err(lost)??;
                pong.await.map_err(lost)?;
                Ok(elapsed.as_nanos() as f64 / n as f64)
            }

            /// Wake-to-run latencies: a task on core 1 waits on a oneshot; a task on core 0 sends, then computes
            /// for `COMPUTE`; the woken task notes when it runs.
            pub async fn wake(n: usize) -> io::Result<Vec<f64>> {
                $on0($($a0,)? async move {
                    let mut ns = Vec::with_capacity(n);
                    for _ in 0..n {
                        let (tx, rx) = $oneshot();
                        let woken = $on1($($a1,)? async move {
                            let sent: Instant = rx.await.map_err(lost)?;
                            Ok::<_, io::Error>(sent.elapsed())
                        });
                        // Let the waiter park on core 1 first.
                        $sleep(Duration::from_micros(200)).await;
                        let _ = tx.send(Instant::now());
                        compute(COMPUTE);
                        ns.push(woken.await.map_err(lost)??.as_nanos() as f64);
                    }
                    Ok(ns)
                })
                .await
                .map_err(lost)?
            }
        }
    };
}

shapes!(
    on_runtime,
    runtime::spawn,
    runtime::spawn_on[0],
    runtime::spawn_on[1],
    runtime::sleep,
    futures::channel::oneshot::channel,
    futures::channel::mpsc::channel,
    next
);
shapes!(
    on_tokio,
    tokio::spawn,
    tokio::spawn[],
    tokio::spawn[],
    tokio::time::sleep,
    tokio::sync::oneshot::channel,
    tokio::sync::mpsc::channel,
    recv
);
