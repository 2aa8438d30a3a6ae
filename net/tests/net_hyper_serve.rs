//! `corering_net::hyper::serve` and `Client`: HTTP/1.1 and h2c on one port on every core, connection
//! reuse, per-core services that are not `Send`, and graceful shutdown.

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use corering_net::hyper::{from_hyper, Builder, Client};
use http_body_util::{BodyExt, Empty, Full};
use hyper::{service::service_fn, Request, Response, Version};

type Body = Full<Bytes>;

/// A per-core service: `Rc` state (not `Send`), `/slow` answers after 300 ms, `/hang` never.
fn service(core: usize) -> impl tower_like::Service + Clone + 'static {
    let hits = Rc::new(Cell::new(0u64));
    from_hyper(service_fn(move |req: Request<hyper::body::Incoming>| {
        let hits = hits.clone();
        async move {
            hits.set(hits.get() + 1);
            match req.uri().path() {
                "/slow" => runtime::time::sleep(Duration::from_millis(300)).await,
                "/hang" => runtime::time::sleep(Duration::from_secs(3600)).await,
                _ => {}
            }
            let body = format!("core {core} hit {} {}", hits.get(), req.uri().path());
            Ok::<_, Infallible>(Response::new(Body::new(Bytes::from(body))))
        }
    }))
}

/// Names the service type for `serve_with` without spelling out hyper's closure types.
mod tower_like {
    pub trait Service:
        tower_service::Service<
        hyper::Request<hyper::body::Incoming>,
        Response = hyper::Response<super::Body>,
        Error = std::convert::Infallible,
        Future: 'static,
    >
    {
    }
    impl<S> Service for S where
        S: tower_service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<super::Body>,
            Error = std::convert::Infallible,
            Future: 'static,
        >
    {
    }
}

async fn body_text(res: Response<hyper::body::Incoming>) -> String {
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn http1_and_h2c_on_one_port_with_connection_reuse() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let server = Builder::new().serve_with("127.0.0.1:0", service).unwrap();
        assert_eq!(server.cores(), 2);
        let base = format!("http://{}", server.local_addr());

        // HTTP/1.1: ten requests in turn on one kept-alive connection.
        let h1 = Client::<Empty<Bytes>>::new();
        for i in 0..10 {
            let res = h1
                .get(format!("{base}/h1/{i}").parse().unwrap())
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            assert_eq!(res.version(), Version::HTTP_11);
            let text = body_text(res).await;
            assert!(text.ends_with(&format!("/h1/{i}")), "{text}");
        }
        assert_eq!(h1.connections_opened(), 1);

        // h2c (prior knowledge): twenty requests at once, multiplexed on one connection;
        // the streams run as tasks on the connection's core, with its `Rc` state.
        let h2: Client<Empty<Bytes>> = Client::builder().http2_prior_knowledge(true).build();
        let requests = (0..20).map(|i| {
            let h2 = h2.clone();
            let uri = format!("{base}/h2/{i}").parse().unwrap();
            async move {
                let res = h2.get(uri).await.unwrap();
                assert_eq!(res.version(), Version::HTTP_2);
                body_text(res).await
            }
        });
        let texts = futures::future::join_all(requests).await;
        for (i, text) in texts.iter().enumerate() {
            assert!(text.ends_with(&format!("/h2/{i}")), "{text}");
        }
        assert_eq!(h2.connections_opened(), 1);
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}

#[test]
fn client_sends_request_bodies_and_reports_bad_uris() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let echo = service_fn(|req: Request<hyper::body::Incoming>| async move {
            let body = req.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>(Response::new(Body::new(body)))
        });
        let server = corering_net::hyper::serve("127.0.0.1:0", from_hyper(echo)).unwrap();
        let client = Client::<Body>::new();
        let req = Request::post(format!("http://{}/echo", server.local_addr()))
            .body(Body::new(Bytes::from_static(b"the body")))
            .unwrap();
        let res = client.request(req).await.unwrap();
        assert_eq!(body_text(res).await, "the body");

        for bad in ["/no/scheme", "ftp://127.0.0.1/x", "https://127.0.0.1:1/"] {
            let mut req = Request::new(Body::default());
            *req.uri_mut() = bad.parse().unwrap();
            let err = client.request(req).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{bad}: {err}");
        }
        // Nobody listens: the error names the origin.
        let err = client
            .get("http://127.0.0.1:1/".parse().unwrap())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}

