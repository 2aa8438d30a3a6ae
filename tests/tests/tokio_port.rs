//! A port from tokio (or from futures) compiles as written: on every stream type of the
//! runtime (TCP and Unix streams, their owned and borrowed halves, files, a child's
//! pipes), the I/O extension methods a tokio or futures user calls (`read_exact(&mut buf)`,
//! `read_to_end`, `write_all(b"..")`, `shutdown()`/`close()`, `split()`, `copy`) resolve
//! to the traits' methods, not to an inherent method of the same name, and move the bytes.
//!
//! Each check is a macro expanded at the concrete type, so inherent methods are in play
//! exactly as in a user's code (a generic function would hide them).

use std::process::Stdio;

use corering_net::{TcpListener, TcpStream, UnixStream};

/// A connected TCP pair on loopback: (client, server).
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = runtime::spawn_local(TcpStream::connect(addr));
    let (server, _) = listener.accept().await.unwrap();
    (client.await.unwrap().unwrap(), server)
}

/// A message of `len` bytes that no shift of itself matches.
fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

mod with_tokio {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    /// `$w` writes a message and shuts down; `$r` reads it exactly, then to the end.
    macro_rules! one_way {
        ($w:expr, $r:expr) => {{
            let msg = message(100_000);
            let (w, r) = (&mut $w, &mut $r);
            let writer = async {
                w.write_all(&msg).await.unwrap();
                w.write_all(b"!").await.unwrap();
                w.flush().await.unwrap();
                w.shutdown().await.unwrap();
            };
            let reader = async {
                let mut head = [0u8; 5];
                r.read_exact(&mut head).await.unwrap();
                let mut rest = Vec::new();
                let n = r.read_to_end(&mut rest).await.unwrap();
                assert_eq!(n, msg.len() + 1 - 5);
                assert_eq!(&head[..], &msg[..5]);
                assert_eq!(&rest[..n - 1], &msg[5..]);
                assert_eq!(rest[n - 1], b'!');
            };
            futures::join!(writer, reader);
        }};
    }

    /// `$a` sends through `$b`, which echoes with `split()` and `tokio::io::copy`.
    macro_rules! echo_by_copy {
        ($a:expr, $b:expr) => {{
            let msg = message(300_000);
            let (a, b) = (&mut $a, &mut $b);
            let echo = async {
                let (mut rd, mut wr) = b.split();
                let n = tokio::io::copy(&mut rd, &mut wr).await.unwrap();
                wr.shutdown().await.unwrap();
                n
            };
            let client = async {
                let (mut rd, mut wr) = tokio::io::split(a);
                let send = async {
                    wr.write_all(&msg).await.unwrap();
                    wr.shutdown().await.unwrap();
                };
                let recv = async {
                    let mut back = Vec::new();
                    rd.read_to_end(&mut back).await.unwrap();
                    back
                };
                futures::join!(send, recv).1
            };
            let (n, back) = futures::join!(echo, client);
            assert_eq!(n, msg.len() as u64);
            assert!(back == msg, "the echo differs");
        }};
    }

    #[runtime::test]
    async fn tcp_stream() {
        let (mut c, mut s) = tcp_pair().await;
        one_way!(c, s);
        let (mut c, mut s) = tcp_pair().await;
        echo_by_copy!(c, s);
    }

    #[runtime::test]
    async fn tcp_halves() {
        let (c, s) = tcp_pair().await;
        let (_c_rd, mut c_wr) = c.into_split();
        let (mut s_rd, _s_wr) = s.into_split();
        one_way!(c_wr, s_rd);
        let (mut c, mut s) = tcp_pair().await;
        let (_rd, mut wr) = c.split();
        let (mut rd, _wr) = s.split();
        one_way!(wr, rd);
    }

    #[runtime::test]
    async fn unix_stream() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        one_way!(a, b);
        let (mut a, mut b) = UnixStream::pair().unwrap();
        echo_by_copy!(a, b);
    }

    #[runtime::test]
    async fn unix_halves() {
        let (a, b) = UnixStream::pair().unwrap();
        let (_a_rd, mut a_wr) = a.into_split();
        let (mut b_rd, _b_wr) = b.into_split();
        one_way!(a_wr, b_rd);
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let (_rd, mut wr) = a.split();
        let (mut rd, _wr) = b.split();
        one_way!(wr, rd);
    }

    #[runtime::test]
    async fn file() {
        let path = std::env::temp_dir().join(format!("tokio-port-{}", std::process::id()));
        let msg = message(200_000);
        let mut f = corering_fs::File::create(&path).await.unwrap();
        f.write_all(&msg).await.unwrap();
        f.shutdown().await.unwrap();
        let mut f = corering_fs::File::open(&path).await.unwrap();
        let mut head = [0u8; 8];
        f.read_exact(&mut head).await.unwrap();
        assert_eq!(&head[..], &msg[..8]);
        f.seek(std::io::SeekFrom::Start(0)).await.unwrap();
        let mut all = Vec::new();
        f.read_to_end(&mut all).await.unwrap();
        assert!(all == msg);
        std::fs::remove_file(&path).unwrap();
    }

    #[runtime::test]
    async fn child_pipes() {
        let mut child = runtime::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        // As with tokio's `ChildStdin`, `shutdown()` flushes and the pipe closes when
        // the writer is dropped (then `cat` sees end of input).
        let msg = message(100_000);
        let writer = async move {
            stdin.write_all(&msg[..60_000]).await.unwrap();
            stdin.write_all(&msg[60_000..]).await.unwrap();
            stdin.shutdown().await.unwrap();
            drop(stdin);
        };
        let reader = async {
            let mut head = [0u8; 5];
            stdout.read_exact(&mut head).await.unwrap();
            let mut rest = Vec::new();
            stdout.read_to_end(&mut rest).await.unwrap();
            assert_eq!(&head[..], &message(100_000)[..5]);
            assert!(rest[..] == message(100_000)[5..]);
        };
        futures::join!(writer, reader);
        assert!(child.wait().await.unwrap().success());
    }
}

