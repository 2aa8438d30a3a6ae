//! Write errors keep their kind: a peer that stops reading and then resets, or closes, makes
//! the next write fail with std's kind (never a made-up `WriteZero`): `BrokenPipe` on a Unix
//! socket (not the `ECONNRESET` its `SO_ERROR` holds) and on TCP after the peer's FIN;
//! `ConnectionReset` or `BrokenPipe` only for a TCP reset that stops a waiting send (the
//! kernel's `MSG_WAITALL` retry takes that error: see `net_error_kinds.rs`),
//! through every write path (futures' and tokio's `AsyncWrite`, `write_chunk`, `close`, the
//! owned-buffer `write_all`/`writev_all`), on TCP (a direct descriptor and a regular fd) and
//! Unix stream sockets; and the failure of a write-behind send is sticky: every later write,
//! flush and close fails with the same kind.
//!
//! The peer is a std socket on a thread. It reads nothing until told to go, so our send
//! stops mid-way on full socket buffers (where `MSG_WAITALL` gives a short count when the
//! peer then goes away): our side writes until a write has waited for a while, then tells
//! the peer to go.

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UnixStream};
use futures::io::{AsyncWrite, AsyncWriteExt};
use runtime::time::timeout;
use runtime::Builder;

/// The most any step may take.
const LIMIT: Duration = Duration::from_secs(30);
/// How long a write waits before the socket's buffers count as full.
const STALL: Duration = Duration::from_millis(150);
/// Bytes per write.
const BLOCK: usize = 256 * 1024;
/// The most a test writes: a peer that reads nothing holds far less (a few MiB).
const MAX_BYTES: usize = 1 << 30;

/// What the peer does once told to go.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// Resets the connection: `SO_LINGER` 0, then close (RST at once).
    Reset,
    /// Reads a little, shuts its write direction down (FIN) and closes while we write on.
    Close,
}

/// The peer's side: waits for `go`, then does `how` with `sock`.
fn peer<S: Read + AsFd>(mut sock: S, how: Peer, go: mpsc::Receiver<()>) {
    go.recv_timeout(LIMIT).expect("told to go");
    let s = socket2::SockRef::from(&sock);
    match how {
        Peer::Reset => s.set_linger(Some(Duration::ZERO)).unwrap(),
        Peer::Close => {
            let mut buf = vec![0u8; BLOCK];
            sock.read_exact(&mut buf).unwrap();
            socket2::SockRef::from(&sock)
                .shutdown(std::net::Shutdown::Write)
                .unwrap();
            thread::sleep(Duration::from_millis(20));
        }
    }
    drop(sock);
}

/// A peer thread for `sock` and the sender that tells it to go.
fn spawn_peer<S: Read + AsFd + Send + 'static>(
    sock: S,
    how: Peer,
) -> (mpsc::Sender<()>, thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    (tx, thread::spawn(move || peer(sock, how, rx)))
}

/// Our side accepted by a `corering_net::TcpListener` (a direct descriptor where the kernel has
/// them: the socket's error is read through an fd installed for it), the peer connected.
async fn tcp_accepted(how: Peer) -> (TcpStream, mpsc::Sender<()>, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::net::TcpStream::connect(addr).unwrap();
    let (ours, _) = listener.accept().await.unwrap();
    let (go, peer) = spawn_peer(client, how);
    (ours, go, peer)
}

/// Our side connected (a regular fd), the peer accepted by a std listener.
async fn tcp_connected(how: Peer) -> (TcpStream, mpsc::Sender<()>, thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let ours = TcpStream::connect(addr).await.unwrap();
    let (theirs, _) = listener.accept().unwrap();
    let (go, peer) = spawn_peer(theirs, how);
    (ours, go, peer)
}

/// A Unix stream pair: ours wrapped from std, the peer's a std socket.
fn unix(how: Peer) -> (UnixStream, mpsc::Sender<()>, thread::JoinHandle<()>) {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let ours = UnixStream::from_std(a).unwrap();
    let (go, peer) = spawn_peer(b, how);
    (ours, go, peer)
}

/// Asserts `err` says the peer is gone: `want` (std's kind) where given; for a TCP reset
/// that may stop a waiting `MSG_WAITALL` send (`None`), `ConnectionReset` or `BrokenPipe`:
/// std says `ConnectionReset`, but the kernel's retry of our send takes the reset and leaves
/// `EPIPE` (`net_error_kinds.rs`, its ignored row).
fn assert_gone(err: &io::Error, want: Option<io::ErrorKind>, what: &str) {
    eprintln!("{what}: {:?}: {err}", err.kind());
    match want {
        Some(kind) => assert_eq!(err.kind(), kind, "{what}: {err}"),
        None => assert!(
            matches!(
                err.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ),
            "{what}: want ConnectionReset or BrokenPipe, got {:?}: {err}",
            err.kind()
        ),
    }
}

