//! gRPC on this runtime (the `grpc` feature), for tonic or any gRPC stack built on `http`
//! and tower, with no dependency on either:
//!
//! - [`Channel`]: the client side, a tower `Service` over [`hyper::Client`](crate::hyper::Client)
//!   that tonic's generated clients take (`GreeterClient::new(channel)`): one shared HTTP/2
//!   connection per channel, deadlines (`grpc-timeout` and a channel-wide default) ending a
//!   call with `DEADLINE_EXCEEDED`, connection errors as `UNAVAILABLE`.
//! - [`server`] / [`ServerConfig`]: a [`hyper::Builder`](crate::hyper::Builder) preset for
//!   gRPC (HTTP/2 only, keep-alive pings, stream, frame and header limits), and
//!   [`Deadlines`], which ends a call past its `grpc-timeout` with `DEADLINE_EXCEEDED`
//!   (tonic's `Routes` does not when served outside tonic's own transport).
//!
//! A tonic service on every core:
//!
//! ```no_run
//! # #[runtime::main]
//! # async fn main() -> std::io::Result<()> {
//! # let routes = tower_like_routes();
//! // `routes`: `tonic::service::Routes::new(GreeterServer::new(MyGreeter))`.
//! let server = corering_net::grpc::server()
//!     .serve("127.0.0.1:50051", corering_net::grpc::Deadlines::new(routes))?;
//! runtime::signal::shutdown()?.await;
//! server.shutdown(std::time::Duration::from_secs(5)).await
//! # }
//! # #[derive(Clone)] struct R;
//! # impl tower_service::Service<http::Request<hyper::body::Incoming>> for R {
//! #     type Response = http::Response<http_body_util::Empty<bytes::Bytes>>;
//! #     type Error = std::convert::Infallible;
//! #     type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
//! #     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> { std::task::Poll::Ready(Ok(())) }
//! #     fn call(&mut self, _: http::Request<hyper::body::Incoming>) -> Self::Future { std::future::ready(Ok(http::Response::new(Default::default()))) }
//! # }
//! # fn tower_like_routes() -> R { R }
//! ```

mod body;
mod channel;
mod server;
mod status;
mod timeout;

pub use body::GrpcBody;
pub use channel::{Channel, ChannelBuilder, ResponseFuture};
pub use server::{server, DeadlineFuture, Deadlines, ServerConfig};
pub use status::{status_response, Code};
pub use timeout::{encode_timeout, parse_timeout, GRPC_TIMEOUT};
