//! `runtime::sync::local::{oneshot, Notify}`: values and close semantics, permits and
//! their order, no lost notification, and wakers.

mod sync_common;

use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use runtime::sync::local::oneshot::{self, error::TryRecvError};
use runtime::sync::local::Notify;
use runtime::Runtime;
use sync_common::{counting_waker, poll_once};

#[test]
fn oneshot_delivers_between_tasks() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (tx, rx) = oneshot::channel();
        runtime::spawn_local(async move {
            runtime::time::sleep(Duration::from_millis(1)).await;
            tx.send(String::from("v")).unwrap();
        });
        assert_eq!(rx.await.unwrap(), "v");
    });
}

#[test]
fn oneshot_close_semantics() {
    // The sender dropped without sending: the pending receiver is woken with an error.
    let (tx, mut rx) = oneshot::channel::<u8>();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    let (counter, waker) = counting_waker();
    assert!(poll_once(pin!(&mut rx), &waker).is_pending());
    drop(tx);
    assert_eq!(counter.wakes(), 1);
    assert!(matches!(
        poll_once(pin!(&mut rx), &waker),
        Poll::Ready(Err(_))
    ));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(Arc::strong_count(&counter), 2, "no waker kept");

    // The receiver dropped: send gives the value back.
    let (tx, rx) = oneshot::channel::<String>();
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send("back".into()).unwrap_err(), "back");

    // close(): a value sent before is still received, a send after fails.
    let (tx, mut rx) = oneshot::channel::<u8>();
    rx.close();
    assert_eq!(tx.send(1), Err(1));
    let (tx, mut rx) = oneshot::channel::<u8>();
    tx.send(2).unwrap();
    rx.close();
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "taken once");
}

#[test]
fn oneshot_sender_closed_wakes_when_the_receiver_goes() {
    let (mut tx, rx) = oneshot::channel::<u8>();
    let (counter, waker) = counting_waker();
    {
        let mut closed = pin!(tx.closed());
        assert!(poll_once(closed.as_mut(), &waker).is_pending());
        drop(rx);
        assert_eq!(counter.wakes(), 1);
        assert!(poll_once(closed.as_mut(), &waker).is_ready());
    }
    assert_eq!(tx.send(3), Err(3));
}

#[test]
fn notify_one_stores_one_permit_and_wakes_in_order() {
    let n = Notify::new();
    n.notify_one();
    n.notify_one();
    let (counter, waker) = counting_waker();
    assert!(
        poll_once(pin!(n.notified()), &waker).is_ready(),
        "the permit"
    );
    assert!(
        poll_once(pin!(n.notified()), &waker).is_pending(),
        "at most one permit is stored"
    );

    // Three waiters: notify_one wakes the first, notify_last the most recent.
    let (ca, wa) = counting_waker();
    let (cb, wb) = counting_waker();
    let (cc, wc) = counting_waker();
    let mut a = pin!(n.notified());
    let mut b = pin!(n.notified());
    let mut c = pin!(n.notified());
    assert!(poll_once(a.as_mut(), &wa).is_pending());
    assert!(poll_once(b.as_mut(), &wb).is_pending());
    assert!(poll_once(c.as_mut(), &wc).is_pending());
    n.notify_one();
    assert_eq!((ca.wakes(), cb.wakes(), cc.wakes()), (1, 0, 0));
    n.notify_last();
    assert_eq!((ca.wakes(), cb.wakes(), cc.wakes()), (1, 0, 1));
    assert!(poll_once(a.as_mut(), &wa).is_ready());
    assert!(poll_once(c.as_mut(), &wc).is_ready());
    assert!(poll_once(b.as_mut(), &wb).is_pending());
    assert_eq!(counter.wakes(), 0);
}

#[test]
fn a_dropped_notified_passes_its_notification_on() {
    let n = Notify::new();
    let (ca, wa) = counting_waker();
    let (cb, wb) = counting_waker();
    let mut b = pin!(n.notified());
    {
        let mut a = pin!(n.notified());
        assert!(poll_once(a.as_mut(), &wa).is_pending());
        assert!(poll_once(b.as_mut(), &wb).is_pending());
        n.notify_one();
        assert_eq!(ca.wakes(), 1);
        // `a` is dropped having been notified, before it completed.
    }
    assert_eq!(cb.wakes(), 1, "the notification went to b");
    assert!(poll_once(b.as_mut(), &wb).is_ready());
    assert_eq!(Arc::strong_count(&ca), 2, "a's waker is not kept");

    // With nobody else waiting, it becomes the permit.
    {
        let mut a = pin!(n.notified());
        assert!(poll_once(a.as_mut(), &wa).is_pending());
        n.notify_one();
    }
    assert!(
        poll_once(pin!(n.notified()), &wa).is_ready(),
        "kept as the permit"
    );

    // A waiter dropped before any notification keeps nothing and takes nothing.
    {
        let mut a = pin!(n.notified());
        assert!(poll_once(a.as_mut(), &wa).is_pending());
        assert_eq!(Arc::strong_count(&ca), 3);
    }
    assert_eq!(Arc::strong_count(&ca), 2);
    n.notify_one();
    assert!(poll_once(pin!(n.notified()), &wa).is_ready());
}

#[test]
fn notify_waiters_wakes_every_earlier_future_and_stores_no_permit() {
    let n = Notify::new();
    let (ca, wa) = counting_waker();
    let (cb, wb) = counting_waker();
    let mut polled = pin!(n.notified());
    assert!(poll_once(polled.as_mut(), &wa).is_pending());
    let mut unpolled = pin!(n.notified()); // created before the call, polled after
    n.notify_waiters();
    assert_eq!(ca.wakes(), 1);
    assert!(poll_once(polled.as_mut(), &wa).is_ready());
    assert!(poll_once(unpolled.as_mut(), &wb).is_ready());
    assert!(
        poll_once(pin!(n.notified()), &wb).is_pending(),
        "no permit stored"
    );
    assert_eq!(cb.wakes(), 0);

    // enable(): registered without a poll, so a notify_one is kept for it.
    let mut e = pin!(n.notified());
    assert!(!e.as_mut().enable());
    n.notify_one();
    assert!(e.as_mut().enable());
    assert!(poll_once(e.as_mut(), &wb).is_ready());
}

#[test]
fn notify_between_tasks_loses_no_wake_up() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let ping = Rc::new(Notify::new());
        let pong = Rc::new(Notify::new());
        let (p1, p2) = (ping.clone(), pong.clone());
        let other = runtime::spawn_local(async move {
            for _ in 0..10_000 {
                p1.notified().await;
                p2.notify_one();
            }
        });
        for _ in 0..10_000 {
            ping.notify_one();
            pong.notified().await;
        }
        other.await.unwrap();
    });
}
