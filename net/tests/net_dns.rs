//! Name resolution: host names resolve on the blocking pool (TCP connect, UDP connect and
//! send_to, `lookup_host`), numeric addresses never leave the core, a name that does not
//! resolve is an error naming it, and the core runs its other tasks while a lookup waits.
//!
//! The pool tests run on a runtime with one blocking thread, held by a job that waits on a
//! std channel: whatever needs the pool meanwhile waits until the test releases it.

use std::cell::Cell;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use corering_net::{lookup_host, TcpListener, TcpStream, UdpSocket};
use futures::channel::oneshot;
use runtime::time::{sleep, timeout};
use runtime::JoinHandle;

const LIMIT: Duration = Duration::from_secs(20);

/// A name under the reserved `.invalid` TLD (RFC 6761): it never resolves.
const INVALID: &str = "no-such-host.invalid";

/// A runtime whose blocking pool has one thread.
fn one_thread_pool() -> runtime::Runtime {
    runtime::Builder::new()
        .max_blocking_threads(1)
        .build()
        .unwrap()
}

/// Occupies the pool's thread (on a [`one_thread_pool`] runtime) until the returned sender
/// sends or is dropped.
async fn block_the_pool() -> (mpsc::Sender<()>, JoinHandle<()>) {
    let (started_tx, started_rx) = oneshot::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let job = runtime::spawn_blocking(move || {
        let _ = started_tx.send(());
        let _ = release_rx.recv();
    });
    started_rx.await.expect("the blocking job started");
    (release_tx, job)
}

/// `fut`'s output, which must come without waiting for the (blocked) pool.
async fn at_once<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    timeout(Duration::from_secs(5), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} waited (for the blocking pool?)"))
}

