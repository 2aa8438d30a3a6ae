//! The axum app of the `axum` binary (on this runtime) and of `axum-tokio` (the same app on
//! tokio, for `scripts/axum_bench.sh`): one set of handlers, parameterized over what differs
//! between the two runtimes, [`AppRuntime`] (the sleep of the streaming route) and the core
//! id of [`router`]'s per-core state.
//!
//! Routes:
//! - `GET /`: `Hello, World!` as `text/plain` (TechEmpower's plaintext shape);
//! - `GET /json`: `{"message":"Hello, World!"}` as `application/json` (its json shape);
//! - `GET /greet/{name}?times=N`: `Hello, NAME!` N times (1 to 100, default 1), one a line:
//!   the `Path` and `Query` extractors;
//! - `GET /stats`: `{"core":C,"requests":N}`, the requests this core's app has served (the
//!   per-core state);
//! - `GET /stream?chunks=N&ms=M`: a streaming body of N chunks (`chunk I\n`, at most 1000),
//!   M ms apart (at most 10,000), on the runtime's own sleep;
//! - `POST /echo`: the request body back, up to [`ECHO_LIMIT`] bytes; `413` above it
//!   (`DefaultBodyLimit`);
//! - `GET /metrics`: the runtime's metrics in the Prometheus text format, one series per
//!   core with a `core` label ([`runtime::RuntimeMetrics::prometheus`]); `404` on tokio;
//! - anything else: `404`; a known path with the wrong method: `405`.
//!
//! Everything a handler awaits is `Send` (axum requires it of handler futures, whichever
//! runtime serves them): the per-core counter is an atomic, and so is the sleep.

use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

/// The largest body `POST /echo` takes; a larger one gets `413 Payload Too Large`.
pub const ECHO_LIMIT: usize = 64 * 1024;
/// The body of `GET /`.
pub const HELLO: &str = "Hello, World!";
/// At most this many chunks from `/stream`.
pub const MAX_CHUNKS: u32 = 1000;
/// At most this many milliseconds between two chunks of `/stream`.
pub const MAX_CHUNK_MS: u64 = 10_000;
/// At most this many greetings from `/greet/{name}`.
pub const MAX_TIMES: u32 = 100;

/// What the handlers need of the runtime serving them.
pub trait AppRuntime: Send + Sync + 'static {
    /// A sleep future of this runtime. It must be `Send`: it is awaited in a response body,
    /// which axum requires to be `Send`.
    type Sleep: Future<Output = ()> + Send + 'static;

    /// Completes after `duration`, on this runtime's timers.
    fn sleep(duration: Duration) -> Self::Sleep;

    /// The runtime's metrics in the Prometheus text format, if it has them.
    fn metrics() -> Option<String> {
        None
    }
}

/// This crate's runtime: [`runtime::time::sleep`] (a timer on the current core's timer map,
/// no SQE per timer).
#[derive(Debug, Clone, Copy)]
pub struct Uring;

impl AppRuntime for Uring {
    type Sleep = runtime::time::Sleep;

    fn sleep(duration: Duration) -> runtime::time::Sleep {
        runtime::time::sleep(duration)
    }

    fn metrics() -> Option<String> {
        runtime::Handle::try_current()
            .ok()
            .map(|h| h.metrics().prometheus())
    }
}

/// One core's state: its id and how many requests its app has served.
#[derive(Debug)]
pub struct CoreState<R> {
    core: usize,
    requests: AtomicU64,
    runtime: PhantomData<fn() -> R>,
}

impl<R> CoreState<R> {
    /// Requests served by this core's app so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// The app for one core: every route, with a request counter shared by the core's
/// connections. Call it once per core (`corering_net::hyper::Builder::serve_with` does); on tokio,
/// once for the whole runtime (then `core` is just a label).
pub fn router<R: AppRuntime>(core: usize) -> Router {
    let state = Arc::new(CoreState::<R> {
        core,
        requests: AtomicU64::new(0),
        runtime: PhantomData,
    });
    let counter = state.clone();
    Router::new()
        .route("/", get(hello))
        .route("/json", get(json))
        .route("/greet/{name}", get(greet))
        .route("/stats", get(stats::<R>))
        .route("/metrics", get(metrics::<R>))
        .route("/stream", get(stream::<R>))
        .route("/echo", post(echo).layer(DefaultBodyLimit::max(ECHO_LIMIT)))
        .with_state(state)
        // Counts every request, unknown paths included. `map_request` adds no allocation:
        // axum boxes each route's service once anyway.
        .layer(tower::util::MapRequestLayer::new(
            move |req: axum::extract::Request| {
                counter.requests.fetch_add(1, Ordering::Relaxed);
                req
            },
        ))
}

async fn hello() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain")], HELLO)
}

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

async fn json() -> Json<Message> {
    Json(Message { message: HELLO })
}

#[derive(Deserialize)]
struct GreetParams {
    times: Option<u32>,
}

async fn greet(Path(name): Path<String>, Query(params): Query<GreetParams>) -> Response {
    let times = params.times.unwrap_or(1);
    if times == 0 || times > MAX_TIMES {
        let msg = format!("times must be 1 to {MAX_TIMES}\n");
        return (StatusCode::BAD_REQUEST, msg).into_response();
    }
    let line = format!("Hello, {name}!\n");
    line.repeat(times as usize).into_response()
}

#[derive(Serialize)]
struct Stats {
    core: usize,
    requests: u64,
}

async fn stats<R: AppRuntime>(State(state): State<Arc<CoreState<R>>>) -> Json<Stats> {
    Json(Stats {
        core: state.core,
        requests: state.requests(),
    })
}

/// The Prometheus exposition: every core's figures, as any core's handler sees them.
async fn metrics<R: AppRuntime>() -> Response {
    match R::metrics() {
        Some(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[derive(Deserialize)]
struct StreamParams {
    chunks: Option<u32>,
    ms: Option<u64>,
}

async fn stream<R: AppRuntime>(Query(params): Query<StreamParams>) -> Response {
    let chunks = params.chunks.unwrap_or(5).min(MAX_CHUNKS);
    let gap = Duration::from_millis(params.ms.unwrap_or(100).min(MAX_CHUNK_MS));
    // Chunk 0 at once, then one every `gap`: each sleep is the serving runtime's own.
    let body = futures::stream::unfold(0u32, move |i| async move {
        if i == chunks {
            return None;
        }
        if i > 0 {
            R::sleep(gap).await;
        }
        Some((
            Ok::<_, Infallible>(Bytes::from(format!("chunk {i}\n"))),
            i + 1,
        ))
    });
    (
        [(header::CONTENT_TYPE, "text/plain")],
        Body::from_stream(body),
    )
        .into_response()
}

async fn echo(body: Bytes) -> Bytes {
    body
}
