//! Unix sockets in a temporary directory: streams through `incoming()` and `accept`,
//! `pair()`, split halves, `futures::io` adapters, datagrams, and path errors.

use std::io::{self, ErrorKind};
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use corering_net::unix::SocketAddr;
use corering_net::{UnixDatagram, UnixListener, UnixStream};
use futures::io::{AsyncReadExt, AsyncWriteExt};
use futures::StreamExt;
use runtime::buf::IoBuf;
use runtime::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// A directory under the system's temp dir, unique to this process and test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("net-unix-{}-{n}-{test}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Echoes until end of stream, with owned buffers.
async fn echo(stream: UnixStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        let (res, b) = stream.read_owned(buf).await;
        let n = res?;
        if n == 0 {
            return Ok(total);
        }
        let (res, b) = stream.write_all_owned(b.slice(..n)).await;
        res?;
        buf = b.into_inner();
        total += n as u64;
    }
}

#[runtime::test]
async fn echo_through_incoming_200_clients() {
    const CLIENTS: usize = 200;
    let dir = TempDir::new("incoming");
    let path = dir.path("echo.sock");
    let listener = UnixListener::bind(&path).unwrap();
    assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(&*path));
    timeout(LIMIT, async {
        let mut incoming = listener.incoming();
        let server = runtime::spawn_local(async move {
            let mut echoes = Vec::new();
            for _ in 0..CLIENTS {
                let stream = incoming.next().await.expect("the stream never ends")?;
                echoes.push(runtime::spawn_local(echo(stream)));
            }
            let mut total = 0;
            for e in echoes {
                total += e.await.unwrap()?;
            }
            io::Result::Ok(total)
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let path = path.clone();
                runtime::spawn_local(async move {
                    let stream = UnixStream::connect(&path).await?;
                    assert_eq!(stream.peer_addr()?.as_pathname(), Some(&*path));
                    assert!(stream.local_addr()?.is_unnamed());
                    let msg = format!("hello from client {i}").into_bytes();
                    let (res, msg) = stream.write_all_owned(msg).await;
                    res?;
                    let (res, back) = stream.read_exact_owned(Vec::with_capacity(msg.len())).await;
                    res?;
                    assert_eq!(back, msg);
                    stream.shutdown_socket(Shutdown::Write).await?;
                    let (res, _) = stream.read_owned(vec![0u8; 8]).await;
                    assert_eq!(res?, 0, "the server closes after end of stream");
                    io::Result::Ok(msg.len() as u64)
                })
            })
            .collect();
        let mut sent = 0;
        for c in clients {
            sent += c.await.unwrap().unwrap();
        }
        assert_eq!(server.await.unwrap().unwrap(), sent);
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn accept_and_split() {
    let dir = TempDir::new("accept");
    let path = dir.path("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    timeout(LIMIT, async {
        let client = runtime::spawn_local({
            let path = path.clone();
            async move { UnixStream::connect(path).await }
        });
        let (server, peer) = listener.accept().await.unwrap();
        assert!(peer.is_unnamed());
        let client = client.await.unwrap().unwrap();

        let (rd, wr) = server.into_split();
        let (res, _) = client.write_all_owned(b"abc".as_slice()).await;
        res.unwrap();
        let (res, buf) = rd.read_exact_owned(vec![0u8; 3]).await;
        res.unwrap();
        assert_eq!(buf, b"abc");
        let (res, _) = wr.write_all_owned(b"xyz".as_slice()).await;
        res.unwrap();
        let (res, buf) = client.read_exact_owned(vec![0u8; 3]).await;
        res.unwrap();
        assert_eq!(buf, b"xyz");

        let (other, _) = UnixStream::pair().unwrap();
        let (_, other_wr) = other.into_split();
        let err = rd.reunite(other_wr).unwrap_err();
        let stream = err.0.reunite(wr).unwrap();
        assert_eq!(stream.local_addr().unwrap().as_pathname(), Some(&*path));
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn pair_round_trip() {
    timeout(LIMIT, async {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(a.local_addr().unwrap().is_unnamed());
        assert!(b.peer_addr().unwrap().is_unnamed());
        let msg: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let reader = runtime::spawn_local(async move {
            let (res, buf) = b.read_exact_owned(Vec::with_capacity(100_000)).await;
            res.map(|()| buf)
        });
        let (res, msg) = a.write_all_owned(msg).await;
        res.unwrap();
        assert_eq!(reader.await.unwrap().unwrap(), msg);
        drop(a);
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn futures_copy_over_a_stream() {
    timeout(LIMIT, async {
        let (mut a, b) = UnixStream::pair().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let copier = runtime::spawn_local(async move {
            let mut sink = futures::io::Cursor::new(Vec::new());
            let n = futures::io::copy(b, &mut sink).await?;
            io::Result::Ok((n, sink.into_inner()))
        });
        let mut src = futures::io::Cursor::new(data.clone());
        let n = futures::io::copy(&mut src, &mut a).await.unwrap();
        assert_eq!(n, data.len() as u64);
        a.close().await.unwrap();
        let (n, got) = copier.await.unwrap().unwrap();
        assert_eq!(n, data.len() as u64);
        assert!(got == data, "copied bytes differ");

        // Line-wise reads through AsyncBufRead.
        let (mut a, b) = UnixStream::pair().unwrap();
        AsyncWriteExt::write_all(&mut a, b"one\ntwo\n")
            .await
            .unwrap();
        a.close().await.unwrap();
        let mut lines = futures::io::AsyncBufReadExt::lines(b);
        assert_eq!(lines.next().await.unwrap().unwrap(), "one");
        assert_eq!(lines.next().await.unwrap().unwrap(), "two");
        assert!(lines.next().await.is_none());
        let (mut c, mut d) = UnixStream::pair().unwrap();
        AsyncWriteExt::write_all(&mut c, b"hi").await.unwrap();
        AsyncWriteExt::flush(&mut c).await.unwrap();
        let mut two = [0u8; 2];
        AsyncReadExt::read_exact(&mut d, &mut two).await.unwrap();
        assert_eq!(&two, b"hi");
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn datagram_pair() {
    timeout(LIMIT, async {
        let (a, b) = UnixDatagram::pair().unwrap();
        for i in 0..5u8 {
            let (res, _) = a.send(vec![i; 10 * i as usize]).await;
            assert_eq!(res.unwrap(), 10 * i as usize);
        }
        for i in 0..5u8 {
            let (res, buf) = b.recv(Vec::with_capacity(64)).await;
            assert_eq!(
                res.unwrap(),
                10 * i as usize,
                "datagram boundaries are kept"
            );
            assert_eq!(buf, vec![i; 10 * i as usize]);
        }
        // recv_from on a pair: the sender is unnamed. A long datagram is truncated.
        let (res, _) = b.send(vec![9u8; 100]).await;
        res.unwrap();
        let (res, buf) = a.recv_from(vec![0u8; 10].into_boxed_slice()).await;
        let (n, from) = res.unwrap();
        assert_eq!(n, 10);
        assert!(from.is_unnamed(), "{from:?}");
        assert_eq!(&buf[..], &[9u8; 10]);
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn datagram_bound_send_to_recv_from() {
    let dir = TempDir::new("dgram");
    let (pa, pb) = (dir.path("a.sock"), dir.path("b.sock"));
    timeout(LIMIT, async {
        let a = UnixDatagram::bind(&pa).unwrap();
        let b = Rc::new(UnixDatagram::bind(&pb).unwrap());
        assert_eq!(a.local_addr().unwrap().as_pathname(), Some(&*pa));

        let (res, _) = a.send_to(b"to b".as_slice(), &pb).await;
        assert_eq!(res.unwrap(), 4);
        let (res, buf) = b.recv_from(Vec::with_capacity(16)).await;
        let (n, from) = res.unwrap();
        assert_eq!(n, 4);
        assert_eq!(from.as_pathname(), Some(&*pa));
        assert_eq!(buf, b"to b");

        // Reply to the address the datagram came from.
        let (res, _) = b.send_to_addr(b"to a".as_slice(), &from).await;
        res.unwrap();
        let (res, buf) = a.recv_from(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap().1.as_pathname(), Some(&*pb));
        assert_eq!(buf, b"to a");

        // An unbound sender is unnamed; connected, it can use send/recv.
        let c = UnixDatagram::unbound().unwrap();
        assert!(c.local_addr().unwrap().is_unnamed());
        let (res, _) = c.send(b"x".as_slice()).await;
        assert!(res.is_err(), "send without a peer");
        c.connect(&pb).unwrap();
        assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(&*pb));
        let (res, _) = c.send(b"from c".as_slice()).await;
        res.unwrap();
        let (res, buf) = b.recv_from(Vec::with_capacity(16)).await;
        assert!(res.unwrap().1.is_unnamed());
        assert_eq!(buf, b"from c");

        // A pending recv dropped, then the socket still receives.
        {
            let mut recv = std::pin::pin!(b.recv_from(Vec::with_capacity(16)));
            assert!(futures::poll!(recv.as_mut()).is_pending());
        }
        runtime::ext::raw::nop().await.unwrap();
        let (res, _) = a.send_to(b"again".as_slice(), &pb).await;
        res.unwrap();
        let (res, buf) = b.recv(Vec::with_capacity(16)).await;
        assert_eq!(res.unwrap(), 5);
        assert_eq!(buf, b"again");

        // Sending to a path with no socket.
        let (res, _) = a.send_to(b"x".as_slice(), dir.path("nobody.sock")).await;
        assert_eq!(res.unwrap_err().kind(), ErrorKind::NotFound);
    })
    .await
    .unwrap();
}

#[runtime::test]
async fn abstract_addresses() {
    let name = format!("net-unix-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    assert_eq!(
        listener.local_addr().unwrap().as_abstract_name(),
        Some(name.as_bytes())
    );
    timeout(LIMIT, async {
        let client = UnixStream::connect_addr(&addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (res, _) = client.write_all_owned(b"abstract".as_slice()).await;
        res.unwrap();
        let (res, buf) = server.read_exact_owned(vec![0u8; 8]).await;
        res.unwrap();
        assert_eq!(buf, b"abstract");
    })
    .await
    .unwrap();
}

fn too_long(dir: &Path) -> PathBuf {
    dir.join("x".repeat(200))
}

#[runtime::test]
async fn path_errors() {
    let dir = TempDir::new("errors");
    let long = too_long(&dir.0);
    let long_str = long.display().to_string();

    let err = UnixListener::bind(&long).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains(&long_str), "{err}");
    let err = UnixStream::connect(&long).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = UnixDatagram::bind(&long).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let d = UnixDatagram::unbound().unwrap();
    let (res, buf) = d.send_to(b"x".as_slice(), &long).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(buf, b"x");
    let err = UnixListener::bind("bad\0path").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("NUL"), "{err}");

    let missing = dir.path("missing.sock");
    let err = UnixStream::connect(&missing).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(
        err.to_string().contains(&*missing.to_string_lossy()),
        "{err}"
    );
    let err = d.connect(&missing).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);

    // A socket file nobody listens on any more; a path already taken.
    let path = dir.path("stale.sock");
    drop(UnixListener::bind(&path).unwrap());
    let err = UnixStream::connect(&path).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    let err = UnixListener::bind(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AddrInUse);
}

#[runtime::test]
async fn std_round_trip() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let a = UnixStream::from_std(a).unwrap();
    timeout(LIMIT, async {
        let (res, _) = a.write_all_owned(b"std".as_slice()).await;
        res.unwrap();
        let mut b = b;
        let mut buf = [0u8; 3];
        std::io::Read::read_exact(&mut b, &mut buf).unwrap();
        assert_eq!(&buf, b"std");
        let a = a.into_std().unwrap();
        std::io::Write::write_all(&mut &a, b"back").unwrap();
        let b = UnixStream::from_std(b).unwrap();
        let (res, buf) = b.read_exact_owned(vec![0u8; 4]).await;
        res.unwrap();
        assert_eq!(buf, b"back");
    })
    .await
    .unwrap();
}

/// What Unix streams share with TCP's since both are one stream type: `readv_owned` (also on
/// the read half), `incoming_with_addr`, `recv_stream`, and `is_direct` (never, for Unix).
#[runtime::test]
async fn same_methods_as_tcp() {
    let dir = TempDir::new("same");
    let path = dir.path("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    timeout(LIMIT, async {
        let client = runtime::spawn_local({
            let path = path.clone();
            async move {
                let stream = UnixStream::connect(path).await?;
                let (res, _) = stream
                    .writev_all_owned(vec![b"ab".to_vec(), b"cdef".to_vec()])
                    .await;
                res?;
                Ok::<_, io::Error>(stream)
            }
        });
        let mut incoming = listener.incoming_with_addr();
        let (server, peer) = incoming.next().await.expect("never ends").unwrap();
        assert!(peer.is_unnamed());
        assert!(!server.is_direct());
        let client = client.await.unwrap().unwrap();

        // Vectored owned read, filling the buffers in order.
        let (rd, wr) = server.into_split();
        let mut got = Vec::new();
        while got.len() < 6 {
            let (res, bufs) = rd.readv_owned(vec![vec![0u8; 2], vec![0u8; 16]]).await;
            let n = res.unwrap();
            let mut left = n;
            for b in &bufs {
                let k = left.min(b.len());
                got.extend_from_slice(&b[..k]);
                left -= k;
            }
        }
        assert_eq!(got, b"abcdef");

        // A multishot receive into a ring of the caller's.
        let ring = runtime::buf::BufRing::new(8, 64).unwrap();
        let mut chunks = client.recv_stream(&ring);
        let (res, _) = wr.write_all_owned(b"ring".to_vec()).await;
        res.unwrap();
        let chunk = chunks.next().await.expect("a chunk").unwrap();
        assert_eq!(&chunk[..], b"ring");
    })
    .await
    .unwrap();
}
