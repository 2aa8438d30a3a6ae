//! The executor and loop: spawn, join, abort, panics, wakes from other threads, stats.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runtime::{Builder, Runtime};

#[test]
fn nop_round_trips() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        for _ in 0..1000 {
            runtime::ext::raw::nop().await.unwrap();
        }
    });
    let s = rt.metrics().core(0).unwrap();
    assert!(s.cqes_reaped >= 1000, "{s:?}");
}

#[test]
fn million_nops_through_an_eight_entry_ring() {
    // 64 tasks with 8 SQ slots: the SQ fills (submit-and-retry path) and the 16-entry CQ
    // overflows (NODROP path) over and over; every nop must still complete exactly once.
    let rt = Builder::new().entries(8).cq_entries(16).build().unwrap();
    assert_eq!(rt.flags().sq_entries, 8);
    let done = Rc::new(RefCell::new(0u64));
    rt.block_on(async {
        let mut handles = Vec::new();
        for _ in 0..64 {
            let done = done.clone();
            handles.push(runtime::spawn_local(async move {
                for _ in 0..(1_000_000 / 64) {
                    runtime::ext::raw::nop().await.unwrap();
                    *done.borrow_mut() += 1;
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
    });
    assert_eq!(*done.borrow(), 64 * (1_000_000 / 64));
}

#[test]
fn many_nops_in_one_batch_overflow_the_cq() {
    // 4,096 nops pushed by one future before any is reaped: far more than the CQ holds.
    let rt = Builder::new().entries(8).cq_entries(16).build().unwrap();
    let n = rt.block_on(async {
        let ops: Vec<_> = (0..4096).map(|_| runtime::ext::raw::nop()).collect();
        let results = futures::future::join_all(ops).await;
        results.into_iter().filter(|r| r.is_ok()).count()
    });
    assert_eq!(n, 4096);
}

#[test]
fn spawn_local_runs_non_send_futures_and_joins() {
    let rt = Runtime::new().unwrap();
    let out = rt.block_on(async {
        let rc = Rc::new(20);
        let h = runtime::spawn_local(async move {
            runtime::yield_now().await;
            *rc + 1
        });
        let h2 = runtime::spawn(async { 21 });
        h.await.unwrap() + h2.await.unwrap()
    });
    assert_eq!(out, 42);
}

#[test]
fn detached_tasks_still_run() {
    let rt = Runtime::new().unwrap();
    let v = rt.block_on(async {
        let (tx, rx) = futures::channel::oneshot::channel();
        // The handle is dropped at once: the task runs on, detached.
        drop(runtime::spawn_local(async move {
            runtime::ext::raw::nop().await.unwrap();
            tx.send(11).unwrap();
        }));
        rx.await.unwrap()
    });
    assert_eq!(v, 11);
}

#[test]
fn panic_in_a_task_is_a_join_error_and_the_runtime_goes_on() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let h = runtime::spawn_local(async {
            runtime::ext::raw::nop().await.unwrap();
            panic!("boom in task");
        });
        let err = h.await.unwrap_err();
        assert!(err.is_panic());
        assert!(err.to_string().contains("boom in task"), "{err}");
        let payload = err.try_into_panic().unwrap();
        assert_eq!(*payload.downcast::<&str>().unwrap(), "boom in task");
        // The runtime still works.
        runtime::ext::raw::nop().await.unwrap();
        assert_eq!(runtime::spawn_local(async { 3 }).await.unwrap(), 3);
    });
}

#[test]
fn abort_cancels_a_pending_task_and_drops_its_future() {
    struct SetOnDrop(Rc<RefCell<bool>>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            *self.0.borrow_mut() = true;
        }
    }
    let rt = Runtime::new().unwrap();
    let dropped = Rc::new(RefCell::new(false));
    let d = dropped.clone();
    rt.block_on(async move {
        let h = runtime::spawn_local(async move {
            let _guard = SetOnDrop(d);
            runtime::time::sleep(Duration::from_secs(3600)).await;
        });
        runtime::yield_now().await;
        assert!(!h.is_finished());
        h.abort();
        let err = h.await.unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
    });
    assert!(*dropped.borrow());
}

#[test]
fn abort_after_completion_keeps_the_output() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let h = runtime::spawn_local(async { 9 });
        runtime::yield_now().await;
        assert!(h.is_finished());
        h.abort();
        assert_eq!(h.await.unwrap(), 9);
    });
}

