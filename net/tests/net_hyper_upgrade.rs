//! HTTP/1.1 upgrades through `corering_net::hyper::serve`: the `101` response, then bytes
//! both ways on the upgraded connection (through `UpgradedIo`'s tokio traits on one side and
//! its futures traits on the other), bytes the client sent right behind the request
//! included; the server's graceful shutdown not waiting for an upgraded connection; and
//! `UpgradableIo` refusing use from another thread.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use corering_net::hyper::{from_hyper, serve, HyperIo, UpgradableIo, UpgradedIo};
use corering_net::TcpStream;
use futures::io::{AsyncReadExt as _, AsyncWriteExt as _};
use http_body_util::Full;
use hyper::header::{CONNECTION, UPGRADE};
use hyper::upgrade::OnUpgrade;
use hyper::{service::service_fn, Request, Response, StatusCode};

/// Bytes the server sends first on an upgraded connection.
const GREETING: &[u8] = b"upgraded: send me bytes\n";
/// What the client sends on the upgraded connection, in pieces: enough to take many reads.
const PAYLOAD: usize = 256 * 1024;

/// The `i`th byte the client sends.
fn client_byte(i: usize) -> u8 {
    (i % 251) as u8
}

/// The server's answer to the client byte `b`.
fn server_byte(b: u8) -> u8 {
    b ^ 0x5a
}

/// The upgraded side of the server: greeting, then every byte back transformed, until EOF.
/// `tokio_side` picks tokio's traits or futures' on `UpgradedIo`.
async fn upgraded(on_upgrade: OnUpgrade, tokio_side: bool) {
    let upgraded = on_upgrade.await.expect("upgrade");
    let io = UpgradedIo::new(upgraded);
    if tokio_side {
        tokio_side::echo(io).await;
    } else {
        futures_side::echo(io).await;
    }
}

/// The echo through tokio's `AsyncRead` and `AsyncWrite`.
mod tokio_side {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    pub async fn echo(mut io: impl AsyncRead + AsyncWrite + Unpin) {
        let mut buf = vec![0u8; 8192];
        io.write_all(super::GREETING).await.expect("greeting");
        io.flush().await.expect("flush");
        loop {
            let n = io.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            let out: Vec<u8> = buf[..n].iter().map(|&b| super::server_byte(b)).collect();
            io.write_all(&out).await.expect("write");
            io.flush().await.expect("flush");
        }
        io.shutdown().await.expect("shutdown");
    }
}

/// The echo through the `futures::io` traits.
mod futures_side {
    use futures::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    pub async fn echo(mut io: impl AsyncRead + AsyncWrite + Unpin) {
        let mut buf = vec![0u8; 8192];
        io.write_all(super::GREETING).await.expect("greeting");
        io.flush().await.expect("flush");
        loop {
            let n = io.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            let out: Vec<u8> = buf[..n].iter().map(|&b| super::server_byte(b)).collect();
            io.write_all(&out).await.expect("write");
            io.flush().await.expect("flush");
        }
        io.close().await.expect("close");
    }
}

/// A service that upgrades `Upgrade: xor` requests (`/tokio` or `/futures` picks the traits
/// the upgraded side uses) and answers the rest with `plain`.
fn service() -> impl tower_service::Service<
    Request<hyper::body::Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future: 'static,
> + Clone
       + Send
       + 'static {
    from_hyper(service_fn(
        |mut req: Request<hyper::body::Incoming>| async move {
            if req.headers().get(UPGRADE).map(|v| v.as_bytes()) != Some(b"xor") {
                return Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"plain"))));
            }
            let on_upgrade = req
                .extensions_mut()
                .remove::<OnUpgrade>()
                .expect("an HTTP/1.1 request served with upgrades has an OnUpgrade");
            let tokio_side = req.uri().path() == "/tokio";
            drop(runtime::spawn_local(upgraded(on_upgrade, tokio_side)));
            let mut res = Response::new(Full::new(Bytes::new()));
            *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            res.headers_mut().insert(UPGRADE, "xor".parse().unwrap());
            res.headers_mut()
                .insert(CONNECTION, "upgrade".parse().unwrap());
            Ok(res)
        },
    ))
}

