//! The server side of `bench http-cores`: the hidden `bench http-server --kind K --cpus A,B`, one child process that
//! serves the same axum Router ([`router`]) on two cores, this runtime's (`runtime::Builder::new().cores(2)`, a
//! `SO_REUSEPORT` listener per core through `corering_net::hyper::serve`) or tokio's multi-thread scheduler (2
//! worker threads, one accept task, hyper-util's `auto` connection per accepted socket, as `axum::serve` does).
//!
//! It prints `listening ADDR`, then answers each `cpu` line on its stdin with `cpu NANOS`, the process's CPU time
//! so far (getrusage `RUSAGE_SELF`, user + system, ended threads included), and exits when its stdin closes.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::{self, BufRead as _, Write as _};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use clap::{Args, ValueEnum};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use sysutil::{cpu_time, Who};

/// Cores of this runtime, and worker threads of tokio's multi-thread scheduler.
pub const CORES: usize = 2;
/// How long a `/blocking` job spins its CPU.
pub const SPIN: Duration = Duration::from_micros(50);
/// The body of `/plain`.
const HELLO: &str = "hello";

/// The runtime a `bench http-server` child serves on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// This runtime, [`CORES`] cores, each pinned to its CPU (the default).
    Runtime,
    /// This runtime, [`CORES`] cores, unpinned (`Builder::pin(false)`).
    RuntimeUnpinned,
    /// tokio's multi-thread scheduler, [`CORES`] worker threads.
    Tokio,
}

impl Kind {
    /// The `--kind` value that names it.
    pub fn arg(self) -> &'static str {
        match self {
            Kind::Runtime => "runtime",
            Kind::RuntimeUnpinned => "runtime-unpinned",
            Kind::Tokio => "tokio",
        }
    }
}

/// The hidden `bench http-server`: the axum app on [`CORES`] cores until stdin closes.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
pub struct ServerArgs {
    /// which runtime serves
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// the two CPUs the process may run on, `A,B` (the same one twice on a one-CPU machine)
    #[arg(long, value_parser = cpu_pair)]
    pub cpus: [usize; 2],
}

/// `A,B` as two CPU numbers.
fn cpu_pair(s: &str) -> Result<[usize; 2], String> {
    let parse = |w: &str| {
        w.trim()
            .parse::<usize>()
            .map_err(|_| format!("not a CPU number: {w:?}"))
    };
    match s.split_once(',') {
        Some((a, b)) => Ok([parse(a)?, parse(b)?]),
        None => Err(format!("want two CPUs, A,B: {s:?}")),
    }
}

/// A handler's reply: a body, or a 500 naming what failed (a task that panicked or was cancelled).
type Reply = Result<String, (StatusCode, String)>;

/// The one map every core's `/mutex` locks.
type Counters = Arc<Mutex<HashMap<u64, u64>>>;

/// The app: `/plain`, `/spawn`, `/mutex` and `/blocking`, the last two on the runtime `kind` names.
pub fn router(kind: Kind) -> Router {
    let app = Router::new()
        .route("/plain", get(plain))
        .route("/mutex", get(mutex));
    let app = match kind {
        Kind::Runtime | Kind::RuntimeUnpinned => app
            .route("/spawn", get(spawn_runtime))
            .route("/blocking", get(blocking_runtime)),
        Kind::Tokio => app
            .route("/spawn", get(spawn_tokio))
            .route("/blocking", get(blocking_tokio)),
    };
    app.with_state(Counters::default())
}

/// `/plain`: a short static body.
async fn plain() -> &'static str {
    HELLO
}

/// `/mutex`: increments key 0 of the shared map under its lock; the body is the new count.
async fn mutex(State(counters): State<Counters>) -> String {
    let mut map = counters.lock().unwrap_or_else(PoisonError::into_inner);
    let count = map.entry(0).or_insert(0);
    *count += 1;
    count.to_string()
}

/// `/spawn` on this runtime: `runtime::spawn` of [`small`], awaited.
async fn spawn_runtime() -> Reply {
    joined(runtime::spawn(async { small() }).await)
}

/// `/spawn` on tokio: `tokio::spawn` of [`small`], awaited.
async fn spawn_tokio() -> Reply {
    joined(tokio::spawn(async { small() }).await)
}

/// `/blocking` on this runtime: `runtime::spawn_blocking` of [`spin`], awaited.
async fn blocking_runtime() -> Reply {
    joined(runtime::spawn_blocking(spin).await)
}

/// `/blocking` on tokio: `tokio::task::spawn_blocking` of [`spin`], awaited.
async fn blocking_tokio() -> Reply {
    joined(tokio::task::spawn_blocking(spin).await)
}

