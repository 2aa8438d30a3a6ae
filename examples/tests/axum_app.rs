//! The axum app (`examples::axum_app`) served by `corering_net::hyper` on this runtime, fetched with
//! `corering_net::hyper::Client` over HTTP/1.1, h2c and HTTPS (the self-signed identity of
//! `examples::tls`): every route's status, headers and body.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use corering_net::hyper::{Builder, Client};
use corering_net::tls::{rustls, TlsAcceptor, TlsConnector};
use examples::axum_app::{self, Uring, ECHO_LIMIT};
use examples::tls::Identity;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode, Version};

type Http = Client<Full<Bytes>>;

/// One request: status, content type and body.
async fn fetch(
    client: &Http,
    method: Method,
    url: &str,
    body: Bytes,
) -> (StatusCode, String, Bytes, Version) {
    let req = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(body))
        .unwrap();
    let res = client.request(req).await.unwrap();
    let (status, version) = (res.status(), res.version());
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, ct, body, version)
}

/// Every route against `base`, with `client`; `version` the HTTP version expected.
async fn check_routes(client: &Http, base: &str, version: Version) {
    let get = |path: &str| {
        let url = format!("{base}{path}");
        async move { fetch(client, Method::GET, &url, Bytes::new()).await }
    };
    let (s, ct, body, v) = get("/").await;
    assert_eq!(
        (s, ct.as_str(), &body[..], v),
        (StatusCode::OK, "text/plain", &b"Hello, World!"[..], version)
    );
    let (s, ct, body, _) = get("/json").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(ct, "application/json");
    assert_eq!(&body[..], br#"{"message":"Hello, World!"}"#);
    let (s, _, body, _) = get("/greet/ada?times=3").await;
    assert_eq!(
        (s, &body[..]),
        (
            StatusCode::OK,
            &b"Hello, ada!\nHello, ada!\nHello, ada!\n"[..]
        )
    );
    assert_eq!(get("/greet/ada?times=0").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(get("/greet/ada?times=x").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(get("/nowhere").await.0, StatusCode::NOT_FOUND);
    let wrong = fetch(
        client,
        Method::DELETE,
        &format!("{base}/json"),
        Bytes::new(),
    )
    .await;
    assert_eq!(wrong.0, StatusCode::METHOD_NOT_ALLOWED);

    let echo = format!("{base}/echo");
    let full = Bytes::from(vec![7u8; ECHO_LIMIT]);
    let (s, _, body, _) = fetch(client, Method::POST, &echo, full.clone()).await;
    assert_eq!((s, body), (StatusCode::OK, full));
    let over = Bytes::from(vec![7u8; ECHO_LIMIT + 1]);
    assert_eq!(
        fetch(client, Method::POST, &echo, over).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );

    // 4 chunks 30 ms apart: the whole body, no sooner than the 3 gaps allow.
    let t = Instant::now();
    let (s, _, body, _) = get("/stream?chunks=4&ms=30").await;
    assert_eq!(
        (s, &body[..]),
        (StatusCode::OK, &b"chunk 0\nchunk 1\nchunk 2\nchunk 3\n"[..])
    );
    assert!(
        t.elapsed() >= Duration::from_millis(90),
        "{:?}",
        t.elapsed()
    );

    let (s, ct, body, _) = get("/stats").await;
    assert_eq!((s, ct.as_str()), (StatusCode::OK, "application/json"));
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(body.starts_with(r#"{"core":0,"requests":"#), "{body}");
}

#[test]
fn every_route_over_http1_h2c_and_https() {
    let rt = runtime::Builder::new().cores(1).build().unwrap();
    rt.block_on(async {
        let identity = Identity::self_signed().unwrap();
        let ca = identity.certs[0].clone();
        let acceptor = TlsAcceptor::new(identity.server_config().unwrap());
        let plain = Builder::new()
            .serve_with("127.0.0.1:0", axum_app::router::<Uring>)
            .unwrap();
        let secure = Builder::new()
            .tls(acceptor)
            .serve_with("127.0.0.1:0", axum_app::router::<Uring>)
            .unwrap();

        let h1: Http = Client::builder().build();
        check_routes(
            &h1,
            &format!("http://{}", plain.local_addr()),
            Version::HTTP_11,
        )
        .await;
        let h2c: Http = Client::builder().http2_prior_knowledge(true).build();
        check_routes(
            &h2c,
            &format!("http://{}", plain.local_addr()),
            Version::HTTP_2,
        )
        .await;
        assert_eq!(h2c.connections_opened(), 1);

        // The self-signed certificate verifies for localhost, with the ring provider.
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(examples::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let tls: Http = Client::builder()
            .tls(TlsConnector::new(Arc::new(config)))
            .build();
        let base = format!("https://localhost:{}", secure.local_addr().port());
        check_routes(&tls, &base, Version::HTTP_2).await;
        assert_eq!(tls.connections_opened(), 1);

        plain.shutdown(Duration::from_secs(1)).await.unwrap();
        secure.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}

/// The sum over cores of the Prometheus series `name` in `text`.
fn series_sum(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

/// `/metrics` scraped with a fresh connection (closed after).
async fn scrape(base: &str) -> String {
    let client: Http = Client::builder().build();
    let (s, ct, body, _) = fetch(
        &client,
        Method::GET,
        &format!("{base}/metrics"),
        Bytes::new(),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(ct.starts_with("text/plain"), "{ct}");
    String::from_utf8(body.to_vec()).unwrap()
}

#[test]
fn metrics_endpoint_counts_the_load_and_comes_back_to_rest() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        // Connections stay where they were accepted: the check at rest compares each
        // core's ops and direct descriptors with before the load, and a connection moved
        // off a loaded core (Rebalance's default, which a busy CI machine triggers) is a
        // regular fd on the other core. Moves are tested in corering-net's
        // net_hyper_moves.
        let server = Builder::new()
            .rebalance(corering_net::hyper::Rebalance::Off)
            .serve_with("127.0.0.1:0", axum_app::router::<Uring>)
            .unwrap();
        let base = format!("http://{}", server.local_addr());
        let before = scrape(&base).await;
        assert!(
            before.contains("runtime_polls_total{core=\"1\"}"),
            "{before}"
        );
        // Under load: 32 connections, 40 requests each.
        let load: Vec<_> = (0..32)
            .map(|_| {
                let base = base.clone();
                runtime::spawn_local(async move {
                    let client: Http = Client::builder().build();
                    for _ in 0..40 {
                        let (s, _, body, _) =
                            fetch(&client, Method::GET, &format!("{base}/"), Bytes::new()).await;
                        assert_eq!((s, &body[..]), (StatusCode::OK, axum_app::HELLO.as_bytes()));
                    }
                })
            })
            .collect();
        let during = scrape(&base).await;
        for t in load {
            t.await.unwrap();
        }
        let after = scrape(&base).await;
        for name in [
            "runtime_polls_total",
            "runtime_cqes_reaped_total",
            "runtime_sqes_submitted_total",
        ] {
            let (a, b, c) = (
                series_sum(&before, name),
                series_sum(&during, name),
                series_sum(&after, name),
            );
            assert!(a <= b && b <= c, "{name}: {a} {b} {c}");
            assert!(
                c >= a + 1_280,
                "{name} moved by {} for 1,280 requests",
                c - a
            );
        }
        assert_eq!(series_sum(&after, "runtime_cq_overflows_total"), 0);
        // At rest (the load's connections closed), ops in flight come back to where they
        // were: the listeners' accepts and the scrape's own connection.
        let gauges = |text: &str| {
            (
                series_sum(text, "runtime_ops_in_flight"),
                series_sum(text, "runtime_fixed_files_in_use"),
            )
        };
        let rest = gauges(&before);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let now = gauges(&scrape(&base).await);
            if now == rest {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "(ops in flight, direct descriptors) stay at {now:?}, were {rest:?} at rest"
            );
            runtime::sleep(Duration::from_millis(20)).await;
        }
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}
