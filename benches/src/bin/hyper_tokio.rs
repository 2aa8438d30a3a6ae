//! The tokio side of the hyper comparison in `scripts/examples_bench.sh`: the same service as
//! `examples/src/bin/http.rs` (`200 OK`, `Hello, World!`, keep-alive, TCP_NODELAY), served by
//! hyper 1.x on tokio through `hyper-util`'s `TokioIo` and `TokioTimer`.
//!
//! `hyper_tokio [--port PORT] [--flavor current|multi] [--threads N]`; stopped by a signal.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};

const USAGE: &str = "usage: hyper_tokio [--port PORT] [--flavor current|multi] [--threads N]\n";

fn main() -> std::io::Result<()> {
    let mut port = 8081u16;
    let mut multi = false;
    let mut threads = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = |args: &mut dyn Iterator<Item = String>| match args.next() {
            Some(v) => v,
            None => fail(&format!("{arg} needs a value")),
        };
        match arg.as_str() {
            "--port" => {
                port = value(&mut args)
                    .parse()
                    .unwrap_or_else(|_| fail("bad --port"))
            }
            "--flavor" => match value(&mut args).as_str() {
                "current" => multi = false,
                "multi" => multi = true,
                _ => fail("--flavor is current or multi"),
            },
            "--threads" => {
                threads = value(&mut args)
                    .parse()
                    .unwrap_or_else(|_| fail("bad --threads"))
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            _ => fail(&format!("unknown argument {arg}")),
        }
    }
    let mut builder = if multi {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if threads > 0 {
            b.worker_threads(threads);
        }
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let rt = builder.enable_all().build()?;
    rt.block_on(serve(SocketAddr::from(([127, 0, 0, 1], port)), multi))
}

fn fail(msg: &str) -> ! {
    eprint!("error: {msg}\n{USAGE}");
    std::process::exit(2);
}

async fn serve(addr: SocketAddr, multi: bool) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!(
        "hyper_tokio: listening on http://{} ({})",
        listener.local_addr()?,
        if multi {
            "multi-thread"
        } else {
            "current-thread"
        }
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), service_fn(hello));
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
