//! hyper 1.x on this runtime (the `hyper` feature):
//! - [`serve`] / [`Builder`]: any tower service (an axum `Router` as it is) or hyper service
//!   ([`from_hyper`]) on every core, HTTP/1.1 and HTTP/2 on one port, plain or over TLS
//!   ([`Builder::tls`], feature `tls`), with a graceful shutdown ([`Server`]);
//! - HTTP/1.1 upgrades (WebSocket) on every connection [`serve`] serves: take hyper's
//!   `OnUpgrade` from the request, and read and write the [`Upgraded`](::hyper::upgrade::Upgraded)
//!   connection through [`UpgradedIo`] (futures' or tokio's I/O traits); see [`upgrade`];
//! - [`Client`]: HTTP/1.1 and HTTP/2 (h2c, or by ALPN over TLS) with connection reuse;
//! - [`ServeDir`] (feature `serve-dir`): static files from a directory with tower-http's
//!   `ServeDir` semantics (conditional and range requests, precompressed variants), each
//!   file operation a ring op (`OPENAT2` confined beneath the directory, `STATX`, `READ`,
//!   `CLOSE`); `Send`, so an axum `Router` mounts it with `nest_service`;
//! - the parts both are built from: [`HyperIo`] implements hyper's
//!   [`Read`](::hyper::rt::Read) and [`Write`](::hyper::rt::Write) on a socket of this crate
//!   (or a [`TlsStream`](crate::tls::TlsStream)), [`HyperExecutor`] spawns hyper's
//!   background tasks (HTTP/2 streams, client connections) with [`runtime::spawn_local`],
//!   and [`HyperTimer`] gives hyper timers on [`runtime::time::sleep_until`].
//!
//! The socket side goes through the `futures::io` traits of the stream (see `io::read` and
//! `io::write`): each direction keeps its own buffer and at most one op in flight in the
//! socket between polls, so a poll that hyper drops loses nothing. Reads copy out of the
//! stream's receive buffer ([`AsyncBufRead`](futures::io::AsyncBufRead)) straight into
//! hyper's buffer; writes are write-behind (copied, sent, reported written). hyper's
//! `poll_flush` waits for the send on a client connection; under [`serve`] it does not (the
//! next write or the shutdown does, and reports the send's error), which saves a wake of the
//! connection's task per response.
//!
//! Everything here is single-core: a connection, its hyper state and its tasks stay on the
//! core that accepted (or opened) it, so no `Send` is needed of them, HTTP/2 included.
//!
//! What does not work here: code that calls into a tokio runtime, which is never started.
//! `tokio::time::sleep` or `tokio::spawn` in a handler panics ("there is no reactor
//! running"); so do tower-http's `TimeoutLayer` and tower's `timeout` and `buffer` layers,
//! which use tokio's timer or spawn. Use [`runtime::time::sleep`] and
//! [`runtime::time::timeout`], and [`runtime::spawn_local`], instead.
//!
//! The connection API underneath, one connection by hand:
//!
//! ```no_run
//! use std::convert::Infallible;
//!
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use hyper::{server::conn::http1, service::service_fn, Request, Response};
//! use corering_net::hyper::{HyperIo, HyperTimer};
//!
//! # #[runtime::main]
//! # async fn main() -> std::io::Result<()> {
//! let server = corering_net::serve("127.0.0.1:8080", |stream: corering_net::TcpStream| async move {
//!     let service = service_fn(|_req: Request<hyper::body::Incoming>| async {
//!         Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"hello\n"))))
//!     });
//!     let conn = http1::Builder::new()
//!         .timer(HyperTimer)
//!         .serve_connection(HyperIo::new(stream), service);
//!     if let Err(e) = conn.await {
//!         eprintln!("connection: {e}");
//!     }
//! })?;
//! runtime::signal::ctrl_c().await?;
//! drop(server);
//! # Ok(())
//! # }
//! ```

mod client;
mod rt;
mod serve;
#[cfg(feature = "serve-dir")]
mod serve_dir;
pub mod upgrade;

pub use client::{Client, ClientBuilder};
pub(crate) use rt::SocketIo;
pub use rt::{HyperExecutor, HyperIo, HyperTimer};
pub use serve::{from_hyper, serve, Builder, FromHyper, Rebalance, Server};
#[cfg(feature = "serve-dir")]
pub use serve_dir::{ResponseFuture, ServeDir, ServeDirBody, DEFAULT_CHUNK, WHOLE_FILE_MAX};
pub use upgrade::{UpgradableIo, UpgradedIo};
