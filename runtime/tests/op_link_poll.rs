//! Linked chains (`ext::Link`) and `poll_add`: order, failure propagation, hard links,
//! chains that must wait for SQ room, chains too long for the SQ, and readiness.

mod common;

use common::pipe;
use runtime::ext::{raw, Link, SharedFd};
use std::future::Future;
use std::io;

#[test]
fn chain_of_nops_completes_every_op() {
    let rt = runtime::Runtime::new().unwrap();
    let before = rt.metrics().core(0).unwrap();
    let outputs = rt
        .block_on(Link::new((0..100).map(|_| raw::nop())))
        .unwrap();
    assert_eq!(outputs.len(), 100);
    assert!(outputs.iter().all(|r| r.is_ok()));
    let delta = rt.metrics().core(0).unwrap() - before;
    assert!(
        delta.sqes_submitted >= 100,
        "all 100 SQEs pushed: {delta:?}"
    );
    if rt.features().min_timeout || !rt.flags().defer_taskrun {
        assert!(
            delta.enters <= 3,
            "a chain goes to the kernel in one submission: {delta:?}"
        );
    } else {
        // DEFER_TASKRUN without a min-timeout wait (6.1 to 6.11): the kernel runs each
        // link's successor as task work at the next enter, so the wait takes one link at a
        // time; every op still completes, one enter each at most.
        assert!(delta.enters <= 101, "{delta:?}");
    }
}

#[test]
fn linked_writes_land_in_order() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let fd = SharedFd::new(w);
    let parts: Vec<Vec<u8>> = (0..20).map(|i| format!("{i},").into_bytes()).collect();
    let expected: Vec<u8> = parts.concat();
    let outputs = rt
        .block_on(Link::new(
            parts.into_iter().map(|p| raw::write(&fd, p, u64::MAX)),
        ))
        .unwrap();
    for (res, _) in &outputs {
        assert!(res.is_ok(), "{res:?}");
    }
    drop(fd);
    let mut got = Vec::new();
    io::Read::read_to_end(&mut std::fs::File::from(r), &mut got).unwrap();
    assert_eq!(got, expected);
}

#[test]
fn a_failing_op_cancels_the_rest_of_the_chain() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    io::Write::write_all(&mut std::fs::File::from(w.try_clone().unwrap()), b"abcdef").unwrap();
    // Reading from a pipe's write end fails: EBADF (not open for reading).
    let (good, bad) = (SharedFd::new(r), SharedFd::new(w));
    let outputs = rt
        .block_on(Link::new([
            raw::read(&good, vec![0u8; 2], u64::MAX),
            raw::read(&bad, vec![0u8; 2], u64::MAX),
            raw::read(&good, vec![0u8; 2], u64::MAX),
        ]))
        .unwrap();
    assert_eq!(outputs[0].0.as_ref().unwrap(), &2);
    assert_eq!(&outputs[0].1, b"ab");
    assert_eq!(
        outputs[1].0.as_ref().unwrap_err().raw_os_error(),
        Some(libc::EBADF)
    );
    assert_eq!(
        outputs[2].0.as_ref().unwrap_err().raw_os_error(),
        Some(libc::ECANCELED)
    );
}

#[test]
fn a_hard_link_runs_on_after_a_failure() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    io::Write::write_all(&mut std::fs::File::from(w.try_clone().unwrap()), b"abcdef").unwrap();
    // Reading from a pipe's write end fails: EBADF (not open for reading).
    let (good, bad) = (SharedFd::new(r), SharedFd::new(w));
    let outputs = rt
        .block_on(
            Link::new([
                raw::read(&good, vec![0u8; 2], u64::MAX),
                raw::read(&bad, vec![0u8; 2], u64::MAX),
                raw::read(&good, vec![0u8; 2], u64::MAX),
            ])
            .hard(),
        )
        .unwrap();
    assert!(outputs[1].0.is_err());
    assert_eq!(outputs[2].0.as_ref().unwrap(), &2);
    assert_eq!(&outputs[2].1, b"cd");
}

