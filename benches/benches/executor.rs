//! Criterion micro-benchmarks of the executor's internals, through the public API only.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Timers inserted and cancelled per iteration of `timer_cancel`.
const TIMER_COUNTS: [u64; 2] = [1, 1_000];

/// A single-core runtime; the benchmarks cannot run without one.
fn runtime() -> runtime::Runtime {
    runtime::Builder::new()
        .entries(256)
        .build()
        .unwrap_or_else(|e| panic!("runtime setup failed (is io_uring allowed here?): {e}"))
}

/// Times `body(iters)` inside one `block_on` of `rt`.
fn timed<F, Fut>(rt: &runtime::Runtime, iters: u64, body: F) -> Duration
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    rt.block_on(async {
        let start = Instant::now();
        body(iters).await;
        start.elapsed()
    })
}

/// Benchmarks `name`: `body(n)` timed inside one `block_on` of a runtime of its own, `n` criterion's iterations.
fn bench<Fut: Future<Output = ()>>(c: &mut Criterion, name: &str, body: impl Fn(u64) -> Fut) {
    let rt = runtime();
    c.bench_function(name, |b| b.iter_custom(|iters| timed(&rt, iters, &body)));
}

fn spawn_join(c: &mut Criterion) {
    bench(c, "spawn_join", |n| async move {
        for _ in 0..n {
            let v = runtime::spawn_local(async { black_box(1u8) }).await;
            black_box(v.ok());
        }
    });
}

fn local_wake(c: &mut Criterion) {
    bench(c, "local_wake", |n| async move {
        // A spawned task, so the wake takes the task path, not block_on's own waker.
        let task = runtime::spawn_local(async move {
            for _ in 0..n {
                runtime::yield_now().await;
            }
        });
        black_box(task.await.ok());
    });
}

fn remote_wake(c: &mut Criterion) {
    let rt = runtime();
    let (tx, rx) = mpsc::channel::<Waker>();
    // The remote side: wakes every waker it receives, until the channel closes.
    let waker_thread = thread::spawn(move || {
        for waker in rx {
            waker.wake();
        }
    });
    c.bench_function("remote_wake", |b| {
        b.iter_custom(|iters| {
            let tx = tx.clone();
            timed(&rt, iters, move |n| async move {
                let task = runtime::spawn_local(async move {
                    for _ in 0..n {
                        let mut sent = false;
                        std::future::poll_fn(|cx| {
                            if sent {
                                return Poll::Ready(());
                            }
                            sent = true;
                            // A send error means the thread is gone.
                            match tx.send(cx.waker().clone()) {
                                Ok(()) => Poll::Pending,
                                Err(_) => Poll::Ready(()),
                            }
                        })
                        .await;
                    }
                });
                black_box(task.await.ok());
            })
        })
    });
    drop(tx);
    waker_thread.join().expect("the waker thread panicked");
}

fn timers(c: &mut Criterion) {
    bench(c, "timer_fire", |n| async move {
        for _ in 0..n {
            runtime::sleep(Duration::from_micros(1)).await;
        }
    });

    let rt = runtime();
    let mut group = c.benchmark_group("timer_cancel");
    for count in TIMER_COUNTS {
        group.throughput(Throughput::Elements(count));
        group.bench_with_input(BenchmarkId::from_parameter(count), &count, |b, &count| {
            b.iter_custom(|iters| {
                timed(&rt, iters, |n| async move {
                    let mut sleeps = Vec::with_capacity(count as usize);
                    for _ in 0..n {
                        sleeps
                            .extend((0..count).map(|_| runtime::sleep(Duration::from_secs(3600))));
                        // Poll each once: that inserts it into the core's timer map.
                        std::future::poll_fn(|cx| {
                            for s in &mut sleeps {
                                black_box(Pin::new(s).poll(cx).is_ready());
                            }
                            Poll::Ready(())
                        })
                        .await;
                        // Dropping removes each from the map.
                        sleeps.clear();
                    }
                })
            })
        });
    }
    group.finish();
}

fn nop(c: &mut Criterion) {
    bench(c, "nop", |n| async move {
        for _ in 0..n {
            black_box(runtime::ext::raw::nop().await.ok());
        }
    });
}

criterion_group!(executor, spawn_join, local_wake, remote_wake, timers, nop);
criterion_main!(executor);
