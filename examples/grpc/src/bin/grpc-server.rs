//! `grpc-server`: the `corering.echo.Echo` service (tonic's `Routes`) on every core of this
//! runtime, through `corering_net::grpc::server()` (HTTP/2 only, keep-alive and limits
//! preset) with `grpc-timeout` enforced by `corering_net::grpc::Deadlines`.
//!
//! `cargo run --release -p grpc-example --bin grpc-server -- --addr 127.0.0.1:50051`, then
//! `grpc-client --addr http://127.0.0.1:50051`. Ctrl-C or SIGTERM stops it gracefully.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use corering_net::grpc::{self, Deadlines};
use grpc_example::args::Args;
use grpc_example::service;

const USAGE: &str = "\
grpc-server: the corering.echo.Echo gRPC service (tonic) on io_uring, h2c

usage: grpc-server [--addr ADDR] [--cores N] [--grace SECS]

  --addr ADDR    address to listen on; port 0 picks one (default 127.0.0.1:50051)
  --cores N      cores to serve on (default: every CPU this process may use)
  --grace SECS   on Ctrl-C or SIGTERM, how long calls in flight may take (default 5)
  -h, --help     this text
";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE, &["addr", "cores", "grace"], &[]);
    let addr: SocketAddr = args.value("addr", SocketAddr::from(([127, 0, 0, 1], 50051)));
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cores: usize = args.value("cores", all);
    if cores == 0 {
        args.usage_error("--cores must be at least 1");
    }
    let grace = Duration::try_from_secs_f64(args.value("grace", 5.0))
        .unwrap_or_else(|e| args.usage_error(format!("--grace: {e}")));
    runtime::Builder::new()
        .cores(cores)
        .build()?
        .block_on(serve(addr, grace))
}

async fn serve(addr: SocketAddr, grace: Duration) -> io::Result<()> {
    // Before binding: a SIGTERM as soon as the port is open is already a graceful stop.
    let stop = runtime::signal::shutdown()?;
    let server = grpc::server().serve(addr, Deadlines::new(service::routes()))?;
    println!(
        "grpc-server: listening on http://{} with {} core(s); Ctrl-C or SIGTERM stops",
        server.local_addr(),
        server.cores()
    );
    stop.await;
    println!("grpc-server: stopping; calls in flight get up to {grace:?}");
    server.shutdown(grace).await
}
