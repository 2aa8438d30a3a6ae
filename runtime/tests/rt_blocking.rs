//! `spawn_blocking`: a bounded pool whose threads exit when idle, panics as `JoinError`s,
//! results that wake their core, and a runtime dropped with jobs queued and running.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The tests count the process's pool threads, so they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Threads of this process named like the pool's ("runtime-blocking", cut to 15 bytes).
fn pool_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "runtime-blockin")
        .count()
}

/// Waits (up to 5 s) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_thousand_jobs_on_at_most_four_threads_all_return() {
    let _serial = serial();
    // Pool threads of earlier tests may still be winding down: count ours above them.
    let base = pool_threads();
    let rt = runtime::Builder::new()
        .max_blocking_threads(4)
        .thread_keep_alive(Duration::from_millis(50))
        .build()
        .unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let before = rt.metrics().core(0).unwrap();
    let sum = rt.block_on(async {
        let handles: Vec<_> = (0..1000u64)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                runtime::spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    most.fetch_max(pool_threads().saturating_sub(base), Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(200));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..1000).sum::<u64>());
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&most),
        "{most} jobs or pool threads at once"
    );
    // The results came back through the remote-wake path (pool threads have no ring).
    assert!(rt.metrics().core(0).unwrap().remote_wakes > before.remote_wakes);
}

#[test]
fn a_panicking_job_is_a_join_error() {
    let _serial = serial();
    let rt = runtime::Builder::new()
        .thread_keep_alive(Duration::from_millis(50))
        .build()
        .unwrap();
    let err = rt.block_on(async {
        runtime::spawn_blocking(|| -> u32 { panic!("the job failed") })
            .await
            .unwrap_err()
    });
    assert!(err.is_panic());
    let payload = err.try_into_panic().unwrap();
    assert_eq!(*payload.downcast::<&str>().unwrap(), "the job failed");
}

#[test]
fn idle_threads_exit_after_the_keep_alive() {
    let _serial = serial();
    let rt = runtime::Builder::new()
        .max_blocking_threads(3)
        .thread_keep_alive(Duration::from_millis(100))
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = mpsc::channel::<()>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        // Three jobs held at once need three threads.
        let jobs: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                runtime::spawn_blocking(move || {
                    let _ = rx.lock().unwrap().recv_timeout(Duration::from_millis(50));
                })
            })
            .collect();
        runtime::time::sleep(Duration::from_millis(20)).await;
        assert!(pool_threads() >= 1);
        drop(tx);
        for j in jobs {
            j.await.unwrap();
        }
        assert!(pool_threads() >= 1, "threads stay for the keep-alive");
    });
    eventually("every pool thread exits", || pool_threads() == 0);
}

#[test]
fn dropping_the_runtime_drops_queued_jobs_and_leaves_running_ones_detached() {
    let _serial = serial();
    let rt = runtime::Builder::new()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    let (release, wait) = mpsc::channel::<()>();
    let ran_second = Arc::new(AtomicBool::new(false));
    let finished_first = Arc::new(AtomicBool::new(false));
    rt.block_on(async {
        let finished = finished_first.clone();
        // The only thread is taken by a job that waits for `release`...
        drop(runtime::spawn_blocking(move || {
            let _ = wait.recv();
            finished.store(true, Ordering::SeqCst);
        }));
        // ...so this one stays queued.
        let ran = ran_second.clone();
        drop(runtime::spawn_blocking(move || {
            ran.store(true, Ordering::SeqCst)
        }));
        runtime::time::sleep(Duration::from_millis(20)).await;
    });
    let started = Instant::now();
    drop(rt);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the drop waited for a running job"
    );
    release.send(()).unwrap();
    eventually("the running job finishes detached", || {
        finished_first.load(Ordering::SeqCst)
    });
    eventually("its thread exits", || pool_threads() == 0);
    assert!(
        !ran_second.load(Ordering::SeqCst),
        "a queued job ran after the drop"
    );
}
