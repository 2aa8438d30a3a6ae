//! TechEmpower's six test types on axum and tokio-postgres, written once for both runtimes:
//! the `tfb` binary serves them on this runtime (one [`Pool`] per core, made in
//! `serve_with_async`'s per-core factory), `tfb-tokio` (feature `tokio-peer`) on tokio, for
//! `scripts/tfb_bench.sh`. `scripts/tfb_check.sh` checks them against TechEmpower's rules
//! with a private PostgreSQL cluster.
//!
//! Routes ([`router`]):
//! - `GET /plaintext`: `Hello, World!`, `text/plain` (HTTP/1.1 pipelining works: the server
//!   flushes once per batch of pipelined requests);
//! - `GET /json`: `{"message":"Hello, World!"}`, serialized per request;
//! - `GET /db`: one random row of `world`, `{"id":N,"randomNumber":M}`;
//! - `GET /queries?queries=N`: N random rows, each its own query (pipelined on the
//!   connection); N is clamped to 1..=500, and 1 when missing or not a number
//!   ([`parse_queries`]);
//! - `GET /fortunes`: the `fortune` rows plus one added at request time, sorted by message,
//!   HTML-escaped, in TechEmpower's template ([`fortunes_html`]);
//! - `GET /updates?queries=N`: N random rows read one by one, given new random numbers, and
//!   written back in one batch statement;
//! - anything else: 404.
//!
//! Every response has a `Server` header ([`SERVER`]); hyper adds `Date` and
//! `Content-Length`. A database error is a `500` with a short text body, never a panic.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod cli;
mod html;
mod queries;

use std::future::Future;
use std::io;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use corering_net::postgres::{to_io_error, Pool, Pooled};
use serde::Serialize;
use tokio_postgres::{Client, Statement};

pub use html::{escape_html, fortunes_html, Fortune, EXTRA_FORTUNE};
pub use queries::{parse_queries, random_id, MAX_QUERIES};

/// The `Server` header of every response.
pub const SERVER: &str = "corering";
/// The body of `/plaintext` and the message of `/json`.
pub const HELLO: &str = "Hello, World!";
/// The database the tests use, as TechEmpower's toolset sets it up.
pub const DEFAULT_DB_URL: &str =
    "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world";

/// The prepared statements of one connection.
#[derive(Debug, Clone)]
pub struct Statements {
    world: Statement,
    fortunes: Statement,
    update: Statement,
}

impl Statements {
    /// Prepares the three statements on `client`.
    ///
    /// # Errors
    /// The server's error for a statement (a missing table, say).
    pub async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        let world = client
            .prepare("SELECT id, randomnumber FROM world WHERE id = $1")
            .await?;
        let fortunes = client.prepare("SELECT id, message FROM fortune").await?;
        // One statement for the whole batch: ids and numbers as two arrays, sorted by id so
        // concurrent batches lock rows in the same order.
        let update = client
            .prepare(
                "UPDATE world SET randomnumber = new.randomnumber \
                 FROM (SELECT unnest($1::int4[]) AS id, unnest($2::int4[]) AS randomnumber) AS new \
                 WHERE world.id = new.id",
            )
            .await?;
        Ok(Statements {
            world,
            fortunes,
            update,
        })
    }
}

/// A connection with its statements, as a [`Db`] hands it out.
pub trait DbConn: Send + Sync + 'static {
    /// The client.
    fn client(&self) -> &Client;
    /// Its prepared statements.
    fn statements(&self) -> &Statements;
}

impl DbConn for Pooled<Statements> {
    fn client(&self) -> &Client {
        Pooled::client(self)
    }

    fn statements(&self) -> &Statements {
        self.state()
    }
}

/// Where the handlers get a connection: this runtime's [`Pool`], or tokio's clients in
/// `tfb-tokio`.
pub trait Db: Clone + Send + Sync + 'static {
    /// The connection type.
    type Conn: DbConn;
    /// A connection for one request.
    fn conn(&self) -> impl Future<Output = io::Result<Arc<Self::Conn>>> + Send;
}

impl Db for Pool<Statements> {
    type Conn = Pooled<Statements>;

    fn conn(&self) -> impl Future<Output = io::Result<Arc<Pooled<Statements>>>> + Send {
        self.get()
    }
}

