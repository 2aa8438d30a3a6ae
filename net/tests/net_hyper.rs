//! `corering_net::hyper`: a hyper HTTP/1 server and client on this runtime, talking over one
//! keep-alive connection (built with `--features hyper`).

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use corering_net::hyper::{HyperExecutor, HyperIo, HyperTimer};
use corering_net::TcpListener;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::{client, server, service::service_fn, Request, Response};

async fn hello(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello {}", req.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

#[test]
fn two_requests_on_one_connection() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Rc::new(Cell::new(0));
        let count = accepted.clone();
        let server = runtime::spawn_local(async move {
            let mut incoming = listener.incoming();
            while let Some(stream) = incoming.next().await {
                let stream = stream.unwrap();
                count.set(count.get() + 1);
                runtime::spawn_local(async move {
                    server::conn::http1::Builder::new()
                        .timer(HyperTimer)
                        .serve_connection(HyperIo::new(stream), service_fn(hello))
                        .await
                        .unwrap();
                });
            }
        });

        let stream = corering_net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = client::conn::http1::Builder::new()
            .handshake::<_, Full<Bytes>>(HyperIo::new(stream))
            .await
            .unwrap();
        hyper::rt::Executor::execute(&HyperExecutor, async move {
            let _ = conn.await;
        });

        for path in ["/one", "/two"] {
            let req = Request::get(path)
                .header("host", "localhost")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let res = sender.send_request(req).await.unwrap();
            assert_eq!(res.status(), 200);
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], format!("hello {path}").as_bytes());
        }
        assert_eq!(accepted.get(), 1, "both requests came on one connection");
        server.abort();
    });
}

#[test]
fn timer_sleeps_and_resets() {
    use hyper::rt::Timer;
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let start = std::time::Instant::now();
        let mut sleep = HyperTimer.sleep(Duration::from_secs(60));
        HyperTimer.reset(&mut sleep, start + Duration::from_millis(5));
        sleep.await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(5), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    });
}
