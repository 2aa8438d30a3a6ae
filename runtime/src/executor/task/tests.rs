//! The reference protocol: every path that takes over, hands on or gives up a reference
//! ends with every task cell freed (the thread's context counts the cells this thread
//! allocated and freed; each test runs on its own thread and frees its cells there).
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Poll, Waker};

fn live() -> isize {
    crate::context::live_tasks()
}

/// A future that parks `times` times, each time leaving a clone of its waker in `slot`
/// (plus `extra` more clones that it drops at once), and counts its polls.
fn parking(
    slot: Rc<RefCell<Option<Waker>>>,
    times: usize,
    extra: usize,
    polls: Rc<Cell<usize>>,
) -> impl std::future::Future<Output = usize> {
    let mut left = times;
    std::future::poll_fn(move |cx| {
        polls.set(polls.get() + 1);
        if left == 0 {
            return Poll::Ready(polls.get());
        }
        left -= 1;
        for _ in 0..extra {
            drop(cx.waker().clone());
        }
        *slot.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    })
}

/// The waker the `parking` task left in `slot`, once it has parked.
async fn parked(slot: &RefCell<Option<Waker>>) -> Waker {
    loop {
        if let Some(w) = slot.borrow_mut().take() {
            return w;
        }
        crate::yield_now().await;
    }
}

#[test]
fn the_local_queue_runs_tasks_in_wake_order_and_frees_every_entry() {
    let rt = crate::Runtime::new().unwrap();
    let before = live();
    let order = Rc::new(RefCell::new(Vec::new()));
    let o = order.clone();
    rt.block_on(async move {
        let handles: Vec<_> = (0..5)
            .map(|id| {
                let o = o.clone();
                crate::spawn_local(async move {
                    for _ in 0..3 {
                        o.borrow_mut().push(id);
                        crate::yield_now().await;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
    });
    // Each round, every task yields (a wake by reference: a push at the tail) in the
    // order it ran, so the queue hands them out in that order again.
    let want: Vec<i32> = (0..3).flat_map(|_| 0..5).collect();
    assert_eq!(*order.borrow(), want);
    // Tasks left queued when the runtime drops: their entries give up their references.
    rt.block_on(async {
        for _ in 0..4 {
            drop(crate::spawn_local(async { crate::yield_now().await }));
        }
    });
    drop(rt);
    assert_eq!(live(), before, "a task cell leaked (or was freed twice)");
}

#[test]
fn a_cloned_waker_takes_the_polls_reference_and_every_cell_is_freed() {
    let rt = crate::Runtime::new().unwrap();
    let before = live();
    let slot = Rc::new(RefCell::new(None::<Waker>));
    let polls = Rc::new(Cell::new(0));
    let task_slot = slot.clone();
    let task_polls = polls.clone();
    let n = rt.block_on(async move {
        let h = crate::spawn_local(parking(task_slot, 3, 2, task_polls));
        for _ in 0..3 {
            // Let the task park, then wake it by value (its reference becomes the entry's).
            let w = parked(&slot).await;
            w.wake();
        }
        h.await.unwrap()
    });
    assert_eq!(n, 4, "three parks and the final poll");
    drop(rt);
    assert_eq!(live(), before, "a task cell leaked (or was freed twice)");
}

#[test]
fn wakes_by_reference_and_duplicate_wakes_queue_once_and_free_everything() {
    let rt = crate::Runtime::new().unwrap();
    let before = live();
    let polls = Rc::new(Cell::new(0));
    let p = polls.clone();
    rt.block_on(async move {
        let h = crate::spawn_local(async move {
            for _ in 0..100 {
                // A wake by reference during the poll needs an entry: it takes the poll's
                // reference; the two after it find the task queued.
                std::future::poll_fn(|cx| {
                    p.set(p.get() + 1);
                    if p.get() % 2 == 1 {
                        cx.waker().wake_by_ref();
                        cx.waker().wake_by_ref();
                        // By value, through a clone (the clone's reference goes).
                        let clone = cx.waker().clone();
                        clone.wake();
                        Poll::Pending
                    } else {
                        Poll::Ready(())
                    }
                })
                .await;
            }
        });
        h.await.unwrap();
    });
    assert_eq!(
        polls.get(),
        200,
        "each triple wake caused exactly one more poll"
    );
    drop(rt);
    assert_eq!(live(), before);
}

#[test]
fn a_waker_kept_past_the_task_and_one_woken_from_another_thread_free_the_cell() {
    let rt = crate::Runtime::new().unwrap();
    let before = live();
    let slot = Rc::new(RefCell::new(None::<Waker>));
    let polls = Rc::new(Cell::new(0));
    let (task_slot, task_polls) = (slot.clone(), polls.clone());
    let kept = rt.block_on(async move {
        let h = crate::spawn_local(parking(task_slot, 1, 0, task_polls));
        let w = parked(&slot).await;
        let kept = w.clone();
        // Woken by value from a plain thread: the remote path (SCHEDULED, remote queue).
        std::thread::spawn(move || w.wake()).join().unwrap();
        h.await.unwrap();
        kept
    });
    // The task is done and its runtime gone; this waker still holds the cell.
    assert_eq!(live(), before + 1);
    kept.wake_by_ref();
    drop(kept);
    drop(rt);
    assert_eq!(live(), before);
}

#[test]
fn aborting_a_task_that_is_queued_locally_and_remotely_frees_it() {
    let rt = crate::Runtime::new().unwrap();
    let before = live();
    let slot = Rc::new(RefCell::new(None::<Waker>));
    let polls = Rc::new(Cell::new(0));
    let (task_slot, task_polls) = (slot.clone(), polls.clone());
    let cancelled = rt.block_on(async move {
        let h = crate::spawn_local(parking(task_slot, 10, 0, task_polls));
        let w = parked(&slot).await;
        // A remote entry (SCHEDULED), a local wake that finds it and does nothing, then
        // an abort: the task ends cancelled, polled no more than once after.
        let remote = w.clone();
        std::thread::spawn(move || remote.wake()).join().unwrap();
        w.wake_by_ref();
        h.abort();
        drop(w);
        h.await.unwrap_err().is_cancelled()
    });
    assert!(cancelled);
    assert_eq!(
        polls.get(),
        1,
        "the aborted task's future was not polled again"
    );
    drop(rt);
    assert_eq!(live(), before);
}
