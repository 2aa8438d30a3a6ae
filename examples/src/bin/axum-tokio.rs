//! The `axum` example's app on tokio, the peer of `scripts/axum_bench.sh`: the same handlers
//! (`examples::axum_app`, with tokio's sleep), served as `axum::serve` serves a Router:
//! hyper-util's `auto` builder on `TokioIo` (HTTP/1.1 and h2c on `--port`), each connection
//! a `tokio::spawn`ed task, TCP_NODELAY on; HTTPS on `--tls-port` through tokio-rustls (ring
//! provider), h2 or http/1.1 by ALPN. Like `axum`, one app (one request counter) per
//! runtime's worth of cores: here the whole runtime shares one, reported as core 0.
//!
//! Built only with the `tokio-peer` feature:
//! `cargo run --release -p examples --features tokio-peer --bin axum-tokio -- --runtime multi`.
//! Ctrl-C or SIGTERM stops it gracefully (up to `--grace` seconds for in-flight requests).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use examples::args::Args;
use examples::axum_app::{self, AppRuntime};
use examples::tls::Identity;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

const USAGE: &str = "\
axum-tokio: the axum example's app on tokio (HTTP/1.1, h2c, HTTPS with h2 or http/1.1)

usage: axum-tokio [--runtime current|multi] [--workers N] [--host ADDR] [--port PORT]
                  [--tls-port PORT] [--cert FILE --key FILE] [--grace SECS]

  --runtime KIND    tokio's current-thread or multi-thread scheduler (default current)
  --workers N       multi-thread worker threads (default: tokio's, one per CPU the
                    process may run on, so 1 under `taskset -c 0`)
  --host ADDR       address to listen on (default 127.0.0.1)
  --port PORT       HTTP/1.1 and h2c port; 0 picks one (default 8081)
  --tls-port PORT   also serve HTTPS on PORT (h2 or http/1.1 by ALPN); 0 picks one
  --cert FILE       certificate chain (PEM); with --key (without both: self-signed)
  --key FILE        its private key (PEM)
  --grace SECS      on Ctrl-C or SIGTERM, how long in-flight requests may take (default 10)
  -h, --help        this text
";

/// How long a TLS handshake may take, as `corering_net::tls::TlsAcceptor`'s default.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// tokio's side of the handlers: `tokio::time::sleep` for the streaming route.
struct Tokio;

impl AppRuntime for Tokio {
    type Sleep = tokio::time::Sleep;

    fn sleep(duration: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(duration)
    }
}

fn main() -> io::Result<()> {
    let args = Args::parse(
        USAGE,
        &[
            "runtime", "workers", "host", "port", "tls-port", "cert", "key", "grace",
        ],
        &[],
    );
    let host: IpAddr = args.value("host", [127, 0, 0, 1].into());
    let addr = SocketAddr::new(host, args.value("port", 8081));
    let grace = Duration::try_from_secs_f64(args.value("grace", 10.0))
        .unwrap_or_else(|e| args.usage_error(format!("--grace: {e}")));
    let tls = match args.optional::<u16>("tls-port") {
        Some(port) => {
            let identity = Identity::from_args(args.string("cert"), args.string("key"))
                .unwrap_or_else(|e| args.usage_error(e));
            let acceptor = TlsAcceptor::from(identity.server_config()?);
            Some((SocketAddr::new(host, port), acceptor))
        }
        None => None,
    };
    let kind = args.string("runtime").unwrap_or("current").to_owned();
    let mut builder = match kind.as_str() {
        "current" => tokio::runtime::Builder::new_current_thread(),
        "multi" => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            if let Some(n) = args.optional::<usize>("workers") {
                b.worker_threads(n);
            }
            b
        }
        other => args.usage_error(format!("--runtime {other:?}: current or multi")),
    };
    let rt = builder.enable_all().build()?;
    rt.block_on(serve(addr, tls, grace, kind))
}

async fn serve(
    addr: SocketAddr,
    tls: Option<(SocketAddr, TlsAcceptor)>,
    grace: Duration,
    kind: String,
) -> io::Result<()> {
    let mut stop = std::pin::pin!(shutdown_signal()?);
    let app = axum_app::router::<Tokio>(0);
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1().timer(TokioTimer::new());
    http.http2().timer(TokioTimer::new());
    let http = Arc::new(http);
    let graceful = GracefulShutdown::new();

    let plain = TcpListener::bind(addr).await?;
    let secure = match tls {
        Some((addr, acceptor)) => Some((TcpListener::bind(addr).await?, acceptor)),
        None => None,
    };
    match &secure {
        Some((l, _)) => println!(
            "axum-tokio: listening on http://{} (HTTP/1.1, h2c) and https://{} (h2, http/1.1), \
             tokio {kind}-thread; Ctrl-C or SIGTERM stops",
            plain.local_addr()?,
            l.local_addr()?
        ),
        None => println!(
            "axum-tokio: listening on http://{} (HTTP/1.1, h2c), tokio {kind}-thread; \
             Ctrl-C or SIGTERM stops",
            plain.local_addr()?
        ),
    }

    loop {
        let accept_tls = async {
            match &secure {
                Some((l, _)) => l.accept().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            res = plain.accept() => {
                if let Some(stream) = accepted(res)? {
                    let conn = http
                        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()))
                        .into_owned();
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                }
            }
            res = accept_tls => {
                if let (Some(stream), Some((_, acceptor))) = (accepted(res)?, &secure) {
                    tokio::spawn(serve_tls(
                        stream,
                        acceptor.clone(),
                        http.clone(),
                        app.clone(),
                        graceful.watcher(),
                    ));
                }
            }
            _ = &mut stop => break,
        }
    }
    println!("axum-tokio: stopping; in-flight requests get up to {grace:?}");
    drop(plain);
    drop(secure);
    // Every connection finishes its in-flight requests (HTTP/2: GOAWAY), up to `grace`.
    let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
    Ok(())
}

/// An accepted connection with TCP_NODELAY set; `None` for an error that only ends that
/// connection (or, out of fds, is worth a pause).
fn accepted(res: io::Result<(TcpStream, SocketAddr)>) -> io::Result<Option<TcpStream>> {
    match res {
        Ok((stream, _)) => {
            let _ = stream.set_nodelay(true);
            Ok(Some(stream))
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
            std::thread::sleep(Duration::from_millis(10));
            Ok(None)
        }
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => Ok(None),
        Err(e) => Err(e),
    }
}

/// One HTTPS connection: the handshake (with a deadline), then HTTP/1.1 or HTTP/2.
async fn serve_tls(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    http: Arc<auto::Builder<TokioExecutor>>,
    app: axum::Router,
    watcher: Watcher,
) {
    let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
    else {
        return;
    };
    let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    let _ = watcher.watch(conn).await;
}

/// Completes on SIGINT or SIGTERM (both listened for from the call on).
fn shutdown_signal() -> io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}
