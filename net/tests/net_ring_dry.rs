//! A read path whose ring stays empty for seconds: the reader waits (no error, no wrong
//! byte, no busy loop) and goes on as soon as a buffer comes back.

use std::io::Write;
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream};
use runtime::Builder;

#[test]
fn a_reader_waits_out_a_ring_held_empty_for_two_seconds() {
    // 16 buffers of 1 KiB that never grow; whole buffers, so one chunk holds one buffer.
    let rt = Builder::new()
        .recv_buffers(16, 1024)
        .recv_incremental(false)
        .build()
        .unwrap();
    rt.block_on(async {
        // The ring path off (RUNTIME_DISABLE=recv_multishot, or the kernel): a failure under
        // CORERING_REQUIRE_FEATURES=1, else the same connections read on the own-buffer
        // path, every byte checked, and no ring.
        let ring_on = runtime::ext::testing::require(
            "recv_multishot (the read path's ring)",
            runtime::features().unwrap().recv_multishot,
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Peers on a thread: 16 send one full buffer each, the 17th a short message.
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let peers = std::thread::spawn(move || {
            let mut held = Vec::new();
            for i in 0..17u8 {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                let len = if i < 16 { 1024 } else { 100 };
                s.write_all(&vec![i; len]).unwrap();
                held.push(s);
                // One at a time, so the server reads them in this order.
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = done_rx.recv();
            drop(held);
        });
        let mut streams: Vec<TcpStream> = Vec::new();
        for _ in 0..17 {
            streams.push(listener.accept().await.unwrap().0);
        }
        let Some(ring) = runtime::buf::core_ring() else {
            assert!(!ring_on, "the ring path is on, but the core has no ring");
            for (i, s) in streams.iter_mut().enumerate() {
                let want = if i < 16 { 1024 } else { 100 };
                let mut got = Vec::new();
                while got.len() < want {
                    let c = s.read_chunk().await.unwrap();
                    assert!(!c.is_empty(), "conn {i}: end of stream after {}", got.len());
                    assert!(c.iter().all(|&b| b == i as u8), "conn {i}: a wrong byte");
                    got.extend_from_slice(&c);
                }
                assert_eq!(got.len(), want, "conn {i}");
            }
            drop(done_tx);
            peers.join().unwrap();
            return;
        };
        // Take every buffer of the ring: one chunk from each of the 16 full senders.
        let mut chunks = Vec::new();
        for (i, s) in streams.iter_mut().take(16).enumerate() {
            let mut got = Vec::new();
            while got.len() < 1024 {
                let c = s.read_chunk().await.unwrap();
                assert!(c.iter().all(|&b| b == i as u8), "conn {i}: a wrong byte");
                got.extend_from_slice(&c);
                chunks.push(c);
            }
        }
        assert_eq!(ring.outstanding(), 16, "every buffer held");
        // The 17th reader finds the ring empty; hand the buffers back after two seconds.
        let started = Instant::now();
        let release = runtime::spawn_local(async move {
            runtime::time::sleep(Duration::from_secs(2)).await;
            drop(chunks);
        });
        let last = streams.last_mut().unwrap();
        let c = runtime::time::timeout(Duration::from_secs(30), last.read_chunk())
            .await
            .expect("the reader hung after the ring refilled")
            .expect("a ring that ran dry is no error");
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "read before any buffer came back"
        );
        assert!(
            !c.is_empty() && c.iter().all(|&b| b == 16),
            "the 17th connection's bytes"
        );
        release.await.unwrap();
        drop(c);
        assert_eq!(ring.outstanding(), 0);
        assert!(
            runtime::core_metrics().unwrap().enters < 1000,
            "the wait spun"
        );
        drop(done_tx);
        peers.join().unwrap();
    });
}