#[test]
fn graceful_shutdown_finishes_in_flight_requests_and_stops_accepting() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let server = Builder::new().serve_with("127.0.0.1:0", service).unwrap();
        let addr = server.local_addr();
        let slow = runtime::spawn_local(async move {
            let client = Client::<Empty<Bytes>>::new();
            let res = client
                .get(format!("http://{addr}/slow").parse().unwrap())
                .await
                .unwrap();
            (res.status(), body_text(res).await)
        });
        let h2_slow = runtime::spawn_local(async move {
            let client: Client<Empty<Bytes>> =
                Client::builder().http2_prior_knowledge(true).build();
            let res = client
                .get(format!("http://{addr}/slow").parse().unwrap())
                .await
                .unwrap();
            (res.status(), body_text(res).await)
        });
        // Let both requests reach their handlers, then shut down with time to spare.
        runtime::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        server.shutdown(Duration::from_secs(10)).await.unwrap();
        let took = started.elapsed();
        for task in [slow, h2_slow] {
            let (status, text) = task.await.unwrap();
            assert_eq!(status, 200);
            assert!(text.ends_with("/slow"), "{text}");
        }
        assert!(took < Duration::from_secs(5), "shutdown waited {took:?}");
        // The listeners are closed.
        let err = corering_net::TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    });
}

#[test]
fn graceful_shutdown_closes_what_outlasts_the_grace_period() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let tasks_before = runtime::core_metrics().unwrap().alive_tasks;
        let server = Builder::new().serve_with("127.0.0.1:0", service).unwrap();
        let addr = server.local_addr();
        let hang = runtime::spawn_local(async move {
            let client = Client::<Empty<Bytes>>::new();
            client
                .get(format!("http://{addr}/hang").parse().unwrap())
                .await
        });
        runtime::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        server.shutdown(Duration::from_millis(200)).await.unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(190),
            "shutdown took only {took:?}"
        );
        assert!(took < Duration::from_secs(5), "shutdown waited {took:?}");
        // The hanging request's connection was closed under it.
        assert!(hang.await.unwrap().is_err());
        // The client's connection task sees the close a loop turn or two later; then
        // nothing of the server or the client is left.
        for _ in 0..100 {
            if runtime::core_metrics().unwrap().alive_tasks == tasks_before {
                break;
            }
            runtime::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(runtime::core_metrics().unwrap().alive_tasks, tasks_before);
    });
}

#[test]
fn serve_with_async_sets_each_core_up_inside_the_runtime_before_it_serves() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        // A "database" each core connects to during its setup: an echo listener.
        let db = corering_net::TcpListener::bind("127.0.0.1:0").unwrap();
        let db_addr = db.local_addr().unwrap();
        let accepted = runtime::spawn_local(async move {
            let mut conns = Vec::new();
            for _ in 0..2 {
                conns.push(db.accept().await.unwrap().0);
            }
            conns
        });
        let server = Builder::new()
            .serve_with_async("127.0.0.1:0", move |core| async move {
                // Async work on this core before it accepts: a connection of its own.
                let conn = corering_net::TcpStream::connect(db_addr).await?;
                assert_eq!(runtime::current_core(), Some(core));
                let conn = Rc::new(conn);
                Ok(from_hyper(service_fn(
                    move |_req: Request<hyper::body::Incoming>| {
                        let peer = conn.local_addr().map(|a| a.port()).unwrap_or(0);
                        async move {
                            let body = format!("core {core} db port {peer}");
                            Ok::<_, Infallible>(Response::new(Body::new(Bytes::from(body))))
                        }
                    },
                )))
            })
            .unwrap();
        let base = format!("http://{}", server.local_addr());
        let mut seen = std::collections::HashSet::new();
        for i in 0..40 {
            // A new connection each time, so both cores' listeners get some.
            let client = Client::<Empty<Bytes>>::new();
            let res = client
                .get(format!("{base}/{i}").parse().unwrap())
                .await
                .unwrap();
            let text = body_text(res).await;
            assert!(text.contains("db port"), "{text}");
            seen.insert(text);
        }
        assert_eq!(
            accepted.await.unwrap().len(),
            2,
            "each core opened its connection"
        );
        assert!(!seen.is_empty());
        server.shutdown(Duration::from_secs(1)).await.unwrap();

        // A setup that fails: that core's error comes back from shutdown.
        let failing = Builder::new()
            .serve_with_async("127.0.0.1:0", |core| async move {
                if core == 1 {
                    return Err(std::io::Error::other("core 1 could not reach its database"));
                }
                Ok(service(core))
            })
            .unwrap();
        runtime::time::sleep(Duration::from_millis(50)).await;
        let err = failing.shutdown(Duration::from_secs(1)).await.unwrap_err();
        assert!(
            err.to_string().contains("could not reach its database"),
            "{err}"
        );
    });
}

