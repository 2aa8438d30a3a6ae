//! `Handle`: spawning and blocking from threads outside the runtime, and its use after the
//! runtime is gone (cancelled handles and a clear panic, never a hang). Also where `spawn`
//! places `Send` tasks on a multi-core runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use runtime::Handle;

/// Polls `f` on this plain thread, parking between wakes.
fn park_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// Runs `rt` (core 0) until `thread` ends, and returns its result.
fn drive<T: Send + 'static>(rt: &runtime::Runtime, thread: std::thread::JoinHandle<T>) -> T {
    rt.block_on(async {
        while !thread.is_finished() {
            runtime::time::sleep(Duration::from_millis(1)).await;
        }
    });
    thread.join().unwrap()
}

#[test]
fn a_std_thread_spawns_spawns_on_blocks_on_and_runs_blocking_jobs() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    let handle = rt.handle();
    assert_eq!(handle.cores(), 2);
    let thread = std::thread::spawn(move || {
        assert!(
            Handle::try_current().is_err(),
            "a plain thread runs no core"
        );
        let on_one = handle.spawn_on(1, async { runtime::current_core() });
        let blocking = handle.spawn_blocking(|| std::thread::current().name().map(String::from));
        let sum = handle.block_on(async {
            // Inside the runtime now: ops and timers work, and so does Handle::current.
            runtime::time::sleep(Duration::from_millis(2)).await;
            assert_eq!(Handle::current().cores(), 2);
            runtime::ext::raw::nop().await.unwrap();
            40 + 2
        });
        (park_on(on_one).unwrap(), park_on(blocking).unwrap(), sum)
    });
    let (core, name, sum) = drive(&rt, thread);
    assert_eq!(core, Some(1));
    assert_eq!(name.as_deref(), Some("runtime-blocking"));
    assert_eq!(sum, 42);
}

#[test]
fn a_panic_in_block_on_is_resumed_in_the_caller() {
    let rt = runtime::Runtime::new().unwrap();
    let handle = rt.handle();
    let thread = std::thread::spawn(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle.block_on(async { panic!("inside block_on") })
        }))
        .unwrap_err()
        .downcast::<&str>()
        .map(|s| *s)
    });
    assert_eq!(drive(&rt, thread).unwrap(), "inside block_on");
}

#[test]
fn after_the_runtime_is_dropped_spawns_are_cancelled_and_block_on_panics() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    let handle = rt.handle();
    drop(rt);
    let thread = std::thread::spawn(move || {
        let spawned = park_on(handle.spawn(async { 1 }));
        let on = park_on(handle.spawn_on(1, async { 1 }));
        let blocking = park_on(handle.spawn_blocking(|| 1));
        let block_on = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle.block_on(async { 1 })
        }));
        (spawned, on, blocking, block_on)
    });
    let (spawned, on, blocking, block_on) = thread.join().unwrap();
    assert!(spawned.unwrap_err().is_cancelled());
    assert!(on.unwrap_err().is_cancelled());
    assert!(blocking.unwrap_err().is_cancelled());
    let msg = block_on.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("shut down"), "{msg}");
}

#[test]
fn block_on_on_a_core_thread_panics_instead_of_stalling_the_core() {
    let rt = runtime::Runtime::new().unwrap();
    let res = rt.block_on(async {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Handle::current().block_on(async { 1 })
        }))
    });
    assert!(res.is_err());
}

#[test]
fn spawn_places_send_tasks_round_robin_over_the_cores_when_asked() {
    let rt = runtime::Builder::new()
        .cores(2)
        .spawn_placement(runtime::Placement::RoundRobin)
        .build()
        .unwrap();
    let cores = rt.block_on(async {
        let handles: Vec<_> = (0..8)
            .map(|_| runtime::spawn(async { runtime::current_core().unwrap() }))
            .collect();
        let mut cores = Vec::new();
        for h in handles {
            cores.push(h.await.unwrap());
        }
        cores
    });
    assert_eq!(cores.iter().filter(|&&c| c == 0).count(), 4, "{cores:?}");
    assert_eq!(cores.iter().filter(|&&c| c == 1).count(), 4, "{cores:?}");
    // spawn_local stays on the current core.
    let local = rt.block_on(async {
        runtime::spawn_local(async { runtime::current_core() })
            .await
            .unwrap()
    });
    assert_eq!(local, Some(0));
}

#[test]
fn an_unpinned_multi_core_runtime_runs() {
    let rt = runtime::Builder::new().cores(2).pin(false).build().unwrap();
    let on = rt.block_on(async { runtime::spawn_on(1, async { 7 }).await.unwrap() });
    assert_eq!(on, 7);
}
