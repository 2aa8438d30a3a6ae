//! Where `spawn` puts `Send` tasks on a runtime of several cores, and how idle cores take
//! them: the child a task awaits runs on its parent's core; a core with nothing to do takes
//! queued, never-polled tasks from a busy one; siblings of a task that blocks its core run
//! elsewhere; a runtime dropped while tasks move loses, leaks and double-polls none.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use runtime::Builder;

#[test]
fn a_spawned_child_runs_on_its_parents_core() {
    let rt = Builder::new().cores(2).build().unwrap();
    for parent in 0..2 {
        let wrong = rt.block_on(async move {
            runtime::spawn_on(parent, async move {
                let mut wrong = 0;
                for _ in 0..2_000 {
                    let child = runtime::spawn(async { runtime::current_core() });
                    if child.await.unwrap() != Some(parent) {
                        wrong += 1;
                    }
                }
                wrong
            })
            .await
            .unwrap()
        });
        assert_eq!(
            wrong, 0,
            "children of a task on core {parent} ran elsewhere"
        );
    }
}

/// Spins the CPU for `d` (a task that computes).
fn compute(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn an_idle_core_takes_queued_send_tasks() {
    let rt = Builder::new().cores(2).build().unwrap();
    // Each core's own count of steals, read on that core.
    let steals = || {
        rt.block_on(async {
            let on_1 =
                runtime::spawn_on(1, async { runtime::core_metrics().unwrap().stolen_tasks });
            [
                runtime::core_metrics().unwrap().stolen_tasks,
                on_1.await.unwrap(),
            ]
        })
    };
    let before = steals();
    let cores = rt.block_on(async {
        let handles: Vec<_> = (0..64)
            .map(|_| {
                runtime::spawn(async {
                    compute(Duration::from_millis(2));
                    runtime::current_core().unwrap()
                })
            })
            .collect();
        let mut cores = [0usize; 2];
        for h in handles {
            cores[h.await.unwrap()] += 1;
        }
        cores
    });
    assert_eq!(cores[0] + cores[1], 64);
    assert!(
        cores[1] > 0,
        "core 1 sat idle while core 0 had 64 queued tasks: {cores:?}"
    );
    // All 64 were queued on core 0, and none spawns anything: each that ran on core 1 got
    // there by a steal, counted by core 1; core 0 can only have taken back some of those.
    let after = steals();
    let stolen = [after[0] - before[0], after[1] - before[1]];
    assert!(
        stolen[1] >= cores[1] as u64,
        "core 1 ran {} tasks it stole, but counted {} steals",
        cores[1],
        stolen[1]
    );
    assert!(
        stolen[0] <= stolen[1],
        "core 0 took back more ({}) than core 1 took ({})",
        stolen[0],
        stolen[1]
    );
}

#[test]
fn siblings_of_a_task_that_blocks_its_core_run_elsewhere() {
    let rt = Builder::new().cores(2).build().unwrap();
    const SIBLINGS: usize = 20;
    let freed = rt.block_on(async {
        let (tx, rx) = mpsc::channel::<()>();
        let done = Arc::new(AtomicUsize::new(0));
        // Blocks whichever core runs it until every sibling has run (or 30 s pass).
        let blocker =
            runtime::spawn(async move { rx.recv_timeout(Duration::from_secs(30)).is_ok() });
        let siblings: Vec<_> = (0..SIBLINGS)
            .map(|_| {
                let (tx, done) = (tx.clone(), done.clone());
                runtime::spawn(async move {
                    runtime::yield_now().await;
                    if done.fetch_add(1, Ordering::SeqCst) + 1 == SIBLINGS {
                        let _ = tx.send(());
                    }
                })
            })
            .collect();
        drop(tx);
        for s in siblings {
            s.await.unwrap();
        }
        blocker.await.unwrap()
    });
    assert!(
        freed,
        "the siblings waited behind the blocked core instead of running on the free one"
    );
}

/// A future that counts its polls and drops, and reports a poll after completion or two
/// polls at once.
struct Counted {
    left: u32,
    running: AtomicBool,
    log: Arc<Log>,
}

#[derive(Default)]
struct Log {
    created: AtomicUsize,
    finished: AtomicUsize,
    dropped: AtomicUsize,
    misuse: AtomicUsize,
}

impl Future for Counted {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.running.swap(true, Ordering::SeqCst) {
            this.log.misuse.fetch_add(1, Ordering::SeqCst);
        }
        let out = match this.left {
            0 => {
                // Polled again after it returned Ready.
                this.log.misuse.fetch_add(1, Ordering::SeqCst);
                Poll::Ready(())
            }
            1 => {
                this.left = 0;
                this.log.finished.fetch_add(1, Ordering::SeqCst);
                Poll::Ready(())
            }
            _ => {
                this.left -= 1;
                compute(Duration::from_micros(20));
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        };
        this.running.store(false, Ordering::SeqCst);
        out
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.log.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_runtime_dropped_while_tasks_move_loses_leaks_and_double_polls_none() {
    let mut stolen = 0;
    for round in 0..20u32 {
        let log = Arc::new(Log::default());
        let rt = Builder::new().cores(2).build().unwrap();
        let spawner = {
            let log = log.clone();
            rt.handle().spawn_on(1, async move {
                let mut kept = Vec::new();
                for i in 0..2_000u32 {
                    log.created.fetch_add(1, Ordering::SeqCst);
                    let task = Counted {
                        left: 1 + i % 5,
                        running: AtomicBool::new(false),
                        log: log.clone(),
                    };
                    // Detached, aborted (while it may be moving), or kept: each must end.
                    let h = runtime::spawn(task);
                    match i % 3 {
                        0 => drop(h),
                        1 => h.abort(),
                        _ => kept.push(h),
                    }
                    if i % 64 == 0 {
                        runtime::yield_now().await;
                    }
                }
            })
        };
        // Core 0 runs a while (taking some of core 1's queue), then the runtime goes.
        rt.block_on(runtime::sleep(Duration::from_micros(
            200 * u64::from(round % 5),
        )));
        drop(spawner);
        stolen += rt.metrics().core(0).unwrap().stolen_tasks;
        drop(rt);
        let created = log.created.load(Ordering::SeqCst);
        assert_eq!(
            log.misuse.load(Ordering::SeqCst),
            0,
            "a task was polled twice at once or after it finished"
        );
        assert_eq!(
            log.dropped.load(Ordering::SeqCst),
            created,
            "round {round}: every future is dropped once"
        );
        assert!(log.finished.load(Ordering::SeqCst) <= created);
    }
    assert!(
        stolen > 0,
        "core 0 never took a task from core 1: nothing moved"
    );
}

#[test]
fn handle_spawn_from_a_core_keeps_the_task_there_and_deals_out_from_outside() {
    let rt = Builder::new().cores(2).build().unwrap();
    let handle = rt.handle();
    let inside = rt.block_on(async move {
        runtime::spawn_on(1, async move {
            let mut wrong = 0;
            for _ in 0..500 {
                if handle
                    .spawn(async { runtime::current_core() })
                    .await
                    .unwrap()
                    != Some(1)
                {
                    wrong += 1;
                }
            }
            wrong
        })
        .await
        .unwrap()
    });
    assert_eq!(inside, 0, "Handle::spawn on core 1 placed tasks elsewhere");
    // From a plain thread: both cores get some.
    let handle = rt.handle();
    let outside = std::thread::spawn(move || {
        let tasks: Vec<_> = (0..8)
            .map(|_| handle.spawn(async { runtime::current_core().unwrap() }))
            .collect();
        tasks
    })
    .join()
    .unwrap();
    let cores = rt.block_on(async move {
        let mut cores = [0usize; 2];
        for t in outside {
            cores[t.await.unwrap()] += 1;
        }
        cores
    });
    assert_eq!(cores, [4, 4], "round-robin from a plain thread");
}