/// A [`Pool`] of `size` connections to `config`, each with its [`Statements`] prepared,
/// opened now as far as the database answers: a connection that fails is reopened by the
/// request that next needs it, so the server starts (and serves `/plaintext` and `/json`)
/// with the database down, and its database routes recover when it comes up.
pub async fn pool(config: tokio_postgres::Config, size: usize) -> Pool<Statements> {
    let pool = Pool::builder(config)
        .size(size)
        .setup(|client| {
            Box::pin(async move {
                Statements::prepare(client)
                    .await
                    .map_err(|e| to_io_error(e, "preparing the statements"))
            })
        })
        .build();
    for _ in 0..pool.size() {
        if let Err(e) = pool.get().await {
            eprintln!("tfb: database not ready yet: {e}");
            break;
        }
    }
    pool
}

/// The app: the six routes on `db`, a `Server` header on every response.
pub fn router<D: Db>(db: D) -> Router {
    Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/db", get(single::<D>))
        .route("/queries", get(queries::<D>))
        .route("/fortunes", get(fortunes::<D>))
        .route("/updates", get(updates::<D>))
        .with_state(db)
        .layer(tower::util::MapResponseLayer::new(
            |mut res: Response| -> Response {
                res.headers_mut()
                    .insert(header::SERVER, HeaderValue::from_static(SERVER));
                res
            },
        ))
}

async fn plaintext() -> Response {
    ([(header::CONTENT_TYPE, "text/plain")], HELLO).into_response()
}

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

async fn json() -> Json<Message> {
    Json(Message { message: HELLO })
}

/// A row of `world`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct World {
    /// Its id, 1 to 10,000.
    pub id: i32,
    /// Its number, 1 to 10,000.
    #[serde(rename = "randomNumber")]
    pub random_number: i32,
}

/// A database failure: a 500 with a short text body (the detail goes to stderr).
fn db_error(e: impl std::fmt::Display) -> Response {
    eprintln!("tfb: database error: {e}");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain")],
        "database error",
    )
        .into_response()
}

async fn world<C: DbConn>(conn: &C, id: i32) -> Result<World, tokio_postgres::Error> {
    let row = conn
        .client()
        .query_one(&conn.statements().world, &[&id])
        .await?;
    Ok(World {
        id: row.try_get(0)?,
        random_number: row.try_get(1)?,
    })
}

/// `n` random worlds, one query each, all in flight at once on the connection.
async fn worlds<C: DbConn>(conn: &C, n: usize) -> Result<Vec<World>, tokio_postgres::Error> {
    futures::future::try_join_all((0..n).map(|_| world(conn, random_id()))).await
}

async fn single<D: Db>(State(db): State<D>) -> Response {
    let conn = match db.conn().await {
        Ok(conn) => conn,
        Err(e) => return db_error(e),
    };
    match world(&*conn, random_id()).await {
        Ok(w) => Json(w).into_response(),
        Err(e) => db_error(e),
    }
}

async fn queries<D: Db>(State(db): State<D>, RawQuery(query): RawQuery) -> Response {
    let n = parse_queries(query.as_deref());
    let conn = match db.conn().await {
        Ok(conn) => conn,
        Err(e) => return db_error(e),
    };
    match worlds(&*conn, n).await {
        Ok(ws) => Json(ws).into_response(),
        Err(e) => db_error(e),
    }
}

async fn fortunes<D: Db>(State(db): State<D>) -> Response {
    let conn = match db.conn().await {
        Ok(conn) => conn,
        Err(e) => return db_error(e),
    };
    let rows = match conn.client().query(&conn.statements().fortunes, &[]).await {
        Ok(rows) => rows,
        Err(e) => return db_error(e),
    };
    let mut list = Vec::with_capacity(rows.len() + 1);
    for row in rows {
        match (row.try_get(0), row.try_get(1)) {
            (Ok(id), Ok(message)) => list.push(Fortune { id, message }),
            (Err(e), _) | (_, Err(e)) => return db_error(e),
        }
    }
    let body = fortunes_html(list);
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        Body::from(body),
    )
        .into_response()
}

async fn updates<D: Db>(State(db): State<D>, RawQuery(query): RawQuery) -> Response {
    let n = parse_queries(query.as_deref());
    let conn = match db.conn().await {
        Ok(conn) => conn,
        Err(e) => return db_error(e),
    };
    let mut ws = match worlds(&*conn, n).await {
        Ok(ws) => ws,
        Err(e) => return db_error(e),
    };
    for w in &mut ws {
        w.random_number = random_id();
    }
    let (ids, numbers) = queries::update_batch(&mut ws);
    match conn
        .client()
        .execute(&conn.statements().update, &[&ids, &numbers])
        .await
    {
        Ok(_) => Json(ws).into_response(),
        Err(e) => db_error(e),
    }
}
