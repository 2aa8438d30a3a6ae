//! An [HttpArena](https://github.com/MDA2AV/HttpArena) entry: one axum 0.8 app serving
//! HttpArena's profiles, written once for two runtimes. The `arena` binary serves it on this
//! runtime (`corering_net::hyper` on every core); `arena-tokio` (feature `tokio-peer`) serves
//! the same handlers on tokio, for `scripts/arena_bench.sh`.
//!
//! The routes, by profile (HttpArena's production-tier rules: framework APIs, a standard
//! driver and pool, static files read from disk on every request):
//! - `GET|POST /baseline11?a=&b=` (baseline, limited-conn, api-4/16): `a + b` (+ the body's
//!   integer on `POST`, Content-Length or chunked), `text/plain`;
//! - `GET /baseline2?a=&b=` (baseline-h2, baseline-h2c): `a + b`;
//! - `GET /pipeline` (pipelined): `ok`;
//! - `GET /json/{count}?m=` (json, json-comp, json-tls, json-h2c): the first `count` items of
//!   the dataset with `total = price * quantity * m`, serialized per request, compressed
//!   by tower-http's `CompressionLayer` when `Accept-Encoding` asks ([`handlers`]);
//! - `POST /upload` (upload): the body's length, counted by reading it (up to
//!   [`UPLOAD_LIMIT`]; `413` above);
//! - `GET /static/*` (static, static-h2): files from `STATIC_DIR` read from disk per
//!   request (ring ops on `arena`, tower-http's `ServeDir` on `arena-tokio`), with their
//!   precompressed `.br`/`.gz` siblings chosen by `Accept-Encoding`;
//! - `GET /async-db?min=&max=&limit=` (async-db, api-4/16): a price range query on
//!   PostgreSQL ([`db`]);
//! - `GET|POST /crud/items`, `GET|PUT /crud/items/{id}` (crud): list, cached read (200 ms,
//!   Redis or in-process, `X-Cache: HIT|MISS`), upsert, update with invalidation;
//! - `GET /ws` (echo-ws): a WebSocket that echoes every message ([`ws`]);
//! - `benchmark.BenchmarkService/{GetSum,StreamSum,CollectSum,EchoSum}` (unary-grpc,
//!   stream-grpc and their TLS twins): tonic's generated service ([`grpc`]).
//!
//! The ports are HttpArena's: 8080 HTTP/1.1 and h2c (gRPC), 8081 HTTP/1.1 over TLS (ALPN
//! `http/1.1`), 8082 h2c only (a connection that does not open with the HTTP/2 preface is
//! closed), 8443 TLS with ALPN `h2` and `http/1.1`. Settings come from HttpArena's
//! environment variables ([`config::Settings`]).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod app;
pub mod cache;
pub mod config;
pub mod dataset;
pub mod db;
pub mod grpc;
pub mod handlers;
pub mod tls;
pub mod ws;

pub use app::{router, AppState};

/// The largest body `POST /upload` reads: HttpArena's largest upload is 20 MiB; a larger
/// body is refused with `413 Payload Too Large` (before it is read when its
/// `Content-Length` says so).
pub const UPLOAD_LIMIT: usize = 25 * 1024 * 1024;
/// How long an HTTP/1.1 client may take to send a request's headers: a client that
/// trickles them (slowloris) is closed then. hyper's own default (30 s) is for
/// servers behind a proxy; this one faces clients directly.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The `Server` header of every response.
pub const SERVER: &str = "corering";
