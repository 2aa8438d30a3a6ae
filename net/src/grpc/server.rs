//! The server side: [`ServerConfig`] (HTTP/2 settings for gRPC, as a preset
//! [`hyper::Builder`](crate::hyper::Builder)) and [`Deadlines`] (`grpc-timeout` enforced).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use http_body::Body;
use hyper_util::server::conn::auto;
use runtime::time::Sleep;

use super::status::{status_response, Code};
use super::timeout::{parse_timeout, GRPC_TIMEOUT};
use super::GrpcBody;
use crate::hyper::{Builder, HyperExecutor};

/// A [`hyper::Builder`](crate::hyper::Builder) for gRPC with [`ServerConfig`]'s defaults:
/// serve a tonic `Routes` (wrapped in [`Deadlines`]) with its `serve` or `serve_with`, on
/// every core. Add TLS with its `tls`.
pub fn server() -> Builder {
    ServerConfig::new().builder()
}

/// The HTTP/2 settings of a gRPC server, in one place: h2c by prior knowledge, or h2 over
/// TLS (with `Builder::tls`, feature `tls`, and `h2` in the ALPN list).
///
/// The server is HTTP/2-only: a connection that does not open with the HTTP/2 preface (an
/// HTTP/1.1 request) is closed without reaching the service.
///
/// | setting | default |
/// | --- | --- |
/// | [`keep_alive_interval`](ServerConfig::keep_alive_interval) | 60 s: a PING on a connection idle that long |
/// | [`keep_alive_timeout`](ServerConfig::keep_alive_timeout) | 20 s: no PING ack by then closes the connection |
/// | [`max_concurrent_streams`](ServerConfig::max_concurrent_streams) | 256 calls at once per connection |
/// | [`max_frame_size`](ServerConfig::max_frame_size) | 16 KiB (HTTP/2's default) |
/// | [`max_header_list_size`](ServerConfig::max_header_list_size) | 16 KiB of request headers (metadata) |
/// | [`initial_stream_window_size`](ServerConfig::initial_stream_window_size) | 1 MiB |
/// | [`initial_connection_window_size`](ServerConfig::initial_connection_window_size) | 2 MiB |
///
/// ```no_run
/// # #[runtime::main]
/// # async fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// let builder = corering_net::grpc::ServerConfig::new()
///     .keep_alive_interval(Some(Duration::from_secs(30)))
///     .max_concurrent_streams(1000)
///     .builder();
/// // builder.serve("0.0.0.0:50051", corering_net::grpc::Deadlines::new(routes))?
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ServerConfig {
    keep_alive_interval: Option<Duration>,
    keep_alive_timeout: Duration,
    max_concurrent_streams: u32,
    max_frame_size: u32,
    max_header_list_size: u32,
    stream_window: u32,
    connection_window: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig::new()
    }
}

impl ServerConfig {
    /// The defaults in the table above.
    pub fn new() -> ServerConfig {
        ServerConfig {
            keep_alive_interval: Some(Duration::from_secs(60)),
            keep_alive_timeout: Duration::from_secs(20),
            max_concurrent_streams: 256,
            max_frame_size: 16 * 1024,
            max_header_list_size: 16 * 1024,
            stream_window: 1024 * 1024,
            connection_window: 2 * 1024 * 1024,
        }
    }

    /// How long a connection may be idle before the server PINGs it (`None`: never).
    pub fn keep_alive_interval(mut self, interval: Option<Duration>) -> ServerConfig {
        self.keep_alive_interval = interval;
        self
    }

    /// How long the server waits for a PING's ack before closing the connection.
    pub fn keep_alive_timeout(mut self, timeout: Duration) -> ServerConfig {
        self.keep_alive_timeout = timeout;
        self
    }

    /// How many calls (HTTP/2 streams) a client may have open at once on one connection;
    /// more are refused (`REFUSED_STREAM`, which clients retry or report as `UNAVAILABLE`).
    pub fn max_concurrent_streams(mut self, max: u32) -> ServerConfig {
        self.max_concurrent_streams = max;
        self
    }

    /// The largest HTTP/2 frame the server accepts (16 KiB to 16 MiB - 1; hyper clamps).
    pub fn max_frame_size(mut self, max: u32) -> ServerConfig {
        self.max_frame_size = max;
        self
    }

    /// The most request header bytes (HTTP/2's `SETTINGS_MAX_HEADER_LIST_SIZE`): gRPC
    /// metadata beyond it fails the call.
    pub fn max_header_list_size(mut self, max: u32) -> ServerConfig {
        self.max_header_list_size = max;
        self
    }

    /// Each call's receive window: how much of a request a client may send before the
    /// server reads it.
    pub fn initial_stream_window_size(mut self, size: u32) -> ServerConfig {
        self.stream_window = size;
        self
    }

