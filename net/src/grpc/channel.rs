//! [`Channel`]: gRPC calls over [`hyper::Client`](crate::hyper::Client), for tonic's
//! generated clients (or any tower-based gRPC client).

use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::uri::{Parts, PathAndQuery};
use http::{Request, Response, Uri};
use http_body::Body;
use hyper::body::Incoming;

use super::status::{status_response, Code};
use super::timeout::{encode_timeout, parse_timeout, GRPC_TIMEOUT};
use super::GrpcBody;
use crate::hyper::Client;

/// A boxed error, as hyper passes them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A gRPC channel to one server: a `tower_service::Service<http::Request<B>>` that tonic's
/// generated clients take (`GreeterClient::new(channel)`), on this runtime.
///
/// - **One HTTP/2 connection**, h2c by prior knowledge, opened on the first call and
///   shared by every call and every clone of the channel (they multiplex as HTTP/2
///   streams); one that closes is replaced on the next call. The channel is `!Send`, like
///   the connection: make one per core.
/// - **Deadlines**: a call ends with `DEADLINE_EXCEEDED` at the earlier of its own
///   `grpc-timeout` (tonic's `Request::set_timeout`) and the channel's
///   [`timeout`](ChannelBuilder::timeout), whether it is waiting for the response head or
///   still streaming the body: the stream is reset (so the server stops) and the response
///   is a trailers-only one with `grpc-status: 4`. The deadline is sent to the server as
///   `grpc-timeout`, so it can stop too.
/// - **Connection errors** (refused, reset, the handshake failed) end the call with
///   `UNAVAILABLE` (`grpc-status: 14`) and the error as its message.
///
/// Requests with a path only (`/pkg.Service/Method`, as a generated client's `new` makes
/// them) go to the channel's origin; an absolute URI (`with_origin`) is used as it is.
///
/// `B` is the request body: `tonic::body::Body` for tonic, inferred from the client.
///
/// With tonic, hand the channel to a generated client (`examples/grpc` does, in
/// `src/bin/grpc-client.rs`): `EchoClient::new(channel)`, then `client.unary(req).await`.
/// Underneath, it is a plain tower service of HTTP requests:
///
/// ```no_run
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use corering_net::grpc::Channel;
/// use http_body_util::Full;
/// use tower::Service;
///
/// # #[runtime::main]
/// # async fn main() -> std::io::Result<()> {
/// let mut channel = Channel::builder("http://127.0.0.1:50051".parse().unwrap())
///     .timeout(Duration::from_secs(5))
///     .build();
/// // One empty message (flag 0, length 0) to a unary method; tonic makes these for you.
/// let req = http::Request::post("/corering.echo.Echo/Unary")
///     .header("content-type", "application/grpc")
///     .header("te", "trailers")
///     .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0])))
///     .unwrap();
/// let res = channel.call(req).await?;
/// // A trailers-only status (deadline, connection error) is in the head; otherwise it is
/// // in the body's trailers.
/// println!("{:?} {:?}", res.status(), res.headers().get("grpc-status"));
/// # Ok(())
/// # }
/// ```
pub struct Channel<B> {
    client: Client<B>,
    origin: Uri,
    timeout: Option<Duration>,
}

impl<B> Clone for Channel<B> {
    fn clone(&self) -> Self {
        Channel {
            client: self.client.clone(),
            origin: self.origin.clone(),
            timeout: self.timeout,
        }
    }
}

impl<B> fmt::Debug for Channel<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("origin", &self.origin)
            .field("timeout", &self.timeout)
            .field("client", &self.client)
            .finish()
    }
}

/// Settings for a [`Channel`].
#[derive(Debug, Clone)]
pub struct ChannelBuilder {
    origin: Uri,
    timeout: Option<Duration>,
}

impl ChannelBuilder {
    /// The deadline of every call that has none of its own, and the longest a call may
    /// take when it has one. None by default: a call without `grpc-timeout` may take
    /// forever.
    pub fn timeout(mut self, timeout: Duration) -> ChannelBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// The channel. Nothing is connected yet: the first call opens the connection.
    pub fn build<B>(self) -> Channel<B> {
        Channel {
            client: Client::builder().http2_prior_knowledge(true).build(),
            origin: self.origin,
            timeout: self.timeout,
        }
    }
}