mod with_futures {
    use super::*;
    use futures::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    /// `$w` writes a message and closes; `$r` reads it exactly, then to the end.
    macro_rules! one_way {
        ($w:expr, $r:expr) => {{
            let msg = message(100_000);
            let (w, r) = (&mut $w, &mut $r);
            let writer = async {
                w.write_all(&msg).await.unwrap();
                w.write_all(b"!").await.unwrap();
                w.flush().await.unwrap();
                w.close().await.unwrap();
            };
            let reader = async {
                let mut head = [0u8; 5];
                r.read_exact(&mut head).await.unwrap();
                let mut rest = Vec::new();
                let n = r.read_to_end(&mut rest).await.unwrap();
                assert_eq!(n, msg.len() + 1 - 5);
                assert_eq!(&head[..], &msg[..5]);
                assert_eq!(&rest[..n - 1], &msg[5..]);
            };
            futures::join!(writer, reader);
        }};
    }

    /// `$b` echoes with futures' by-value `split()` and `futures::io::copy`.
    macro_rules! echo_by_copy {
        ($a:expr, $b:expr) => {{
            let msg = message(300_000);
            let (rd, mut wr) = $b.split();
            let echo = async {
                let n = futures::io::copy(rd, &mut wr).await.unwrap();
                wr.close().await.unwrap();
                n
            };
            let a = &mut $a;
            let client = async {
                let send = async {
                    let (_, mut w) = (&mut *a).split();
                    w.write_all(&msg).await.unwrap();
                    w.close().await.unwrap();
                };
                send.await;
                let mut back = Vec::new();
                a.read_to_end(&mut back).await.unwrap();
                back
            };
            let (n, back) = futures::join!(echo, client);
            assert_eq!(n, msg.len() as u64);
            assert!(back == msg, "the echo differs");
        }};
    }

    #[runtime::test]
    async fn tcp_stream() {
        let (mut c, mut s) = tcp_pair().await;
        one_way!(c, s);
        let (mut c, s) = tcp_pair().await;
        echo_by_copy!(c, s);
    }

    #[runtime::test]
    async fn tcp_halves() {
        let (c, s) = tcp_pair().await;
        let (_c_rd, mut c_wr) = c.into_split();
        let (mut s_rd, _s_wr) = s.into_split();
        one_way!(c_wr, s_rd);
        let (mut c, mut s) = tcp_pair().await;
        let (_rd, mut wr) = TcpStream::split(&mut c);
        let (mut rd, _wr) = TcpStream::split(&mut s);
        one_way!(wr, rd);
    }

    #[runtime::test]
    async fn unix_stream() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        one_way!(a, b);
        let (mut a, b) = UnixStream::pair().unwrap();
        echo_by_copy!(a, b);
    }

    #[runtime::test]
    async fn unix_halves() {
        let (a, b) = UnixStream::pair().unwrap();
        let (_a_rd, mut a_wr) = a.into_split();
        let (mut b_rd, _b_wr) = b.into_split();
        one_way!(a_wr, b_rd);
    }

    #[runtime::test]
    async fn file() {
        let path = std::env::temp_dir().join(format!("futures-port-{}", std::process::id()));
        let msg = message(200_000);
        let mut f = corering_fs::File::create(&path).await.unwrap();
        f.write_all(&msg).await.unwrap();
        f.close().await.unwrap();
        let mut f = corering_fs::File::open(&path).await.unwrap();
        let mut head = [0u8; 8];
        f.read_exact(&mut head).await.unwrap();
        assert_eq!(&head[..], &msg[..8]);
        f.seek(std::io::SeekFrom::Start(0)).await.unwrap();
        let mut all = Vec::new();
        f.read_to_end(&mut all).await.unwrap();
        assert!(all == msg);
        std::fs::remove_file(&path).unwrap();
    }

    #[runtime::test]
    async fn child_pipes() {
        let mut child = runtime::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        // As with tokio's `ChildStdin`, `close()` flushes and the pipe closes when
        // the writer is dropped (then `cat` sees end of input).
        let msg = message(100_000);
        let writer = async move {
            stdin.write_all(&msg[..60_000]).await.unwrap();
            stdin.write_all(&msg[60_000..]).await.unwrap();
            stdin.close().await.unwrap();
            drop(stdin);
        };
        let reader = async {
            let mut head = [0u8; 5];
            stdout.read_exact(&mut head).await.unwrap();
            let mut rest = Vec::new();
            stdout.read_to_end(&mut rest).await.unwrap();
            assert_eq!(&head[..], &message(100_000)[..5]);
            assert!(rest[..] == message(100_000)[5..]);
        };
        futures::join!(writer, reader);
        assert!(child.wait().await.unwrap().success());
    }
}