    /// The connection's receive window, shared by its calls.
    pub fn initial_connection_window_size(mut self, size: u32) -> ServerConfig {
        self.connection_window = size;
        self
    }

    /// Applies these settings to one connection builder (what [`builder`](Self::builder)
    /// does on every core): HTTP/2 only (see above), then the settings.
    pub fn configure(&self, http: &mut auto::Builder<HyperExecutor>) {
        // `http2_only` takes the builder by value: swap it out (its timer goes with it).
        let taken = std::mem::replace(http, auto::Builder::new(HyperExecutor));
        *http = if taken.is_http1_available() && taken.is_http2_available() {
            taken.http2_only()
        } else {
            taken
        };
        http.http2()
            .keep_alive_interval(self.keep_alive_interval)
            .keep_alive_timeout(self.keep_alive_timeout)
            .max_concurrent_streams(self.max_concurrent_streams)
            .max_frame_size(self.max_frame_size)
            .max_header_list_size(self.max_header_list_size)
            .initial_stream_window_size(self.stream_window)
            .initial_connection_window_size(self.connection_window);
    }

    /// A [`hyper::Builder`](crate::hyper::Builder) with these settings on every connection.
    pub fn builder(self) -> Builder {
        Builder::new().http(move |http| self.configure(http))
    }
}

/// A gRPC service with its calls' deadlines enforced: a call with a `grpc-timeout` header
/// (or, with [`max_timeout`](Deadlines::max_timeout), any call) that has not finished
/// by its deadline is stopped (the service's future or response body is dropped) and ends
/// with `grpc-status: 4` (`DEADLINE_EXCEEDED`): a trailers-only response if the head was
/// not sent yet, trailers after the last whole frame otherwise. A malformed `grpc-timeout`
/// is refused with `INTERNAL`, as gRPC's own servers do.
///
/// tonic's `Routes` reads `grpc-timeout` only in tonic's own transport; wrap it in this
/// when serving it with [`server`].
#[derive(Debug, Clone)]
pub struct Deadlines<S> {
    inner: S,
    max: Option<Duration>,
}

impl<S> Deadlines<S> {
    /// `inner` with the deadlines its callers send.
    pub fn new(inner: S) -> Deadlines<S> {
        Deadlines { inner, max: None }
    }

    /// The longest any call may take, with or without its own `grpc-timeout`.
    pub fn max_timeout(mut self, max: Duration) -> Deadlines<S> {
        self.max = Some(max);
        self
    }

    /// The wrapped service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for Deadlines<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
    ResB: Body + Unpin,
{
    type Response = Response<GrpcBody<ResB>>;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> DeadlineFuture<S::Future> {
        let own = match req
            .headers()
            .get(GRPC_TIMEOUT)
            .map(|v| parse_timeout(v.as_bytes()))
        {
            None => None,
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => {
                return DeadlineFuture {
                    state: State::Refused {
                        message: Some(e.to_string()),
                    },
                }
            }
        };
        let timeout = match (own, self.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        DeadlineFuture {
            state: State::Calling {
                future: self.inner.call(req),
                sleep: deadline.map(runtime::time::sleep_until),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of a [`Deadlines`] call.
    pub struct DeadlineFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Calling {
            #[pin]
            future: F,
            // One timer for the call: it times the head, then goes on in the body.
            sleep: Option<Sleep>,
        },
        /// A malformed `grpc-timeout`: this message in an `INTERNAL` status.
        Refused { message: Option<String> },
    }
}

impl<F> fmt::Debug for DeadlineFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let deadline = match &self.state {
            State::Calling { sleep, .. } => sleep.as_ref().map(Sleep::deadline),
            State::Refused { .. } => None,
        };
        f.debug_struct("DeadlineFuture")
            .field("deadline", &deadline)
            .finish_non_exhaustive()
    }
}

impl<F, ResB, E> Future for DeadlineFuture<F>
where
    F: Future<Output = Result<Response<ResB>, E>>,
    ResB: Body + Unpin,
{
    type Output = Result<Response<GrpcBody<ResB>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Refused { message } => {
                let message = message.take().unwrap_or_default();
                Poll::Ready(Ok(status_response(Code::INTERNAL, &message)))
            }
            StateProj::Calling { future, sleep } => {
                if let Poll::Ready(res) = future.poll(cx) {
                    let sleep = sleep.take();
                    return Poll::Ready(res.map(|r| r.map(|b| GrpcBody::with_sleep(b, sleep))));
                }
                if let Some(timer) = sleep {
                    if Pin::new(timer).poll(cx).is_ready() {
                        // The service's future is dropped with this one: the call stops.
                        let res = status_response(Code::DEADLINE_EXCEEDED, "deadline exceeded");
                        return Poll::Ready(Ok(res));
                    }
                }
                Poll::Pending
            }
        }
    }
}