impl Channel<()> {
    /// Settings for a channel to `origin` (`http://host:port`); [`ChannelBuilder::build`]
    /// picks the body type.
    pub fn builder(origin: Uri) -> ChannelBuilder {
        ChannelBuilder {
            origin,
            timeout: None,
        }
    }
}

impl<B> Channel<B> {
    /// A channel to `origin` (`http://host:port`) with no default deadline.
    pub fn new(origin: Uri) -> Channel<B> {
        Channel::builder(origin).build()
    }

    /// The server this channel calls.
    pub fn origin(&self) -> &Uri {
        &self.origin
    }

    /// How many connections this channel (and its clones) has opened: 1 while the first
    /// one lasts.
    pub fn connections_opened(&self) -> u64 {
        self.client.connections_opened()
    }
}

/// What a [`Channel`] call gives: the response head, with its body cut off at the deadline.
type CallResult = io::Result<Response<GrpcBody<Incoming>>>;

/// The future of a [`Channel`] call: the response head, or a trailers-only status.
pub struct ResponseFuture {
    inner: Pin<Box<dyn Future<Output = CallResult>>>,
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl Future for ResponseFuture {
    type Output = CallResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<B> tower_service::Service<Request<B>> for Channel<B>
where
    B: Body + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<GrpcBody<Incoming>>;
    type Error = io::Error;
    type Future = ResponseFuture;

    /// Always ready: calls multiplex on one connection.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> ResponseFuture {
        let client = self.client.clone();
        let prepared = prepare(req, &self.origin, self.timeout);
        ResponseFuture {
            inner: Box::pin(async move {
                let (req, deadline) = match prepared {
                    Ok(p) => p,
                    Err(e) => return Err(e),
                };
                // One timer for the call: it times the head, then goes on in the body.
                let mut sleep = deadline.map(runtime::time::sleep_until);
                let mut request = pin!(client.request(req));
                let res = poll_fn(|cx| {
                    if let Poll::Ready(res) = request.as_mut().poll(cx) {
                        return Poll::Ready(Some(res));
                    }
                    match sleep.as_mut().map(|s| Pin::new(s).poll(cx)) {
                        Some(Poll::Ready(())) => Poll::Ready(None),
                        _ => Poll::Pending,
                    }
                })
                .await;
                let Some(res) = res else {
                    return Ok(deadline_exceeded());
                };
                match res {
                    Ok(res) => Ok(res.map(|body| GrpcBody::with_sleep(body, sleep))),
                    // A URI the client cannot use: the caller's mistake, not the server's.
                    Err(e) if e.kind() == io::ErrorKind::InvalidInput => Err(e),
                    Err(e) => Ok(status_response(Code::UNAVAILABLE, &e.to_string())),
                }
            }),
        }
    }
}

fn deadline_exceeded<B>() -> Response<GrpcBody<B>> {
    status_response(Code::DEADLINE_EXCEEDED, "deadline exceeded")
}

/// The request with the channel's origin filled in and its deadline in `grpc-timeout`,
/// and that deadline.
fn prepare<B>(
    mut req: Request<B>,
    origin: &Uri,
    default: Option<Duration>,
) -> io::Result<(Request<B>, Option<Instant>)> {
    if req.uri().scheme().is_none() || req.uri().authority().is_none() {
        *req.uri_mut() = with_origin(req.uri(), origin)?;
    }
    let own =
        match req.headers().get(GRPC_TIMEOUT) {
            Some(v) => Some(parse_timeout(v.as_bytes()).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("request: {e}"))
            })?),
            None => None,
        };
    let timeout = match (own, default) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far_future));
    if let Some(t) = timeout {
        req.headers_mut().insert(GRPC_TIMEOUT, encode_timeout(t));
    }
    Ok((req, deadline))
}

/// About 30 years from now: what a timeout too large for `Instant` means.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

/// `uri`'s path and query on `origin`'s scheme and authority.
fn with_origin(uri: &Uri, origin: &Uri) -> io::Result<Uri> {
    let mut parts = Parts::default();
    parts.scheme = origin.scheme().cloned();
    parts.authority = origin.authority().cloned();
    parts.path_and_query = Some(
        uri.path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/")),
    );
    Uri::from_parts(parts).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("channel origin {origin} (http://host:port needed) with {uri}: {e}"),
        )
    })
}
