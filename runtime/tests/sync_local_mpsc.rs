//! `runtime::sync::local::mpsc`: ordering, close semantics, backpressure of the bounded
//! channel, a dropped `recv` future that loses nothing, and wakers (who is woken, which
//! waker is kept, none kept after its future is gone).

mod sync_common;

use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use runtime::sync::local::mpsc::{self, error::TryRecvError, error::TrySendError};
use runtime::Runtime;
use sync_common::{counting_waker, poll_once};

#[test]
fn values_arrive_in_order_between_tasks() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        // Bounded(1): every send waits for the receiver, 10,000 times.
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        let (utx, mut urx) = mpsc::unbounded_channel::<u32>();
        let producer = runtime::spawn_local(async move {
            for i in 0..10_000 {
                tx.send(i).await.unwrap();
                utx.send(i).unwrap();
            }
        });
        for i in 0..10_000 {
            assert_eq!(rx.recv().await, Some(i));
            assert_eq!(urx.recv().await, Some(i));
        }
        assert_eq!(rx.recv().await, None);
        assert_eq!(urx.recv().await, None);
        producer.await.unwrap();

        // Three senders: each one's values in its order, all of them delivered.
        let (tx, mut rx) = mpsc::channel::<(usize, u32)>(4);
        for s in 0..3 {
            let tx = tx.clone();
            runtime::spawn_local(async move {
                for i in 0..1_000 {
                    tx.send((s, i)).await.unwrap();
                    if i % 7 == 0 {
                        runtime::yield_now().await;
                    }
                }
            });
        }
        drop(tx);
        let mut next = [0u32; 3];
        while let Some((s, i)) = rx.recv().await {
            assert_eq!(i, next[s]);
            next[s] += 1;
        }
        assert_eq!(next, [1_000; 3]);
    });
}

#[test]
fn recv_ends_only_when_every_sender_is_gone_and_the_queue_is_empty() {
    let (tx, mut rx) = mpsc::channel::<u8>(8);
    let tx2 = tx.clone();
    tx.try_send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "one sender is left");
    tx2.try_send(2).unwrap();
    drop(tx2);
    assert!(rx.is_closed());
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));

    // A pending recv is woken by the last sender's drop, and ends.
    let (tx, mut rx) = mpsc::unbounded_channel::<u8>();
    let (counter, waker) = counting_waker();
    let mut recv = pin!(rx.recv());
    assert!(poll_once(recv.as_mut(), &waker).is_pending());
    let tx2 = tx.clone();
    drop(tx);
    assert_eq!(counter.wakes(), 0, "a sender is left");
    drop(tx2);
    assert_eq!(counter.wakes(), 1);
    assert_eq!(poll_once(recv.as_mut(), &waker), Poll::Ready(None));
}

#[test]
fn send_on_a_closed_channel_gives_the_value_back() {
    let (tx, rx) = mpsc::channel::<String>(1);
    assert!(!tx.is_closed());
    drop(rx);
    assert!(tx.is_closed());
    let rt = Runtime::new().unwrap();
    let err = rt.block_on(tx.send("a".into())).unwrap_err();
    assert_eq!(err.0, "a");
    assert_eq!(err.to_string(), "channel closed");
    match tx.try_send("b".into()) {
        Err(TrySendError::Closed(v)) => assert_eq!(v, "b"),
        other => panic!("expected Closed, got {other:?}"),
    }
    let (utx, urx) = mpsc::unbounded_channel::<String>();
    drop(urx);
    assert_eq!(utx.send("c".into()).unwrap_err().0, "c");

    // Receiver::close: sends fail from then on, queued values are still received.
    let (tx, mut rx) = mpsc::channel::<u8>(4);
    tx.try_send(1).unwrap();
    rx.close();
    assert!(matches!(tx.try_send(2), Err(TrySendError::Closed(2))));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn bounded_channel_applies_backpressure_in_arrival_order() {
    let (tx, mut rx) = mpsc::channel::<u32>(2);
    assert_eq!(tx.max_capacity(), 2);
    tx.try_send(0).unwrap();
    tx.try_send(1).unwrap();
    assert_eq!(tx.capacity(), 0);
    assert!(matches!(tx.try_send(9), Err(TrySendError::Full(9))));

    // Three sends wait for room, in line.
    let (ca, wa) = counting_waker();
    let (cb, wb) = counting_waker();
    let (cc, wc) = counting_waker();
    let mut a = pin!(tx.send(2));
    let mut b = Box::pin(tx.send(3)); // boxed, to be dropped below
    let mut c = pin!(tx.send(4));
    assert!(poll_once(a.as_mut(), &wa).is_pending());
    assert!(poll_once(b.as_mut(), &wb).is_pending());
    assert!(poll_once(c.as_mut(), &wc).is_pending());
    // While senders wait, try_send cannot jump the line even after a slot frees.
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(
        (ca.wakes(), cb.wakes(), cc.wakes()),
        (1, 0, 0),
        "first in line"
    );
    assert!(matches!(tx.try_send(9), Err(TrySendError::Full(9))));
    assert!(poll_once(a.as_mut(), &wa).is_ready());
    assert!(poll_once(c.as_mut(), &wc).is_pending(), "c is behind b");

    // A send handed a slot and then dropped passes the slot on: c is woken and sends.
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(cb.wakes(), 1);
    drop(b);
    assert_eq!(cc.wakes(), 1, "the slot went to the next in line");
    assert!(poll_once(c.as_mut(), &wc).is_ready());
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Ok(4), "b's value was never sent");
    assert_eq!(tx.capacity(), 2);

    // Closing wakes waiting senders with their values back.
    tx.try_send(5).unwrap();
    tx.try_send(6).unwrap();
    let (cd, wd) = counting_waker();
    let mut d = pin!(tx.send(7));
    assert!(poll_once(d.as_mut(), &wd).is_pending());
    rx.close();
    assert_eq!(cd.wakes(), 1);
    match poll_once(d.as_mut(), &wd) {
        Poll::Ready(Err(e)) => assert_eq!(e.0, 7),
        other => panic!("expected the value back, got {other:?}"),
    }
}