/// std's kind for a Unix peer that goes with unread data, or a TCP peer that closes after
/// its FIN (a reset in `CLOSE_WAIT` is `EPIPE`).
const PIPE: Option<io::ErrorKind> = Some(io::ErrorKind::BrokenPipe);
/// A TCP reset that may stop a waiting send (see [`assert_gone`]).
const TCP_RESET: Option<io::ErrorKind> = None;

/// Writes (futures' `write_all`) until a write waits `STALL`: the socket's buffers are
/// full and a send is in flight, stopped mid-way.
async fn fill<W: AsyncWrite + Unpin>(w: &mut W) {
    let block = vec![0x5a; BLOCK];
    let mut written = 0;
    while written < MAX_BYTES {
        match timeout(STALL, w.write_all(&block)).await {
            Ok(Ok(())) => written += BLOCK,
            Ok(Err(e)) => panic!("write before the peer went: {e}"),
            Err(_) => return,
        }
    }
    panic!("{written} bytes written and no write waited: the peer reads");
}

/// Writes with futures' `write_all` and `flush` until one fails; its error.
async fn write_until_error<W: AsyncWrite + Unpin>(w: &mut W) -> io::Error {
    let block = vec![0xa5; BLOCK];
    let mut written = 0;
    while written < MAX_BYTES {
        let res = timeout(LIMIT, async {
            w.write_all(&block).await?;
            w.flush().await
        })
        .await
        .expect("a write waited too long");
        match res {
            Ok(()) => written += BLOCK,
            Err(e) => return e,
        }
    }
    panic!("{written} bytes written after the peer went, and no error");
}

/// Every later call on the write direction fails with `kind` again.
async fn assert_sticky<W: AsyncWrite + Unpin>(w: &mut W, kind: io::ErrorKind) {
    let e = w
        .write_all(b"more")
        .await
        .expect_err("a write after the failure");
    assert_eq!(e.kind(), kind, "write after the failure: {e}");
    let e = w.flush().await.expect_err("a flush after the failure");
    assert_eq!(e.kind(), kind, "flush after the failure: {e}");
    let e = w.close().await.expect_err("a close after the failure");
    assert_eq!(e.kind(), kind, "close after the failure: {e}");
    let e = w.write_all(b"more").await.expect_err("a write after close");
    assert_eq!(e.kind(), kind, "write after close: {e}");
}

/// Fills `w`, lets the peer go, and checks the error of the writes after, and that it
/// sticks.
async fn reset_then_write<W: AsyncWrite + Unpin>(
    w: &mut W,
    go: mpsc::Sender<()>,
    peer: thread::JoinHandle<()>,
    want: Option<io::ErrorKind>,
) {
    fill(w).await;
    go.send(()).unwrap();
    let err = write_until_error(w).await;
    assert_gone(&err, want, "write_all + flush");
    assert_sticky(w, err.kind()).await;
    peer.join().unwrap();
}

fn rt() -> runtime::Runtime {
    Builder::new().build().unwrap()
}

#[test]
fn tcp_reset_during_write_behind_is_reported_with_its_kind() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_accepted(Peer::Reset).await;
        reset_then_write(&mut s, go, peer, TCP_RESET).await;
    });
}

#[test]
fn tcp_reset_on_a_regular_fd_is_reported_with_its_kind() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_connected(Peer::Reset).await;
        reset_then_write(&mut s, go, peer, TCP_RESET).await;
    });
}

#[test]
fn tcp_peer_close_while_writing_is_broken_pipe() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_accepted(Peer::Close).await;
        reset_then_write(&mut s, go, peer, PIPE).await;
    });
}

#[test]
fn unix_reset_during_write_behind_is_reported_with_its_kind() {
    rt().block_on(async {
        let (mut s, go, peer) = unix(Peer::Reset);
        reset_then_write(&mut s, go, peer, PIPE).await;
    });
}

#[test]
fn unix_peer_close_while_writing_is_broken_pipe() {
    rt().block_on(async {
        let (mut s, go, peer) = unix(Peer::Close);
        reset_then_write(&mut s, go, peer, PIPE).await;
    });
}

#[test]
fn tcp_reset_is_reported_by_close() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_accepted(Peer::Reset).await;
        fill(&mut s).await;
        go.send(()).unwrap();
        let err = timeout(LIMIT, s.close()).await.unwrap().expect_err("close");
        assert_gone(&err, TCP_RESET, "close");
        assert_sticky(&mut s, err.kind()).await;
        peer.join().unwrap();
    });
}

#[test]
fn unix_reset_is_reported_by_close() {
    rt().block_on(async {
        let (mut s, go, peer) = unix(Peer::Reset);
        fill(&mut s).await;
        go.send(()).unwrap();
        let err = timeout(LIMIT, s.close()).await.unwrap().expect_err("close");
        assert_gone(&err, PIPE, "close");
        assert_sticky(&mut s, err.kind()).await;
        peer.join().unwrap();
    });
}

/// A received chunk to send on with `write_chunk`.
async fn a_chunk() -> corering_net::Chunk {
    let (mut src, mut dst) = UnixStream::pair().unwrap();
    AsyncWriteExt::write_all(&mut src, &[7u8; 4096])
        .await
        .unwrap();
    src.flush().await.unwrap();
    let chunk = dst.read_chunk().await.unwrap();
    assert!(!chunk.is_empty());
    chunk
}

