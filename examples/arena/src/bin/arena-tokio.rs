//! `arena-tokio` (feature `tokio-peer`): the `arena` app on tokio, the peer of
//! `scripts/arena_bench.sh`: the same router and handlers, with tokio's runtime
//! (current-thread with `--current-thread`, else multi-thread with `--cores` workers),
//! hyper-util's `auto` builder over `TokioIo`, tokio-rustls, tokio-postgres' own `connect`
//! (`DATABASE_MAX_CONN` connections handed out in turn), redis-rs on tokio, and tower-http's
//! `ServeDir` for the static files. SIGINT or SIGTERM stops it.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arena::cache::{Cache, Memory};
use arena::config::{Cli, Settings};
use arena::dataset::Dataset;
use arena::db::{Db, DbConn, Statements};
use arena::{tls, ws, AppState};
use axum::Router;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_postgres::{Client, NoTls};
use tokio_rustls::TlsAcceptor;
use tower_http::services::ServeDir;

/// A connection and its statements.
struct Conn {
    client: Client,
    statements: Statements,
}

impl DbConn for Conn {
    fn client(&self) -> &Client {
        &self.client
    }

    fn statements(&self) -> &Statements {
        &self.statements
    }
}

/// The connections, in turn (no reconnection: a benchmark peer).
#[derive(Clone)]
struct Conns {
    conns: Arc<Vec<Arc<Conn>>>,
    next: Arc<AtomicUsize>,
}

impl Db for Conns {
    type Conn = Conn;

    async fn conn(&self) -> io::Result<Arc<Conn>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        Ok(self.conns[i].clone())
    }
}

async fn connect(url: &str, n: usize) -> io::Result<Conns> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(|e| io::Error::other(format!("DATABASE_URL {url}: {e}")))?;
        tokio::spawn(connection);
        let statements = Statements::prepare(&client)
            .await
            .map_err(|e| io::Error::other(format!("preparing: {e}")))?;
        conns.push(Arc::new(Conn { client, statements }));
    }
    Ok(Conns {
        conns: Arc::new(conns),
        next: Arc::new(AtomicUsize::new(0)),
    })
}

fn spawn_echo(on_upgrade: OnUpgrade) {
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            ws::echo(TokioIo::new(upgraded)).await;
        }
    });
}

fn main() -> io::Result<()> {
    let cli = Cli::from_args("arena-tokio");
    let settings = local_data(Settings::from_env());
    let dataset = Arc::new(Dataset::load(&settings.dataset)?);
    let rt = if cli.current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cli.cores)
            .enable_all()
            .build()?
    };
    rt.block_on(serve(cli, settings, dataset))
}

/// As `arena`: the crate's own data and certificates when HttpArena's paths are absent.
fn local_data(mut s: Settings) -> Settings {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (path, var, local) in [
        (&mut s.dataset, "DATASET_PATH", "data/dataset.json"),
        (&mut s.static_dir, "STATIC_DIR", "data/static"),
        (&mut s.tls_cert, "TLS_CERT", "certs/server.crt"),
        (&mut s.tls_key, "TLS_KEY", "certs/server.key"),
    ] {
        if std::env::var_os(var).is_none() && !path.exists() {
            *path = here.join(local);
        }
    }
    s
}

/// How a listener's connections are served.
#[derive(Clone, Copy)]
enum Kind {
    Auto,
    H2cOnly,
}

async fn serve(cli: Cli, settings: Settings, dataset: Arc<Dataset>) -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let db = match &settings.database_url {
        Some(url) => Some(connect(url, settings.database_max_conn).await?),
        None => None,
    };
    let cache = match &settings.redis_url {
        Some(url) => Cache::Redis(
            redis::Client::open(url.as_str())
                .map_err(|e| io::Error::other(format!("REDIS_URL {url}: {e}")))?
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| io::Error::other(format!("REDIS_URL {url}: {e}")))?,
        ),
        None => Cache::Memory(Arc::new(Memory::default())),
    };
    let state = AppState {
        dataset,
        db,
        cache,
        ws: spawn_echo,
    };
    let files = ServeDir::new(&settings.static_dir)
        .precompressed_br()
        .precompressed_gzip();
    let app = arena::router(state, files);
    let ports = cli.ports;
    let mut listeners = Vec::new();
    if let Some(addr) = ports.addr(ports.http) {
        listeners.push(listen(addr, None, Kind::Auto, app.clone()).await?);
    }
    if let Some(addr) = ports.addr(ports.h2c) {
        listeners.push(listen(addr, None, Kind::H2cOnly, app.clone()).await?);
    }
    for (port, alpn) in [
        (ports.tls_http1, &[&b"http/1.1"[..]][..]),
        (ports.tls_h2, &[&b"h2"[..], &b"http/1.1"[..]][..]),
    ] {
        let Some(addr) = ports.addr(port) else {
            continue;
        };
        match tls::server_config(&settings.tls_cert, &settings.tls_key, alpn) {
            Ok(config) => {
                let acceptor = TlsAcceptor::from(config);
                listeners.push(listen(addr, Some(acceptor), Kind::Auto, app.clone()).await?);
            }
            Err(e) => eprintln!("arena-tokio: no TLS listener on {addr}: {e}"),
        }
    }
    println!(
        "arena-tokio: {} listener(s), {}; Ctrl-C or SIGTERM stops",
        listeners.len(),
        if cli.current_thread {
            "current-thread".to_string()
        } else {
            format!("multi-thread, {} worker(s)", cli.cores)
        }
    );
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    println!("arena-tokio: stopping");
    for task in listeners {
        task.abort();
    }
    Ok(())
}

/// Binds `addr` and serves `app` on every connection, in a task of its own.
async fn listen(
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
    kind: Kind,
    app: Router,
) -> io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr).await?;
    println!("arena-tokio: listening on {}", listener.local_addr()?);
    let mut http = auto::Builder::new(TokioExecutor::new());
    // As `arena`: hyper's defaults but for the header timeout (no `pipeline_flush`).
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(arena::HEADER_TIMEOUT);
    http.http2().timer(TokioTimer::new());
    let http = Arc::new(http);
    // The h2c-only port speaks HTTP/2 alone: hyper's HTTP/2 connection, which takes a
    // connection that does not open with the preface for a protocol error (hyper-util's
    // `auto` builder with `http2_only` still answered HTTP/1.1 here).
    let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new());
    let h2 = Arc::new(h2);
    Ok(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (http, h2, tls, app) = (http.clone(), h2.clone(), tls.clone(), app.clone());
            tokio::spawn(async move {
                let service = TowerToHyperService::new(app);
                if let Kind::H2cOnly = kind {
                    let _ = h2.serve_connection(TokioIo::new(stream), service).await;
                    return;
                }
                match tls {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let _ = http
                                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                    None => {
                        let _ = http
                            .serve_connection_with_upgrades(TokioIo::new(stream), service)
                            .await;
                    }
                }
            });
        }
    }))
}
