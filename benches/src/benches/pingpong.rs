//! `bench pingpong`: a counter bounced between two cores, ns per round trip; then the
//! cross-core shapes of `cross` (spawn + join, a spawned pair, wake then compute).

use std::cell::Cell;
use std::io;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use futures::{SinkExt, StreamExt};

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{runtime_on, tokio_on, two_cpus, Measure, Plan};
use crate::harness::report::Metric;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let [a, b] = two_cpus();
    // Building the runtime pins this thread (its core 0) to CPU `a`; restored at the end.
    let (keep, rt) = runtime_on([a, b])?;
    let std_pair = StdPair::start(b)?;
    let tokio_rt = tokio_on([a, b])?;
    let counters = Counters::default();
    let title = format!("pingpong: {{n}} round trips per run between CPU {a} and CPU {b}");
    let table = Contest::new(title, Metric::NsPerOp("rt"), "vs std")
        .row("std threads", |n| std_pair.run(n))
        .row("runtime cores(2)", |n| {
            let (m, core0, core1) =
                cross_runtime!(rt, n, futures::channel::mpsc::channel(1), send, next)?;
            counters.add(n, core0, core1);
            Ok(m)
        })
        .row("tokio multi-thread", |n| tokio_pingpong(&tokio_rt, n))
        .note("vs std: how many times faster than the std::sync::mpsc thread pair")
        .note("enters/op: core 0's io_uring_enter calls per round trip (runtime::core_metrics)")
        .run(Plan::new(opts, 100_000, 1))?;
    drop(tokio_rt);
    std_pair.stop()?;
    drop((rt, keep));
    table.print([
        counters.note(),
        "target: runtime cores(2) >= 2x faster than the std::sync::mpsc thread pair".into(),
    ]);
    one_cpu_note(a, b);
    // Then the shapes where the runtime, not the test, decides where tasks run.
    super::cross::run(opts)
}

/// Says so when both sides had to share the one allowed CPU.
pub fn one_cpu_note(a: usize, b: usize) {
    if a == b {
        println!("  (only one CPU allowed: both sides share it, nothing crosses cores)");
    }
}

/// The runtime's counters summed over every run (warm-up included), per core.
#[derive(Default)]
struct Counters {
    trips: Cell<u64>,
    cores: [Cell<runtime::CoreMetrics>; 2],
}

impl Counters {
    fn add(&self, trips: u64, core0: runtime::CoreMetrics, core1: runtime::CoreMetrics) {
        self.trips.set(self.trips.get() + trips);
        self.cores[0].set(self.cores[0].get() + core0);
        self.cores[1].set(self.cores[1].get() + core1);
    }

    fn note(&self) -> String {
        let n = self.trips.get().max(1) as f64;
        let [c0, c1] = [0, 1].map(|i| {
            let s = self.cores[i].get();
            let [w, e, sq, cq, p] = [
                s.remote_wakes,
                s.enters,
                s.sqes_submitted,
                s.cqes_reaped,
                s.polls,
            ]
            .map(|v| v as f64 / n);
            format!(
                "remote wakes {w:.3}, enters {e:.3}, sqes {sq:.3}, cqes {cq:.3}, task polls {p:.3}"
            )
        });
        format!("runtime per round trip (warm-up included): core 0: {c0}; core 1: {c1}")
    }
}

/// The ponger's loop: each value `$recv` yields (as `$v`) goes back through `$send`, until either side is closed.
macro_rules! pong {
    ($v:ident = $recv:expr, $send:expr) => {
        // Hot path: one receive and one send per round trip.
        while let Some($v) = $recv {
            if $send.is_err() {
                break;
            }
        }
    };
}

/// The pinger's loop: each `$i` of `$range` goes out through `$send` (`?` on its error, made an `io::Error`) and must come back plus one.
macro_rules! ping {
    ($i:ident in $range:expr, $send:expr, $recv:expr) => {
        // Hot path: one send and one receive per round trip.
        for $i in $range {
            $send.map_err(io::Error::other)?;
            if $recv != Some($i + 1) {
                return Err(io::Error::other("the ponger answered the wrong count"));
            }
        }
    };
}
pub(crate) use {ping, pong};