#[runtime::test]
async fn localhost_connects_over_tcp() {
    timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        // `localhost` may resolve to `::1` first: that address is refused and the next one
        // tried. The connections wait in the listener's backlog.
        let streams = [
            TcpStream::connect(format!("localhost:{port}"))
                .await
                .unwrap(),
            TcpStream::connect(("localhost", port)).await.unwrap(),
            TcpStream::connect((String::from("localhost"), port))
                .await
                .unwrap(),
        ];
        for s in &streams {
            assert_eq!(s.peer_addr().unwrap(), addr);
            let (_, peer) = listener.accept().await.unwrap();
            assert_eq!(s.local_addr().unwrap(), peer);
        }
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn localhost_works_for_udp_connect_and_send_to() {
    timeout(LIMIT, async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());

        // send_to picks the address of the socket's family (IPv4 here).
        let (res, _) = a
            .send_to(b"to".as_slice(), format!("localhost:{}", b_addr.port()))
            .await;
        assert_eq!(res.unwrap(), 2);
        let (res, buf) = b.recv_from(Vec::with_capacity(8)).await;
        assert_eq!(res.unwrap(), (2, a_addr));
        assert_eq!(buf, b"to");

        let (res, _) = a
            .send_to(b"tuple".as_slice(), ("localhost", b_addr.port()))
            .await;
        assert_eq!(res.unwrap(), 5);
        let (res, _) = b.recv_from(Vec::with_capacity(8)).await;
        assert_eq!(res.unwrap(), (5, a_addr));

        a.connect(format!("localhost:{}", b_addr.port()))
            .await
            .unwrap();
        assert_eq!(a.peer_addr().unwrap(), b_addr);
        let (res, _) = a.send(b"connected".as_slice()).await;
        assert_eq!(res.unwrap(), 9);
        let (res, buf) = b.recv_from(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap(), (9, a_addr));
        assert_eq!(buf, b"connected");
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn lookup_host_gives_loopback_for_localhost() {
    let addrs: Vec<SocketAddr> = lookup_host("localhost:0").await.unwrap().collect();
    assert!(!addrs.is_empty());
    for a in &addrs {
        assert!(a.ip().is_loopback(), "{a}");
        assert_eq!(a.port(), 0);
    }
    let addrs: Vec<SocketAddr> = lookup_host(("localhost", 8080)).await.unwrap().collect();
    assert!(addrs
        .iter()
        .all(|a| a.ip().is_loopback() && a.port() == 8080));

    // Numeric forms come back as they are.
    let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
    let v6: SocketAddr = "[::1]:443".parse().unwrap();
    let got: Vec<_> = lookup_host("[::1]:443").await.unwrap().collect();
    assert_eq!(got, [v6]);
    let got: Vec<_> = lookup_host(&[v4, v6][..]).await.unwrap().collect();
    assert_eq!(got, [v4, v6]);
}

/// The error of a lookup that should fail.
fn lookup_err<T>(res: io::Result<T>) -> io::Error {
    match res {
        Ok(_) => panic!("resolved an address that should not"),
        Err(e) => e,
    }
}

#[runtime::test]
async fn an_unresolvable_name_is_an_error_naming_it() {
    let target = format!("{INVALID}:80");
    // The kind getaddrinfo's error has, through std.
    let kind = std::net::ToSocketAddrs::to_socket_addrs(&(INVALID, 80))
        .unwrap_err()
        .kind();
    let check = |err: io::Error| {
        assert_eq!(err.kind(), kind, "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("resolving {target}: ")), "{msg}");
    };

    check(lookup_err(lookup_host(target.as_str()).await));
    check(lookup_err(lookup_host((INVALID, 80)).await));
    check(TcpStream::connect(&target).await.unwrap_err());
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    check(s.connect(target.as_str()).await.unwrap_err());
    let (res, buf) = s.send_to(b"x".as_slice(), (INVALID, 80)).await;
    check(res.unwrap_err());
    assert_eq!(buf, b"x");
    // The synchronous bind resolves on the thread, with the same error.
    check(lookup_err(TcpListener::bind(&target)));

    // Malformed input is `InvalidInput` at once, naming it.
    let err = lookup_err(lookup_host("no port here").await);
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("no port here"), "{err}");
    let err = lookup_err(lookup_host(&[][..]).await);
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn numeric_addresses_never_use_the_blocking_pool() {
    one_thread_pool().block_on(async {
        let (release, job) = block_the_pool().await;
        // The pool's one thread is busy from here on: anything that needs it waits.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        let text = addr.to_string();

        at_once("SocketAddr", TcpStream::connect(addr))
            .await
            .unwrap();
        let v4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
        at_once("SocketAddrV4", TcpStream::connect(v4))
            .await
            .unwrap();
        at_once("&str", TcpStream::connect(text.as_str()))
            .await
            .unwrap();
        at_once("&String", TcpStream::connect(&text)).await.unwrap();
        at_once("String", TcpStream::connect(text.clone()))
            .await
            .unwrap();
        let ip = IpAddr::from(Ipv4Addr::LOCALHOST);
        at_once("(IpAddr, u16)", TcpStream::connect((ip, port)))
            .await
            .unwrap();
        let tuple = (Ipv4Addr::LOCALHOST, port);
        at_once("(Ipv4Addr, u16)", TcpStream::connect(tuple))
            .await
            .unwrap();
        let tuple = ("127.0.0.1", port);
        at_once("(&str, u16)", TcpStream::connect(tuple))
            .await
            .unwrap();
        let tuple = (String::from("127.0.0.1"), port);
        at_once("(String, u16)", TcpStream::connect(tuple))
            .await
            .unwrap();
        let list = [addr];
        at_once("&[SocketAddr]", TcpStream::connect(&list[..]))
            .await
            .unwrap();
        let found: Vec<_> = at_once("lookup_host", lookup_host(text.as_str()))
            .await
            .unwrap()
            .collect();
        assert_eq!(found, [addr]);

        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_addr = udp.local_addr().unwrap().to_string();
        let (res, _) = at_once("send_to", udp.send_to(b"x".as_slice(), udp_addr.as_str())).await;
        assert_eq!(res.unwrap(), 1);
        at_once("UDP connect", udp.connect(udp_addr.as_str()))
            .await
            .unwrap();

        // A host name does need the pool: its lookup waits until the thread is free.
        let mut lookup = pin!(lookup_host(format!("localhost:{port}")));
        assert!(
            timeout(Duration::from_millis(300), lookup.as_mut())
                .await
                .is_err(),
            "a host name was resolved while the pool was blocked"
        );
        release.send(()).unwrap();
        job.await.unwrap();
        let found: Vec<_> = timeout(LIMIT, lookup).await.unwrap().unwrap().collect();
        assert!(!found.is_empty());
        assert!(found
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == port));
    });
}

#[test]
fn the_core_runs_other_tasks_while_a_lookup_waits() {
    one_thread_pool().block_on(async {
        let (release, job) = block_the_pool().await;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();

        let done = Rc::new(Cell::new(false));
        let connect = runtime::spawn_local({
            let done = done.clone();
            async move {
                let stream = TcpStream::connect(format!("localhost:{port}")).await;
                done.set(true);
                stream
            }
        });
        // Other tasks on the core: timers fire, a UDP round trip completes.
        let ticks = Rc::new(Cell::new(0));
        let ticker = runtime::spawn_local({
            let ticks = ticks.clone();
            async move {
                for _ in 0..10 {
                    sleep(Duration::from_millis(10)).await;
                    ticks.set(ticks.get() + 1);
                }
            }
        });
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let round_trip = async {
            let (res, _) = a.send_to(b"hi".as_slice(), a.local_addr().unwrap()).await;
            res.unwrap();
            let (res, _) = a.recv_from(Vec::with_capacity(4)).await;
            res.unwrap().0
        };
        assert_eq!(at_once("a UDP round trip", round_trip).await, 2);
        timeout(LIMIT, ticker).await.unwrap().unwrap();
        assert_eq!(ticks.get(), 10);
        assert!(
            !done.get(),
            "the connect resolved while the pool was blocked"
        );
        assert!(!connect.is_finished());

        release.send(()).unwrap();
        job.await.unwrap();
        let stream = timeout(LIMIT, connect).await.unwrap().unwrap().unwrap();
        let (_, peer) = timeout(LIMIT, listener.accept()).await.unwrap().unwrap();
        assert_eq!(stream.local_addr().unwrap(), peer);
    });
}

#[test]
fn lookup_host_is_send_for_send_input() {
    fn send<T: Send>(_: &T) {}
    send(&lookup_host(String::from("localhost:0")));
    send(&lookup_host(("localhost", 0)));
}
