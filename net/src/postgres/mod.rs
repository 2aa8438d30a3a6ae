//! PostgreSQL through [`tokio_postgres`] on this runtime (feature `postgres`): [`connect`]
//! in one call, and a per-core [`Pool`] that reconnects.
//!
//! `tokio_postgres::connect` and `Config::connect` open their socket with tokio's reactor,
//! which does not exist here: they panic with "there is no reactor running". This module
//! opens the socket with this crate instead ([`TcpStream`](crate::TcpStream), or
//! [`UnixStream`](crate::UnixStream) for a host that is a socket directory), runs the
//! protocol handshake with `Config::connect_raw` (no TLS), and spawns the connection's
//! driver on the calling core with [`runtime::spawn_local`]. The [`Client`] it returns is
//! tokio-postgres' own: `query`, `prepare`, `execute`, transactions and pipelining (several
//! queries in flight on one connection) work as documented there.
//!
//! Build tokio-postgres without its default `runtime` feature (as this crate does), so
//! no tokio reactor or timer is compiled in; `connect_timeout` is kept with this runtime's
//! timer.
//!
//! ```no_run
//! # #[runtime::main]
//! # async fn main() -> std::io::Result<()> {
//! let client = corering_net::postgres::connect(
//!     "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world",
//! )
//! .await?;
//! let row = client
//!     .query_one("SELECT $1::INT + 1", &[&41i32])
//!     .await
//!     .map_err(std::io::Error::other)?;
//! assert_eq!(row.get::<_, i32>(0), 42);
//! # Ok(())
//! # }
//! ```
//!
//! # What is not supported
//! TLS (`sslmode=require` is an `InvalidInput` error; `prefer`, the default, connects in
//! clear), `target_session_attrs=read-write` (a host is taken as it answers)
//! and random `load_balance_hosts` (hosts are tried in order).

mod pool;

use std::io;
use std::net::IpAddr;
use std::path::Path;

pub use pool::{Pool, PoolBuilder, Pooled, Setup};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::NoTls;
pub use tokio_postgres::{Client, Config};

/// Connects to the database `config` names (a URL, `postgres://user:pass@host:port/db`, or
/// `key=value` pairs, `host=127.0.0.1 port=5432 user=...`; see [`Config`]), and drives the
/// connection on this core. See [`connect_config`].
///
/// # Errors
/// `InvalidInput` if `config` does not parse; otherwise as [`connect_config`].
pub async fn connect(config: &str) -> io::Result<Client> {
    connect_config(&parse(config)?).await
}

/// Parses a connection string (URL or `key=value` pairs) into a [`Config`], with an
/// `InvalidInput` error naming the problem (never the password).
///
/// # Errors
/// `InvalidInput` if `config` does not parse.
pub fn parse(config: &str) -> io::Result<Config> {
    config.parse::<Config>().map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid postgres configuration: {e}"),
        )
    })
}

/// Connects to the database `config` describes and drives the connection on this core: each
/// host (with its `hostaddr` and port, 5432 by default) is tried in order, over TCP, or over
/// the Unix socket `<dir>/.s.PGSQL.<port>` for a host that is a directory; the first that
/// completes the handshake (startup, authentication) wins. Its connection task is spawned on
/// the calling core with [`runtime::spawn_local`] and ends when the [`Client`] is dropped or
/// the server closes the connection (an error is printed to stderr, never a panic); from
/// then on [`Client::is_closed`] is true and queries fail.
///
/// `connect_timeout` bounds each host's attempt (socket and handshake together), with this
/// runtime's timer.
///
/// # Errors
/// Outside a runtime. `InvalidInput` for a configuration with no host or mismatched host,
/// hostaddr and port lists, or `sslmode=require`. Otherwise the last host's error, its
/// address in the message: the socket's error kind (`ConnectionRefused` when nothing
/// listens), `TimedOut` past `connect_timeout`, `PermissionDenied` when the server rejects
/// the credentials, `NotFound` for a database or role that does not exist, `Other` for any
/// other refusal by the server.
pub async fn connect_config(config: &Config) -> io::Result<Client> {
    let targets = targets(config)?;
    if runtime::current_core().is_none() {
        return Err(io::Error::other(
            "corering_net::postgres::connect called outside of a runtime",
        ));
    }
    let mut last = None;
    for target in targets {
        let attempt = connect_target(config, &target);
        let result = match config.get_connect_timeout() {
            Some(limit) => match runtime::time::timeout(*limit, attempt).await {
                Ok(result) => result,
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("postgres at {target}: no connection within {limit:?}"),
                )),
            },
            None => attempt.await,
        };
        match result {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| invalid("no host to connect to")))
}