/// `$n` timed round trips between the `block_on` future of `$rt`.
macro_rules! cross_runtime {
    ($rt:expr, $n:expr, $chan:expr, $send:ident, $recv:ident) => {{
        #[allow(unused_mut)]
        let ((mut to_b, mut from_a), (mut to_a, mut from_b)) = ($chan, $chan);
        $rt.block_on(async move {
            let pong = runtime::spawn_on(1, async move {
                let before = runtime::core_metrics().expect("on core 1");
                pong!(v = from_a.$recv().await, to_a.$send(v + 1).await);
                runtime::core_metrics().expect("on core 1") - before
            });
            // One untimed round trip: the ponger is running on core 1 before the clock starts.
            to_b.$send(0).await.map_err(io::Error::other)?;
            from_b.$recv().await;
            let before = runtime::core_metrics().expect("on core 0");
            let start = std::time::Instant::now();
            ping!(i in 1..=$n, to_b.$send(i).await, from_b.$recv().await);
            let elapsed = start.elapsed();
            let core0 = runtime::core_metrics().expect("on core 0") - before;
            drop(to_b);
            let core1 = pong.await.map_err(io::Error::other)?;
            Ok((
                Measure::new($n, elapsed, Some(core0.enters)),
                core0,
                core1,
            ))
        })
    }};
}
pub(crate) use cross_runtime;

/// `n` round trips on tokio's runtime `rt`, both sides spawned onto its workers.
pub fn tokio_pingpong(rt: &tokio::runtime::Runtime, n: u64) -> io::Result<Measure> {
    let ((to_b, mut from_a), (to_a, mut from_b)) =
        (tokio::sync::mpsc::channel(1), tokio::sync::mpsc::channel(1));
    rt.block_on(async move {
        let pong =
            tokio::spawn(async move { pong!(v = from_a.recv().await, to_a.send(v + 1).await) });
        let ping = tokio::spawn(async move {
            to_b.send(0).await.map_err(io::Error::other)?;
            from_b.recv().await;
            let start = Instant::now();
            ping!(i in 1..=n, to_b.send(i).await, from_b.recv().await);
            Ok(start.elapsed())
        });
        let elapsed = ping.await.map_err(io::Error::other)??;
        pong.await.map_err(io::Error::other)?;
        Ok(Measure::new(n, elapsed, None))
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
        let ((to_b, from_a), (to_a, from_b)) = (sync_channel::<u64>(1), sync_channel::<u64>(1));
        let thread = std::thread::Builder::new()
            .name("pingpong-std".to_string())
            .spawn(move || {
                sysutil::pin_to(cpu)?;
                pong!(v = from_a.recv().ok(), to_a.send(v + 1));
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
        let (to, from) = (&self.to_b, &self.from_b);
        ping!(i in 0..n, to.send(i).map_err(|_| gone()), Some(from.recv().map_err(|_| gone())?));
        Ok(Measure::since(n, start))
    }

    fn stop(self) -> io::Result<()> {
        drop(self.to_b);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the std ponger thread panicked")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contestants_count_round_trips() {
        let (keep, rt) = runtime_on(two_cpus()).expect("runtime");
        let (m, core0, _) =
            cross_runtime!(rt, 100, futures::channel::mpsc::channel(1), send, next).unwrap();
        assert!(m.ops == 100 && core0.remote_wakes > 0);
        drop((rt, keep));
        let pair = StdPair::start(0).expect("std pair");
        assert_eq!(pair.run(100).expect("std run").ops, 100);
        pair.stop().expect("stop");
        assert_eq!(
            tokio_pingpong(&tokio_on(two_cpus()).unwrap(), 100)
                .unwrap()
                .ops,
            100
        );
    }
}
