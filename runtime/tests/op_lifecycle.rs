//! The op lifecycle: drops before completion, completions never collected,
//! shutdown with ops in flight, and the state machine polled by hand.

mod common;

use common::tracked_read;

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

use runtime::ext::{raw, SharedFd};
use runtime::Runtime;
use tokio_test::{assert_pending, assert_ready};

fn write_all(fd: &OwnedFd, data: &[u8]) {
    // SAFETY: writes from a live slice.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    assert_eq!(n, data.len() as isize);
}

async fn settle() {
    runtime::time::sleep(Duration::from_millis(10)).await;
}

#[test]
fn read_dropped_in_flight_keeps_its_buffer_until_the_cqe() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let token = Rc::new(());
    rt.block_on(async {
        let mut op = tokio_test::task::spawn(tracked_read(&r, token.clone()));
        assert_pending!(op.poll());
        assert_eq!(Rc::strong_count(&token), 2);
        drop(op);
        // The kernel may still write into the buffer: the driver holds it.
        assert_eq!(
            Rc::strong_count(&token),
            2,
            "data freed while the kernel owns it"
        );
        settle().await;
        // The AsyncCancel's CQE (or a completion) freed it.
        assert_eq!(Rc::strong_count(&token), 1);
        // The pipe is still usable and the runtime goes on.
        write_all(&w, b"hello");
        let r = SharedFd::new(r.try_clone().unwrap());
        let (res, buf) = raw::read(&r, vec![0u8; 16], u64::MAX).await;
        assert_eq!(res.unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
    });
}

#[test]
fn read_dropped_then_pipe_written_and_runtime_runs_on() {
    // The valgrind script runs this one: the kernel writes into a buffer whose future was
    // dropped, after the drop.
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let r = SharedFd::new(r);
    rt.block_on(async {
        for round in 0..50u8 {
            let mut op = tokio_test::task::spawn(raw::read(&r, vec![0u8; 4096], u64::MAX));
            assert_pending!(op.poll());
            drop(op);
            write_all(&w, &[round; 100]);
            raw::nop().await.unwrap();
            // Whatever the dropped read did not take is still in the pipe, or it took it.
            let mut buf = [0u8; 4096];
            // SAFETY: non-blocking drain into a live buffer.
            unsafe {
                libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
                libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len());
                libc::fcntl(r.as_raw_fd(), libc::F_SETFL, 0);
            }
        }
        settle().await;
    });
}

#[test]
fn completed_then_dropped_before_repoll_frees_data() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let token = Rc::new(());
    rt.block_on(async {
        let mut op = tokio_test::task::spawn(tracked_read(&r, token.clone()));
        assert_pending!(op.poll());
        write_all(&w, b"x");
        settle().await;
        assert!(op.is_woken(), "the CQE must wake the op's waker");
        drop(op);
        assert_eq!(Rc::strong_count(&token), 1);
    });
}

#[test]
fn op_completes_and_wakes_hand_polled_task() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let mut op = tokio_test::task::spawn(raw::nop());
        assert_pending!(op.poll());
        settle().await;
        assert!(op.is_woken());
        assert_ready!(op.poll()).unwrap();
    });
}

#[test]
fn write_then_read_a_pipe_with_owned_buffers() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let (r, w) = (SharedFd::new(r), SharedFd::new(w));
    rt.block_on(async {
        let (res, buf) = raw::write(&w, b"owned bytes".to_vec(), u64::MAX).await;
        assert_eq!(res.unwrap(), 11);
        assert_eq!(buf, b"owned bytes");
        let (res, buf) = raw::read(&r, Vec::with_capacity(32), u64::MAX).await;
        assert_eq!(res.unwrap(), 11);
        assert_eq!(buf, b"owned bytes");
        // The write completed, so its clone of `w` is gone: this is the last one.
        raw::close(w.try_unwrap().unwrap()).await.unwrap();
        let (res, _) = raw::read(&r, Vec::with_capacity(32), u64::MAX).await;
        assert_eq!(res.unwrap(), 0, "EOF once the write end is closed");
    });
}

