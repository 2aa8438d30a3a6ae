//! Bad input against the TLS acceptor and `corering_net::hyper` servers: stalled, garbage and
//! misnamed handshakes; malformed HTTP/1.1 and HTTP/2; oversized headers; clients that
//! reset mid-response. Each ends its connection with an error or the right status, and
//! after a storm of them no task and no fd is left. One test alone in its binary, since
//! it counts the process's fds.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::fds::open_fds as fd_count;
use common::tls::configs;
use corering_net::tls::{TlsAcceptor, TlsConnector};
use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;
use http_body_util::StreamBody;
use hyper::body::Frame;
use hyper::{Request, Response};

const H2: &[u8] = b"h2";
const H1: &[u8] = b"http/1.1";

/// TLS handshakes that must fail: a peer that stalls, garbage, a wrong name.
async fn failed_handshakes_free_their_fds() {
    {
        let (server_cfg, client_cfg) = configs(&[H2], &[H2]);
        let acceptor = TlsAcceptor::new(server_cfg).handshake_timeout(Duration::from_millis(100));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fds_before = fd_count();

        // A client that connects and says nothing: the server gives up at the deadline.
        let silent = std::net::TcpStream::connect(addr).unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let err = acceptor.accept(stream).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        drop(silent);

        // A ClientHello of garbage.
        let mut garbage = std::net::TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(&mut garbage, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let err = acceptor.accept(stream).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
        drop(garbage);
        assert_eq!(
            settle_fds(fds_before).await,
            fds_before,
            "a failed handshake kept its socket"
        );

        // A certificate for `localhost` does not verify as `example.com`.
        let server = runtime::spawn_local(async move {
            let (stream, _) = listener.accept().await.unwrap();
            acceptor.accept(stream).await.map(|_| ())
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let err = TlsConnector::new(client_cfg.clone())
            .connect("example.com", stream)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("example.com"), "{err}");
        assert!(server.await.unwrap().is_err());

        // Not a server name at all.
        let stream = TcpStream::connect(addr).await;
        if let Ok(stream) = stream {
            let err = TlsConnector::new(client_cfg)
                .connect("not a name!", stream)
                .await
                .unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        }
    }
}

/// A streaming body: 100 chunks of 1 KiB, 5 ms apart.
type Chunks = StreamBody<
    futures::stream::LocalBoxStream<'static, Result<Frame<Bytes>, std::convert::Infallible>>,
>;

/// The service: `/stream` answers 100 chunks 5 ms apart; anything else one chunk.
#[derive(Clone, Copy)]
struct App;

impl tower_service::Service<Request<hyper::body::Incoming>> for App {
    type Response = Response<Chunks>;
    type Error = std::convert::Infallible;
    type Future = futures::future::Ready<Result<Response<Chunks>, std::convert::Infallible>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<hyper::body::Incoming>) -> Self::Future {
        let chunks = if req.uri().path() == "/stream" {
            100
        } else {
            1
        };
        let stream = futures::stream::iter(0..chunks)
            .then(|i| async move {
                if i > 0 {
                    runtime::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(Frame::data(Bytes::from(vec![b'x'; 1024])))
            })
            .boxed_local();
        futures::future::ready(Ok(Response::new(StreamBody::new(stream))))
    }
}

fn app() -> impl Fn(usize) -> App + Clone + Send + 'static {
    |_core| App
}

/// The fd count once it reaches `want` (closes go through the ring: a loop turn or two),
/// or after 2 s.
async fn settle_fds(want: usize) -> usize {
    for _ in 0..200 {
        if fd_count() == want {
            break;
        }
        runtime::time::sleep(Duration::from_millis(10)).await;
    }
    fd_count()
}

/// What a raw client got back: the start of the response, or nothing (closed or reset).
fn exchange(addr: SocketAddr, send: &[u8], read_for: Duration) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(read_for)).unwrap();
    let _ = s.write_all(send);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < 64 * 1024 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got
}

