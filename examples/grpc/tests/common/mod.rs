//! What the tests share: a server on this runtime, and raw gRPC frames.

#![allow(dead_code)]

use std::io;
use std::time::Duration;

use bytes::{Buf, Bytes};
use corering_net::grpc::{self, Deadlines};
use corering_net::hyper::{Client, Server};
use grpc_example::service;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};

/// A runtime of two cores, for a server and the test's client.
pub fn runtime() -> runtime::Runtime {
    runtime::Builder::new()
        .cores(2)
        .build()
        .expect("a runtime of 2 cores")
}

/// The Echo service on every core, with server-side deadlines (`Deadlines`) or without.
pub fn start(deadlines: bool) -> io::Result<(Server, http::Uri)> {
    let server = if deadlines {
        grpc::server().serve("127.0.0.1:0", Deadlines::new(service::routes()))?
    } else {
        grpc::server().serve("127.0.0.1:0", service::routes())?
    };
    let uri = format!("http://{}", server.local_addr())
        .parse()
        .expect("a URI");
    Ok((server, uri))
}

/// Stops `server`, its calls given a second.
pub async fn stop(server: Server) {
    server
        .shutdown(Duration::from_secs(1))
        .await
        .expect("the server stops cleanly");
}

/// One gRPC message frame: uncompressed flag, big-endian length, the bytes.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The messages of a body of whole frames (panics on a partial one).
pub fn frames(mut body: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    while body.has_remaining() {
        assert!(body.len() >= 5, "a partial frame header: {body:?}");
        assert_eq!(body.get_u8(), 0, "a compressed frame");
        let len = body.get_u32() as usize;
        assert!(body.len() >= len, "a partial frame: {len} bytes announced");
        out.push(body.split_to(len));
    }
    out
}

/// An HTTP/2 client for raw gRPC requests.
pub fn raw_client() -> Client<Full<Bytes>> {
    Client::builder().http2_prior_knowledge(true).build()
}

/// What a raw call gave: the HTTP status, the head, the body, the trailers, and the
/// `grpc-status` (from the trailers, or the head of a trailers-only response).
#[derive(Debug)]
pub struct RawReply {
    pub status: http::StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub trailers: Option<HeaderMap>,
    pub grpc_status: Option<u16>,
}

/// POSTs `body` to `uri` + `path` as a gRPC call, with `extra` headers.
pub async fn raw_call(
    client: &Client<Full<Bytes>>,
    uri: &http::Uri,
    path: &str,
    extra: &[(&'static str, &'static str)],
    body: Vec<u8>,
) -> RawReply {
    let authority = uri.authority().expect("the server's address");
    let mut req = Request::post(format!("http://{authority}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::from(body))).expect("a request");
    let res = client.request(req).await.expect("a response head");
    let status = res.status();
    let (parts, body) = res.into_parts();
    let collected = body.collect().await.expect("the whole body");
    let trailers = collected.trailers().cloned();
    let body = collected.to_bytes();
    let grpc_status = trailers
        .as_ref()
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| parts.headers.get("grpc-status"))
        .map(|v| v.to_str().expect("ASCII").parse().expect("a number"));
    RawReply {
        status,
        headers: parts.headers,
        body,
        trailers,
        grpc_status,
    }
}