#[test]
fn permits_reserve_slots_and_give_them_back() {
    let (tx, mut rx) = mpsc::channel::<u32>(1);
    let permit = tx.try_reserve().unwrap();
    assert!(tx.try_reserve().is_err(), "the one slot is reserved");
    drop(permit);
    let permit = tx.try_reserve().expect("the unused slot was given back");
    rx.close();
    // A permit taken before the close still delivers; then recv ends.
    permit.send(1);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_dropped_recv_future_loses_no_value_and_keeps_no_waker() {
    let (tx, mut rx) = mpsc::channel::<u32>(4);
    let (counter, waker) = counting_waker();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_once(recv.as_mut(), &waker).is_pending());
        assert_eq!(
            Arc::strong_count(&counter),
            3,
            "the channel holds the waker"
        );
        tx.try_send(1).unwrap();
        assert_eq!(counter.wakes(), 1);
        // Dropped after the wake, before it took the value (a `select!` branch losing).
    }
    assert_eq!(rx.try_recv(), Ok(1), "the value is still there");

    {
        let mut recv = pin!(rx.recv());
        assert!(poll_once(recv.as_mut(), &waker).is_pending());
    }
    assert_eq!(
        Arc::strong_count(&counter),
        2,
        "the dropped future's waker is not kept"
    );
    tx.try_send(2).unwrap();
    assert_eq!(counter.wakes(), 1, "nobody to wake");
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn the_latest_waker_is_the_one_woken() {
    let (tx, mut rx) = mpsc::unbounded_channel::<u32>();
    let (c1, w1) = counting_waker();
    let (c2, w2) = counting_waker();
    let mut recv = pin!(rx.recv());
    assert!(poll_once(recv.as_mut(), &w1).is_pending());
    assert!(poll_once(recv.as_mut(), &w1).is_pending());
    assert_eq!(Arc::strong_count(&c1), 3, "one stored clone of w1");
    // Polled from another task now: w2 replaces w1.
    assert!(poll_once(recv.as_mut(), &w2).is_pending());
    assert_eq!(Arc::strong_count(&c1), 2, "w1 dropped");
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert_eq!((c1.wakes(), c2.wakes()), (0, 1), "one wake for two values");
    assert_eq!(poll_once(recv.as_mut(), &w2), Poll::Ready(Some(1)));
    assert_eq!(Arc::strong_count(&c2), 2, "no waker kept once woken");
}

#[test]
fn sender_closed_completes_when_the_receiver_goes() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (tx, rx) = mpsc::channel::<u8>(1);
        let tx = Rc::new(tx);
        let t = tx.clone();
        let watcher = runtime::spawn_local(async move {
            t.closed().await;
            t.is_closed()
        });
        runtime::yield_now().await;
        drop(rx);
        assert!(watcher.await.unwrap());

        let (utx, mut urx) = mpsc::unbounded_channel::<u8>();
        let watcher = runtime::spawn_local(async move { utx.closed().await });
        runtime::yield_now().await;
        urx.close();
        watcher.await.unwrap();
    });
}

#[test]
fn a_value_whose_drop_uses_the_channel_does_not_deadlock() {
    // Dropping the receiver drops the queued values outside the channel's borrow: a
    // value holding a sender of the same channel is fine.
    struct HoldsSender(#[allow(dead_code)] mpsc::UnboundedSender<HoldsSender>);
    let (tx, rx) = mpsc::unbounded_channel::<HoldsSender>();
    tx.send(HoldsSender(tx.clone())).unwrap();
    drop(rx);
    drop(tx);
}

#[test]
fn capacity_zero_is_taken_as_one() {
    let (tx, mut rx) = mpsc::channel::<u8>(0);
    assert_eq!(tx.max_capacity(), 1);
    tx.try_send(1).unwrap();
    assert!(matches!(tx.try_send(2), Err(TrySendError::Full(2))));
    assert_eq!(rx.try_recv(), Ok(1));
}

#[test]
fn a_dropped_waiting_send_leaves_the_line_and_keeps_no_waker() {
    let (tx, mut rx) = mpsc::channel::<u32>(1);
    tx.try_send(0).unwrap();
    let (ca, wa) = counting_waker();
    let (cb, wb) = counting_waker();
    let mut b = pin!(tx.send(2));
    {
        let mut a = pin!(tx.send(1));
        assert!(poll_once(a.as_mut(), &wa).is_pending());
        assert!(poll_once(b.as_mut(), &wb).is_pending());
        assert_eq!(
            Arc::strong_count(&ca),
            3,
            "the waiting send holds its waker"
        );
    }
    assert_eq!(Arc::strong_count(&ca), 2, "dropped: its waker is gone");
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!((ca.wakes(), cb.wakes()), (0, 1), "the slot went to b");
    assert!(poll_once(b.as_mut(), &wb).is_ready());
    assert_eq!(rx.try_recv(), Ok(2));
}
