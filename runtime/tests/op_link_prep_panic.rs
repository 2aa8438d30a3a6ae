//! A chain (`driver::Link`) whose `Prep` panics midway: the panic reaches the poller, the
//! SQ is left as if the chain had never been pushed (the next op does not join a half-built
//! chain), and the ops already pushed free their slots and data.

mod common;

use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types};
use runtime::ext::{Completable, Cqe, Link, Op, Prep};

/// An op's data: holds a token so a test sees when the driver frees it.
struct Tracked(#[allow(dead_code)] Rc<()>);

impl Completable for Tracked {
    type Output = io::Result<u32>;
    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// What an op of the test chains is.
enum Step {
    /// A NOP.
    Nop,
    /// A read of fd -1: fails with `EBADF`, so the ops linked after it are cancelled.
    BadRead,
    /// A poll for input on a pipe nobody writes: stays in flight.
    Stuck(RawFd),
    /// Its `Prep` panics.
    Panic,
}

impl Prep for Step {
    fn sqe(&mut self) -> squeue::Entry {
        match *self {
            Step::Nop => opcode::Nop::new().build(),
            Step::BadRead => opcode::Read::new(types::Fd(-1), std::ptr::null_mut(), 0).build(),
            Step::Stuck(fd) => opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build(),
            Step::Panic => panic!("prep of the chain's second op panics"),
        }
    }
}

fn op(step: Step, token: &Rc<()>) -> Op<Tracked, Step> {
    // SAFETY: no SQE a `Step` makes points at memory (the read is of 0 bytes).
    unsafe { Op::with_prep(Tracked(token.clone()), step) }
}

/// Polls `link` until it is done, catching a panic of its poll.
async fn poll_catching(
    link: &mut Link<Tracked, Step>,
) -> std::thread::Result<io::Result<Vec<io::Result<u32>>>> {
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *link).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Err(panic) => Poll::Ready(Err(panic)),
        },
    )
    .await
}

/// Asserts that the panic payload is the one `Step::Panic` throws.
fn assert_prep_panic(panic: &(dyn std::any::Any + Send)) {
    let msg = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    assert_eq!(msg, Some("prep of the chain's second op panics"));
}

#[test]
fn a_panicking_prep_leaves_no_half_chain_behind() {
    let rt = runtime::Runtime::new().unwrap();
    let token = Rc::new(());
    rt.block_on(async {
        let mut link = Link::new([
            op(Step::BadRead, &token),
            op(Step::Panic, &token),
            op(Step::Nop, &token),
        ]);
        let panic = poll_catching(&mut link).await.unwrap_err();
        assert_prep_panic(&*panic);
        // The chain's first op, had it stayed in the SQ with IO_LINK, would fail and take
        // this NOP down with it (ECANCELED).
        let res = runtime::ext::raw::nop().await;
        if let Err(e) = res {
            panic!("a NOP after the panicking chain runs on its own, but got: {e}");
        }
        // The chain is spent: polling it again is an error, not a resubmission.
        let again = poll_catching(&mut link).await.unwrap();
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        drop(link);
        assert_eq!(
            Rc::strong_count(&token),
            1,
            "every op's data is freed once the chain is dropped"
        );
    });
}

#[test]
fn a_panicking_prep_behind_an_op_in_flight_does_not_hold_up_the_next_op() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, _w) = common::pipe();
    let token = Rc::new(());
    rt.block_on(async {
        let mut link = Link::new([
            op(Step::Stuck(r.as_raw_fd()), &token),
            op(Step::Panic, &token),
            op(Step::Nop, &token),
        ]);
        let panic = poll_catching(&mut link).await.unwrap_err();
        assert_prep_panic(&*panic);
        // Linked behind the poll, this NOP would wait for input that never comes.
        let res = runtime::timeout(Duration::from_secs(2), runtime::ext::raw::nop()).await;
        res.expect("the NOP is not linked behind the stuck poll")
            .unwrap();
        drop(link);
        assert_eq!(
            Rc::strong_count(&token),
            1,
            "the poll never reached the kernel, so its data is freed at once"
        );
    });
    let start = Instant::now();
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "shutdown waited {:?} for ops of the panicked chain",
        start.elapsed()
    );
}

#[test]
fn a_spawned_chain_whose_prep_panics_is_a_join_error_and_the_ring_goes_on() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, _w) = common::pipe();
    let fd = r.as_raw_fd();
    let token = Rc::new(());
    rt.block_on(async {
        for first in [Step::BadRead, Step::Stuck(fd), Step::Nop] {
            let t = token.clone();
            let task = runtime::spawn_local(async move {
                Link::new([op(first, &t), op(Step::Panic, &t), op(Step::Nop, &t)]).await
            });
            let err = task.await.unwrap_err();
            assert!(err.is_panic(), "{err:?}");
            let res = runtime::timeout(Duration::from_secs(2), runtime::ext::raw::nop()).await;
            res.expect("the NOP is not held up").unwrap();
            assert_eq!(Rc::strong_count(&token), 1, "the chain's data was freed");
        }
        // Chains still work.
        let outs = Link::new((0..3).map(|_| op(Step::Nop, &token)))
            .await
            .unwrap();
        assert!(
            outs.iter().all(|r| r.as_ref().is_ok_and(|&n| n == 0)),
            "{outs:?}"
        );
    });
    let start = Instant::now();
    drop(rt);
    assert!(start.elapsed() < Duration::from_secs(5));
}