/// Reads up to the end of the response head; returns the head and what followed it.
async fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = got.split_off(end + 4);
            return (String::from_utf8(got).expect("ASCII head"), rest);
        }
        let n = stream.read(&mut buf).await.expect("read head");
        assert!(n > 0, "EOF inside the response head: {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

/// Upgrades one connection at `addr` and checks every byte both ways; `early` bytes of the
/// payload go out in the same write as the request.
async fn round_trip(addr: std::net::SocketAddr, path: &str, early: usize) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let payload: Vec<u8> = (0..PAYLOAD).map(client_byte).collect();
    let mut first = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: xor\r\n\r\n"
    )
    .into_bytes();
    first.extend_from_slice(&payload[..early]);
    stream.write_all(&first).await.expect("request");
    stream.flush().await.expect("flush");

    let (head, mut got) = read_head(&mut stream).await;
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("\r\nupgrade: xor\r\n"), "{head}");
    assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{head}");

    // Send the rest in uneven pieces while reading; check every byte that comes back.
    let expect: Vec<u8> = GREETING
        .iter()
        .copied()
        .chain(payload.iter().map(|&b| server_byte(b)))
        .collect();
    let mut sent = early;
    let mut buf = vec![0u8; 16 * 1024];
    let mut piece = 1;
    while got.len() < expect.len() {
        if sent < PAYLOAD {
            let end = (sent + piece).min(PAYLOAD);
            stream.write_all(&payload[sent..end]).await.expect("send");
            stream.flush().await.expect("flush");
            sent = end;
            piece = piece * 3 + 1;
            if sent == PAYLOAD {
                stream.close().await.expect("half-close");
            }
        }
        // Read at least what is owed for what was sent, so neither side stalls.
        while got.len() < GREETING.len() + sent {
            let n = stream.read(&mut buf).await.expect("read");
            assert!(n > 0, "EOF after {} of {} bytes", got.len(), expect.len());
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert_eq!(got.len(), expect.len());
    assert!(got == expect, "the upgraded bytes differ");
    // The server closes its side after our half-close: EOF, nothing more.
    assert_eq!(stream.read(&mut buf).await.expect("read EOF"), 0);
}

#[test]
fn upgrade_round_trip_both_ways_on_every_core() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let server = serve("127.0.0.1:0", service()).expect("serve");
        let addr = server.local_addr();
        // Several connections, so both cores' listeners take some; both trait sets, with and
        // without bytes right behind the request (buffered by hyper, handed over with the
        // upgraded connection).
        let mut tasks = Vec::new();
        for i in 0..8 {
            let path = if i % 2 == 0 { "/tokio" } else { "/futures" };
            let early = [0, 1, 777, 5000][i / 2];
            tasks.push(runtime::spawn_local(async move {
                round_trip(addr, path, early).await;
            }));
        }
        for t in tasks {
            t.await.expect("round trip task");
        }
        server
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
    });
}

#[test]
fn shutdown_does_not_wait_for_upgraded_connections() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = serve("127.0.0.1:0", service()).expect("serve");
        let addr = server.local_addr();
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let req = format!(
            "GET /futures HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: xor\r\n\r\n"
        );
        stream.write_all(req.as_bytes()).await.expect("request");
        stream.flush().await.expect("flush");
        let (head, mut got) = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
        // The upgraded connection is its owner's now: a shutdown with an hour's grace ends
        // at once, and the connection goes on working after it.
        server
            .shutdown(Duration::from_secs(3600))
            .await
            .expect("shutdown");
        stream.write_all(b"after").await.expect("send");
        stream.flush().await.expect("flush");
        let want: Vec<u8> = GREETING
            .iter()
            .copied()
            .chain(b"after".iter().map(|&b| server_byte(b)))
            .collect();
        let mut buf = [0u8; 256];
        while got.len() < want.len() {
            let n = stream.read(&mut buf).await.expect("read");
            assert!(n > 0, "EOF");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, want);
        stream.close().await.expect("half-close");
        assert_eq!(stream.read(&mut buf).await.expect("EOF"), 0);
    });
}

#[test]
fn a_plain_request_is_served_as_before() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = serve("127.0.0.1:0", service()).expect("serve");
        let addr = server.local_addr();
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).await.expect("request");
        stream.flush().await.expect("flush");
        let mut all = Vec::new();
        stream.read_to_end(&mut all).await.expect("response");
        let text = String::from_utf8(all).expect("ASCII");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nplain"), "{text}");
        server
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
    });
}

/// Polls `f` once with a no-op waker.
fn poll_once<T>(f: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
    f(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn upgradable_io_refuses_another_thread() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = corering_net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (client, accepted) = futures::join!(TcpStream::connect(addr), listener.accept());
        let mut client = client.expect("connect");
        let (server_side, _) = accepted.expect("accept");
        let mut io = UpgradableIo::new(HyperIo::new(server_side));

        // On its own thread it is the stream.
        let n = poll_fn(|cx| hyper::rt::Write::poll_write(Pin::new(&mut io), cx, b"x"))
            .await
            .expect("write on its core");
        assert_eq!(n, 1);
        poll_fn(|cx| hyper::rt::Write::poll_flush(Pin::new(&mut io), cx))
            .await
            .expect("flush on its core");
        let mut one = [0u8; 1];
        client.read_exact(&mut one).await.expect("read");
        assert_eq!(&one, b"x");

        // On another thread every use fails with an error, and the drop sends the socket
        // back to its core rather than run its destructor there.
        let err = std::thread::spawn(move || {
            let res = poll_once(|cx| hyper::rt::Write::poll_write(Pin::new(&mut io), cx, b"y"));
            let flush = poll_once(|cx| hyper::rt::Write::poll_flush(Pin::new(&mut io), cx));
            let err = match res {
                Poll::Ready(Err(e)) => e,
                other => panic!("a write on another thread gave {other:?}"),
            };
            assert!(matches!(flush, Poll::Ready(Err(_))), "{flush:?}");
            // `Debug` leaves the stream out here too.
            let shown = format!("{io:?}");
            assert!(!shown.contains("inner"), "{shown}");
            drop(io);
            err
        })
        .join()
        .expect("thread");
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        assert!(err.to_string().contains("another thread"), "{err}");
        // The core dropped it on its next turn: the server side is closed, the client
        // reads the end of the stream.
        let mut rest = Vec::new();
        let n = runtime::time::timeout(Duration::from_secs(3), client.read_to_end(&mut rest))
            .await
            .expect("the socket dropped on another thread is closed by its core")
            .expect("read to the end");
        assert_eq!(n, 0);
    });
}