#[test]
fn join_handle_awaited_from_another_task() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let a = runtime::spawn_local(async {
            runtime::time::sleep(Duration::from_millis(2)).await;
            "a"
        });
        let b = runtime::spawn_local(async move { a.await.unwrap() });
        assert_eq!(b.await.unwrap(), "a");
    });
}

#[test]
fn wake_from_another_thread_reaches_a_sleeping_runtime() {
    let rt = Runtime::new().unwrap();
    let (tx, rx) = futures::channel::oneshot::channel::<u32>();
    let started = Instant::now();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        tx.send(7).unwrap();
    });
    // With no timer pending, the loop sleeps in io_uring_enter with no timeout: only the
    // eventfd write from the other thread can wake it.
    let v = rt.block_on(async { rx.await.unwrap() });
    assert_eq!(v, 7);
    assert!(started.elapsed() >= Duration::from_millis(50));
    t.join().unwrap();
    assert!(
        rt.metrics().core(0).unwrap().remote_wakes >= 1,
        "{:?}",
        rt.metrics().core(0).unwrap()
    );
}

#[test]
fn wake_of_a_task_from_another_thread() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (tx, rx) = futures::channel::oneshot::channel::<u32>();
        let h = runtime::spawn_local(async move { rx.await.unwrap() + 1 });
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(1).unwrap();
        });
        assert_eq!(h.await.unwrap(), 2);
        t.join().unwrap();
    });
}

#[test]
fn many_remote_wakes_are_not_lost() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let mut handles = Vec::new();
        let mut senders = Vec::new();
        for i in 0..200u32 {
            let (tx, rx) = futures::channel::oneshot::channel::<u32>();
            senders.push(tx);
            handles.push(runtime::spawn_local(async move { rx.await.unwrap() + i }));
        }
        let t = std::thread::spawn(move || {
            for (i, tx) in senders.into_iter().enumerate() {
                if i % 17 == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                tx.send(1).unwrap();
            }
        });
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), i as u32 + 1);
        }
        t.join().unwrap();
    });
}

#[test]
fn second_runtime_on_a_thread_is_refused() {
    let rt = Runtime::new().unwrap();
    let err = Runtime::new().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert!(
        err.to_string().contains("already running on this thread"),
        "{err}"
    );
    drop(rt);
    // Once the first is gone, a new one may start.
    Runtime::new().unwrap();
}

#[test]
fn nested_block_on_panics_with_a_message() {
    let rt = Rc::new(Runtime::new().unwrap());
    let inner = rt.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async move { inner.block_on(async {}) })
    }));
    let msg = r.unwrap_err();
    let msg = msg
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| msg.downcast_ref::<String>().cloned())
        .unwrap();
    assert!(msg.contains("already runs one"), "{msg}");
}

#[test]
fn ring_flags_are_detected() {
    let rt = Runtime::new().unwrap();
    let f = rt.flags();
    let (major, minor) = common::kernel_version();
    if rt.features().backend == runtime::Backend::Epoll {
        // No ring: every setup flag is off; the queue sizes are still set.
        assert_eq!(
            f,
            runtime::RingFlags {
                sq_entries: f.sq_entries,
                cq_entries: f.cq_entries,
                ..Default::default()
            },
            "the epoll backend reports no ring flag: {f}"
        );
        assert!(f.sq_entries > 0, "{f}");
        eprintln!("checked the epoll backend: no ring flag is set ({f})");
    } else if runtime::ext::testing::require(
        "IORING_SETUP_DEFER_TASKRUN (Linux 6.1)",
        (major, minor) >= (6, 1),
    ) {
        assert!(
            f.single_issuer && f.defer_taskrun && f.coop_taskrun && f.submit_all,
            "{f}"
        );
    } else {
        // The io_uring backend needs 5.19, which has COOP_TASKRUN (5.19) and SUBMIT_ALL
        // (5.18); DEFER_TASKRUN (6.1) is not granted before its kernel.
        assert!(f.coop_taskrun && f.submit_all && !f.defer_taskrun, "{f}");
    }
    assert!(f.cq_entries > f.sq_entries, "{f}");
    drop(rt);

    // Flags not asked for are not granted, and the runtime still works without them.
    let rt = Builder::new()
        .single_issuer(false)
        .coop_taskrun(false)
        .build()
        .unwrap();
    let f = rt.flags();
    assert!(
        !f.single_issuer && !f.defer_taskrun && !f.coop_taskrun && !f.taskrun_flag,
        "{f}"
    );
    rt.block_on(async {
        for _ in 0..100 {
            runtime::ext::raw::nop().await.unwrap();
        }
        runtime::time::sleep(Duration::from_millis(1)).await;
    });
}