#[test]
fn a_chain_waits_for_room_in_a_busy_sq() {
    // 8-entry ring: six NOPs already queued leave no room for a chain of 8, so the chain
    // must flush them first instead of being split across two submissions.
    let rt = runtime::Builder::new().entries(8).build().unwrap();
    rt.block_on(async {
        let mut singles: Vec<_> = (0..6).map(|_| raw::nop()).collect();
        // Poll each once so their SQEs sit in the SQ.
        std::future::poll_fn(|cx| {
            for op in &mut singles {
                assert!(std::pin::Pin::new(op).poll(cx).is_pending());
            }
            std::task::Poll::Ready(())
        })
        .await;
        let outputs = Link::new((0..8).map(|_| raw::nop())).await.unwrap();
        assert!(outputs.iter().all(|r| r.is_ok()));
        for op in singles {
            op.await.unwrap();
        }
    });
}

#[test]
fn a_chain_longer_than_the_sq_is_refused() {
    let rt = runtime::Builder::new().entries(8).build().unwrap();
    let err = rt
        .block_on(Link::new((0..9).map(|_| raw::nop())))
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("9 linked ops"), "{err}");
    // The runtime carries on.
    rt.block_on(raw::nop()).unwrap();
}

#[test]
fn a_chain_refuses_an_op_already_polled() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    io::Write::write_all(&mut std::fs::File::from(w), b"abc").unwrap();
    let r = SharedFd::new(r);
    rt.block_on(async {
        // Completed: its buffer went back to the caller, its SQE still points at it.
        let mut done = raw::read(&r, vec![0u8; 8], u64::MAX);
        let (n, buf) = (&mut done).await;
        assert_eq!(n.unwrap(), 3);
        drop(buf);
        // Submitted and in flight (nothing more to read).
        let mut pending = raw::read(&r, vec![0u8; 8], u64::MAX);
        let mut first = tokio_test::task::spawn(&mut pending);
        tokio_test::assert_pending!(first.poll());
        drop(first);
        let before = runtime::core_metrics().unwrap();
        for ops in [vec![done], vec![pending]] {
            let err = Link::new(ops).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("already polled"), "{err}");
        }
        // Nothing was pushed again (the in-flight read's cancel is the only SQE).
        let after = runtime::core_metrics().unwrap() - before;
        assert!(after.sqes_submitted <= 1, "{after:?}");
    });
}

#[test]
fn an_empty_chain_resolves_at_once() {
    let rt = runtime::Runtime::new().unwrap();
    let outputs = rt.block_on(Link::new(std::iter::empty::<runtime::ext::Op<raw::Nop>>()));
    assert!(outputs.unwrap().is_empty());
}

#[test]
fn dropping_a_chain_in_flight_frees_nothing_early() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let fd = SharedFd::new(r);
    rt.block_on(async {
        let mut chain = Link::new((0..4).map(|_| raw::read(&fd, vec![0u8; 64], u64::MAX)));
        // Submit, then drop while the first read waits on the empty pipe.
        std::future::poll_fn(|cx| {
            assert!(std::pin::Pin::new(&mut chain).poll(cx).is_pending());
            std::task::Poll::Ready(())
        })
        .await;
        drop(chain);
        runtime::yield_now().await;
    });
    io::Write::write_all(&mut std::fs::File::from(w), b"late").unwrap();
    rt.block_on(async {
        for _ in 0..10 {
            raw::nop().await.unwrap();
        }
    });
}

#[test]
fn poll_add_waits_for_readiness() {
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let fd = SharedFd::new(r);
    rt.block_on(async {
        let poll = runtime::spawn_local(raw::poll_add(&fd, libc::POLLIN as u32));
        for _ in 0..5 {
            raw::nop().await.unwrap();
        }
        assert!(!poll.is_finished(), "nothing written yet");
        io::Write::write_all(&mut std::fs::File::from(w), b"x").unwrap();
        let revents = poll.await.unwrap().unwrap();
        assert_ne!(revents & libc::POLLIN as u32, 0);
    });
}