#[test]
fn tcp_reset_is_reported_by_write_chunk() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_accepted(Peer::Reset).await;
        fill(&mut s).await;
        go.send(()).unwrap();
        let chunk = a_chunk().await;
        let err = timeout(LIMIT, s.write_chunk(chunk))
            .await
            .unwrap()
            .expect_err("write_chunk after the reset");
        assert_gone(&err, TCP_RESET, "write_chunk");
        let e = s.write_chunk(a_chunk().await).await.expect_err("again");
        assert_eq!(e.kind(), err.kind(), "write_chunk again: {e}");
        assert_sticky(&mut s, err.kind()).await;
        peer.join().unwrap();
    });
}

#[test]
fn unix_reset_is_reported_by_write_chunk() {
    rt().block_on(async {
        let (mut s, go, peer) = unix(Peer::Reset);
        fill(&mut s).await;
        go.send(()).unwrap();
        let chunk = a_chunk().await;
        let err = timeout(LIMIT, s.write_chunk(chunk))
            .await
            .unwrap()
            .expect_err("write_chunk after the reset");
        assert_gone(&err, PIPE, "write_chunk");
        assert_sticky(&mut s, err.kind()).await;
        peer.join().unwrap();
    });
}

#[cfg(feature = "tokio-io")]
#[test]
fn tcp_reset_through_tokio_write_all_flush_and_shutdown() {
    rt().block_on(async {
        let (mut s, go, peer) = tcp_accepted(Peer::Reset).await;
        let block = vec![1u8; BLOCK];
        let mut written = 0;
        while written < MAX_BYTES {
            match timeout(STALL, tokio::io::AsyncWriteExt::write_all(&mut s, &block)).await {
                Ok(Ok(())) => written += BLOCK,
                Ok(Err(e)) => panic!("write before the reset: {e}"),
                Err(_) => break,
            }
        }
        go.send(()).unwrap();
        let err = loop {
            let res = timeout(LIMIT, async {
                tokio::io::AsyncWriteExt::write_all(&mut s, &block).await?;
                tokio::io::AsyncWriteExt::flush(&mut s).await
            })
            .await
            .expect("a write waited too long");
            if let Err(e) = res {
                break e;
            }
            written += BLOCK;
            assert!(written < MAX_BYTES, "no error after the reset");
        };
        assert_gone(&err, TCP_RESET, "tokio write_all + flush");
        let e = tokio::io::AsyncWriteExt::write_all(&mut s, b"more")
            .await
            .expect_err("again");
        assert_eq!(e.kind(), err.kind(), "tokio write_all again: {e}");
        let e = tokio::io::AsyncWriteExt::flush(&mut s)
            .await
            .expect_err("flush");
        assert_eq!(e.kind(), err.kind(), "tokio flush again: {e}");
        // Fully qualified: the inherent `TcpStream::shutdown(how)` hides tokio's.
        let e = tokio::io::AsyncWriteExt::shutdown(&mut s)
            .await
            .expect_err("shutdown");
        assert_eq!(e.kind(), err.kind(), "tokio shutdown: {e}");
        peer.join().unwrap();
    });
}

/// Lets the peer go a little later, from a task of its own: the owned write started
/// meanwhile waits for room in the socket buffers when the peer goes.
fn go_soon(go: mpsc::Sender<()>) {
    drop(runtime::spawn_local(async move {
        runtime::time::sleep(STALL).await;
        go.send(()).unwrap();
    }));
}

#[test]
fn owned_write_all_reports_the_reset_not_write_zero() {
    rt().block_on(async {
        let (s, go, peer) = tcp_accepted(Peer::Reset).await;
        go_soon(go);
        // Far more than the socket buffers hold: the send waits for room when the RST comes.
        let (res, buf) = timeout(LIMIT, s.write_all_owned(vec![3u8; 64 << 20]))
            .await
            .unwrap();
        assert_eq!(buf.len(), 64 << 20);
        let err = res.expect_err("write_all to a reset peer");
        assert_gone(&err, TCP_RESET, "owned write_all");
        let (res, _) = s.write_all_owned(vec![3u8; 1024]).await;
        // The first failure took the reset: std's next send says EPIPE, and so does ours.
        assert_gone(&res.expect_err("again"), PIPE, "owned write_all again");
        peer.join().unwrap();
    });
}

#[test]
fn owned_writev_all_reports_the_reset_not_write_zero() {
    rt().block_on(async {
        let (s, go, peer) = unix(Peer::Reset);
        go_soon(go);
        let bufs = vec![vec![4u8; 16 << 20], vec![5u8; 16 << 20]];
        let (res, bufs) = timeout(LIMIT, s.writev_all_owned(bufs)).await.unwrap();
        assert_eq!(bufs.len(), 2);
        let err = res.expect_err("writev_all to a gone peer");
        assert_gone(&err, PIPE, "owned writev_all");
        peer.join().unwrap();
    });
}