/// Where one attempt goes.
enum Target {
    Tcp(String, u16),
    Unix(std::path::PathBuf),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp(host, port) if host.contains(':') => write!(f, "[{host}]:{port}"),
            Target::Tcp(host, port) => write!(f, "{host}:{port}"),
            Target::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid postgres configuration: {}", msg.into()),
    )
}

/// The hosts of `config` in order, as tokio-postgres' own `connect` pairs them.
fn targets(config: &Config) -> io::Result<Vec<Target>> {
    if config.get_ssl_mode() == SslMode::Require {
        return Err(invalid(
            "sslmode=require, but corering_net::postgres connects without TLS",
        ));
    }
    let hosts = config.get_hosts();
    let addrs: &[IpAddr] = config.get_hostaddrs();
    let ports = config.get_ports();
    if hosts.is_empty() && addrs.is_empty() {
        return Err(invalid("both host and hostaddr are missing"));
    }
    if !hosts.is_empty() && !addrs.is_empty() && hosts.len() != addrs.len() {
        return Err(invalid(format!(
            "{} hosts but {} hostaddrs",
            hosts.len(),
            addrs.len()
        )));
    }
    let n = hosts.len().max(addrs.len());
    if ports.len() > 1 && ports.len() != n {
        return Err(invalid(format!("{n} hosts but {} ports", ports.len())));
    }
    Ok((0..n)
        .map(|i| {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match (addrs.get(i), hosts.get(i)) {
                (Some(ip), _) => Target::Tcp(ip.to_string(), port),
                (None, Some(Host::Tcp(host))) => Target::Tcp(host.clone(), port),
                (None, Some(Host::Unix(dir))) => Target::Unix(dir.join(format!(".s.PGSQL.{port}"))),
                // `n` is the longer list's length, so one of the two has entry `i`.
                (None, None) => Target::Tcp(String::new(), port),
            }
        })
        .collect())
}

async fn connect_target(config: &Config, target: &Target) -> io::Result<Client> {
    let context = |e: io::Error| io::Error::new(e.kind(), format!("postgres at {target}: {e}"));
    match target {
        Target::Tcp(host, port) => {
            let stream = crate::TcpStream::connect((host.as_str(), *port))
                .await
                .map_err(context)?;
            if config.get_keepalives() {
                // Best effort, as libpq: a socket without keep-alive still works.
                let _ = stream.set_keepalive(true);
            }
            handshake(config, stream, target).await
        }
        Target::Unix(path) => {
            let stream = crate::UnixStream::connect(Path::new(path))
                .await
                .map_err(context)?;
            handshake(config, stream, target).await
        }
    }
}

async fn handshake<S>(config: &Config, stream: S, target: &Target) -> io::Result<Client>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let (client, connection) = config
        .connect_raw(stream, NoTls)
        .await
        .map_err(|e| to_io_error(e, &format!("postgres at {target}")))?;
    let name = target.to_string();
    runtime::spawn_local(async move {
        if let Err(e) = connection.await {
            // The error also reaches the client: its next query fails as closed.
            crate::trace::net_warn!("postgres connection to {name} ended: {}", describe(&e));
        }
    });
    Ok(client)
}

/// An `io::Error` for a tokio-postgres error, with `context` first in its message: the
/// socket's own kind for an I/O error, `PermissionDenied` for rejected credentials,
/// `NotFound` for a missing database or role, `ConnectionAborted` for a closed connection,
/// `Other` for the rest.
pub fn to_io_error(e: tokio_postgres::Error, context: &str) -> io::Error {
    use tokio_postgres::error::SqlState;
    let kind = if e.is_closed() {
        io::ErrorKind::ConnectionAborted
    } else if let Some(code) = e.code() {
        if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            io::ErrorKind::PermissionDenied
        } else if *code == SqlState::INVALID_CATALOG_NAME || *code == SqlState::UNDEFINED_OBJECT {
            io::ErrorKind::NotFound
        } else {
            io::ErrorKind::Other
        }
    } else {
        match std::error::Error::source(&e).and_then(|s| s.downcast_ref::<io::Error>()) {
            Some(io) => io.kind(),
            None => io::ErrorKind::Other,
        }
    };
    io::Error::new(kind, format!("{context}: {}", describe(&e)))
}

/// `e` with its causes (tokio-postgres' `Display` names only the kind: "db error"), e.g.
/// `db error: FATAL: database "x" does not exist`.
pub fn describe(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
