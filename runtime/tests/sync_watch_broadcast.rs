//! `runtime::sync::{watch, broadcast}` with lagging receivers: a broadcast receiver that
//! fell behind is told how many values it missed, a watch receiver sees only the latest.

mod sync_common;

use std::time::Duration;

use runtime::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use runtime::sync::watch;
use runtime::Builder;
use sync_common::within;

#[test]
fn broadcast_lagging_receiver_gets_lagged_with_the_missed_count_then_the_newest() {
    within(Duration::from_secs(30), || {
        let rt = Builder::new().cores(2).build().unwrap();
        rt.block_on(async {
            let (tx, mut slow) = broadcast::channel::<u32>(4);
            let mut fast = tx.subscribe();
            // The sender runs on core 1; `fast` keeps up by reading each value as it is
            // acknowledged, `slow` reads nothing until the end.
            let (ack_tx, mut ack_rx) = runtime::sync::mpsc::channel::<()>(1);
            let sender = runtime::spawn_on(1, async move {
                for v in 0..10 {
                    tx.send(v).unwrap();
                    ack_rx.recv().await.unwrap();
                }
                tx // kept alive: the channel stays open
            });
            for v in 0..10 {
                assert_eq!(fast.recv().await, Ok(v));
                ack_tx.send(()).await.unwrap();
            }
            let tx = sender.await.unwrap();
            // Capacity 4, 10 sent: the 6 oldest are gone.
            assert_eq!(slow.recv().await, Err(RecvError::Lagged(6)));
            for v in 6..10 {
                assert_eq!(slow.recv().await, Ok(v));
            }
            assert_eq!(slow.try_recv(), Err(TryRecvError::Empty));
            // Lagging again, seen through try_recv.
            for v in 10..15 {
                tx.send(v).unwrap();
            }
            assert_eq!(slow.try_recv(), Err(TryRecvError::Lagged(1)));
            assert_eq!(slow.try_recv(), Ok(11));
            drop(tx);
            for v in 12..15 {
                assert_eq!(slow.recv().await, Ok(v));
            }
            assert_eq!(slow.recv().await, Err(RecvError::Closed));
        });
    });
}

#[test]
fn watch_receiver_that_lags_sees_only_the_latest_value() {
    within(Duration::from_secs(30), || {
        let rt = Builder::new().cores(2).build().unwrap();
        rt.block_on(async {
            let (tx, mut rx) = watch::channel(0u32);
            // 100 values from core 1 while the receiver does not look.
            let tx = runtime::spawn_on(1, async move {
                for v in 1..=100 {
                    tx.send(v).unwrap();
                }
                tx
            })
            .await
            .unwrap();
            rx.changed().await.unwrap();
            assert_eq!(*rx.borrow_and_update(), 100, "only the latest is kept");
            assert!(!rx.has_changed().unwrap(), "seen: no change pending");

            // A receiver waiting on core 0 is woken by a send on core 1, and sees the last.
            let waiter = runtime::spawn_on(0, {
                let mut rx = rx.clone();
                async move {
                    rx.changed().await.unwrap();
                    *rx.borrow_and_update()
                }
            });
            runtime::time::sleep(Duration::from_millis(5)).await;
            runtime::spawn_on(1, async move {
                tx.send(101).unwrap();
                tx.send(102).unwrap();
                // `tx` dropped here: the channel closes.
            })
            .await
            .unwrap();
            assert_eq!(waiter.await.unwrap(), 102);
            rx.changed().await.unwrap();
            assert_eq!(*rx.borrow_and_update(), 102);
            assert!(rx.changed().await.is_err(), "the sender is gone");
        });
    });
}