#[test]
fn op_escaping_the_runtime_is_not_freed_early() {
    // An op future kept past its runtime: shutdown cancels it and waits for its CQE, so the
    // kernel is done with its data, and dropping the future later frees it (nothing leaks).
    let (r, _w) = common::pipe();
    let token = Rc::new(());
    let mut op = None;
    {
        let rt = Runtime::new().unwrap();
        rt.block_on(async {
            let mut t = tokio_test::task::spawn(tracked_read(&r, token.clone()));
            assert_pending!(t.poll());
            op = Some(t);
        });
    }
    assert_eq!(Rc::strong_count(&token), 2, "the op still owns its data");
    // Dropped after its core ended with every op reaped: the data is freed.
    drop(op);
    assert_eq!(Rc::strong_count(&token), 1);
}

/// A waker whose clones can be counted.
struct Counted;

impl std::task::Wake for Counted {
    fn wake(self: std::sync::Arc<Self>) {}
}

#[test]
fn a_panicking_prep_pushes_nothing_and_leaves_no_slot() {
    use io_uring::squeue;
    use runtime::ext::{Op, Prep};
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Waker};

    struct Fails;
    impl Prep for Fails {
        fn sqe(&mut self) -> squeue::Entry {
            panic!("this Prep cannot make its SQE")
        }
    }

    let rt = Runtime::new().unwrap();
    let counted = Arc::new(Counted);
    let waker = Waker::from(counted.clone());
    let sqes = rt.block_on(async {
        let before = runtime::core_metrics().unwrap().sqes_submitted;
        // SAFETY: the SQE is never made, so it points at nothing.
        let mut op = unsafe { Op::with_prep(runtime::ext::raw::Nop, Fails) };
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = std::pin::Pin::new(&mut op).poll(&mut Context::from_waker(&waker));
        }));
        assert!(polled.is_err(), "the Prep's panic reaches the poller");
        drop(op);
        runtime::core_metrics().unwrap().sqes_submitted - before
    });
    assert_eq!(sqes, 0, "no SQE was counted");
    // The slot took a clone of the waker; it went with the slot.
    assert_eq!(
        Arc::strong_count(&counted),
        2,
        "only `counted` and `waker` hold it"
    );
    // The runtime goes on: ops complete.
    rt.block_on(raw::nop()).unwrap();
}

#[test]
fn a_detached_op_runs_to_its_end_and_frees_its_data_then() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let token = Rc::new(());
    rt.block_on(async {
        let got = Rc::new(std::cell::Cell::new(None));
        // Detached before its first poll: submitted by `detach`, and not cancelled.
        let seen = got.clone();
        tracked_read(&r, token.clone()).detach(move |cqe| seen.set(Some(cqe.result.unwrap())));
        settle().await;
        assert_eq!(got.get(), None, "nothing to read yet");
        assert_eq!(
            Rc::strong_count(&token),
            2,
            "data freed while the kernel owns it"
        );
        // The read completes when the pipe is written: `done` gets its CQE, and the data is
        // freed right after.
        write_all(&w, b"hello");
        settle().await;
        assert_eq!(got.get(), Some(5));
        assert_eq!(Rc::strong_count(&token), 1);

        // Detached after polling, once its CQE is already in: handled at once.
        let mut op = tokio_test::task::spawn(tracked_read(&r, token.clone()));
        assert_pending!(op.poll());
        write_all(&w, b"hi");
        settle().await;
        let op = op.into_inner();
        let seen = got.clone();
        op.detach(move |cqe| seen.set(Some(cqe.result.unwrap())));
        assert_eq!(got.get(), Some(2));
        assert_eq!(Rc::strong_count(&token), 1);
    });
}

#[test]
fn shutdown_ends_a_detached_op_that_never_completes() {
    let rt = Runtime::new().unwrap();
    let (r, _w) = common::pipe();
    let token = Rc::new(());
    let got = Rc::new(std::cell::Cell::new(None));
    rt.block_on(async {
        let seen = got.clone();
        tracked_read(&r, token.clone()).detach(move |cqe| {
            seen.set(Some(cqe.result.unwrap_err().raw_os_error()));
        });
        settle().await;
    });
    // The runtime cancels what is in flight when it shuts down: the handler sees the
    // cancel, and the data is freed.
    drop(rt);
    assert_eq!(got.get(), Some(Some(libc::ECANCELED)));
    assert_eq!(Rc::strong_count(&token), 1);
}
