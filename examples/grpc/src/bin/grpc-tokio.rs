//! `grpc-tokio` (feature `tokio-peer`): the same `corering.echo.Echo` service on tonic's own
//! transport on a tokio current-thread runtime: the peer of `scripts/grpc_bench.sh`.
//!
//! `cargo run --release -p grpc-example --features tokio-peer --bin grpc-tokio -- --addr
//! 127.0.0.1:50052`. Ctrl-C or SIGTERM stops it.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use grpc_example::args::Args;
use grpc_example::pb::echo_server::EchoServer;
use grpc_example::service::EchoService;
use tokio::signal::unix::{signal, SignalKind};

const USAGE: &str = "\
grpc-tokio: the corering.echo.Echo gRPC service on tonic's transport, tokio current-thread

usage: grpc-tokio [--addr ADDR]

  --addr ADDR    address to listen on; port 0 picks one (default 127.0.0.1:50052)
  -h, --help     this text
";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE, &["addr"], &[]);
    let addr: SocketAddr = args.value("addr", SocketAddr::from(([127, 0, 0, 1], 50052)));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(serve(addr))
}

async fn serve(addr: SocketAddr) -> io::Result<()> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!(
        "grpc-tokio: listening on http://{} (tonic transport, tokio current-thread); \
         Ctrl-C or SIGTERM stops",
        listener.local_addr()?
    );
    let service = EchoServer::new(EchoService::with_sleep(|d: Duration| {
        Box::pin(tokio::time::sleep(d))
    }));
    let stop = async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    };
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            stop,
        )
        .await
        .map_err(io::Error::other)
}
