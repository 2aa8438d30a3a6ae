//! `task::JoinSet`: outputs in completion order, panics and aborts as `JoinError`s, and
//! every task aborted (its future dropped) when the set is dropped.

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use runtime::task::JoinSet;

/// Counts its drops: stands for a task's future being dropped.
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn outputs_come_in_completion_order() {
    let rt = runtime::Runtime::new().unwrap();
    let order = rt.block_on(async {
        let mut set = JoinSet::new();
        for (id, ms) in [(0u32, 30u64), (1, 10), (2, 20)] {
            set.spawn(async move {
                runtime::time::sleep(Duration::from_millis(ms)).await;
                id
            });
        }
        assert_eq!(set.len(), 3);
        let mut order = Vec::new();
        while let Some(res) = set.join_next().await {
            order.push(res.unwrap());
        }
        assert!(set.is_empty());
        order
    });
    assert_eq!(order, vec![1, 2, 0]);
}

#[test]
fn panics_and_aborts_are_join_errors_and_try_join_next_never_waits() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let mut set = JoinSet::new();
        assert!(set.try_join_next().is_none());
        set.spawn(async { panic!("task failed") });
        let slow = set.spawn_on(1, async {
            runtime::time::sleep(Duration::from_secs(60)).await;
        });
        let rc = Rc::new(()); // not Send: spawn_local takes it
        set.spawn_local(async move { drop(rc) });
        slow.abort();
        let (mut panicked, mut cancelled, mut ok) = (0, 0, 0);
        while let Some(res) = set.join_next().await {
            match res {
                Ok(()) => ok += 1,
                Err(e) if e.is_panic() => panicked += 1,
                Err(e) if e.is_cancelled() => cancelled += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!((panicked, cancelled, ok), (1, 1, 1));
        set.spawn(async {});
        runtime::time::sleep(Duration::from_millis(10)).await;
        assert!(set.try_join_next().unwrap().is_ok());
    });
}

#[test]
fn dropping_the_set_aborts_every_task() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let guard = Guard(dropped.clone());
            set.spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            });
        }
        runtime::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        drop(set);
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) == 10 {
                break;
            }
            runtime::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        10,
        "every task's future was dropped"
    );
}

#[test]
fn abort_all_keeps_results_and_detach_all_lets_tasks_run() {
    let rt = runtime::Runtime::new().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..3 {
            set.spawn(std::future::pending::<()>());
        }
        set.abort_all();
        let mut cancelled = 0;
        while let Some(res) = set.join_next().await {
            assert!(res.unwrap_err().is_cancelled());
            cancelled += 1;
        }
        assert_eq!(cancelled, 3);
        for _ in 0..3 {
            let ran = ran.clone();
            set.spawn(async move {
                runtime::time::sleep(Duration::from_millis(5)).await;
                ran.fetch_add(1, Ordering::SeqCst);
            });
        }
        set.detach_all();
        assert!(set.is_empty());
        drop(set);
        runtime::time::sleep(Duration::from_millis(50)).await;
    });
    assert_eq!(
        ran.load(Ordering::SeqCst),
        3,
        "detached tasks ran to the end"
    );
}
