//! The tokio side of the hyper comparison in `scripts/examples_bench.sh`.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use clap::{Parser, ValueEnum};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};

/// hyper on tokio, serving `Hello, World!` on 127.0.0.1.
#[derive(Parser)]
struct Args {
    /// the port
    #[arg(long, default_value_t = 8081)]
    port: u16,
    /// tokio's scheduler
    #[arg(long, value_enum, default_value_t = Flavor::Current)]
    flavor: Flavor,
    /// worker threads of the multi-thread scheduler (0: tokio's default)
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

/// tokio's runtime flavors.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Flavor {
    /// current-thread
    Current,
    /// multi-thread
    Multi,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let multi = args.flavor == Flavor::Multi;
    let mut builder = match multi {
        true => tokio::runtime::Builder::new_multi_thread(),
        false => tokio::runtime::Builder::new_current_thread(),
    };
    if multi && args.threads > 0 {
        builder.worker_threads(args.threads);
    }
    builder
        .enable_all()
        .build()?
        .block_on(serve(SocketAddr::from(([127, 0, 0, 1], args.port)), multi))
}

async fn serve(addr: SocketAddr, multi: bool) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let flavor = if multi {
        "multi-thread"
    } else {
        "current-thread"
    };
    println!(
        "hyper_tokio: listening on http://{} ({flavor})",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let io = TokioIo::new(stream);
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(io, service_fn(hello));
            if let Err(e) = conn.await {
                if !e.is_incomplete_message() {
                    eprintln!("hyper_tokio: connection: {e}");
                }
            }
        });
    }
}

async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut res = Response::new(Full::new(Bytes::from_static(b"Hello, World!")));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(res)
}