/// Byte `i` of an upload: position-dependent, so a byte out of place is seen.
fn upload_byte(i: u64) -> u8 {
    let x = i.wrapping_mul(0x2545_F491_4F6C_DD1D);
    (x ^ (x >> 29)) as u8
}

/// Request bodies of up to 8 MiB, sent in bursts by std clients on kept-alive connections,
/// reach the service whole and in order: hyper reads them with large reads, which receive
/// straight into its buffer (`ring_read/direct.rs`), after request heads read through the
/// ring.
#[test]
fn large_request_bodies_arrive_whole_and_in_order() {
    uploads(
        runtime::Builder::new().cores(2).build().unwrap(),
        8,
        8 << 20,
    );
}

#[test]
fn uploads_through_an_empty_ring_lose_nothing() {
    // 64 uploads at once into 16 buffers of 4 KiB: the receives find the ring empty
    // (ENOBUFS) over and over, before and between the bodies' large reads.
    let rt = runtime::Builder::new()
        .recv_buffers(16, 4096)
        .build()
        .unwrap();
    let starved = uploads(rt, 64, 2 << 20);
    if let Some(n) = starved {
        assert!(n > 0, "16 buffers never ran dry under 64 uploads");
        println!("the ring ran dry {n} times");
    }
}

/// `clients` std clients each upload 4 bodies of random lengths below `max` (written in
/// random pieces) to `serve` on `rt`, which checks every byte and answers with the length;
/// how many times the core's ring ran dry, where the read path has one.
fn uploads(rt: runtime::Runtime, clients: u64, max: u64) -> Option<u64> {
    use std::io::{BufRead, BufReader, Read, Write};
    rt.block_on(async {
        let server = Builder::new()
            .serve_with("127.0.0.1:0", |_core| {
                from_hyper(service_fn(
                    |req: Request<hyper::body::Incoming>| async move {
                        let mut body = req.into_body();
                        let (mut len, mut wrong) = (0u64, 0u64);
                        while let Some(frame) = body.frame().await {
                            if let Ok(data) = frame.unwrap().into_data() {
                                for b in data.iter() {
                                    wrong += u64::from(*b != upload_byte(len));
                                    len += 1;
                                }
                            }
                        }
                        let text = format!("{len} {wrong}");
                        Ok::<_, Infallible>(Response::new(Body::new(Bytes::from(text))))
                    },
                ))
            })
            .unwrap();
        let addr = server.local_addr();
        let clients: Vec<_> = (0..clients)
            .map(|c| {
                std::thread::spawn(move || {
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut x = c.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..4 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let len = x % max;
                        let body: Vec<u8> = (0..len).map(upload_byte).collect();
                        write!(
                            s,
                            "POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\n\r\n"
                        )
                        .unwrap();
                        for part in body.chunks(1 + (x % (1 << 20)) as usize) {
                            s.write_all(part).unwrap();
                        }
                        // The response: status line, headers to the blank line, the body.
                        let mut line = String::new();
                        r.read_line(&mut line).unwrap();
                        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
                        let mut content = 0;
                        loop {
                            line.clear();
                            r.read_line(&mut line).unwrap();
                            if line == "\r\n" {
                                break;
                            }
                            if let Some(v) =
                                line.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                content = v.trim().parse().unwrap();
                            }
                        }
                        let mut text = vec![0u8; content];
                        r.read_exact(&mut text).unwrap();
                        assert_eq!(String::from_utf8(text).unwrap(), format!("{len} 0"));
                    }
                })
            })
            .collect();
        let done = runtime::spawn_blocking(move || {
            for c in clients {
                c.join().unwrap();
            }
        });
        runtime::time::timeout(Duration::from_secs(120), done)
            .await
            .expect("uploads stalled")
            .unwrap();
        server.shutdown(Duration::from_secs(1)).await.unwrap();
        runtime::buf::core_ring().map(|r| r.times_starved())
    })
}
