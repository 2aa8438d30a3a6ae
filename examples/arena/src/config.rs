//! What the server is told: HttpArena's environment variables (with its container paths as
//! defaults) and the command line.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// HttpArena's settings, read from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `DATASET_PATH`: the 50 items of the json profiles (default `/data/dataset.json`).
    pub dataset: PathBuf,
    /// `STATIC_DIR`: the static files (default `/data/static`).
    pub static_dir: PathBuf,
    /// `TLS_CERT`: the certificate chain, PEM (default `/certs/server.crt`).
    pub tls_cert: PathBuf,
    /// `TLS_KEY`: its private key, PEM (default `/certs/server.key`).
    pub tls_key: PathBuf,
    /// `DATABASE_URL`: PostgreSQL for async-db and crud; without it those routes answer
    /// `503`.
    pub database_url: Option<String>,
    /// `DATABASE_MAX_CONN`: the connections the whole server may open (default 256),
    /// shared out between the cores.
    pub database_max_conn: usize,
    /// `REDIS_URL`: crud's cache; without it, an in-process cache shared by the cores.
    pub redis_url: Option<String>,
}

/// The default of `DATABASE_MAX_CONN`, HttpArena's.
pub const DEFAULT_MAX_CONN: usize = 256;

impl Settings {
    /// The settings of this process's environment.
    pub fn from_env() -> Settings {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings `lookup` gives (an empty value counts as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        let get = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let path = |name: &str, default: &str| PathBuf::from(get(name).unwrap_or(default.into()));
        Settings {
            dataset: path("DATASET_PATH", "/data/dataset.json"),
            static_dir: path("STATIC_DIR", "/data/static"),
            tls_cert: path("TLS_CERT", "/certs/server.crt"),
            tls_key: path("TLS_KEY", "/certs/server.key"),
            database_url: get("DATABASE_URL"),
            database_max_conn: get("DATABASE_MAX_CONN")
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(DEFAULT_MAX_CONN),
            redis_url: get("REDIS_URL"),
        }
    }

    /// Each core's share of `DATABASE_MAX_CONN` (at least one connection).
    pub fn pool_per_core(&self, cores: usize) -> usize {
        (self.database_max_conn / cores.max(1)).max(1)
    }
}

/// The listeners: HttpArena's ports unless told otherwise; `None` turns one off, port 0
/// lets the kernel pick.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// The address to bind (default `0.0.0.0`, as HttpArena's entries).
    pub host: IpAddr,
    /// HTTP/1.1 and h2c (gRPC), default 8080.
    pub http: Option<u16>,
    /// HTTP/1.1 over TLS, default 8081.
    pub tls_http1: Option<u16>,
    /// h2c by prior knowledge only, default 8082.
    pub h2c: Option<u16>,
    /// TLS with h2 (and http/1.1), default 8443.
    pub tls_h2: Option<u16>,
}

impl Default for Ports {
    fn default() -> Ports {
        Ports {
            host: IpAddr::from([0, 0, 0, 0]),
            http: Some(8080),
            tls_http1: Some(8081),
            h2c: Some(8082),
            tls_h2: Some(8443),
        }
    }
}

impl Ports {
    /// `port` on [`host`](Ports::host), or `None` when that listener is off.
    pub fn addr(&self, port: Option<u16>) -> Option<SocketAddr> {
        port.map(|port| SocketAddr::new(self.host, port))
    }
}

/// The command line both binaries take.
#[derive(Debug, Clone)]
pub struct Cli {
    /// `--cores N`: cores (or worker threads) to serve on; default every CPU this process
    /// may use.
    pub cores: usize,
    /// `--current-thread` (arena-tokio only): one tokio current-thread runtime.
    pub current_thread: bool,
    /// The listeners.
    pub ports: Ports,
}

/// The usage text of both binaries (`NAME` is replaced).
pub const USAGE: &str = "\
NAME: HttpArena's profiles on axum (see the arena crate's docs)

usage: NAME [--cores N] [--host ADDR] [--port P] [--tls-port P] [--h2c-port P]
            [--h2-port P] [--current-thread]

  --cores N         cores to serve on (default: every CPU this process may use)
  --host ADDR       address to bind (default 0.0.0.0)
  --port P          HTTP/1.1 and h2c (gRPC) (default 8080)
  --tls-port P      HTTP/1.1 over TLS (default 8081)
  --h2c-port P      h2c by prior knowledge only (default 8082)
  --h2-port P       TLS with h2 and http/1.1 (default 8443)
                    (0 lets the kernel pick a port, `off` turns that listener off; the
                    TLS ones are off when TLS_CERT or TLS_KEY cannot be read)
  --current-thread  arena-tokio: one current-thread runtime (--cores is then 1)
  -h, --help        this text

