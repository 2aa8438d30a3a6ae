//! An axum 0.8 app on this runtime: axum's `Router` served by `corering_net::hyper` on every core,
//! HTTP/1.1 and HTTP/2 (h2c) on `--port`, HTTPS (h2 or http/1.1 by ALPN) on `--tls-port`.
//! The routes are in `examples::axum_app` (`/`, `/json`, `/greet/{name}?times=N`, `/stats`,
//! `/stream?chunks=N&ms=M`, `POST /echo`); `axum-tokio` serves the same handlers on tokio.
//!
//! `cargo run --release -p examples --bin axum -- --port 8080 --tls-port 8443`, then
//! `curl http://127.0.0.1:8080/json`, `curl --http2-prior-knowledge http://127.0.0.1:8080/`,
//! `curl -k https://127.0.0.1:8443/stats`, or `http-client -k -n 5 https://127.0.0.1:8443/`.
//! Ctrl-C or SIGTERM stops it gracefully: both listeners close, in-flight requests (a
//! streaming body included) get up to `--grace` seconds to finish, and it exits 0.
//!
//! axum is built without its `tokio` feature, so no tokio runtime exists in this process,
//! and whatever calls into one panics ("there is no reactor running, must be called from
//! the context of a Tokio 1.x runtime"):
//! - `tokio::time::{sleep, timeout, interval}` or `tokio::spawn` in a handler or a body:
//!   use `runtime::time::{sleep, timeout, interval}` and `runtime::spawn_local` (or
//!   `runtime::spawn`) instead;
//! - tower-http's `TimeoutLayer` and `RequestBodyTimeoutLayer`, and tower's `timeout`,
//!   `limit::rate` (tokio's timer) and `buffer` (it spawns its worker with `tokio::spawn`)
//!   layers: time out in the handler with `runtime::time::timeout`;
//! - `axum::serve` itself (needs axum's `tokio` feature and a tokio `TcpListener`): serve
//!   the `Router` with `corering_net::hyper::serve` or `corering_net::hyper::Builder::serve_with`, as here.
//!
//! What this app uses of axum and tower (routing, the `Path`, `Query`, `State` and `Bytes`
//! extractors, `DefaultBodyLimit`, `Json`, `tower::util::MapRequestLayer`,
//! `Body::from_stream`) is runtime-independent and works as is.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use corering_net::hyper::Builder;
use corering_net::tls::TlsAcceptor;
use examples::args::Args;
use examples::axum_app::{self, Uring};
use examples::tls::Identity;
use futures::future::{self, Either, FutureExt};

const USAGE: &str = "\
axum: an axum 0.8 app on io_uring (HTTP/1.1, h2c, HTTPS with h2 or http/1.1 by ALPN)

usage: axum [--host ADDR] [--port PORT] [--tls-port PORT] [--cert FILE --key FILE]
            [--save-cert FILE] [--cores N] [--grace SECS]

  --host ADDR       address to listen on (default 127.0.0.1)
  --port PORT       HTTP/1.1 and h2c (prior knowledge) port; 0 picks one (default 8080)
  --tls-port PORT   also serve HTTPS on PORT (h2 or http/1.1 by ALPN); 0 picks one
  --cert FILE       certificate chain (PEM) for HTTPS; with --key
  --key FILE        its private key (PEM: PKCS#8, PKCS#1 or SEC1); with --cert
                    (without both: a self-signed certificate for localhost, 127.0.0.1
                    and ::1, made at startup)
  --save-cert FILE  write the self-signed certificate (PEM) to FILE, for clients'
                    --cacert
  --cores N         cores to serve on, one thread and ring each (default 1)
  --grace SECS      on Ctrl-C or SIGTERM, how long in-flight requests may take to
                    finish before their connections are closed (default 10)
  -h, --help        this text

Routes:
  GET  /                        Hello, World! (text/plain)
  GET  /json                    {\"message\":\"Hello, World!\"}
  GET  /greet/{name}?times=N    Hello, NAME! N times (1 to 100)
  GET  /stats                   {\"core\":C,\"requests\":N}: this core's request count
  GET  /stream?chunks=N&ms=M    N chunks M ms apart (default 5 and 100)
  POST /echo                    the body back, up to 64 KiB (413 above)
";

fn main() -> io::Result<()> {
    let args = Args::parse(
        USAGE,
        &[
            "host",
            "port",
            "tls-port",
            "cert",
            "key",
            "save-cert",
            "cores",
            "grace",
        ],
        &[],
    );
    let host: IpAddr = args.value("host", [127, 0, 0, 1].into());
    let addr = SocketAddr::new(host, args.value("port", 8080));
    let grace = Duration::try_from_secs_f64(args.value("grace", 10.0))
        .unwrap_or_else(|e| args.usage_error(format!("--grace: {e}")));
    let tls = match args.optional::<u16>("tls-port") {
        Some(port) => {
            let identity = Identity::from_args(args.string("cert"), args.string("key"))
                .unwrap_or_else(|e| args.usage_error(e));
            if let Some(path) = args.string("save-cert") {
                identity
                    .save_self_signed(path)
                    .unwrap_or_else(|e| args.usage_error(format!("--save-cert: {e}")));
            }
            let acceptor = TlsAcceptor::new(identity.server_config()?);
            Some((SocketAddr::new(host, port), acceptor))
        }
        None => {
            if ["cert", "key", "save-cert"]
                .iter()
                .any(|f| args.string(f).is_some())
            {
                args.usage_error("--cert, --key and --save-cert need --tls-port");
            }
            None
        }
    };
    examples::run(args.value("cores", 1usize), serve(addr, tls, grace))
}

async fn serve(
    addr: SocketAddr,
    tls: Option<(SocketAddr, TlsAcceptor)>,
    grace: Duration,
) -> io::Result<()> {
    // Listen for the signals before binding: a SIGTERM as soon as the port is open is
    // already a graceful stop, not the default action's.
    let signal = examples::shutdown_signal()?;
    // One app per core: its own request counter (`/stats`), no state shared between cores.
    let plain = Builder::new().serve_with(addr, axum_app::router::<Uring>)?;
    let secure = match tls {
        Some((addr, acceptor)) => Some(
            Builder::new()
                .tls(acceptor)
                .serve_with(addr, axum_app::router::<Uring>)?,
        ),
        None => None,
    };
    match &secure {
        Some(s) => println!(
            "axum: listening on http://{} (HTTP/1.1, h2c) and https://{} (h2, http/1.1) \
             with {} core(s); Ctrl-C or SIGTERM stops",
            plain.local_addr(),
            s.local_addr(),
            plain.cores()
        ),
        None => println!(
            "axum: listening on http://{} (HTTP/1.1, h2c) with {} core(s); \
             Ctrl-C or SIGTERM stops",
            plain.local_addr(),
            plain.cores()
        ),
    }

    let stop = async move {
        signal.await;
        println!("axum: stopping; in-flight requests get up to {grace:?}");
    }
    .shared();
    // Both listeners close on the signal; each waits for its own connections.
    let secure = match secure {
        Some(s) => Either::Left(s.with_graceful_shutdown(stop.clone(), grace)),
        None => Either::Right(future::ok(())),
    };
    let (plain, secure) = future::join(plain.with_graceful_shutdown(stop, grace), secure).await;
    plain.and(secure)
}
