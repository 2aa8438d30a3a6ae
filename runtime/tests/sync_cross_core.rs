//! `runtime::sync` across the cores of a runtime and std threads: no lost wake-up under
//! contention, messages across cores and threads, and tokio's cooperative budget staying
//! out of the way without a tokio runtime.

mod sync_common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use runtime::sync::{mpsc, oneshot, Barrier, Mutex, Notify, Semaphore};
use runtime::Builder;
use sync_common::{block_on, within};

/// Tasks per core in the contention test. The mutex is fair (FIFO): under full contention
/// each unlock hands the lock to the longest waiter, so the waiters' order repeats every
/// round. The test lines them up core 0's tasks, then core 1's, then the threads: most
/// hand-offs go to a task on the same core, about four per round cross a core or a thread,
/// and the run takes seconds on two CPUs while every waiter still depends on its wake.
const TASKS_PER_CORE: u64 = 250;
const PER_TASK: u64 = 1_920;
const THREADS: u64 = 2;
const PER_THREAD: u64 = 20_000;
const TOTAL: u64 = 2 * TASKS_PER_CORE * PER_TASK + THREADS * PER_THREAD;

/// One increment; counts the times the lock was held by someone else (a real wait).
async fn increment(m: &Mutex<u64>, contended: &AtomicU64) {
    match m.try_lock() {
        Ok(mut g) => *g += 1,
        Err(_) => {
            contended.fetch_add(1, Ordering::Relaxed);
            *m.lock().await += 1;
        }
    }
}

/// The counters the contention test's participants share.
#[derive(Default)]
struct Shared {
    m: Mutex<u64>,
    /// Acquisitions that found the lock held.
    contended: AtomicU64,
    /// Participants that have started (and queued on the held lock).
    arrived: AtomicU64,
}

/// Spawns `TASKS_PER_CORE` incrementing tasks on `core`; returns once all have queued.
async fn spawn_incrementers(
    core: usize,
    shared: &Arc<Shared>,
) -> Vec<runtime::JoinHandle<Option<usize>>> {
    let before = shared.arrived.load(Ordering::SeqCst);
    let tasks = (0..TASKS_PER_CORE)
        .map(|_| {
            let shared = shared.clone();
            runtime::spawn_on(core, async move {
                shared.arrived.fetch_add(1, Ordering::SeqCst);
                for _ in 0..PER_TASK {
                    increment(&shared.m, &shared.contended).await;
                }
                runtime::current_core()
            })
        })
        .collect();
    wait_arrivals(shared, before + TASKS_PER_CORE).await;
    tasks
}

async fn wait_arrivals(shared: &Shared, n: u64) {
    while shared.arrived.load(Ordering::SeqCst) < n {
        runtime::time::sleep(Duration::from_millis(1)).await;
    }
    // The last arrival queues on the lock just after counting itself.
    runtime::time::sleep(Duration::from_millis(5)).await;
}

#[test]
fn mutex_counter_is_exact_under_contention_from_both_cores_and_two_threads() {
    assert_eq!(TOTAL, 1_000_000);
    let (count, contended, took) = within(Duration::from_secs(60), || {
        let rt = Builder::new().cores(2).build().unwrap();
        let shared = Arc::new(Shared::default());
        let t0 = Instant::now();
        let threads = rt.block_on(async {
            // Held while the participants line up, so that all of them queue on it.
            let held = shared.m.lock().await;
            let mut tasks = spawn_incrementers(0, &shared).await;
            tasks.extend(spawn_incrementers(1, &shared).await);
            let threads: Vec<_> = (0..THREADS)
                .map(|_| {
                    let shared = shared.clone();
                    std::thread::spawn(move || {
                        shared.arrived.fetch_add(1, Ordering::SeqCst);
                        for _ in 0..PER_THREAD {
                            match shared.m.try_lock() {
                                Ok(mut g) => *g += 1,
                                Err(_) => {
                                    shared.contended.fetch_add(1, Ordering::Relaxed);
                                    *shared.m.blocking_lock() += 1;
                                }
                            }
                        }
                    })
                })
                .collect();
            wait_arrivals(&shared, 2 * TASKS_PER_CORE + THREADS).await;
            drop(held);
            for (i, t) in tasks.into_iter().enumerate() {
                let core = i / TASKS_PER_CORE as usize;
                assert_eq!(t.await.unwrap(), Some(core), "task {i} ran on its core");
            }
            threads
        });
        for t in threads {
            t.join().unwrap();
        }
        let count = *shared.m.blocking_lock();
        let contended = shared.contended.load(Ordering::Relaxed);
        (count, contended, t0.elapsed())
    });
    eprintln!("{TOTAL} increments in {took:?}, {contended} of them waited for the lock");
    assert_eq!(count, TOTAL);
    assert!(
        contended >= 100_000,
        "only {contended} acquisitions waited: the test did not contend"
    );
}

