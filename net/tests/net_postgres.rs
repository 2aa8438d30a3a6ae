//! `corering_net::postgres` (feature `postgres`): bad configurations and refused
//! connections always; against a real server when `CORERING_PG_URL` names one (as
//! `scripts/tfb_check.sh` does, with a private cluster): queries, the pool's round robin,
//! per-connection setup, and recovery from a connection the server terminated.
//! `CORERING_PG_UNIX_URL` (host = the socket directory) adds the Unix socket path.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use corering_net::postgres::{self, to_io_error, Pool};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime::Runtime::new().expect("a runtime").block_on(f)
}

/// The URL in `var`, or `None` where it is unset: through `runtime::ext::testing::require`,
/// so a failure under `CORERING_REQUIRE_FEATURES=1` (CI starts a private cluster and sets
/// both URLs: `scripts/pg_private.sh`).
#[track_caller]
fn db_url(var: &str) -> Option<String> {
    let url = std::env::var(var).ok().filter(|url| !url.is_empty());
    runtime::ext::testing::require(&format!("a PostgreSQL server ({var})"), url.is_some());
    url
}

/// axum needs `Send` handler futures and state: the pool and `get` are `Send`.
#[test]
fn pool_and_get_are_send() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let pool = Pool::builder(postgres::parse("host=127.0.0.1 user=u").expect("parses")).build();
    send_sync(&pool);
    send(&pool.get());
}

#[test]
fn outside_a_runtime_is_an_error() {
    let pool = Pool::builder(postgres::parse("host=127.0.0.1 user=u").expect("parses")).build();
    // Nothing to wait for: the first poll answers.
    let mut get = std::pin::pin!(pool.get());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let std::task::Poll::Ready(res) = get.as_mut().poll(&mut cx) else {
        panic!("get waited outside of a runtime");
    };
    let err = res.expect_err("no runtime");
    assert!(err.to_string().contains("outside of a runtime"), "{err}");
}

#[test]
fn bad_configurations_are_invalid_input() {
    block_on(async {
        for bad in [
            "postgres://u@127.0.0.1:notaport/db",
            "host=127.0.0.1 port=",
            "user=nobody dbname=x",
            "host=a,b hostaddr=127.0.0.1 user=u",
            "host=127.0.0.1 port=1,2 user=u",
            "host=127.0.0.1 user=u sslmode=require",
        ] {
            let err = postgres::connect(bad).await.expect_err(bad);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}: {err}");
            assert!(
                err.to_string()
                    .starts_with("invalid postgres configuration: "),
                "{bad}: {err}"
            );
        }
    });
}

#[test]
fn refused_connection_names_the_address() {
    block_on(async {
        // A port that was just free: nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let url = format!("postgres://u:p@127.0.0.1:{port}/db");
        let err = postgres::connect(&url).await.expect_err("nothing listens");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("postgres at 127.0.0.1:{port}: ")),
            "{err}"
        );
        assert!(!err.to_string().contains(":p@"), "no password: {err}");
        // A pool made lazily fails its `get` the same way, every time, and does not hang.
        let pool = Pool::builder(postgres::parse(&url).expect("parses"))
            .size(2)
            .build();
        for _ in 0..3 {
            let err = pool.get().await.expect_err("nothing listens");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
        }
        // `connect` opens every connection up front, so it fails too.
        let err = Pool::builder(postgres::parse(&url).expect("parses"))
            .connect()
            .await
            .expect_err("nothing listens");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    });
}

/// A server that never answers: `connect_timeout` ends the attempt with `TimedOut`, and
/// requests that queue on the slot meanwhile share that one attempt (one connection).
#[test]
fn silent_server_times_out_once_for_every_waiter() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    block_on(async {
        let mut config =
            postgres::parse(&format!("host=127.0.0.1 port={port} user=u")).expect("parses");
        config.connect_timeout(Duration::from_millis(200));
        let pool = Pool::builder(config).size(1).build();
        let results = futures::future::join_all((0..4).map(|_| pool.get())).await;
        for res in results {
            let err = res.expect_err("the server never answers");
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
            assert!(
                err.to_string().starts_with(&format!(
                    "postgres at 127.0.0.1:{port}: no connection within"
                )),
                "{err}"
            );
        }
    });
    // The kernel queued every connection made; there was one.
    listener.set_nonblocking(true).expect("nonblocking");
    let mut made = 0;
    while listener.accept().is_ok() {
        made += 1;
    }
    assert_eq!(made, 1, "one attempt for the four waiting requests");
}

#[test]
fn unix_socket_that_does_not_exist_is_not_found() {
    block_on(async {
        let err = postgres::connect("host=/nonexistent/corering user=u")
            .await
            .expect_err("no socket");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(
            err.to_string()
                .starts_with("postgres at /nonexistent/corering/.s.PGSQL.5432: "),
            "{err}"
        );
    });
}

