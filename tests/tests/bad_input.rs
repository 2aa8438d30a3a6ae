//! Bad input to the public APIs of `net`, `fs` and `runtime` gives an `io::Error` or the
//! documented result, never a panic or a wrong count: impossible addresses, a connect that
//! never completes, zero-length and larger-than-`u32::MAX` buffers, too many iovecs, past
//! and extreme deadlines, and sockets used after shutdown or never connected.
//!
//! Cases already covered elsewhere (see the README's Reliability table) are not repeated.
//! The tests take one lock in turn: one of them counts this process's fds.

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream, UdpSocket, UnixStream};
use futures::{FutureExt, StreamExt};
use runtime::ext::{raw, SharedFd};
use runtime::time::{interval, interval_at, sleep, sleep_until, timeout, timeout_at};

static LOCK: Mutex<()> = Mutex::new(());
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` on a fresh runtime, one test at a time, within `LIMIT`.
fn run<F: Future>(f: F) -> F::Output {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async { timeout(LIMIT, f).await.expect("finished in time") })
}

/// Whether this host has IPv6 loopback; without it the IPv6 cases are left out, through
/// `runtime::ext::testing::require` (a failure under `CORERING_REQUIRE_FEATURES=1`).
fn has_ipv6() -> bool {
    let ok = std::net::TcpListener::bind("[::1]:0").is_ok();
    runtime::ext::testing::require("IPv6 loopback ([::1])", ok)
}

#[test]
fn impossible_addresses_are_errors() {
    let v6 = has_ipv6();
    run(async {
        // Broadcast and multicast cannot be TCP peers: refused locally, nothing is sent.
        for addr in ["255.255.255.255:80", "224.0.0.1:80", "[ff02::1]:80"] {
            if addr.starts_with('[') && !v6 {
                continue;
            }
            let err = TcpStream::connect(addr).await.unwrap_err();
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::NetworkUnreachable
                        | ErrorKind::InvalidInput
                        | ErrorKind::PermissionDenied
                ),
                "{addr}: {err:?}"
            );
            let a: SocketAddr = addr.parse().unwrap();
            assert!(err.to_string().contains(&a.to_string()), "{err}");
        }
        // Port 0 is nobody's.
        for addr in ["127.0.0.1:0", "[::1]:0"] {
            if addr.starts_with('[') && !v6 {
                continue;
            }
            let err = TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{addr}: {err:?}");
        }
        // Documentation addresses (TEST-NET-2, 2001:db8::/32) are not on this host.
        for addr in ["198.51.100.1:0", "[2001:db8::1]:0"] {
            if addr.starts_with('[') && !v6 {
                continue;
            }
            let err = TcpListener::bind(addr).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::AddrNotAvailable, "{addr}: {err:?}");
            assert!(err.to_string().contains("bind to"), "{err}");
        }

        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Port 0 as a destination: EINVAL.
        let (res, buf) = udp.send_to(b"x".as_slice(), "127.0.0.1:0").await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
        assert_eq!(buf, b"x");
        // Broadcast without SO_BROADCAST: EACCES.
        let (res, _) = udp.send_to(b"x".as_slice(), "255.255.255.255:9").await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EACCES));
        // A datagram longer than IPv4 allows: EMSGSIZE, the buffer comes back.
        let (res, buf) = udp.send_to(vec![0u8; 70_000], "127.0.0.1:9").await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EMSGSIZE));
        assert_eq!(buf.len(), 70_000);
        // No peer set: EDESTADDRREQ, as documented.
        let (res, _) = udp.send(b"x".as_slice()).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EDESTADDRREQ));
    });
}

/// A connect to a listener whose accept queue is full gets no answer (the kernel drops the
/// SYN); a timeout ends it and its socket is closed.
#[test]
fn a_connect_that_never_completes_is_cancelled_by_timeout() {
    run(async {
        let fds_before = tests::fd_count();
        let listener =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        listener
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        listener.listen(0).unwrap();
        let addr = listener.local_addr().unwrap().as_socket().unwrap();
        // Fill the accept queue (backlog 0 holds one) and the SYN queue behind it.
        let mut fillers = Vec::new();
        for _ in 0..4 {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            let _ = s.connect(&addr.into());
            fillers.push(s);
        }
        sleep(Duration::from_millis(50)).await;
        let start = Instant::now();
        let res = timeout(Duration::from_millis(300), TcpStream::connect(addr)).await;
        assert!(res.is_err(), "connected to a full accept queue: {res:?}");
        println!("connect cancelled after {:?}", start.elapsed());
        drop(fillers);
        drop(listener);
        // The cancelled connect's socket closes when its CQE is reaped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while tests::fd_count() != fds_before && Instant::now() < deadline {
            sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            tests::fd_count(),
            fds_before,
            "the cancelled connect's fd is closed"
        );
    });
}

/// A connected TCP pair on loopback: (ours, std peer).
async fn tcp_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ours = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (peer, _) = listener.accept().unwrap();
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    (ours, peer)
}

#[test]
fn zero_length_buffers_are_answered_not_submitted_wrongly() {
    run(async {
        let (ours, mut peer) = tcp_pair().await;
        let (res, _) = ours.read_exact_owned(Vec::new()).await;
        res.unwrap();
        let (res, _) = ours.write_all_owned(Vec::new()).await;
        res.unwrap();
        let (res, _) = ours.readv_owned(Vec::<Vec<u8>>::new()).await;
        assert_eq!(res.unwrap(), 0);
        let (res, _) = ours.readv_owned(vec![Vec::new(), Vec::new()]).await;
        assert_eq!(res.unwrap(), 0);
        let (res, _) = ours.send_zc(Vec::new()).await;
        assert_eq!(res.unwrap(), 0);
        // Nothing reached the peer: its first byte is the one sent now.
        let (res, _) = ours.write_owned(b"!".as_slice()).await;
        assert_eq!(res.unwrap(), 1);
        let mut one = [0u8; 1];
        peer.read_exact(&mut one).unwrap();
        assert_eq!(&one, b"!");

        // A Unix stream answers the same way.
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(a.read_owned(Vec::new()).await.0.unwrap(), 0);
        assert_eq!(a.write_owned(Vec::new()).await.0.unwrap(), 0);

        // An empty datagram is a datagram: sent, and received as Ok(0) from its sender.
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (res, _) = a.send_to(Vec::new(), b.local_addr().unwrap()).await;
        assert_eq!(res.unwrap(), 0);
        let (res, _) = b.recv_from(vec![0u8; 16]).await;
        assert_eq!(res.unwrap(), (0, a.local_addr().unwrap()));
        // A zero-length receive buffer takes a whole datagram, truncated to nothing.
        let (res, _) = a.send_to(b"abc".as_slice(), b.local_addr().unwrap()).await;
        res.unwrap();
        let (res, _) = b.recv_from(Vec::new()).await;
        assert_eq!(res.unwrap(), (0, a.local_addr().unwrap()));
        let (res, _) = a.send_to(b"next".as_slice(), b.local_addr().unwrap()).await;
        res.unwrap();
        let (res, buf) = b.recv_from(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap().0, 4);
        assert_eq!(&buf[..], b"next", "the truncated datagram is gone");

        // Files and the raw ops: a zero-length read or write is Ok(0).
        let dir = std::env::temp_dir().join(format!("bad-input-zero-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"data").unwrap();
        let file = corering_fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .await
            .unwrap();
        assert_eq!(file.read_at(Vec::new(), 0).await.0.unwrap(), 0);
        assert_eq!(file.write_at(Vec::new(), 2).await.0.unwrap(), 0);
        file.read_exact_at(Vec::new(), 100).await.0.unwrap();
        file.write_all_at(Vec::new(), 100).await.0.unwrap();
        file.close().await.unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"data",
            "the file is unchanged"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let (r, w) = tests::pipe();
        let (r, w) = (SharedFd::new(r), SharedFd::new(w));
        assert_eq!(raw::write(&w, Vec::new(), u64::MAX).await.0.unwrap(), 0);
        assert_eq!(raw::read(&r, Vec::new(), u64::MAX).await.0.unwrap(), 0);
    });
}

/// io_uring lengths are `u32`: a buffer of 4 GiB (which `as u32` would make 0, read as end
/// of stream) or 5 GiB must give a true count, never a wrong one. `vec![0; n]` maps lazily,
/// so the buffers cost address space, not memory.
#[test]
fn buffers_longer_than_u32_max_give_true_counts() {
    const FOUR_GIB: usize = 1 << 32;
    const FIVE_GIB: usize = 5 << 30;
    run(async {
        // TCP read: the 5 bytes pending, not 0.
        let (ours, mut peer) = tcp_pair().await;
        for len in [FOUR_GIB, FIVE_GIB] {
            peer.write_all(b"hello").unwrap();
            let (res, buf) = ours.read_owned(Vec::with_capacity(len)).await;
            assert_eq!(res.unwrap(), 5, "read with a {len}-byte buffer");
            assert_eq!(&buf[..], b"hello");
            peer.write_all(b"vec").unwrap();
            let (res, bufs) = ours.readv_owned(vec![Vec::with_capacity(len)]).await;
            assert_eq!(res.unwrap(), 3, "readv with a {len}-byte buffer");
            assert_eq!(&bufs[0][..], b"vec");
        }
        // TCP write: a short count, and the peer gets exactly that many bytes.
        let counter = std::thread::spawn(move || {
            let mut total = 0u64;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                match peer.read(&mut buf).unwrap() {
                    0 => return total,
                    n => total += n as u64,
                }
            }
        });
        let mut sent = 0u64;
        for len in [FOUR_GIB, FIVE_GIB] {
            let (res, buf) = ours.write_owned(vec![0u8; len]).await;
            let n = res.unwrap();
            assert!(n > 0 && n <= len, "wrote {n} of {len}");
            assert_eq!(buf.len(), len);
            sent += n as u64;
        }
        ours.shutdown_socket(Shutdown::Write).await.unwrap();
        assert_eq!(
            counter.join().unwrap(),
            sent,
            "the peer got what write counted"
        );

        // Datagrams and Unix streams: the same through recvmsg and recv.
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (res, _) = a
            .send_to(b"dgram".as_slice(), b.local_addr().unwrap())
            .await;
        res.unwrap();
        let (res, buf) = b.recv_from(Vec::with_capacity(FOUR_GIB)).await;
        assert_eq!(res.unwrap(), (5, a.local_addr().unwrap()));
        assert_eq!(&buf[..], b"dgram");
        let (ua, ub) = UnixStream::pair().unwrap();
        let (res, _) = ua.write_owned(vec![0u8; FIVE_GIB]).await;
        let n = res.unwrap();
        assert!(n > 0 && n <= FIVE_GIB, "wrote {n}");
        let (res, buf) = ub.read_owned(Vec::with_capacity(FIVE_GIB)).await;
        let m = res.unwrap();
        assert!(m > 0 && m <= n, "read {m} of {n}");
        assert!(buf.iter().all(|&c| c == 0) && buf.len() == m);

        // Files: /dev/null takes up to the kernel's MAX_RW_COUNT per write; write_all_at
        // loops to the end.
        let null = corering_fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .await
            .unwrap();
        let (res, _) = null.write_at(vec![0u8; FOUR_GIB], 0).await;
        let n = res.unwrap();
        assert!(n > 0 && n <= FOUR_GIB, "wrote {n}");
        let (res, buf) = null.write_all_at(vec![0u8; FIVE_GIB], 0).await;
        res.unwrap();
        assert_eq!(buf.len(), FIVE_GIB);
        null.close().await.unwrap();
        let path = std::env::temp_dir().join(format!("bad-input-big-{}", std::process::id()));
        std::fs::write(&path, b"small file").unwrap();
        let file = corering_fs::File::open(&path).await.unwrap();
        let (res, buf) = file.read_at(Vec::with_capacity(FOUR_GIB), 0).await;
        assert_eq!(res.unwrap(), 10);
        assert_eq!(&buf[..], b"small file");
        file.close().await.unwrap();
        std::fs::remove_file(&path).unwrap();

        // The raw runtime ops on a pipe.
        let (r, w) = tests::pipe();
        std::fs::File::from(w.try_clone().unwrap())
            .write_all(b"pipe")
            .unwrap();
        let r = SharedFd::new(r);
        let (res, buf) = raw::read(&r, Vec::with_capacity(FOUR_GIB), u64::MAX).await;
        assert_eq!(res.unwrap(), 4);
        assert_eq!(&buf[..], b"pipe");
    });
}

/// More buffers than `IOV_MAX` (1024) in one vectored op: the kernel's `EMSGSIZE` for a
/// socket's `sendmsg`, `EINVAL` for `readv`/`writev`.
#[test]
fn too_many_iovecs_is_an_error() {
    run(async {
        let (ours, _peer) = tcp_pair().await;
        let (res, bufs) = ours.writev_owned(vec![vec![1u8; 1]; 1025]).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EMSGSIZE));
        assert_eq!(bufs.len(), 1025);
        let (res, _) = ours.readv_owned(vec![vec![0u8; 1]; 1025]).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EINVAL));
        let null = corering_fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .await
            .unwrap();
        let (res, _) = null.writev_at(vec![vec![1u8; 1]; 1025], 0).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EINVAL));
        // 1024 is fine.
        let (res, _) = null.writev_at(vec![vec![1u8; 1]; 1024], 0).await;
        assert_eq!(res.unwrap(), 1024);
        null.close().await.unwrap();
    });
}

#[test]
fn past_zero_and_extreme_deadlines() {
    run(async {
        let now = Instant::now();
        let past = now.checked_sub(Duration::from_secs(3600)).unwrap_or(now);
        // A deadline that has passed completes at the first poll.
        assert_eq!(sleep_until(past).now_or_never(), Some(()));
        assert_eq!(sleep(Duration::ZERO).now_or_never(), Some(()));
        let mut s = sleep(Duration::from_secs(3600));
        assert!(!s.is_elapsed());
        s.reset(past);
        assert!(s.is_elapsed());
        assert_eq!((&mut s).now_or_never(), Some(()));
        // A zero or past timeout still polls the future once first.
        assert_eq!(
            timeout(Duration::ZERO, async { 7 }).now_or_never(),
            Some(Ok(7))
        );
        let r = timeout(Duration::ZERO, std::future::pending::<()>()).now_or_never();
        assert!(matches!(r, Some(Err(_))), "{r:?}");
        let r = timeout_at(past, std::future::pending::<()>()).now_or_never();
        let err: std::io::Error = r.unwrap().unwrap_err().into();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        // A deadline a century away is kept as given and stays pending.
        if let Some(far) = now.checked_add(Duration::from_secs(100 * 365 * 86400)) {
            let mut s = sleep_until(far);
            assert_eq!(s.deadline(), far);
            assert!(futures::poll!(&mut s).is_pending());
        }
        // An interval of Duration::MAX ticks now, then never (no overflow).
        let mut i = interval(Duration::MAX);
        assert!(i.tick().now_or_never().is_some());
        assert!(futures::poll!(Box::pin(i.tick())).is_pending());
        // An interval started in the past bursts through its missed ticks.
        let start = now.checked_sub(Duration::from_millis(50)).unwrap_or(now);
        let mut i = interval_at(start, Duration::from_millis(10));
        for k in 0..5 {
            let at = i
                .tick()
                .now_or_never()
                .expect("a missed tick fires at once");
            assert_eq!(at, start + Duration::from_millis(10) * k);
        }
    });
    // A zero period is documented to panic, before any timer exists.
    let err = std::panic::catch_unwind(|| interval(Duration::ZERO)).unwrap_err();
    let msg = err.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("non-zero"), "{msg:?}");
}

#[test]
fn sockets_used_after_shutdown_or_never_connected() {
    run(async {
        // After shutdown(Read): end of stream at once, even with bytes on the way.
        let (ours, mut peer) = tcp_pair().await;
        ours.shutdown_socket(Shutdown::Read).await.unwrap();
        let (res, _) = ours.read_owned(vec![0u8; 8]).await;
        assert_eq!(res.unwrap(), 0);
        // After shutdown(Both): reads end, writes are EPIPE, a second shutdown is harmless.
        ours.shutdown_socket(Shutdown::Both).await.unwrap();
        let (res, _) = ours.read_owned(vec![0u8; 8]).await;
        assert_eq!(res.unwrap(), 0);
        let (res, _) = ours.write_owned(b"x".as_slice()).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
        let (res, _) = ours.writev_owned(vec![b"x".to_vec()]).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
        let (res, _) = ours.send_zc(b"x".to_vec()).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
        let again = ours.shutdown_socket(Shutdown::Both).await;
        assert!(
            again
                .as_ref()
                .map_or_else(|e| e.kind() == ErrorKind::NotConnected, |()| true),
            "{again:?}"
        );
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "nothing was sent after the shutdown");

        // A TCP socket that never connected: ENOTCONN to read, EPIPE to write (no signal).
        let unconnected =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let s = TcpStream::from_std(unconnected.into()).unwrap();
        let (res, _) = s.read_owned(vec![0u8; 8]).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::NotConnected);
        let (res, _) = s.write_owned(b"x".as_slice()).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
        assert_eq!(
            s.shutdown_socket(Shutdown::Write).await.unwrap_err().kind(),
            ErrorKind::NotConnected
        );
        assert_eq!(s.peer_addr().unwrap_err().kind(), ErrorKind::NotConnected);

        // A bound socket that is not listening: accept is EINVAL, and `incoming` yields
        // EINVAL and ends, as documented.
        let bound =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        bound
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        let listener = TcpListener::from_std(bound.into()).unwrap();
        assert_eq!(
            listener.accept().await.unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        let mut incoming = listener.incoming();
        let first = incoming.next().await.expect("the error is yielded");
        assert_eq!(first.unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert!(incoming.next().await.is_none(), "then the stream ends");

        // A Unix stream whose peer is gone: end of stream, then EPIPE.
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        assert_eq!(a.read_owned(vec![0u8; 8]).await.0.unwrap(), 0);
        let (res, _) = a.write_owned(b"x".as_slice()).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);

        // Files: a full device is ENOSPC; reading a directory is EISDIR.
        let full = corering_fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .await
            .unwrap();
        let (res, buf) = full.write_all_at(vec![1u8; 4096], 0).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(buf.len(), 4096);
        full.close().await.unwrap();
        let dir = corering_fs::File::open(std::env::temp_dir()).await.unwrap();
        let (res, _) = dir.read_at(vec![0u8; 8], 0).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EISDIR));
        dir.close().await.unwrap();
    });
}
