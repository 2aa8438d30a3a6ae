//! HttpArena's requests against the `arena` binary as it ships (the plain-TCP ones; TLS,
//! h2 and gRPC are checked by `scripts/arena_check.sh` with curl, h2load and grpcio):
//! baseline in its three forms, 16 pipelined requests in one write, json's totals for every
//! `(count, m)` pair it rotates, json-comp's negotiation, and the h2c port refusing
//! HTTP/1.1.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{exchange, parse, read_all, Arena};

#[test]
fn baseline_in_its_three_forms() {
    let arena = Arena::start(&[]);
    assert_eq!(arena.get("/baseline11?a=13&b=42"), (200, b"55".to_vec()));
    assert_eq!(arena.get("/baseline2?a=-7&b=2"), (200, b"-5".to_vec()));
    for (req, want) in [
        ("POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n20", "75"),
        ("POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n2\r\n1\r\n0\r\n0\r\n\r\n", "75"),
        ("POST /baseline11?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc", "1"),
    ] {
        let (status, body) = parse(&exchange(arena.http, req.as_bytes(), Duration::from_secs(5)));
        assert_eq!((status, String::from_utf8_lossy(&body).into_owned()), (200, want.to_owned()), "{req:?}");
    }
    let (status, _) = arena.get("/baseline11?a=x");
    assert_eq!(status, 400, "a query that is not a number");
    let (status, _) = arena.get("/no-such-route");
    assert_eq!(status, 404);
}

#[test]
fn sixteen_pipelined_requests_get_sixteen_answers_in_order() {
    let arena = Arena::start(&[]);
    let mut s = TcpStream::connect(arena.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut batch = Vec::new();
    for i in 0..16 {
        let close = if i == 15 { "Connection: close\r\n" } else { "" };
        if i % 2 == 0 {
            batch.extend_from_slice(
                format!("GET /pipeline HTTP/1.1\r\nHost: x\r\n{close}\r\n").as_bytes(),
            );
        } else {
            batch.extend_from_slice(
                format!("GET /baseline11?a={i}&b=1 HTTP/1.1\r\nHost: x\r\n{close}\r\n").as_bytes(),
            );
        }
    }
    s.write_all(&batch).unwrap();
    let got = read_all(&mut s);
    let text = String::from_utf8_lossy(&got);
    let bodies: Vec<&str> = text
        .split("HTTP/1.1 200 OK")
        .skip(1)
        .map(|r| r.rsplit("\r\n\r\n").next().unwrap_or(""))
        .collect();
    let want: Vec<String> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                "ok".into()
            } else {
                (i + 1).to_string()
            }
        })
        .collect();
    assert_eq!(bodies, want);
}

#[test]
fn json_totals_for_every_pair_and_compression_by_request() {
    let arena = Arena::start(&[]);
    let dataset: serde_json::Value = serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/data/dataset.json")).unwrap(),
    )
    .unwrap();
    for (count, m) in [
        (1, 3),
        (5, 7),
        (10, 2),
        (15, 5),
        (25, 4),
        (40, 8),
        (50, 6),
        (60, 1),
    ] {
        let (status, body) = arena.get(&format!("/json/{count}?m={m}"));
        assert_eq!(status, 200);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let want = count.min(50);
        assert_eq!(v["count"], want);
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), want);
        for (item, source) in items.iter().zip(dataset.as_array().unwrap()) {
            let total =
                source["price"].as_i64().unwrap() * source["quantity"].as_i64().unwrap() * m;
            assert_eq!(item["total"], total, "{count} {m}");
            assert_eq!(item["id"], source["id"]);
            assert_eq!(item["rating"], source["rating"]);
        }
    }
    let head = |extra: &str| {
        let req =
            format!("GET /json/50?m=1 HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n");
        let got = exchange(arena.http, req.as_bytes(), Duration::from_secs(5));
        let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        String::from_utf8_lossy(&got[..end]).to_ascii_lowercase()
    };
    assert!(
        !head("").contains("content-encoding"),
        "no Accept-Encoding, no encoding"
    );
    assert!(head("Accept-Encoding: gzip\r\n").contains("content-encoding: gzip"));
    assert!(head("Accept-Encoding: br\r\n").contains("content-encoding: br"));
    let both = head("Accept-Encoding: gzip, br\r\n");
    assert!(
        both.contains("content-encoding: gzip") || both.contains("content-encoding: br"),
        "{both}"
    );
    assert!(head("").contains("content-type: application/json"));
}

#[test]
fn the_h2c_port_refuses_http1() {
    let arena = Arena::start(&[]);
    let got = exchange(
        arena.h2c,
        b"GET /baseline2?a=1&b=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(
        !got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // The preface is answered with the server's SETTINGS.
    let got = exchange(
        arena.h2c,
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0",
        Duration::from_millis(500),
    );
    assert!(got.len() >= 9 && got[3] == 4, "no SETTINGS frame: {got:?}");
}
