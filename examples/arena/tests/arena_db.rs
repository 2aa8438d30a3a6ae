//! The database routes against a real PostgreSQL (when `CORERING_PG_URL` names one, as CI's
//! test passes do; skipped otherwise, and a failure under `CORERING_REQUIRE_FEATURES=1`), through a proxy the test controls: async-db and
//! crud answer, then the database goes away mid-run (every proxied connection cut, new
//! ones refused): the database routes answer `500` and everything else is still served;
//! then it comes back and the routes recover without a restart.

mod common;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::Arena;

/// A TCP proxy to `upstream` that can cut every connection and refuse new ones.
struct Proxy {
    addr: SocketAddr,
    refusing: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let refusing = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (r, c) = (refusing.clone(), conns.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if r.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut list = c.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                drop(list);
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Proxy {
            addr,
            refusing,
            conns,
        }
    }

    /// The database goes away: every connection cut, new ones refused.
    fn cut(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        for s in self.conns.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// It comes back.
    fn restore(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` on a thread until either side ends.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let mut buf = [0u8; 16384];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// A schema of its own (`arena_test`) with 1,000 items, on the database of `url`.
fn seed(url: &str) -> io::Result<()> {
    runtime::Runtime::new()?.block_on(async {
        let client = corering_net::postgres::connect(url).await?;
        client
            .batch_execute(
                "CREATE SCHEMA IF NOT EXISTS arena_test;
                 DROP TABLE IF EXISTS arena_test.items;
                 CREATE TABLE arena_test.items (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                   category TEXT NOT NULL, price INTEGER NOT NULL, quantity INTEGER NOT NULL,
                   active BOOLEAN NOT NULL, tags JSONB NOT NULL, rating_score INTEGER NOT NULL,
                   rating_count INTEGER NOT NULL);
                 INSERT INTO arena_test.items SELECT i, 'Item ' || i,
                   CASE WHEN i % 2 = 0 THEN 'electronics' ELSE 'tools' END, i % 500 + 1, i,
                   i % 3 = 0, '[\"fast\", \"new\"]'::jsonb, i % 50, i
                   FROM generate_series(1, 1000) AS i;",
            )
            .await
            .map_err(|e| corering_net::postgres::to_io_error(e, "seeding arena_test.items"))
    })
}

fn json(arena: &Arena, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = arena.get(path);
    (
        status,
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    )
}

#[test]
fn database_routes_fail_while_it_is_gone_and_recover() {
    let url = std::env::var("CORERING_PG_URL").ok();
    // CI's io_uring pass sets CORERING_REQUIRE_FEATURES=1 with a private PostgreSQL up: there,
    // a missing URL fails the test instead of skipping it.
    if !runtime::ext::testing::require("a PostgreSQL (CORERING_PG_URL)", url.is_some()) {
        return;
    }
    let url = url.unwrap_or_default();
    seed(&url).expect("seeding the test schema");
    let config: tokio_postgres::Config = url.parse().expect("CORERING_PG_URL parses");
    let (host, port) = match (&config.get_hosts()[0], config.get_ports()[0]) {
        (tokio_postgres::config::Host::Tcp(host), port) => (host.clone(), port),
        other => panic!("CORERING_PG_URL must be TCP: {other:?}"),
    };
    let upstream: SocketAddr = format!("{host}:{port}").parse().expect("a numeric host");
    let proxy = Proxy::start(upstream);
    let proxied = url.replacen(&format!("{host}:{port}"), &proxy.addr.to_string(), 1);
    let sep = if proxied.contains('?') { '&' } else { '?' };
    let proxied = format!("{proxied}{sep}options=-c%20search_path%3Darena_test");
    let arena = Arena::start(&[("DATABASE_URL", proxied), ("DATABASE_MAX_CONN", "4".into())]);

    let (status, v) = json(&arena, "/async-db?min=1&max=500&limit=7");
    assert_eq!((status, v["count"].as_u64()), (200, Some(7)), "{v}");
    assert!(v["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["rating"]["score"].is_i64()
            && i["tags"].is_array()
            && i["active"].is_boolean()));
    let (status, v) = json(&arena, "/async-db?min=9999&max=9999");
    assert_eq!((status, v["count"].as_u64()), (200, Some(0)));
    let (status, v) = json(&arena, "/crud/items?category=electronics&page=2&limit=5");
    assert_eq!(
        (status, v["total"].as_u64(), v["page"].as_u64()),
        (200, Some(5), Some(2))
    );
    assert_eq!(
        v["items"][0]["id"], 12,
        "page 2 of the even ids, 5 a page: {v}"
    );
    let (status, v) = json(&arena, "/crud/items/42");
    assert_eq!((status, v["id"].as_i64()), (200, Some(42)));

    // The database goes away.
    proxy.cut();
    for _ in 0..20 {
        let (status, _) = arena.get("/async-db?min=1&max=500&limit=7");
        assert_eq!(status, 500, "a database route while the database is gone");
        arena.still_serves();
    }
    let (status, _) = arena.get("/crud/items/43");
    assert_eq!(status, 500);

    // It comes back: the pool reconnects as requests need connections.
    proxy.restore();
    let mut recovered = false;
    for _ in 0..100 {
        let (status, v) = json(&arena, "/async-db?min=1&max=500&limit=3");
        if status == 200 && v["count"] == 3 {
            recovered = true;
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(recovered, "the database routes never recovered");
    // Every connection of the pool comes back (requests go round the pool).
    for _ in 0..8 {
        let (status, _) = arena.get("/async-db?min=1&max=500&limit=3");
        assert_eq!(status, 200);
    }
}
