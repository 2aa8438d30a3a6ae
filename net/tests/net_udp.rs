//! UDP sockets on loopback: round trips (v4, v6), connected send/recv, truncation, a dropped
//! receive, and setup errors.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::pin::pin;
use std::time::Duration;

use corering_net::UdpSocket;
use runtime::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// Binds `addr`, or `None` where the machine has no such address (no IPv6 loopback):
/// through `runtime::ext::testing::require`, so a failure under
/// `CORERING_REQUIRE_FEATURES=1`.
fn bind_or_skip(addr: &str) -> Option<UdpSocket> {
    match UdpSocket::bind(addr) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == ErrorKind::AddrNotAvailable => {
            runtime::ext::testing::require(&format!("the address {addr} ({e})"), false);
            None
        }
        Err(e) => panic!("bind {addr}: {e}"),
    }
}

async fn round_trip(bind: &str) {
    let (Some(a), Some(b)) = (bind_or_skip(bind), bind_or_skip(bind)) else {
        return;
    };
    let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    assert_eq!(a_addr.ip(), bind.parse::<SocketAddr>().unwrap().ip());
    assert_ne!(a_addr.port(), 0);

    let (res, _) = a.send_to(b"ping".as_slice(), b_addr).await;
    assert_eq!(res.unwrap(), 4);
    let (res, buf) = b.recv_from(Vec::with_capacity(64)).await;
    let (n, from) = res.unwrap();
    assert_eq!((n, from), (4, a_addr));
    assert_eq!(buf, b"ping");

    // Reply to whoever sent, through a string address; an empty datagram is a datagram.
    let (res, _) = b.send_to(Vec::new(), from.to_string()).await;
    assert_eq!(res.unwrap(), 0);
    let (res, buf) = a.recv_from(vec![7u8; 8].into_boxed_slice()).await;
    assert_eq!(res.unwrap(), (0, b_addr));
    assert_eq!(&buf[..], &[7u8; 8]);
}

#[runtime::test]
async fn send_to_recv_from_v4() {
    timeout(LIMIT, round_trip("127.0.0.1:0")).await.unwrap();
}

#[runtime::test]
async fn send_to_recv_from_v6() {
    timeout(LIMIT, round_trip("[::1]:0")).await.unwrap();
}

#[runtime::test]
async fn connected_send_recv() {
    timeout(LIMIT, async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(a.peer_addr().unwrap_err().kind(), ErrorKind::NotConnected);
        let (res, _) = a.send(b"x".as_slice()).await;
        assert!(res.is_err(), "send without a peer");

        a.connect(b.local_addr().unwrap()).await.unwrap();
        b.connect(a.local_addr().unwrap()).await.unwrap();
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());

        for i in 0..10u8 {
            let (res, _) = a.send(vec![i; 100]).await;
            assert_eq!(res.unwrap(), 100);
            let (res, buf) = b.recv(Vec::with_capacity(200)).await;
            assert_eq!(res.unwrap(), 100);
            assert_eq!(buf, vec![i; 100]);
        }

        // A connected socket takes only its peer's datagrams.
        let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (res, _) = stranger
            .send_to(b"stranger".as_slice(), b.local_addr().unwrap())
            .await;
        res.unwrap();
        let (res, _) = a.send(b"peer".as_slice()).await;
        res.unwrap();
        let (res, buf) = b.recv(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap(), 4);
        assert_eq!(buf, b"peer");

        // Sending to a closed port: the ICMP error shows up on the connected socket.
        let closed = {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap()
        };
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(closed).await.unwrap();
        let (res, _) = c.send(b"anyone?".as_slice()).await;
        res.unwrap();
        let (res, _) = c.recv(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::ConnectionRefused);
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn long_datagram_is_truncated() {
    timeout(LIMIT, async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b_addr = b.local_addr().unwrap();
        let long: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let (res, long) = a.send_to(long, b_addr).await;
        assert_eq!(res.unwrap(), 1000);
        let (res, _) = a.send_to(b"next".as_slice(), b_addr).await;
        res.unwrap();

        let (res, buf) = b.recv_from(vec![0u8; 10].into_boxed_slice()).await;
        assert_eq!(res.unwrap(), (10, a.local_addr().unwrap()));
        assert_eq!(&buf[..], &long[..10]);
        // The rest of the long datagram is gone; the next one is whole.
        let (res, buf) = b.recv(Vec::with_capacity(100)).await;
        assert_eq!(res.unwrap(), 4);
        assert_eq!(buf, b"next");
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn dropped_recv_leaves_socket_usable() {
    timeout(LIMIT, async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        {
            let mut recv = pin!(b.recv_from(vec![0u8; 64]));
            assert!(futures::poll!(recv.as_mut()).is_pending());
            let mut recv2 = pin!(b.recv(vec![0u8; 64]));
            assert!(futures::poll!(recv2.as_mut()).is_pending());
        }
        // Let the cancels reach the kernel before the datagram does.
        runtime::ext::raw::nop().await.unwrap();
        runtime::time::sleep(Duration::from_millis(5)).await;

        let (res, _) = a
            .send_to(b"after".as_slice(), b.local_addr().unwrap())
            .await;
        res.unwrap();
        let (res, buf) = b.recv_from(Vec::with_capacity(64)).await;
        assert_eq!(res.unwrap(), (5, a.local_addr().unwrap()));
        assert_eq!(buf, b"after");
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn many_in_flight() {
    timeout(LIMIT, async {
        let rx = std::rc::Rc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let receiver = runtime::spawn_local({
            let rx = rx.clone();
            async move {
                let mut seen = vec![false; 100];
                for _ in 0..100 {
                    let (res, buf) = rx.recv_from(Vec::with_capacity(8)).await;
                    res.unwrap();
                    seen[buf[0] as usize] = true;
                }
                seen.into_iter().all(|s| s)
            }
        });
        for i in 0..100u8 {
            let (res, _) = tx.send_to(vec![i], to).await;
            res.unwrap();
        }
        assert!(receiver.await.unwrap());
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn setup_errors() {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = a.local_addr().unwrap();
    let err = UdpSocket::bind(addr).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AddrInUse);
    assert!(err.to_string().contains(&addr.to_string()), "{err}");

    let err = UdpSocket::bind("not an address").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // TEST-NET-1 is not a local address.
    let err = UdpSocket::bind("192.0.2.1:0").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AddrNotAvailable);

    let (res, buf) = a.send_to(b"x".as_slice(), "no such address").await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(buf, b"x");
    let err = a.connect("no such address").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[runtime::test]
async fn options_and_std_round_trip() {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_broadcast(true).unwrap();
    assert!(s.broadcast().unwrap());
    s.set_ttl(7).unwrap();
    assert_eq!(s.ttl().unwrap(), 7);
    let addr = s.local_addr().unwrap();
    let std = s.into_std().unwrap();
    assert_eq!(std.local_addr().unwrap(), addr);
    let s = UdpSocket::from_std(std).unwrap();
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.send_to(b"std", addr).unwrap();
    let (res, buf) = s.recv_from(Vec::with_capacity(8)).await;
    assert_eq!(res.unwrap(), (3, peer.local_addr().unwrap()));
    assert_eq!(buf, b"std");
}