/// A joined task's output as the body, or its join error as a 500.
fn joined<E: std::fmt::Display>(res: Result<u64, E>) -> Reply {
    res.map(|v| v.to_string())
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("task: {e}")))
}

/// The spawned task's work: a hash of 64 numbers the compiler cannot fold away.
fn small() -> u64 {
    (1..=64u64).fold(0, |h, i| h.rotate_left(5) ^ black_box(i))
}

/// The blocking job: spins the CPU for [`SPIN`]; returns the loop's iterations.
fn spin() -> u64 {
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < SPIN {
        std::hint::spin_loop();
        n += 1;
    }
    n
}

/// `bench http-server --kind K --cpus A,B`: serves until stdin closes.
pub fn server_main(args: ServerArgs) -> ExitCode {
    let kind = args.kind;
    // Before any thread starts, so every thread of the process inherits the set.
    if let Err(e) = allow_cpus(&args.cpus) {
        eprintln!("bench http-server: CPUs {:?}: {e}", args.cpus);
        return ExitCode::FAILURE;
    }
    let answering = std::thread::Builder::new()
        .name("http-server-stdin".to_string())
        .spawn(answer_cpu_queries);
    if let Err(e) = answering {
        eprintln!("bench http-server: starting the stdin thread: {e}");
        return ExitCode::FAILURE;
    }
    let served = match kind {
        Kind::Runtime => serve_runtime(router(kind), true),
        Kind::RuntimeUnpinned => serve_runtime(router(kind), false),
        Kind::Tokio => serve_tokio(router(kind)),
    };
    // Serving ends only on an error: the stdin thread ends the process otherwise.
    match served {
        Ok(()) => eprintln!("bench http-server: the {kind:?} server returned"),
        Err(e) => eprintln!("bench http-server: the {kind:?} server: {e}"),
    }
    ExitCode::FAILURE
}

/// Answers `cpu` with `cpu NANOS` until stdin closes, then ends the process.
fn answer_cpu_queries() {
    for line in io::stdin().lock().lines() {
        match line {
            Ok(l) if l.trim() == "cpu" => {
                let mut out = io::stdout().lock();
                let said = writeln!(out, "cpu {}", cpu_time(Who::Process).as_nanos());
                if said.and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    // Not a return from `main`: the servers never stop on their own, and nothing needs to be dropped.
    std::process::exit(0)
}

/// Prints the `listening ADDR` line the parent waits for.
fn listening(addr: SocketAddr) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "listening {addr}").and_then(|()| out.flush())
}

/// The app on this runtime: [`CORES`] cores, pinned or not, each with its own `SO_REUSEPORT` listener
/// (`corering_net::hyper`).
fn serve_runtime(app: Router, pin: bool) -> io::Result<()> {
    let rt = runtime::Builder::new().cores(CORES).pin(pin).build()?;
    rt.block_on(async move {
        let server = corering_net::hyper::serve("127.0.0.1:0", app)?;
        listening(server.local_addr())?;
        std::future::pending::<()>().await;
        drop(server);
        Ok(())
    })
}

/// The app on tokio's multi-thread scheduler with [`CORES`] workers; the accept loop is a task on them.
fn serve_tokio(app: Router) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CORES)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        listening(listener.local_addr()?)?;
        let accepting = tokio::spawn(accept_tokio(listener, app)).await;
        accepting.map_err(|e| io::Error::other(format!("the accept task: {e}")))?
    })
}

/// Accepts connections, each served by hyper-util's `auto` connection (HTTP/1.1 or h2c) in a task of its own.
async fn accept_tokio(listener: tokio::net::TcpListener, app: Router) -> io::Result<()> {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1().timer(TokioTimer::new());
    let http = Arc::new(http);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("accept: {e}"))),
        };
        // As this runtime's listener does for every connection.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = http
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        tokio::spawn(async move {
            // A client that goes away mid-request ends only its own connection.
            let _ = conn.await;
        });
    }
}

/// Lets the calling thread (and the threads it starts from now on) run on `cpus` only.
fn allow_cpus(cpus: &[usize]) -> io::Result<()> {
    let set = crate::harness::child::cpu_set(cpus)?;
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_pairs() {
        assert_eq!(cpu_pair("0,1"), Ok([0, 1]));
        assert_eq!(cpu_pair("3, 3"), Ok([3, 3]));
        assert!(cpu_pair("0").is_err() && cpu_pair("a,1").is_err());
    }

    #[test]
    fn blocking_job_spins_its_time() {
        let start = Instant::now();
        assert!(spin() > 0);
        assert!(start.elapsed() >= SPIN);
        assert_ne!(small(), 0);
    }
}
