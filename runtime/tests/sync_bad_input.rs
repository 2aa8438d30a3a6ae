//! `runtime::sync` on bad input: sends on closed channels give the value back, a semaphore
//! asked for more permits than it has, and a mutex whose holder panicked.

use std::sync::Arc;
use std::time::Duration;

use runtime::sync::{broadcast, mpsc, oneshot, watch};
use runtime::sync::{Mutex, RwLock, Semaphore, TryAcquireError};
use runtime::Runtime;

#[test]
fn send_on_a_closed_channel_gives_the_value_back() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (tx, rx) = mpsc::channel::<String>(1);
        drop(rx);
        let err = tx.send("a".to_string()).await.unwrap_err();
        assert_eq!(err.0, "a");
        assert_eq!(err.to_string(), "channel closed");
        match tx.try_send("b".to_string()) {
            Err(mpsc::error::TrySendError::Closed(v)) => assert_eq!(v, "b"),
            other => panic!("expected Closed(b), got {other:?}"),
        }

        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        rx.close();
        assert_eq!(tx.send("c".to_string()).unwrap_err().0, "c");

        let (tx, rx) = oneshot::channel::<String>();
        drop(rx);
        assert_eq!(tx.send("d".to_string()).unwrap_err(), "d");

        let (tx, rx) = broadcast::channel::<String>(2);
        drop(rx);
        assert_eq!(tx.send("e".to_string()).unwrap_err().0, "e");

        let (tx, rx) = watch::channel(String::new());
        drop(rx);
        assert_eq!(tx.send("f".to_string()).unwrap_err().0, "f");
    });
}

/// `acquire_many` above what the semaphore holds waits (tokio's behaviour, documented in
/// `runtime::sync`): it fails only once the semaphore is closed; `try_acquire_many` fails
/// at once.
#[test]
fn semaphore_asked_for_more_than_its_permits() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let sem = Arc::new(Semaphore::new(5));
        assert_eq!(
            sem.try_acquire_many(6).unwrap_err(),
            TryAcquireError::NoPermits
        );
        assert_eq!(sem.available_permits(), 5, "a failed try takes nothing");

        let waiting = runtime::time::timeout(Duration::from_millis(50), sem.acquire_many(6)).await;
        assert!(
            waiting.is_err(),
            "acquire_many(6) of 5 should still be waiting"
        );

        // A waiter for too many permits is woken by `close`, with an error.
        let s = sem.clone();
        let waiter = runtime::spawn_local(async move { s.acquire_many(6).await.map(|_| ()) });
        runtime::time::sleep(Duration::from_millis(5)).await;
        sem.close();
        let err = waiter.await.unwrap().unwrap_err();
        assert_eq!(err.to_string(), "semaphore closed");
        assert_eq!(
            sem.try_acquire_many(1).unwrap_err(),
            TryAcquireError::Closed
        );

        // Adding permits is the other way out of the wait.
        let sem = Arc::new(Semaphore::new(5));
        let s = sem.clone();
        let waiter = runtime::spawn_local(async move { s.acquire_many(6).await.is_ok() });
        runtime::time::sleep(Duration::from_millis(5)).await;
        sem.add_permits(1);
        assert!(waiter.await.unwrap());
    });
}

/// tokio's `Mutex` and `RwLock` are not poisoned (documented in `runtime::sync`): after a
/// task or a thread panicked while holding the lock, it is free, with the data as left.
#[test]
fn mutex_whose_holder_panicked_is_usable_and_not_poisoned() {
    let rt = Runtime::new().unwrap();
    let m = Arc::new(Mutex::new(0u32));
    rt.block_on(async {
        let held = m.clone();
        let task = runtime::spawn_local(async move {
            let mut g = held.lock().await;
            *g = 7;
            runtime::yield_now().await;
            panic!("the holder panics with the lock held");
        });
        let joined = task.await;
        assert!(joined.is_err(), "the panic reaches the join handle");
        let mut g = m
            .try_lock()
            .expect("the lock was released by the unwinding");
        assert_eq!(*g, 7, "the data is as the panicking task left it");
        *g += 1;
        drop(g);
        assert_eq!(*m.lock().await, 8);
    });

    // The same from a std thread.
    let held = m.clone();
    let thread = std::thread::spawn(move || {
        let _g = held.blocking_lock();
        panic!("the holder thread panics with the lock held");
    });
    assert!(thread.join().is_err());
    assert_eq!(*m.blocking_lock(), 8);

    let rw = Arc::new(RwLock::new(1u32));
    let held = rw.clone();
    let thread = std::thread::spawn(move || {
        let _g = held.blocking_write();
        panic!("the writer panics");
    });
    assert!(thread.join().is_err());
    assert_eq!(*rw.try_read().expect("not poisoned"), 1);
}
