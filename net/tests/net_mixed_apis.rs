//! One reader and one writer per direction, whatever mix of APIs the user calls: an owned
//! `read` hands out what `AsyncRead` or `read_chunk` already buffered and never races their
//! multishot receive; an owned write waits for a write-behind send still in flight.

use std::io::{Read, Write};
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UnixStream};
use futures::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use runtime::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A connected pair: ours on the runtime, the peer a std socket on a thread of its own.
async fn tcp_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::thread::spawn(move || std::net::TcpStream::connect(addr).unwrap());
    let (ours, _) = listener.accept().await.unwrap();
    (ours, peer.join().unwrap())
}

#[test]
fn an_owned_read_hands_out_what_async_read_buffered_first() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut ours, mut peer) = tcp_pair().await;
        let data = pattern(300_000);
        let sent = data.clone();
        let writer = std::thread::spawn(move || peer.write_all(&sent).map(|()| peer));
        let mut got = Vec::new();
        // A few bytes through AsyncRead: the rest of the chunk stays buffered.
        let mut head = [0u8; 10];
        AsyncReadExt::read_exact(&mut ours, &mut head)
            .await
            .unwrap();
        got.extend_from_slice(&head);
        // Then, in turn: owned read, fill_buf/consume, read_chunk, read_buf, read_exact.
        let mut round = 0;
        let reads = async {
            while got.len() < data.len() {
                match round % 5 {
                    0 => {
                        let (res, buf) = ours.read_owned(vec![0u8; 7_000]).await;
                        got.extend_from_slice(&buf[..res.unwrap()]);
                    }
                    1 => {
                        let avail = ours.fill_buf().await.unwrap();
                        let n = avail.len().min(3);
                        got.extend_from_slice(&avail[..n]);
                        ours.consume_unpin(n);
                    }
                    2 => got.extend_from_slice(&ours.read_chunk().await.unwrap()),
                    3 => {
                        let (res, buf) = ours.read_buf_owned(Vec::with_capacity(5_000)).await;
                        res.unwrap();
                        got.extend_from_slice(&buf);
                    }
                    _ => {
                        let want = (data.len() - got.len()).min(12_345);
                        let (res, buf) = ours.read_exact_owned(vec![0u8; want]).await;
                        res.unwrap();
                        got.extend_from_slice(&buf);
                    }
                }
                round += 1;
            }
        };
        timeout(LIMIT, reads)
            .await
            .expect("the reads stalled: a receive raced another");
        assert!(got == data, "the bytes came out of order or twice");
        let _peer = writer.join().unwrap().unwrap();
    });
}

#[test]
fn an_owned_write_waits_for_the_write_behind_in_flight() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut ours, mut peer) = tcp_pair().await;
        let reader = std::thread::spawn(move || {
            // Not reading at first: the socket buffers fill and the sends wait for room.
            std::thread::sleep(Duration::from_millis(300));
            let mut all = Vec::new();
            peer.read_to_end(&mut all).map(|_| all)
        });
        let mut expect = Vec::new();
        for round in 0..8u8 {
            // AsyncWrite: its last 64 KiB are still being sent when it returns.
            let a = vec![round; 3_000_000];
            AsyncWriteExt::write_all(&mut ours, &a).await.unwrap();
            expect.extend_from_slice(&a);
            // An owned write right after: it must not overtake them.
            let b = vec![round ^ 0x80; 1_000_000];
            let (res, _) = ours.write_all_owned(b.clone()).await;
            res.unwrap();
            expect.extend_from_slice(&b);
            // Another write-behind, then a vectored owned write.
            let c = vec![round ^ 0x40; 1_000];
            AsyncWriteExt::write_all(&mut ours, &c).await.unwrap();
            let (res, _) = ours.writev_all_owned(vec![c.clone(), c.clone()]).await;
            res.unwrap();
            expect.extend_from_slice(&c);
            expect.extend_from_slice(&c);
            expect.extend_from_slice(&c);
        }
        // The owned shutdown waits for the write-behind too.
        AsyncWriteExt::write_all(&mut ours, b"tail").await.unwrap();
        expect.extend_from_slice(b"tail");
        ours.shutdown_socket(std::net::Shutdown::Write)
            .await
            .unwrap();
        let all = reader.join().unwrap().unwrap();
        assert_eq!(all.len(), expect.len());
        assert!(all == expect, "an owned write overtook a write-behind send");
    });
}

#[test]
fn unix_streams_mix_the_same_way() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let data = pattern(200_000);
        let sent = data.clone();
        let writer = runtime::spawn_local(async move {
            AsyncWriteExt::write_all(&mut a, &sent[..100_000])
                .await
                .unwrap();
            let (res, _) = a.write_all_owned(sent[100_000..].to_vec()).await;
            res.unwrap();
            AsyncWriteExt::close(&mut a).await.unwrap();
        });
        let mut head = [0u8; 1];
        AsyncReadExt::read_exact(&mut b, &mut head).await.unwrap();
        let (res, rest) = b.read_exact_owned(vec![0u8; data.len() - 1]).await;
        res.unwrap();
        assert_eq!(head[0], data[0]);
        assert!(rest[..] == data[1..], "bytes out of order");
        let (res, _) = b.read_owned(vec![0u8; 16]).await;
        assert_eq!(res.unwrap(), 0, "end of stream after the data");
        writer.await.unwrap();
    });
}
