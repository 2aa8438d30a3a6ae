//! Thread-per-core: tasks across cores, cross-core wakes and messages, per-core flags,
//! shutdown with ops in flight on every core, panics isolated.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use runtime::ext::{raw, SharedFd};
use runtime::Builder;

#[test]
fn tasks_spawned_across_two_cores_run_there_and_join() {
    let rt = Builder::new().cores(2).build().unwrap();
    assert_eq!(rt.cores(), 2);
    let (a, b) = rt.block_on(async {
        let on1 = runtime::spawn_on(1, async {
            runtime::ext::raw::nop().await.unwrap();
            runtime::time::sleep(Duration::from_millis(2)).await;
            runtime::current_core()
        });
        let on0 = runtime::spawn_on(0, async { runtime::current_core() });
        (on0.await.unwrap(), on1.await.unwrap())
    });
    assert_eq!((a, b), (Some(0), Some(1)));
}

#[test]
fn many_tasks_on_the_other_core_all_complete() {
    let rt = Builder::new().cores(2).build().unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut hs = Vec::new();
        for i in 0..2000usize {
            let done = done.clone();
            hs.push(runtime::spawn_on(i % 2, async move {
                runtime::ext::raw::nop().await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
                i
            }));
        }
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), i);
        }
    });
    assert_eq!(done.load(Ordering::Relaxed), 2000);
}

#[test]
fn message_ping_pong_between_cores() {
    let rt = Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let (mut to_1, mut from_0) = futures::channel::mpsc::channel::<u64>(1);
        let (mut to_0, mut from_1) = futures::channel::mpsc::channel::<u64>(1);
        let echo = runtime::spawn_on(1, async move {
            let mut n = 0;
            while let Some(v) = from_0.next().await {
                assert_eq!(runtime::current_core(), Some(1));
                to_0.send(v + 1).await.unwrap();
                n += 1;
            }
            n
        });
        let mut v = 0;
        for _ in 0..5000 {
            to_1.send(v).await.unwrap();
            v = from_1.next().await.unwrap();
        }
        drop(to_1);
        assert_eq!(v, 5000);
        assert_eq!(echo.await.unwrap(), 5000);
    });
    // The wakes crossed cores: counted on core 0 (replies woke it from core 1).
    assert!(rt.metrics().core(0).unwrap().remote_wakes > 0);
}

#[test]
fn every_core_gets_its_own_ring_with_its_flags() {
    let rt = Builder::new().cores(2).build().unwrap();
    let flags = rt.core_flags();
    assert_eq!(flags.len(), 2);
    let (major, minor) = common::kernel_version();
    let features = rt.core_features();
    assert_eq!(features.len(), 2);
    for (i, f) in flags.iter().enumerate() {
        if features[i].backend == runtime::Backend::Epoll {
            // No ring on this core: every setup flag is off.
            assert!(
                !f.single_issuer
                    && !f.defer_taskrun
                    && !f.coop_taskrun
                    && !f.taskrun_flag
                    && !f.submit_all
                    && !f.no_sqarray,
                "core {i} on epoll: {f}"
            );
            eprintln!("core {i}: checked the epoll backend: no ring flag is set ({f})");
        } else if (major, minor) >= (6, 1) {
            assert!(f.single_issuer && f.defer_taskrun, "core {i}: {f}");
        }
    }
    // SINGLE_ISSUER holds: each core submits to its own ring from its own thread.
    rt.block_on(async {
        runtime::spawn_on(1, async { runtime::ext::raw::nop().await.unwrap() })
            .await
            .unwrap();
        runtime::ext::raw::nop().await.unwrap();
    });
}

#[test]
fn shutdown_with_ops_in_flight_on_every_core() {
    let token = Arc::new(());
    let (r, w) = common::pipe();
    {
        let rt = Builder::new().cores(2).build().unwrap();
        rt.block_on(async {
            for core in 0..2 {
                for _ in 0..8 {
                    let fd = r.try_clone().unwrap();
                    let t = token.clone();
                    // The read holds a `SharedFd` (not `Send`): made on its core.
                    drop(runtime::spawn_on_local(core, move || async move {
                        let _t = t;
                        let fd = SharedFd::new(fd);
                        // Never completes: nobody writes to the pipe.
                        let _ = raw::read(&fd, vec![0u8; 64], u64::MAX).await;
                        drop(fd);
                    }));
                }
            }
            runtime::time::sleep(Duration::from_millis(20)).await;
        });
        assert_eq!(Arc::strong_count(&token), 17);
    }
    // Every task was dropped on its core, every read cancelled and reaped.
    assert_eq!(Arc::strong_count(&token), 1);
    drop((r, w));
}

#[test]
fn a_panic_on_one_core_stays_there() {
    let rt = Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let bad = runtime::spawn_on(1, async {
            runtime::ext::raw::nop().await.unwrap();
            panic!("boom on core 1");
        });
        let err = bad.await.unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        // Core 1 goes on serving.
        let ok = runtime::spawn_on(1, async { runtime::current_core() });
        assert_eq!(ok.await.unwrap(), Some(1));
    });
}

#[test]
// The handle is carried out of block_on on purpose: it is awaited after the runtime is gone.
#[allow(clippy::async_yields_async)]
fn spawn_on_after_shutdown_of_the_target_is_cancelled_not_hung() {
    // A JoinHandle for a task that never ran still resolves when its runtime goes away.
    let rt = Builder::new().cores(2).build().unwrap();
    let h = rt.block_on(async {
        let h = runtime::spawn_on(1, async {
            runtime::time::sleep(Duration::from_secs(3600)).await;
        });
        runtime::ext::raw::nop().await.unwrap();
        h
    });
    drop(rt);
    let rt = runtime::Runtime::new().unwrap();
    let err = rt.block_on(h).unwrap_err();
    assert!(err.is_cancelled());
}

#[test]
fn zero_cores_and_empty_cpu_lists_are_invalid_input() {
    let e = Builder::new().cores(0).build().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = Builder::new().cores(2).cpus([]).build().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}
