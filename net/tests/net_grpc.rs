//! `corering_net::grpc` without tonic: the channel's deadlines and errors as gRPC statuses,
//! the server preset (HTTP/2 only) and `Deadlines`, against a plain service.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use corering_net::grpc::{self, Channel, Deadlines, GrpcBody};
use corering_net::hyper::Client;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tower::Service;

fn assert_send<T: Send>() {}

/// A "gRPC" service: waits the milliseconds in the path's last segment, then answers one
/// frame and `grpc-status: 0` trailers.
fn slow_service() -> impl Service<
    Request<Incoming>,
    Response = Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>,
    Error = Infallible,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|req: Request<Incoming>| async move {
        let ms: u64 = req
            .uri()
            .path()
            .rsplit('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        runtime::time::sleep(Duration::from_millis(ms)).await;
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let body = Full::new(Bytes::from_static(b"\0\0\0\0\x02hi"))
            .with_trailers(async move { Some(Ok(trailers)) })
            .boxed();
        let mut res = Response::new(body);
        res.headers_mut()
            .insert("content-type", "application/grpc".parse().unwrap());
        Ok::<_, Infallible>(res)
    })
}

async fn call(
    channel: &mut Channel<Full<Bytes>>,
    path: &str,
    timeout: Option<&str>,
) -> (HeaderMap, Bytes, Option<HeaderMap>) {
    let mut req = Request::post(path)
        .header("content-type", "application/grpc")
        .body(Full::new(Bytes::new()))
        .unwrap();
    if let Some(t) = timeout {
        req.headers_mut().insert("grpc-timeout", t.parse().unwrap());
    }
    let res = channel.call(req).await.expect("a response");
    let (parts, body) = res.into_parts();
    let collected = body.collect().await.expect("the body");
    let trailers = collected.trailers().cloned();
    (parts.headers, collected.to_bytes(), trailers)
}

#[test]
fn channel_deadlines_and_statuses() {
    assert_send::<GrpcBody<Incoming>>();
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        // Without `Deadlines`: only the channel enforces them.
        let server = grpc::server().serve("127.0.0.1:0", slow_service()).unwrap();
        let origin: http::Uri = format!("http://{}", server.local_addr()).parse().unwrap();
        let mut channel = Channel::new(origin.clone());
        let (headers, body, trailers) = call(&mut channel, "/svc/0", None).await;
        assert_eq!(&body[..], b"\0\0\0\0\x02hi");
        assert_eq!(trailers.unwrap()["grpc-status"], "0");
        assert_eq!(headers["content-type"], "application/grpc");
        // The call's own grpc-timeout.
        let (headers, body, trailers) = call(&mut channel, "/svc/5000", Some("20m")).await;
        assert_eq!(headers["grpc-status"], "4");
        assert_eq!(headers["content-type"], "application/grpc");
        assert!(body.is_empty() && trailers.is_none());
        // The channel's default.
        let mut short = Channel::builder(origin)
            .timeout(Duration::from_millis(20))
            .build();
        let (headers, _, _) = call(&mut short, "/svc/5000", None).await;
        assert_eq!(headers["grpc-status"], "4");
        // In time: untouched.
        let (_, body, trailers) = call(&mut short, "/svc/0", Some("10S")).await;
        assert_eq!(&body[..], b"\0\0\0\0\x02hi");
        assert_eq!(trailers.unwrap()["grpc-status"], "0");
        assert_eq!(channel.connections_opened(), 1);
        server.shutdown(Duration::from_secs(1)).await.unwrap();

        // Nobody listening: UNAVAILABLE, with the address in the message.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut gone = Channel::new(format!("http://{addr}").parse().unwrap());
        let (headers, _, _) = call(&mut gone, "/svc/0", None).await;
        assert_eq!(headers["grpc-status"], "14");
        assert!(headers["grpc-message"]
            .to_str()
            .unwrap()
            .contains(&addr.to_string()));
        // A bad grpc-timeout from the caller is the caller's error.
        let req = Request::post("/svc/0")
            .header("grpc-timeout", "never")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let err = gone.call(req).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    });
}

#[test]
fn server_preset_and_deadlines() {
    let rt = runtime::Builder::new().cores(1).build().unwrap();
    rt.block_on(async {
        let server = grpc::server()
            .serve("127.0.0.1:0", Deadlines::new(slow_service()))
            .unwrap();
        let addr = server.local_addr();
        // The raw client sends no deadline of its own: the server's ends the call.
        let h2: Client<Full<Bytes>> = Client::builder().http2_prior_knowledge(true).build();
        let req = Request::post(format!("http://{addr}/svc/5000"))
            .header("grpc-timeout", "20m")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let res = h2.request(req).await.unwrap();
        assert_eq!(res.headers()["grpc-status"], "4");
        let req = Request::post(format!("http://{addr}/svc/0"))
            .header("grpc-timeout", "1.5S")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let res = h2.request(req).await.unwrap();
        assert_eq!(res.headers()["grpc-status"], "13");
        // `max_timeout` caps calls that bring none.
        server.shutdown(Duration::from_secs(1)).await.unwrap();
        let server = grpc::ServerConfig::new()
            .max_concurrent_streams(8)
            .builder()
            .serve(
                "127.0.0.1:0",
                Deadlines::new(slow_service()).max_timeout(Duration::from_millis(20)),
            )
            .unwrap();
        let addr = server.local_addr();
        let req = Request::post(format!("http://{addr}/svc/5000"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let res = h2.request(req).await.unwrap();
        assert_eq!(res.headers()["grpc-status"], "4");
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}