#[test]
fn poll_multi_reports_every_readiness_from_one_sqe() {
    use futures::StreamExt;
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let fd = SharedFd::new(r.try_clone().unwrap());
    let (mut r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
    rt.block_on(async {
        let before = runtime::core_metrics().unwrap();
        let mut ready = raw::poll_multi(&fd, libc::POLLIN as u32);
        for i in 0..5u8 {
            // Nothing written: the next event is not there yet.
            let mut next = tokio_test::task::spawn(ready.next());
            tokio_test::assert_pending!(next.poll());
            drop(next);
            for _ in 0..3 {
                raw::nop().await.unwrap();
            }
            let mut next = tokio_test::task::spawn(ready.next());
            tokio_test::assert_pending!(next.poll());
            drop(next);
            io::Write::write_all(&mut w, &[i]).unwrap();
            let revents = ready.next().await.unwrap().unwrap();
            assert_ne!(revents & libc::POLLIN as u32, 0);
            let mut byte = [0u8; 1];
            io::Read::read_exact(&mut r, &mut byte).unwrap();
            assert_eq!(byte[0], i);
        }
        let after = runtime::core_metrics().unwrap() - before;
        // One poll SQE for the five waits, plus the nops.
        assert_eq!(after.sqes_submitted, 1 + 5 * 3);
        ready.cancel();
        assert!(ready.next().await.is_none(), "a cancelled poll ends");
        assert!(ready.next().await.is_none());
    });
}

#[test]
fn dropping_an_armed_poll_multi_leaves_the_runtime_sane() {
    use futures::StreamExt;
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let mut w = std::fs::File::from(w);
    let r = SharedFd::new(r);
    rt.block_on(async {
        let mut ready = raw::poll_multi(&r, libc::POLLIN as u32);
        let mut next = tokio_test::task::spawn(ready.next());
        tokio_test::assert_pending!(next.poll());
        drop(next);
        drop(ready);
        // The cancelled request's CQEs arrive and are dropped by the driver.
        io::Write::write_all(&mut w, b"x").unwrap();
        for _ in 0..10 {
            raw::nop().await.unwrap();
        }
        // A new request on the same fd sees the byte still there.
        let mut again = raw::poll_multi(&r, libc::POLLIN as u32);
        assert!(again.next().await.unwrap().is_ok());
    });
}

#[test]
fn a_stream_with_many_queued_events_yields_to_other_tasks() {
    use futures::StreamExt;
    use std::cell::Cell;
    use std::rc::Rc;
    const EVENTS: usize = 300;
    let rt = runtime::Runtime::new().unwrap();
    let (r, w) = pipe();
    let mut w = std::fs::File::from(w);
    let fd = SharedFd::new(r);
    rt.block_on(async {
        let mut ready = raw::poll_multi(&fd, libc::POLLIN as u32);
        let mut next = tokio_test::task::spawn(ready.next());
        tokio_test::assert_pending!(next.poll());
        drop(next);
        // One write per loop turn: each wakes the poll and posts a CQE of its own, which
        // queues in the stream's slot while nobody polls it.
        for _ in 0..EVENTS {
            io::Write::write_all(&mut w, b"x").unwrap();
            raw::nop().await.unwrap();
        }
        let drained = Rc::new(Cell::new(0usize));
        let seen = drained.clone();
        let observer = runtime::spawn_local(async move {
            loop {
                if seen.get() > 0 {
                    return seen.get();
                }
                runtime::yield_now().await;
            }
        });
        let count = drained.clone();
        let drainer = runtime::spawn_local(async move {
            while count.get() < EVENTS {
                ready.next().await.unwrap().unwrap();
                count.set(count.get() + 1);
            }
        });
        let at = observer.await.unwrap();
        drainer.await.unwrap();
        // Without the poll budget the drainer would take every queued event in one poll.
        assert!(at < EVENTS, "the other task ran only after all {at} events");
        assert_eq!(drained.get(), EVENTS);
    });
}
