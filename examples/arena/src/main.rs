//! `arena`: HttpArena's profiles (see the crate's docs) on this runtime: axum's `Router`
//! served by `corering_net::hyper` on every core, on HttpArena's four ports, with each
//! core's PostgreSQL pool and Redis connection made on that core and shared by its four
//! listeners.
//!
//! `cargo run --release -p arena -- --cores 1`, then
//! `curl 'http://127.0.0.1:8080/baseline11?a=1&b=2'`. Without HttpArena's `/data` and
//! `/certs` (and no `DATASET_PATH`, `STATIC_DIR`, `TLS_CERT`, `TLS_KEY`), the crate's own
//! copies are used. Ctrl-C or SIGTERM stops it gracefully (exit 0).

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arena::cache::{self, Cache, Memory};
use arena::config::{Cli, Settings};
use arena::dataset::Dataset;
use arena::db::{self, Statements};
use arena::{tls, ws, AppState};
use corering_net::hyper::{Builder, HyperExecutor, Server, UpgradedIo};
use corering_net::postgres::Pool;
use corering_net::tls::TlsAcceptor;
use futures::future::{FutureExt, LocalBoxFuture, Shared};
use hyper::upgrade::OnUpgrade;
use hyper_util::server::conn::auto;

/// How long in-flight requests get to finish on Ctrl-C or SIGTERM.
const GRACE: Duration = Duration::from_secs(5);

fn main() -> io::Result<()> {
    let cli = Cli::from_args("arena");
    let settings = with_local_data(Settings::from_env());
    let dataset = Arc::new(Dataset::load(&settings.dataset)?);
    runtime::Builder::new()
        .cores(cli.cores)
        .build()?
        .block_on(serve(cli, settings, dataset))
}

/// HttpArena's container paths when they exist (or were set); otherwise this crate's copies
/// of its data and certificates, so `cargo run -p arena` works from a checkout.
fn with_local_data(mut s: Settings) -> Settings {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fallback = |path: &mut PathBuf, var: &str, local: &str| {
        if std::env::var_os(var).is_none() && !path.exists() {
            *path = here.join(local);
        }
    };
    fallback(&mut s.dataset, "DATASET_PATH", "data/dataset.json");
    fallback(&mut s.static_dir, "STATIC_DIR", "data/static");
    fallback(&mut s.tls_cert, "TLS_CERT", "certs/server.crt");
    fallback(&mut s.tls_key, "TLS_KEY", "certs/server.key");
    s
}

/// What a core's listeners share: made once per core, by the first listener's factory.
type CoreState = Shared<LocalBoxFuture<'static, Result<AppState<Pool<Statements>>, String>>>;

thread_local! {
    static CORE_STATE: RefCell<Option<CoreState>> = const { RefCell::new(None) };
}

/// This core's state: its database pool (its share of `DATABASE_MAX_CONN`), its Redis
/// connection (or the process's in-memory cache), made on first use.
fn core_state(
    settings: &Arc<Settings>,
    dataset: &Arc<Dataset>,
    memory: &Arc<Memory>,
    cores: usize,
) -> CoreState {
    CORE_STATE.with(|slot| {
        slot.borrow_mut()
            .get_or_insert_with(|| {
                let (settings, dataset, memory) =
                    (settings.clone(), dataset.clone(), memory.clone());
                async move {
                    let db = match &settings.database_url {
                        Some(url) => Some(db::pool(
                            corering_net::postgres::parse(url).map_err(|e| e.to_string())?,
                            settings.pool_per_core(cores),
                        )),
                        None => None,
                    };
                    let cache = match &settings.redis_url {
                        Some(url) => Cache::Redis(
                            cache::connect(url)
                                .await
                                .map_err(|e| format!("REDIS_URL {url}: {e}"))?,
                        ),
                        None => Cache::Memory(memory),
                    };
                    Ok(AppState {
                        dataset,
                        db,
                        cache,
                        ws: spawn_echo,
                    })
                }
                .boxed_local()
                .shared()
            })
            .clone()
    })
}

/// echo-ws's task, on the core that upgraded the connection.
fn spawn_echo(on_upgrade: OnUpgrade) {
    drop(runtime::spawn_local(async move {
        if let Ok(upgraded) = on_upgrade.await {
            ws::echo(UpgradedIo::new(upgraded)).await;
        }
    }));
}