/// One of each bad client, `rounds` times, against the plain and the TLS server.
fn storm(plain: SocketAddr, tls: SocketAddr, rounds: usize) {
    let wait = Duration::from_secs(2);
    for _ in 0..rounds {
        // A malformed request line: 400, then close.
        let got = exchange(plain, b"GARBAGE\r\n\r\n", wait);
        assert!(
            got.starts_with(b"HTTP/1.1 400"),
            "{:?}",
            String::from_utf8_lossy(&got)
        );
        // Headers far over hyper's buffer limit: 431, then close.
        let mut big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        big.resize(big.len() + 1024 * 1024, b'a');
        let got = exchange(plain, &big, wait);
        assert!(
            got.is_empty() || got.starts_with(b"HTTP/1.1 431"),
            "{:?}",
            String::from_utf8_lossy(&got[..got.len().min(64)])
        );
        // The HTTP/2 preface, then a SETTINGS frame of 5 bytes (not a multiple of 6): a
        // FRAME_SIZE_ERROR, answered by GOAWAY and a close.
        let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        h2.extend_from_slice(&[0, 0, 5, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]);
        let got = exchange(plain, &h2, wait);
        let goaway = got.windows(4).any(|w| w[3] == 7 && w[..3] == [0, 0, 8]);
        assert!(goaway, "no GOAWAY in {got:?}");
        // A client that resets mid-response.
        let mut s = std::net::TcpStream::connect(plain).unwrap();
        s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 512];
        s.read_exact(&mut first).unwrap();
        assert!(first.starts_with(b"HTTP/1.1 200"));
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(s);
        // TLS: a ClientHello of garbage, and one cut off mid-record (the handshake times out).
        let got = exchange(tls, b"\x16\x03\x01\x00\x05hello garbage", wait);
        assert!(got.len() < 1024, "{got:?}");
        let got = exchange(tls, b"\x16\x03\x01\x02\x00\x01", wait);
        assert!(got.len() < 1024, "{got:?}");
    }
}

#[test]
fn bad_input_ends_its_connection_and_leaks_nothing() {
    runtime::Runtime::new().unwrap().block_on(async {
        failed_handshakes_free_their_fds().await;

        let tasks_before = runtime::core_metrics().unwrap().alive_tasks;
        let fds_before = fd_count();
        let (server_cfg, _) = configs(&[H2, H1], &[H2]);
        let plain = corering_net::hyper::Builder::new()
            .serve_with("127.0.0.1:0", app())
            .unwrap();
        let acceptor = TlsAcceptor::new(server_cfg).handshake_timeout(Duration::from_millis(200));
        let tls = corering_net::hyper::Builder::new()
            .tls(acceptor)
            .serve_with("127.0.0.1:0", app())
            .unwrap();
        let (plain_addr, tls_addr) = (plain.local_addr(), tls.local_addr());
        // The two listeners and their accept tasks.
        runtime::time::sleep(Duration::from_millis(20)).await;
        let fds_serving = settle_fds(fds_before + 2).await;
        assert_eq!(fds_serving, fds_before + 2);
        let tasks_serving = runtime::core_metrics().unwrap().alive_tasks;

        // The storm runs on a std thread (blocking clients); the core serves meanwhile.
        let (done_tx, done_rx) = futures::channel::oneshot::channel();
        std::thread::spawn(move || {
            let res = std::panic::catch_unwind(|| storm(plain_addr, tls_addr, 20));
            let _ = done_tx.send(res.is_ok());
        });
        assert!(done_rx.await.unwrap(), "a client saw the wrong answer");

        // Every bad connection ends: its task and its socket go.
        let mut settled = false;
        for _ in 0..300 {
            if fd_count() == fds_serving
                && runtime::core_metrics().unwrap().alive_tasks == tasks_serving
            {
                settled = true;
                break;
            }
            runtime::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            settled,
            "after the storm: {} fds (want {fds_serving}), {} tasks (want {tasks_serving})",
            fd_count(),
            runtime::core_metrics().unwrap().alive_tasks
        );
        plain.shutdown(Duration::from_secs(1)).await.unwrap();
        tls.shutdown(Duration::from_secs(1)).await.unwrap();
        assert_eq!(settle_fds(fds_before).await, fds_before);
        assert_eq!(runtime::core_metrics().unwrap().alive_tasks, tasks_before);
    });
}
