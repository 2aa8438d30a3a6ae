//! Serving a tower or hyper service on every core: HTTP/1.1 and HTTP/2 on one port (hyper-util's
//! `auto` connection, which tells them apart by the HTTP/2 preface), over TCP or TLS, with a
//! graceful shutdown.
//!
//! Each core binds its own `SO_REUSEPORT` listener and makes its own service (one clone, or
//! [`Builder::serve_with`]'s factory called on that core); a connection, its hyper state and
//! its HTTP/2 stream tasks live on one core, so nothing here needs `Send` past the factory.
//! An idle HTTP/1.1 connection may move to another core ([`Rebalance`]): its socket and the
//! bytes it received go, and that core serves it with its own service from there on.
//!
//! Every HTTP/1.1 connection supports upgrades (hyper-util's `serve_connection_with_upgrades`):
//! a handler that answers `101 Switching Protocols` takes the connection from the request's
//! `hyper::upgrade::OnUpgrade` (see [`upgrade`](super::upgrade)). An upgraded connection
//! leaves the server's tracking: the graceful shutdown does not wait for it, and closing it
//! (a WebSocket close frame) is its owner's job.
//!
//! Shutdown ([`Server::shutdown`], [`Server::with_graceful_shutdown`]): every core stops
//! accepting and closes its listener, tells each of its connections to finish (an HTTP/1
//! connection closes after its in-flight response, an HTTP/2 one sends `GOAWAY` and
//! finishes its open streams), waits for them up to the grace period, then aborts those
//! left, which closes their sockets.
//!
//! Connections move between cores (see [`Rebalance`]): an idle HTTP/1.1 connection on a
//! core whose CPU is taken by other threads goes to a core whose CPU is free, its socket
//! and the bytes it received with it, and is served there from its next request on.
//!
//! The jobs, one file each: `builder.rs` ([`Builder`]: the settings, and binding a
//! listener per core), `accept.rs` (one core's accept loop, and serving one connection with
//! hyper-util's `auto` connection), `moving.rs` (when a connection is idle enough to move). The [`Server`] handle and the connection tracking for
//! the graceful shutdown are the same as plain [`serve`](crate::serve)'s (`tcp/server.rs`,
//! `tcp/conns.rs`).

mod accept;
mod builder;
mod moving;

pub use crate::tcp::handoff::Rebalance;
pub use crate::tcp::Server;
pub use builder::Builder;
pub(crate) use moving::Watch;

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::server::conn::auto;

use super::HyperExecutor;
use crate::sys::resolve::ToSocketAddrs;

/// A boxed error, as hyper and tower pass them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the HTTP side of every connection is set up: hyper-util's `auto` builder, which the
/// caller may configure further ([`Builder::http`]).
type Configure = Arc<dyn Fn(&mut auto::Builder<HyperExecutor>) + Send + Sync>;

/// Serves `service` on `addr` on every core of the current runtime, HTTP/1.1 and HTTP/2
/// (h2c) on one port; see [`Builder`] for TLS and settings.
///
/// `service` is any tower `Service` of `Request<Incoming>` (an axum `Router` as it is; a
/// hyper service through [`from_hyper`]); it is cloned once per core and once per
/// connection.
///
/// `addr` is resolved once, synchronously, as [`corering_net::serve`](crate::serve()) does:
/// a numeric address without a system call, a host name on this thread (blocking the core,
/// at startup). The first address it resolves to is bound.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Empty, Full};
/// use hyper::{service::service_fn, Request, Response};
/// use corering_net::hyper::{from_hyper, serve, Client};
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let hello = service_fn(|_req: Request<hyper::body::Incoming>| async {
///         Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"hello\n"))))
///     });
///     // Port 0: the kernel picks one port, which every core's listener shares.
///     let server = serve("127.0.0.1:0", from_hyper(hello))?;
///     let uri = format!("http://{}/", server.local_addr()).parse().unwrap();
///     let res = Client::<Empty<Bytes>>::new().get(uri).await?;
///     let body = res.into_body().collect().await.unwrap().to_bytes();
///     assert_eq!(&body[..], b"hello\n");
///     // A real server waits for a signal instead:
///     // `server.with_graceful_shutdown(ctrl_c, grace).await`.
///     server.shutdown(Duration::from_secs(1)).await
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// Outside a runtime; if the address does not resolve or cannot be bound.
pub fn serve<S, B>(addr: impl ToSocketAddrs, service: S) -> io::Result<Server>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    Builder::new().serve(addr, service)
}

/// A hyper service (such as hyper's `service_fn`) as a tower service, for [`serve`].
pub fn from_hyper<S>(service: S) -> FromHyper<S> {
    FromHyper(service)
}

/// A hyper [`Service`](hyper::service::Service) seen as a tower `Service`; made by
/// [`from_hyper`]. Always ready.
#[derive(Debug, Clone, Copy)]
pub struct FromHyper<S>(S);

impl<S, R> tower_service::Service<R> for FromHyper<S>
where
    S: hyper::service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> S::Future {
        hyper::service::Service::call(&self.0, req)
    }
}
