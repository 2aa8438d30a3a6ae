//! An HTTP/1.1 server: hyper 1.x on this runtime through `corering_net::hyper` (hyper's I/O traits on
//! `corering_net::TcpStream`, its timer on the runtime's timers). Keep-alive is on; every core accepts
//! on its own `SO_REUSEPORT` listener (`corering_net::serve`).
//!
//! `cargo run --release -p examples --bin http -- --port 8080`, then
//! `curl http://127.0.0.1:8080/` or `wrk -c 64 -d 5s http://127.0.0.1:8080/`. Ctrl-C stops it.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;

use bytes::Bytes;
use corering_net::hyper::{HyperIo, HyperTimer};
use examples::args::Args;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};

const USAGE: &str = "\
http: an HTTP/1.1 server, hyper on io_uring

usage: http [--host ADDR] [--port PORT] [--cores N]

  --host ADDR   address to listen on (default 127.0.0.1)
  --port PORT   port to listen on; 0 picks one (default 8080)
  --cores N     cores to serve on, one thread and ring each (default 1)
  -h, --help    this text

Every request gets `200 OK` with the body `Hello, World!`.
";

/// The body of every response (the benchmark's tokio server sends the same).
const BODY: &[u8] = b"Hello, World!";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE, &["host", "port", "cores"], &[]);
    let host: std::net::IpAddr = args.value("host", [127, 0, 0, 1].into());
    let addr = SocketAddr::new(host, args.value("port", 8080));
    examples::run(args.value("cores", 1usize), serve(addr))
}

async fn serve(addr: SocketAddr) -> io::Result<()> {
    let server = corering_net::serve(addr, |stream: corering_net::TcpStream| async move {
        let _ = stream.set_nodelay(true);
        let conn = http1::Builder::new()
            .timer(HyperTimer)
            .serve_connection(HyperIo::new(stream), service_fn(hello));
        // A peer that goes away mid-request is no error of ours.
        if let Err(e) = conn.await {
            if !e.is_incomplete_message() {
                eprintln!("http: connection: {e}");
            }
        }
    })?;
    println!(
        "http: listening on http://{} with {} core(s); Ctrl-C stops",
        server.local_addr(),
        server.cores()
    );
    examples::until_ctrl_c(server.join()).await
}

async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut res = Response::new(Full::new(Bytes::from_static(BODY)));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(res)
}