#[test]
fn bad_entries_are_an_error() {
    let err = Builder::new().entries(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err = Builder::new().entries(1 << 20).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn stats_count_enters_and_batches() {
    let rt = Runtime::new().unwrap();
    let before = rt.metrics().core(0).unwrap();
    rt.block_on(async {
        let mut hs = Vec::new();
        for _ in 0..32 {
            hs.push(runtime::spawn_local(async {
                for _ in 0..1000 {
                    runtime::ext::raw::nop().await.unwrap();
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    let d = rt.metrics().core(0).unwrap() - before;
    assert!(d.cqes_reaped >= 32_000, "{d:?}");
    assert!(d.polls >= 32_000, "{d:?}");
    // 32 tasks with one nop each in flight are batched: far fewer enters than nops.
    assert!(d.enters * 8 < d.cqes_reaped, "{d:?}");
    assert_eq!(runtime::core_metrics(), None);
}

#[test]
fn runtime_spawn_before_block_on() {
    let rt = Runtime::new().unwrap();
    let h = rt.spawn_local(async { 5 });
    assert_eq!(rt.block_on(h).unwrap(), 5);
}

#[test]
fn busy_task_does_not_starve_others() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let busy = runtime::spawn_local(async move {
            let mut n = 0u64;
            // Ops that are always ready: the poll budget makes this task yield.
            while !s.load(Ordering::Relaxed) {
                runtime::ext::raw::nop().await.unwrap();
                n += 1;
            }
            n
        });
        runtime::time::sleep(Duration::from_millis(20)).await;
        stop.store(true, Ordering::Relaxed);
        assert!(busy.await.unwrap() > 0);
    });
}

#[test]
fn core_metrics_count_alive_tasks() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let before = runtime::core_metrics().unwrap().alive_tasks;
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let waiting = runtime::spawn_local(async move {
            let _ = rx.await;
        });
        let aborted = runtime::spawn_local(std::future::pending::<()>());
        runtime::yield_now().await;
        assert_eq!(runtime::core_metrics().unwrap().alive_tasks, before + 2);
        aborted.abort();
        assert!(aborted.await.unwrap_err().is_cancelled());
        tx.send(()).unwrap();
        waiting.await.unwrap();
        assert_eq!(runtime::core_metrics().unwrap().alive_tasks, before);
    });
}

/// `Stats` is kept as a deprecated view of `CoreMetrics`: the same core, the same values
/// under the old names.
#[test]
#[allow(deprecated)]
fn deprecated_stats_is_a_view_of_core_metrics() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        runtime::spawn_local(async {}).await.unwrap();
        runtime::ext::raw::nop().await.unwrap();
        let (m, s) = (runtime::core_metrics().unwrap(), runtime::stats().unwrap());
        assert_eq!(s, runtime::Stats::from(m));
        assert_eq!(
            (s.tasks_polled, s.tasks_alive, s.tasks_stolen, s.enters),
            (m.polls, m.alive_tasks, m.stolen_tasks, m.enters)
        );
    });
    // On the runtime's thread between `block_on`s, core 0 is read now: the same figures
    // whichever way they are asked for.
    let m = rt.metrics().core(0).unwrap();
    assert_eq!(rt.stats(), runtime::Stats::from(m));
    assert!(m.polls >= 1 && m.sqes_submitted >= 1, "{m:?}");
}

/// Another thread reads a core's published block: after `block_on` returns it holds what
/// the core counted (the loop publishes as `block_on` ends).
#[test]
fn metrics_read_from_another_thread_are_published() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for _ in 0..100 {
            runtime::ext::raw::nop().await.unwrap();
        }
    });
    let here = rt.metrics().core(0).unwrap();
    let metrics = rt.metrics();
    let there = std::thread::spawn(move || metrics.core(0).unwrap())
        .join()
        .unwrap();
    assert!(there.cqes_reaped >= 100, "{there:?}");
    assert_eq!(there.cqes_reaped, here.cqes_reaped);
    assert_eq!(there.polls, here.polls);
}
