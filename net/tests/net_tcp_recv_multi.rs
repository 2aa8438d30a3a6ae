//! Multishot receive into a provided-buffer ring: every byte arrives in order, a starved
//! ring (ENOBUFS) re-arms once buffers come back, dropping the stream returns its buffers.

use std::io::{Read, Write};
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;
use runtime::buf::BufRing;

/// A std client thread that sends `chunks` chunks of `size` bytes (byte i = i % 251), then
/// closes, and finally reads back whatever the server sends.
fn sender(
    addr: std::net::SocketAddr,
    chunks: usize,
    size: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let data: Vec<u8> = (0..chunks * size).map(|i| (i % 251) as u8).collect();
        for c in data.chunks(size) {
            s.write_all(c).unwrap();
        }
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).unwrap();
        back
    })
}

#[test]
fn every_byte_arrives_in_order_through_the_ring() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = sender(listener.local_addr().unwrap(), 2000, 100);
        let (stream, _) = listener.accept().await.unwrap();
        let ring = BufRing::new(16, 512).unwrap();
        let mut chunks = stream.recv_stream(&ring);
        let mut got = Vec::new();
        let mut items = 0;
        while let Some(buf) = chunks.next().await {
            let buf = buf.unwrap();
            got.extend_from_slice(&buf);
            items += 1;
        }
        assert_eq!(got.len(), 200_000);
        assert!(got.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        assert!(items >= 200_000 / 512);
        assert_eq!(ring.outstanding(), 0);
        // The stream of chunks holds the socket too: both go before the peer sees EOF.
        drop(chunks);
        drop(stream);
        assert!(client.join().unwrap().is_empty());
    });
}

#[test]
fn a_starved_ring_rearms_once_buffers_come_back() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = sender(listener.local_addr().unwrap(), 64, 64);
        let (stream, _) = listener.accept().await.unwrap();
        // Two small buffers, held for a while each time: the kernel runs out (ENOBUFS) and
        // the stream must wait for a drop, then re-arm, losing nothing.
        let ring = BufRing::new(2, 64).unwrap();
        let mut chunks = stream.recv_stream(&ring);
        let mut got = Vec::new();
        let mut held = Vec::new();
        while let Some(buf) = chunks.next().await {
            held.push(buf.unwrap());
            if held.len() == 2 {
                runtime::time::sleep(Duration::from_millis(1)).await;
                for b in held.drain(..) {
                    got.extend_from_slice(&b);
                }
            }
        }
        for b in held.drain(..) {
            got.extend_from_slice(&b);
        }
        assert_eq!(got.len(), 64 * 64);
        assert!(got.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        if runtime::features().unwrap().recv_multishot {
            assert!(
                chunks.times_starved() > 0,
                "the ring never ran dry: the test proves nothing"
            );
        } else {
            // Before Linux 6.0 the stream receives single-shot (documented on
            // `recv_multi_limited`): one receive armed while the reader polls, none while
            // it holds the ring's buffers, so the kernel never finds it empty.
            assert_eq!(chunks.times_starved(), 0);
        }
        drop(chunks);
        drop(stream);
        client.join().unwrap();
    });
}

#[test]
fn dropping_the_stream_midway_returns_every_buffer() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            for _ in 0..50 {
                s.write_all(&[7u8; 100]).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
            s
        });
        let (stream, _) = listener.accept().await.unwrap();
        let ring = BufRing::new(8, 128).unwrap();
        let mut chunks = stream.recv_stream(&ring);
        let first = chunks.next().await.unwrap().unwrap();
        assert!(first.iter().all(|b| *b == 7));
        drop(first);
        runtime::time::sleep(Duration::from_millis(20)).await;
        drop(chunks);
        runtime::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(ring.outstanding(), 0, "every buffer is back in the ring");
        // The ring still serves a new stream on the same socket.
        let mut chunks = stream.recv_stream(&ring);
        let _s = client.join().unwrap();
        let next = runtime::time::timeout(Duration::from_secs(5), chunks.next()).await;
        if let Ok(Some(b)) = next {
            assert!(b.unwrap().iter().all(|b| *b == 7));
        }
    });
}

#[test]
fn reset_peer_ends_the_stream_with_an_error() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let s = socket2::Socket::from(std::net::TcpStream::connect(addr).unwrap());
            s.set_linger(Some(Duration::ZERO)).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            drop(s);
        });
        let (stream, _) = listener.accept().await.unwrap();
        let ring = BufRing::new(4, 64).unwrap();
        let mut chunks = stream.recv_stream(&ring);
        let item = chunks.next().await.expect("an error item");
        assert_eq!(
            item.unwrap_err().kind(),
            std::io::ErrorKind::ConnectionReset
        );
        assert!(chunks.next().await.is_none());
        client.join().unwrap();
        let _ = TcpStream::connect(addr).await;
    });
}
