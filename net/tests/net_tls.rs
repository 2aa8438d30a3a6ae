//! `corering_net::tls`: handshakes with ALPN, the TLS stream through the futures and tokio traits and
//! hyper (HTTP/2 and HTTP/1.1 by ALPN, served and fetched with connection reuse). The
//! handshakes that must fail are in `net_bad_input`, which counts fds alone in its binary.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::tls::configs;
use corering_net::tls::{TlsAcceptor, TlsConnector};
use corering_net::{TcpListener, TcpStream};
use futures::{AsyncReadExt, AsyncWriteExt};
use http_body_util::{BodyExt, Empty, Full};
use hyper::{service::service_fn, Request, Response, Version};

const H2: &[u8] = b"h2";
const H1: &[u8] = b"http/1.1";

#[test]
fn handshake_agrees_alpn_and_carries_bytes_both_ways() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (server_cfg, client_cfg) = configs(&[H2, H1], &[H1]);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = TlsAcceptor::new(server_cfg);
        let server = runtime::spawn_local(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut tls = acceptor.accept(stream).await.unwrap();
            assert_eq!(tls.alpn_protocol(), Some(H1));
            assert_eq!(tls.server_name(), Some("localhost"));
            // futures-io on the server side: echo until end of stream.
            let mut got = Vec::new();
            tls.read_to_end(&mut got).await.unwrap();
            tls.write_all(&got).await.unwrap();
            tls.close().await.unwrap();
            got.len()
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let mut tls = TlsConnector::new(client_cfg)
            .connect("localhost", stream)
            .await
            .unwrap();
        assert_eq!(tls.alpn_protocol(), Some(H1));
        // tokio's traits on the client side.
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        tokio::io::AsyncWriteExt::write_all(&mut tls, &payload)
            .await
            .unwrap();
        tokio::io::AsyncWriteExt::shutdown(&mut tls).await.unwrap();
        // Half-closed TLS: rustls sent close_notify; the server echoes, then closes.
        let mut back = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut tls, &mut back)
            .await
            .unwrap();
        assert_eq!(server.await.unwrap(), payload.len());
        assert!(back == payload, "the echo differs");
    });
}

#[test]
fn hyper_over_tls_h2_and_http1_by_alpn_with_reuse() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        for (client_alpn, version) in [
            (&[H2, H1][..], Version::HTTP_2),
            (&[H1][..], Version::HTTP_11),
        ] {
            let (server_cfg, client_cfg) = configs(&[H2, H1], client_alpn);
            let hello = service_fn(|req: Request<hyper::body::Incoming>| async move {
                let body = format!("{:?} {}", req.version(), req.uri().path());
                Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(body))))
            });
            let server = corering_net::hyper::Builder::new()
                .tls(TlsAcceptor::new(server_cfg))
                .serve("127.0.0.1:0", corering_net::hyper::from_hyper(hello))
                .unwrap();
            let port = server.local_addr().port();
            let client: corering_net::hyper::Client<Empty<Bytes>> =
                corering_net::hyper::Client::builder()
                    .tls(TlsConnector::new(client_cfg))
                    .build();
            for i in 0..5 {
                let uri = format!("https://localhost:{port}/{i}").parse().unwrap();
                let res = client.get(uri).await.unwrap();
                assert_eq!(res.status(), 200);
                assert_eq!(res.version(), version);
                let body = res.into_body().collect().await.unwrap().to_bytes();
                assert_eq!(body, format!("{version:?} /{i}"));
            }
            assert_eq!(client.connections_opened(), 1, "{version:?}");
            server.shutdown(Duration::from_secs(1)).await.unwrap();
        }
    });
}
