//! The command line of `tfb` and `tfb-tokio`.

use std::net::{IpAddr, SocketAddr};
use std::process::exit;
use std::time::Duration;

/// The flags of `tfb` and `tfb-tokio`.
#[derive(Debug)]
pub struct Args {
    /// Where to listen (`--host`, `--port`).
    pub addr: SocketAddr,
    /// Cores (threads) to serve on (`--cores`; `tfb-tokio` ignores it).
    pub cores: usize,
    /// Database connections per core (`--pool`).
    pub pool: usize,
    /// The database URL (`--db`, else `$TFB_DB_URL`, else [`DEFAULT_DB_URL`](crate::DEFAULT_DB_URL)).
    pub db: String,
    /// How long in-flight requests may take after a stop signal (`--grace`).
    pub grace: Duration,
}

/// Prints `msg` and `usage`, and exits 2.
pub fn usage_error(usage: &str, msg: impl std::fmt::Display) -> ! {
    eprintln!("{msg}\n\n{usage}");
    exit(2)
}

fn value<T: std::str::FromStr>(usage: &str, flag: &str, v: Option<String>) -> T
where
    T::Err: std::fmt::Display,
{
    let v = v.unwrap_or_else(|| usage_error(usage, format!("{flag} needs a value")));
    v.parse()
        .unwrap_or_else(|e| usage_error(usage, format!("{flag} {v:?}: {e}")))
}

impl Args {
    /// Parses the command line; `--help` prints `usage`, a bad flag exits 2.
    pub fn parse(usage: &str) -> Args {
        let mut host: IpAddr = [127, 0, 0, 1].into();
        let mut port = 8080u16;
        let mut args = Args {
            addr: SocketAddr::new(host, port),
            cores: 1,
            pool: 4,
            db: std::env::var("TFB_DB_URL").unwrap_or_else(|_| crate::DEFAULT_DB_URL.to_string()),
            grace: Duration::from_secs(5),
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "-h" | "--help" => {
                    print!("{usage}");
                    exit(0)
                }
                "--host" => host = value(usage, &flag, it.next()),
                "--port" => port = value(usage, &flag, it.next()),
                "--cores" => args.cores = value(usage, &flag, it.next()),
                "--pool" => args.pool = value(usage, &flag, it.next()),
                "--db" => args.db = value(usage, &flag, it.next()),
                "--grace" => {
                    let secs: f64 = value(usage, &flag, it.next());
                    args.grace = Duration::try_from_secs_f64(secs)
                        .unwrap_or_else(|e| usage_error(usage, format!("--grace: {e}")));
                }
                other => usage_error(usage, format!("unknown argument {other:?}")),
            }
        }
        if args.cores == 0 || args.pool == 0 {
            usage_error(usage, "--cores and --pool must be at least 1");
        }
        args.addr = SocketAddr::new(host, port);
        args
    }
}