async fn sum(client: &postgres::Client) -> i32 {
    client
        .query_one("SELECT $1::INT + 1", &[&41i32])
        .await
        .expect("a query")
        .get(0)
}

#[test]
fn queries_over_tcp_and_unix() {
    let Some(url) = db_url("CORERING_PG_URL") else {
        return;
    };
    block_on(async {
        let client = postgres::connect(&url).await.expect("connects");
        assert_eq!(sum(&client).await, 42);
        // Pipelined: several queries in flight on one connection.
        let (a, b, c) = futures::join!(sum(&client), sum(&client), sum(&client));
        assert_eq!((a, b, c), (42, 42, 42));
        if let Some(unix) = db_url("CORERING_PG_UNIX_URL") {
            let client = postgres::connect(&unix).await.expect("connects over Unix");
            assert_eq!(sum(&client).await, 42);
        }
    });
}

#[test]
fn wrong_database_is_not_found() {
    let Some(url) = db_url("CORERING_PG_URL") else {
        return;
    };
    block_on(async {
        let mut config = postgres::parse(&url).expect("parses");
        config.dbname("corering_no_such_database");
        let err = postgres::connect_config(&config)
            .await
            .expect_err("no such database");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(
            err.to_string().contains("corering_no_such_database"),
            "{err}"
        );
        // With password authentication (as tfb_check.sh's cluster has over TCP), a wrong
        // password is PermissionDenied.
        let mut config = postgres::parse(&url).expect("parses");
        config.password("corering-wrong-password");
        let refused = postgres::connect_config(&config).await.err();
        if runtime::ext::testing::require(
            "password authentication over TCP (the server trusts this user)",
            refused.is_some(),
        ) {
            let err = refused.unwrap();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        }
    });
}

#[test]
fn pool_round_robin_setup_and_reconnect() {
    let Some(url) = db_url("CORERING_PG_URL") else {
        return;
    };
    block_on(async {
        let metrics = runtime::Handle::current();
        let baseline = alive_tasks(&metrics).await;
        let setups = Arc::new(AtomicUsize::new(0));
        let counted = setups.clone();
        let pool = Pool::builder(postgres::parse(&url).expect("parses"))
            .size(3)
            .setup(move |client| {
                counted.fetch_add(1, Ordering::Relaxed);
                Box::pin(async move {
                    client
                        .prepare("SELECT pg_backend_pid()")
                        .await
                        .map_err(|e| to_io_error(e, "prepare"))
                })
            })
            .connect()
            .await
            .expect("connects");
        assert_eq!((pool.size(), setups.load(Ordering::Relaxed)), (3, 3));
        // Three distinct connections, in turn, then the first again.
        let mut pids = Vec::new();
        for _ in 0..3 {
            let conn = pool.get().await.expect("open");
            let pid: i32 = conn.query_one(conn.state(), &[]).await.expect("pid").get(0);
            pids.push(pid);
        }
        assert!(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2]);
        let first = pool.get().await.expect("open");
        let pid: i32 = first
            .query_one(first.state(), &[])
            .await
            .expect("pid")
            .get(0);
        assert_eq!(pid, pids[0]);

        // The server ends the first connection; the pool replaces it on its next turn.
        let admin = postgres::connect(&url).await.expect("connects");
        let ended: bool = admin
            .query_one("SELECT pg_terminate_backend($1)", &[&pids[0]])
            .await
            .expect("terminate")
            .get(0);
        assert!(ended);
        // Bounded wait for the driver task to see the close.
        for _ in 0..500 {
            if first.is_closed() {
                break;
            }
            runtime::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            first.is_closed(),
            "the terminated connection is seen closed"
        );
        drop(first);
        pool.get().await.expect("second");
        pool.get().await.expect("third");
        let fresh = pool.get().await.expect("reconnects");
        let pid: i32 = fresh
            .query_one(fresh.state(), &[])
            .await
            .expect("pid")
            .get(0);
        assert_ne!(pid, pids[0]);
        assert_eq!(
            setups.load(Ordering::Relaxed),
            4,
            "the setup ran again for the new connection"
        );
        // Nothing leaked: once the clients are gone, every connection's driver task ends
        // (the terminated one's included), back to the tasks alive before the pool.
        drop((fresh, pool, admin));
        let mut alive = alive_tasks(&metrics).await;
        for _ in 0..500 {
            if alive == baseline {
                break;
            }
            runtime::time::sleep(Duration::from_millis(10)).await;
            alive = alive_tasks(&metrics).await;
        }
        assert_eq!(alive, baseline, "every connection's driver task ended");
    });
}

/// Tasks alive on the runtime, as its metrics publish them (each core publishes at least
/// every 10 ms while busy, and when it falls idle: a short sleep lets it).
async fn alive_tasks(handle: &runtime::Handle) -> usize {
    runtime::time::sleep(Duration::from_millis(30)).await;
    handle.metrics().num_alive_tasks()
}
