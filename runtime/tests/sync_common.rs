//! Helpers shared by the `sync_*` tests: a waker that counts its wakes, a `block_on` for
//! std threads, and a deadline for a test body.
#![allow(dead_code)]

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// Counts the wakes of the wakers made from it.
#[derive(Default)]
pub struct Counter {
    wakes: AtomicUsize,
}

impl Counter {
    /// Wakes so far.
    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counter and a waker counting into it. `Arc::strong_count(&counter)` is 2 plus the
/// clones of the waker still alive somewhere (a stored waker shows there).
pub fn counting_waker() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    let waker = Waker::from(counter.clone());
    (counter, waker)
}

/// Polls `fut` once with `waker`.
pub fn poll_once<F: Future + ?Sized>(fut: std::pin::Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
}

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `fut` to completion on this (std) thread, parking between polls.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// Runs `body` on its own thread and fails the test if it has not finished within
/// `limit` (a lost wake-up shows as a hang; this turns it into a failure).
pub fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    let handle = thread::spawn(move || {
        let _ = done.send(body());
    });
    match finished.recv_timeout(limit) {
        Ok(v) => {
            handle.join().expect("test body thread");
            v
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("not finished within {limit:?}: a lost wake-up or a deadlock")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("the test body ended without a result"),
        },
    }
}
