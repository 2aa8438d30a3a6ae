//! Work that crosses cores, this runtime at `cores(2)` against tokio's multi-thread runtime
//! with two workers (both pinned to the same two CPUs), run by `bench pingpong` after its own
//! table:
//! - spawn + join of a `Send` child from a task, latency per spawn+join (p50, p99);
//! - an `mpsc(1)` ping-pong between two tasks both placed by `spawn`, ns per round trip;
//! - wake then compute: a task wakes a task parked on the other core, then computes for
//!   100 us; how long after the wake the woken task runs (p50, p99);
//! - the runtime's pinned pair: `spawn_on(0)` and `spawn_on(1)` ping-ponging over two tokio
//!   `sync::mpsc(1)` channels, against the futex floor measured in the same rounds (two
//!   pinned std threads bouncing a counter with `park`/`unpark`: a futex wait and wake per
//!   message, what a hop costs when the other side sleeps).
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
    let mut rows: [Vec<[f64; 2]>; 8] = Default::default();
    for _ in 0..rounds {
        rows[6].push([rt.block_on(pinned_pair(trips))?, 0.0]);
        rows[7].push([futex_floor(b, trips as u64)?, 0.0]);
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
    // The mean rows: name, row, and the row it is compared with.
    let means = [
        (
            format!("mpsc(1) ping-pong, spawned pair ({trips}/round): runtime"),
            2,
            3,
        ),
        ("mpsc(1) ping-pong: tokio".to_string(), 3, 3),
        (
            "spawn_on(0)/spawn_on(1) pair, tokio mpsc(1): runtime".to_string(),
            6,
            7,
        ),
        ("futex floor: std threads, park/unpark".to_string(), 7, 7),
    ];
    for (name, i, against) in means {
        println!(
            "  {:<46} {:>10.2} {:>10} {:>10.2}x",
            name,
            med(i, 0) / 1e3,
            "-",
            med(i, 0) / med(against, 0)
        );
    }
    println!("  ping-pong: mean us per round trip (no p99); vs tokio: this row's p50 over tokio's (<1: faster); the pair and the floor: vs the floor");
    println!(
        "  target: spawn+join p50 <= 1.5x tokio's; the spawn_on pair <= 0.25x the futex floor; the rest reported"
    );
    Ok(())
}

/// Mean ns per round trip of `spawn_on(0)` and `spawn_on(1)` tasks ping-ponging over two
/// tokio `sync::mpsc(1)` channels (which need no tokio runtime).
async fn pinned_pair(n: usize) -> io::Result<f64> {
    let ((to_b, mut from_a), (to_a, mut from_b)) =
        (tokio::sync::mpsc::channel(1), tokio::sync::mpsc::channel(1));
    let pong = runtime::spawn_on(1, async move {
        pong!(v = from_a.recv().await, to_a.send(v + 1).await)
    });
    let ping = runtime::spawn_on(0, async move {
        // One untimed round trip: the ponger is running on core 1 before the clock starts.
        to_b.send(0).await.map_err(io::Error::other)?;
        from_b.recv().await;
        let start = Instant::now();
        ping!(i in 1..=n, to_b.send(i).await, from_b.recv().await);
        Ok::<_, io::Error>(start.elapsed())
    });
    let elapsed = ping.await.map_err(lost)??;
    pong.await.map_err(lost)?;
    Ok(elapsed.as_nanos() as f64 / n as f64)
}

/// Mean ns per round trip of this thread and one pinned to `cpu` bouncing a counter with
/// `thread::park`/`unpark` (futex wait and wake, no spinning): the cost of a hop to a
/// sleeping thread.
fn futex_floor(cpu: usize, n: u64) -> io::Result<f64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let ball = Arc::new(AtomicU64::new(0));
    let me = std::thread::current();
    let theirs = ball.clone();
    // Waits (parked) until the ball reads `v`.
    fn wait(ball: &AtomicU64, v: u64) {
        while ball.load(Ordering::Acquire) != v {
            std::thread::park();
        }
    }
    let ponger = std::thread::Builder::new()
        .name("futex-floor".to_string())
        .spawn(move || {
            sysutil::pin_to(cpu)?;
            for i in 0..=n {
                wait(&theirs, 2 * i + 1);
                theirs.store(2 * i + 2, Ordering::Release);
                me.unpark();
            }
            Ok::<_, io::Error>(())
        })?;
    let hit = |i: u64| {
        ball.store(2 * i + 1, Ordering::Release);
        ponger.thread().unpark();
        wait(&ball, 2 * i + 2);
    };
    // One untimed round trip: the ponger is up before the clock starts.
    hit(0);
    let start = Instant::now();
    for i in 1..=n {
        hit(i);
    }
    let elapsed = start.elapsed();
    ponger
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the futex ponger panicked")))?;
    Ok(elapsed.as_nanos() as f64 / n as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_pair_and_the_futex_floor_count_round_trips() {
        // `ping!` checks every answer: a lost or wrong one is an error, a lost wake a hang.
        let [_, b] = two_cpus();
        let (keep, rt) = runtime_on(two_cpus()).expect("runtime");
        assert!(rt.block_on(pinned_pair(200)).expect("pinned pair") > 0.0);
        drop((rt, keep));
        assert!(futex_floor(b, 200).expect("futex floor") > 0.0);
    }
}