/// The static files: read from disk on every request through ring ops (open beneath the
/// root, statx, read, close), with the precompressed `.br`/`.gz` beside a file chosen by
/// `Accept-Encoding` (tower-http's `ServeDir` API and behaviour).
fn files(dir: &Path) -> corering_net::hyper::ServeDir {
    corering_net::hyper::ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
}

/// The HTTP/1.1 settings of the 8080, 8081 and 8443 listeners: hyper's defaults (as
/// HttpArena's production rules ask: no pipelining flag) but for [`arena::HEADER_TIMEOUT`]
/// on a request's headers.
///
/// hyper's `pipeline_flush` is left off for a second reason: with it, the error response to
/// a request hyper cannot parse (a `400` for a malformed request line or chunked body, a
/// `431`) is never flushed, because the unparsed bytes stay in hyper's read buffer and the
/// flag defers flushing while that buffer holds anything; the client sees the connection
/// close with no answer.
fn http1_settings(http: &mut auto::Builder<HyperExecutor>) {
    http.http1().header_read_timeout(arena::HEADER_TIMEOUT);
}

/// The port 8082 connections: HTTP/2 by prior knowledge only (a connection that opens with
/// anything but the preface is closed), as HttpArena's h2c profiles require.
fn h2c_only(http: &mut auto::Builder<HyperExecutor>) {
    // `http2_only` takes the builder by value: swap it out.
    let taken = std::mem::replace(http, auto::Builder::new(HyperExecutor));
    *http = taken.http2_only();
}

async fn serve(cli: Cli, settings: Settings, dataset: Arc<Dataset>) -> io::Result<()> {
    // Listen for the signals before binding: a SIGTERM as soon as a port is open is already
    // a graceful stop.
    let signal = runtime::signal::shutdown()?;
    let settings = Arc::new(settings);
    let memory = Arc::new(Memory::default());
    let cores = cli.cores;
    let make = {
        let settings = settings.clone();
        move |_core: usize| {
            let state = core_state(&settings, &dataset, &memory, cores);
            let static_dir = settings.static_dir.clone();
            async move {
                let state = state.await.map_err(io::Error::other)?;
                Ok(arena::router(state, files(&static_dir)))
            }
        }
    };
    let ports = cli.ports;
    let mut servers: Vec<(&str, Server)> = Vec::new();
    if let Some(addr) = ports.addr(ports.http) {
        let http = Builder::new().http(http1_settings);
        servers.push(("http/1.1 + h2c", http.serve_with_async(addr, make.clone())?));
    }
    if let Some(addr) = ports.addr(ports.h2c) {
        let h2c = Builder::new().http(h2c_only);
        servers.push(("h2c only", h2c.serve_with_async(addr, make.clone())?));
    }
    let tls_ports = [
        (ports.tls_http1, &[&b"http/1.1"[..]][..], "TLS http/1.1"),
        (
            ports.tls_h2,
            &[&b"h2"[..], &b"http/1.1"[..]][..],
            "TLS h2 + http/1.1",
        ),
    ];
    for (port, alpn, what) in tls_ports {
        let Some(addr) = ports.addr(port) else {
            continue;
        };
        let config = match tls::server_config(&settings.tls_cert, &settings.tls_key, alpn) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("arena: no {what} listener on {addr}: {e}");
                continue;
            }
        };
        let builder = Builder::new()
            .tls(TlsAcceptor::new(config))
            .http(http1_settings);
        servers.push((what, builder.serve_with_async(addr, make.clone())?));
    }
    for (what, server) in &servers {
        println!("arena: {what} on {}", server.local_addr());
    }
    println!(
        "arena: {} core(s); database {}, cache {}; Ctrl-C or SIGTERM stops",
        cores,
        if settings.database_url.is_some() {
            "on"
        } else {
            "off (DATABASE_URL)"
        },
        if settings.redis_url.is_some() {
            "Redis"
        } else {
            "in-process"
        },
    );
    let stop = async move {
        signal.await;
        println!("arena: stopping");
    }
    .shared();
    let stops = servers
        .into_iter()
        .map(|(_, server)| server.with_graceful_shutdown(stop.clone(), GRACE));
    all_ok(stops).await
}

/// Waits for every future; the first error, if any.
async fn all_ok(
    futures: impl IntoIterator<Item = impl Future<Output = io::Result<()>>>,
) -> io::Result<()> {
    futures::future::join_all(futures)
        .await
        .into_iter()
        .collect()
}
