//! `TcpListener::incoming`: one multishot accept serving many clients.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;
use runtime::buf::IoBuf;
use runtime::time::timeout;

const CLIENTS: usize = 10_000;
const THREADS: usize = 8;
const MSG: usize = 128;

async fn echo_once(stream: TcpStream) -> io::Result<()> {
    let (res, buf) = stream
        .read_exact_owned(vec![0u8; MSG].into_boxed_slice())
        .await;
    res?;
    let (res, _) = stream.write_all_owned(buf).await;
    res
}

#[runtime::test]
async fn incoming_serves_10000_clients() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    // Bounded concurrency: THREADS clients at a time, each connection closed before the next.
    let clients: Vec<_> = (0..THREADS)
        .map(|t| {
            let done = done.clone();
            thread::spawn(move || {
                for i in (t..CLIENTS).step_by(THREADS) {
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                    let msg = [(i % 251) as u8; MSG];
                    s.write_all(&msg).unwrap();
                    let mut back = [0u8; MSG];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg, "client {i}");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let serve = async {
        let mut incoming = listener.incoming();
        let mut tasks = Vec::with_capacity(CLIENTS);
        for _ in 0..CLIENTS {
            let stream = incoming.next().await.expect("incoming never ends").unwrap();
            tasks.push(runtime::spawn_local(echo_once(stream)));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
    };
    timeout(Duration::from_secs(60), serve)
        .await
        .expect("served every client in time");
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(done.load(Ordering::Relaxed), CLIENTS);
}

#[runtime::test]
async fn incoming_and_accept_on_one_listener() {
    let listener = TcpListener::bind("[::1]:0")
        .or_else(|_| TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let mut incoming = listener.incoming();
    let c1 = TcpStream::connect(addr).await.unwrap();
    let s1 = timeout(Duration::from_secs(10), incoming.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(s1.peer_addr().unwrap(), c1.local_addr().unwrap());
    // Once the stream is dropped, single accepts take the connections.
    drop(incoming);
    let c2 = TcpStream::connect(addr).await.unwrap();
    let (s2, peer) = timeout(Duration::from_secs(10), listener.accept())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(peer, c2.local_addr().unwrap());
    let (res, _) = c2.write_all_owned(b"ok".as_slice()).await;
    res.unwrap();
    let (res, buf) = s2.read_exact_owned(vec![0u8; 2].into_boxed_slice()).await;
    res.unwrap();
    assert_eq!(&buf[..], b"ok");
    let _ = buf.slice(..1);
}
