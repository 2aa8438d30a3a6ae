//! A tonic gRPC service on the corering runtime: the `corering.echo.Echo` service of
//! `proto/echo.proto` (a unary method, a server-streaming one and a client-streaming one),
//! served by `grpc-server` through `corering_net::grpc::server()` and called by
//! `grpc-client` through `corering_net::grpc::Channel`. tonic is built without its
//! `transport` feature: no tokio runtime is in these binaries.
//!
//! - [`service`]: the service ([`service::EchoService`]) and [`service::routes`];
//! - [`check`]: the calls `grpc-client` and the tests make, every byte checked;
//! - [`args`]: the binaries' command lines.

pub mod args;
pub mod check;
pub mod service;

/// The generated messages, `EchoClient` and `EchoServer` (tonic-prost-build, `build.rs`).
#[allow(missing_docs, clippy::all)]
pub mod pb {
    tonic::include_proto!("corering.echo");
}

/// The payload of server-stream reply `i` for `seed`: byte `j` is `(seed + 7 i + j) mod 251`.
/// The Python peer in `scripts/grpc_check.sh` computes the same.
pub fn pattern(seed: u32, i: u32, size: usize) -> Vec<u8> {
    let base = (u64::from(seed) + 7 * u64::from(i)) % 251;
    (0..size as u64).map(|j| ((base + j) % 251) as u8).collect()
}