#[test]
fn mpsc_from_the_other_core_and_a_thread_keeps_each_senders_order() {
    within(Duration::from_secs(30), || {
        let rt = Builder::new().cores(2).build().unwrap();
        let (tx, mut rx) = mpsc::channel::<(u8, u32)>(8);
        let thread_tx = tx.clone();
        let thread = std::thread::spawn(move || {
            for i in 0..5_000 {
                thread_tx.blocking_send((2, i)).unwrap();
            }
        });
        rt.block_on(async move {
            for sender in 0..2u8 {
                let tx = tx.clone();
                runtime::spawn_on(1, async move {
                    for i in 0..5_000 {
                        tx.send((sender, i)).await.unwrap();
                    }
                });
            }
            drop(tx);
            let mut next = [0u32; 3];
            while let Some((sender, i)) = rx.recv().await {
                assert_eq!(i, next[sender as usize], "sender {sender} out of order");
                next[sender as usize] += 1;
            }
            assert_eq!(next, [5_000; 3], "recv ended before every value arrived");
        });
        thread.join().unwrap();
    });
}

#[test]
fn oneshot_notify_semaphore_and_barrier_across_cores_and_threads() {
    within(Duration::from_secs(30), || {
        let rt = Builder::new().cores(2).build().unwrap();
        // A oneshot answered by a std thread.
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::spawn(move || tx.send(41).unwrap());
        assert_eq!(rt.block_on(rx), Ok(41));
        thread.join().unwrap();

        rt.block_on(async {
            // notify_one from core 1 wakes a waiter on core 0, 1000 times over.
            let ping = Arc::new(Notify::new());
            let pong = Arc::new(Notify::new());
            let (p1, p2) = (ping.clone(), pong.clone());
            let other = runtime::spawn_on(1, async move {
                for _ in 0..1_000 {
                    p1.notified().await;
                    p2.notify_one();
                }
            });
            for _ in 0..1_000 {
                ping.notify_one();
                pong.notified().await;
            }
            other.await.unwrap();

            // A semaphore of 3 bounds the tasks inside at once, over both cores.
            let sem = Arc::new(Semaphore::new(3));
            let inside = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..40)
                .map(|i| {
                    let (sem, inside, most) = (sem.clone(), inside.clone(), most.clone());
                    runtime::spawn_on(i % 2, async move {
                        let _permit = sem.acquire().await.unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        runtime::time::sleep(Duration::from_millis(1)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            assert!(
                most.load(Ordering::SeqCst) <= 3,
                "more than 3 inside at once"
            );
            assert_eq!(sem.available_permits(), 3);
        });

        // A barrier of a task per core and a std thread, three rounds: nobody passes a
        // round before all have reached it, and exactly one is the leader each round.
        let barrier = Arc::new(Barrier::new(3));
        let reached = Arc::new(AtomicUsize::new(0));
        let leaders = Arc::new(AtomicUsize::new(0));
        let round = {
            let (reached, leaders) = (reached.clone(), leaders.clone());
            move |r: usize, is_leader: bool| {
                assert!(
                    reached.load(Ordering::SeqCst) >= 3 * (r + 1),
                    "passed too early"
                );
                if is_leader {
                    leaders.fetch_add(1, Ordering::SeqCst);
                }
            }
        };
        let (b, c, f) = (barrier.clone(), reached.clone(), round.clone());
        let thread = std::thread::spawn(move || {
            for r in 0..3 {
                c.fetch_add(1, Ordering::SeqCst);
                f(r, block_on(b.wait()).is_leader());
            }
        });
        rt.block_on(async {
            let (b, c, f) = (barrier.clone(), reached.clone(), round.clone());
            let on1 = runtime::spawn_on(1, async move {
                for r in 0..3 {
                    c.fetch_add(1, Ordering::SeqCst);
                    f(r, b.wait().await.is_leader());
                }
            });
            for r in 0..3 {
                reached.fetch_add(1, Ordering::SeqCst);
                round(r, barrier.wait().await.is_leader());
            }
            on1.await.unwrap();
        });
        thread.join().unwrap();
        assert_eq!(leaders.load(Ordering::SeqCst), 3);
    });
}

/// tokio's budget is set only by a tokio runtime: here it stays unconstrained, so ready
/// operations never return `Pending` to force a yield (which, with no tokio runtime to
/// reset the budget, could otherwise repeat forever).
#[test]
fn tokio_coop_budget_never_forces_a_yield_on_this_runtime() {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for i in 0..10_000u32 {
            tx.send(i).unwrap();
        }
        let m = Mutex::new(0u32);
        let (wtx, mut wrx) = runtime::sync::watch::channel(0u32);
        let all_ready = async {
            for i in 0..10_000u32 {
                assert_eq!(rx.recv().await, Some(i));
                *m.lock().await += 1;
                wtx.send(i).unwrap();
                wrx.changed().await.unwrap();
            }
        };
        // Ten thousand ready operations of each kind complete in one poll (tokio's budget
        // would stop at 128 per poll inside a tokio runtime).
        assert!(
            all_ready.now_or_never().is_some(),
            "a ready op returned Pending"
        );
        assert_eq!(*m.lock().await, 10_000);
        // And in a spawned task, on the other path through the executor.
        let task = runtime::spawn_local(async {
            let (tx, mut rx) = mpsc::channel(20_000);
            for i in 0..20_000u32 {
                tx.try_send(i).unwrap();
            }
            async move {
                for i in 0..20_000u32 {
                    assert_eq!(rx.recv().await, Some(i));
                }
            }
            .now_or_never()
            .is_some()
        });
        assert!(
            task.await.unwrap(),
            "a ready recv returned Pending in a task"
        );
    });
}