Environment: DATASET_PATH, STATIC_DIR, TLS_CERT, TLS_KEY, DATABASE_URL,
DATABASE_MAX_CONN, REDIS_URL (HttpArena's; defaults /data/dataset.json, /data/static,
/certs/server.crt, /certs/server.key, no database, 256, no Redis).
";

impl Cli {
    /// Parses `args` (without the program name); `Err` is the message to print with the
    /// usage, `Ok(None)` a request for help.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Cli>, String> {
        let mut cli = Cli {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            current_thread: false,
            ports: Ports::default(),
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "-h" || flag == "--help" {
                return Ok(None);
            }
            if flag == "--current-thread" {
                cli.current_thread = true;
                continue;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            let port = |v: &str| match v {
                "off" => Ok(None),
                v => v.parse::<u16>().map(Some).map_err(|e| bad(&e)),
            };
            match flag.as_str() {
                "--cores" => {
                    cli.cores = value.parse().map_err(|e| bad(&e))?;
                    if cli.cores == 0 {
                        return Err("--cores must be at least 1".into());
                    }
                }
                "--host" => cli.ports.host = value.parse().map_err(|e| bad(&e))?,
                "--port" => cli.ports.http = port(&value)?,
                "--tls-port" => cli.ports.tls_http1 = port(&value)?,
                "--h2c-port" => cli.ports.h2c = port(&value)?,
                "--h2-port" => cli.ports.tls_h2 = port(&value)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if cli.current_thread {
            cli.cores = 1;
        }
        Ok(Some(cli))
    }

    /// The command line of this process, or the usage and exit 2 (0 for `--help`).
    pub fn from_args(name: &str) -> Cli {
        let usage = USAGE.replace("NAME", name);
        match Cli::parse(std::env::args().skip(1)) {
            Ok(Some(cli)) => cli,
            Ok(None) => {
                print!("{usage}");
                std::process::exit(0)
            }
            Err(e) => {
                eprintln!("{name}: {e}\n\n{usage}");
                std::process::exit(2)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_defaults_and_overrides() {
        let s = Settings::from_lookup(|_| None);
        assert_eq!(s.dataset, PathBuf::from("/data/dataset.json"));
        assert_eq!(s.database_max_conn, 256);
        assert!(s.database_url.is_none() && s.redis_url.is_none());
        let s = Settings::from_lookup(|k| match k {
            "DATABASE_MAX_CONN" => Some("10".into()),
            "STATIC_DIR" => Some("/srv".into()),
            "REDIS_URL" => Some(String::new()),
            _ => None,
        });
        assert_eq!((s.database_max_conn, s.pool_per_core(4)), (10, 2));
        assert_eq!(s.pool_per_core(64), 1);
        assert_eq!(s.static_dir, PathBuf::from("/srv"));
        assert!(s.redis_url.is_none(), "an empty value is unset");
        let s = Settings::from_lookup(|k| (k == "DATABASE_MAX_CONN").then(|| "x".into()));
        assert_eq!(
            s.database_max_conn, 256,
            "a bad number falls back to the default"
        );
    }

    #[test]
    fn command_line() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let cli = Cli::parse(args("--cores 3 --port off --h2c-port 0 --h2-port 9443"))
            .unwrap()
            .unwrap();
        assert_eq!(cli.cores, 3);
        assert!(cli.ports.addr(cli.ports.http).is_none());
        assert_eq!(cli.ports.addr(cli.ports.h2c).unwrap().port(), 0);
        assert!(Cli::parse(args("--port 70000")).is_err());
        assert_eq!(cli.ports.addr(cli.ports.tls_h2).unwrap().port(), 9443);
        assert!(Cli::parse(args("--cores 0")).is_err());
        assert!(Cli::parse(args("--cores")).is_err());
        assert!(Cli::parse(args("--bogus 1")).is_err());
        assert!(Cli::parse(args("--help")).unwrap().is_none());
        let ct = Cli::parse(args("--cores 4 --current-thread"))
            .unwrap()
            .unwrap();
        assert_eq!(ct.cores, 1);
    }
}
