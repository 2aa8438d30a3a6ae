//! `bench echo`: C connections ping-pong M-byte messages for D seconds.
//!
//! The standard runtime benchmark, in two configurations: 64 connections x 128 B (per-op
//! overhead) and 16 x 16 KiB (copying, short reads). Each client connection sends one
//! message and waits for the whole echo before sending the next. Servers, each with its own
//! listener and thread on the server CPU (see `server.rs`), measured alternately:
//! - `runtime`: `incoming()` and a `spawn_local` task per connection, `read_chunk` (the
//!   default read path: a multishot recv into the core's provided-buffer ring) then
//!   `write_chunk` of it (write-behind: the send's completion wakes no task);
//! - `runtime own-buffer read`: owned-buffer `read` into one buffer per connection reused,
//!   then owned `write_all`, the task woken for each: the previous default;
//! - `tokio current-thread`: `accept` and `tokio::spawn`, `read` then `write_all`;
//! - `raw ring`: the hand-written io_uring loop of `raw_echo.rs`;
//! - with the `peers` feature, `monoio`, `glommio` and `tokio-uring` (`src/peers/`).
//!
//! One load generator drives them all from the client CPU: a tokio current-thread runtime
//! with one task per connection, recording each round trip's latency in the window.
//!
//! On two cores both are saturated and round trips/s is co-limited by the client, so the
//! figure that depends least on it is the server's CPU time per round trip (getrusage
//! `RUSAGE_THREAD` in the server thread, over the same window the client measures; see
//! `shared/BENCHMARKS.md`).
//!
//! The driver here serves `echo-cores` too (`echo_cores.rs`): [`each_config`] runs both
//! configurations, [`measure`] alternates the contestants of a [`Spec`] under the load
//! generator and prints the two tables (rates; latency and server CPU per round trip), and a
//! server takes part through [`EchoServer`], which says how it measures its CPU time.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use runtime::buf::IoBuf;
use sysutil::{raise_nofile, PinGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{alternate, Contestant, Plan};
use crate::report::{render_grid, Measure, Metric, Summary, Table};
use crate::server::{no_stats, Cpus, Ctl, Histogram, Server};
use crate::Opts;

/// Ring size of the runtime's server.
pub(crate) const ENTRIES: u32 = 256;
/// Traffic before each window opens: connections warm, queues at their steady depth.
const RAMP: Duration = Duration::from_millis(100);

/// One configuration: connections and message size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Client connections, each with one message in flight.
    pub(crate) conns: usize,
    /// Message size in bytes.
    pub(crate) msg: usize,
}

/// The configurations every echo benchmark runs (`echo`, `echo-cores`).
pub(crate) const CONFIGS: [Config; 2] = [
    Config {
        conns: 64,
        msg: 128,
    },
    Config {
        conns: 16,
        msg: 16 * 1024,
    },
];

/// Runs `one` for each of [`CONFIGS`] with the plan `opts` asks for (the window in ms as
/// the count) and the raised `RLIMIT_NOFILE`, a blank line between them: the frame of every
/// echo benchmark.
pub(crate) fn each_config(
    opts: &Opts,
    mut one: impl FnMut(Config, Plan, u64) -> io::Result<()>,
) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let secs = opts.seconds.unwrap_or(if opts.quick { 1.0 } else { 5.0 });
    let window_ms = (secs * 1000.0).round().max(1.0) as u64;
    let plan = Plan {
        count: window_ms,
        warmup: (window_ms / 4).max(200),
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: None,
        granule: 1,
    };
    for (i, cfg) in CONFIGS.iter().enumerate() {
        if i > 0 {
            println!();
        }
        one(*cfg, plan, nofile)?;
    }
    Ok(())
}

/// A server as the echo driver sees it: where to connect, what it is told of each run, and
/// what it measured.
pub(crate) trait EchoServer {
    /// Where its listener is bound.
    fn addr(&self) -> SocketAddr;
    /// Each [`Phase`] of a client run as it comes, on the client thread.
    fn phase(&self, phase: Phase);
    /// Its figures over the window of `cfg`'s load that just closed (`window`: the client's).
    fn figures(&self, cfg: Config, window: &Window) -> io::Result<ServerFigures>;
}

/// What a server spent over one window.
pub(crate) struct ServerFigures {
    /// `io_uring_enter` calls, where the server counts them.
    pub(crate) enters: Option<u64>,
    /// Server CPU time.
    pub(crate) cpu: Duration,
    /// The wall time `cpu` was spent in.
    pub(crate) elapsed: Duration,
    /// Round trips `cpu` served.
    pub(crate) rts: f64,
    /// Bytes each server core echoed; empty where the server does not count them (and the
    /// details table then has no traffic column).
    pub(crate) per_core: Vec<u64>,
}

impl ServerFigures {
    fn us_per_rt(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.rts.max(1.0)
    }

    fn busy(&self) -> f64 {
        self.cpu.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What one run measured besides the rate.
struct Extra {
    p50: Duration,
    p99: Duration,
    server: ServerFigures,
}

/// An echo benchmark's contestants and what its tables say: all that differs between `echo`
/// and `echo-cores`.
pub(crate) struct Spec<'a> {
    /// The tables' name: `echo`, `echo-cores`.
    pub(crate) name: &'static str,
    /// The contestants in row order, each with its own server.
    pub(crate) rows: Vec<(String, &'a dyn EchoServer)>,
    /// The row the first table's ratios are taken against, and its short name (`tokio`).
    pub(crate) baseline: (usize, &'static str),
    /// The rows every row's server CPU per round trip is compared with (`CPU vs raw`).
    pub(crate) cpu_vs: Vec<(usize, &'static str)>,
    /// The row every row's rate is compared with in the details (`rt/s vs raw`), if any.
    pub(crate) rate_vs: Option<(usize, &'static str)>,
    /// Header of the server's CPU over wall time.
    pub(crate) busy: &'static str,
    /// The CPU the load generator is pinned to.
    pub(crate) client_cpu: usize,
    /// Lines under the first table.
    pub(crate) notes: Vec<String>,
    /// The line above the details table.
    pub(crate) details: &'static str,
    /// Lines under the details table.
    pub(crate) after: &'static [&'static str],
}

/// Measures `spec`'s contestants alternately with the load of `cfg` and prints its two
/// tables: rates (and enters, RSS), then latency and server CPU per round trip.
pub(crate) fn measure(spec: &Spec<'_>, cfg: Config, plan: Plan) -> io::Result<()> {
    let pin = PinGuard::new(spec.client_cpu)?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let extras: Vec<RefCell<Vec<Extra>>> = spec.rows.iter().map(|_| RefCell::default()).collect();
    let mut contestants: Vec<Contestant<'_>> = spec
        .rows
        .iter()
        .zip(&extras)
        .map(|((name, srv), extra)| {
            let client = &client;
            Contestant::new(name.clone(), move |ms| {
                let (w, server) = one_run(client, *srv, cfg, Duration::from_millis(ms))?;
                let m = Measure {
                    ops: w.ops,
                    elapsed: w.elapsed,
                    enters: server.enters,
                };
                extra.borrow_mut().push(Extra {
                    p50: w.hist.quantile(0.50),
                    p99: w.hist.quantile(0.99),
                    server,
                });
                Ok(m)
            })
        })
        .collect();
    let (series, _) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(pin);
    // Each contestant's first extra is its warm-up run's.
    let extras: Vec<Vec<Extra>> = extras
        .into_iter()
        .map(|e| e.into_inner().into_iter().skip(1).collect())
        .collect();
    let rates: Vec<f64> = series
        .iter()
        .map(|s| Summary::of(&s.runs.iter().map(Measure::rate).collect::<Vec<_>>()).median)
        .collect();
    // The server CPU per round trip the details table prints, also in `--json` rows.
    let mut series = series;
    for (s, x) in series.iter_mut().zip(&extras) {
        let us: Vec<f64> = x.iter().map(|e| e.server.us_per_rt()).collect();
        if !us.is_empty() {
            s.extra
                .push(("server_cpu_us_per_op".to_string(), Summary::of(&us).median));
        }
    }
    let table = Table {
        title: format!(
            "{}: {} connections x {} B ping-pong, {:.1} s windows, median of {} runs",
            spec.name,
            cfg.conns,
            cfg.msg,
            plan.count as f64 / 1000.0,
            plan.runs
        ),
        metric: Metric::Rate("rt/s"),
        ratio_label: format!("vs {}", spec.baseline.1),
        baseline: spec.baseline.0,
        series,
        notes: spec.notes.clone(),
    };
    print!("{}", table.render());
    println!("  {}", spec.details);
    print!("{}", render_grid(&details(spec, &extras, &rates), 4));
    for line in spec.after {
        println!("  {line}");
    }
    Ok(())
}

/// One run against `srv`: the client's window, and the server's figures over it.
pub(crate) fn one_run(
    client: &tokio::runtime::Runtime,
    srv: &dyn EchoServer,
    cfg: Config,
    window: Duration,
) -> io::Result<(Window, ServerFigures)> {
    let w = drive(client, srv.addr(), cfg, window, &|p| srv.phase(p))?;
    let server = srv.figures(cfg, &w)?;
    Ok((w, server))
}

/// The details table: latency, server CPU per round trip, and its ratios between rows.
fn details(spec: &Spec<'_>, extras: &[Vec<Extra>], rates: &[f64]) -> Vec<Vec<String>> {
    let med = |v: Vec<f64>| Summary::of(&v).median;
    let cpu: Vec<Summary> = extras
        .iter()
        .map(|x| Summary::of(&x.iter().map(|e| e.server.us_per_rt()).collect::<Vec<_>>()))
        .collect();
    let traffic = extras
        .iter()
        .flatten()
        .any(|e| !e.server.per_core.is_empty());
    let mut header: Vec<String> = [
        "",
        "p50 us",
        "p99 us",
        "server us/rt median",
        "min",
        "max",
        spec.busy,
    ]
    .map(String::from)
    .to_vec();
    header.extend(spec.cpu_vs.iter().map(|(_, to)| format!("CPU vs {to}")));
    header.extend(spec.rate_vs.map(|(_, to)| format!("rt/s vs {to}")));
    if traffic {
        header.push("traffic per core".to_string());
    }
    let mut rows = vec![header];
    for (i, (name, _)) in spec.rows.iter().enumerate() {
        let x = &extras[i];
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut row = vec![
            name.clone(),
            format!("{:.1}", med(x.iter().map(|e| us(e.p50)).collect())),
            format!("{:.1}", med(x.iter().map(|e| us(e.p99)).collect())),
            format!("{:.2}", cpu[i].median),
            format!("{:.2}", cpu[i].min),
            format!("{:.2}", cpu[i].max),
            format!(
                "{:.0}%",
                med(x.iter().map(|e| e.server.busy()).collect()) * 100.0
            ),
        ];
        row.extend(
            spec.cpu_vs
                .iter()
                .map(|&(j, _)| format!("{:.2}x", cpu[j].median / cpu[i].median)),
        );
        row.extend(
            spec.rate_vs
                .map(|(j, _)| format!("{:.2}x", rates[i] / rates[j])),
        );
        if traffic {
            row.push(traffic_shares(x));
        }
        rows.push(row);
    }
    rows
}

/// `21% / 79%`: each core's share of the bytes echoed, summed over the runs.
fn traffic_shares(runs: &[Extra]) -> String {
    let mut per_core = vec![0u64; runs.first().map_or(0, |e| e.server.per_core.len())];
    for e in runs {
        for (t, b) in per_core.iter_mut().zip(&e.server.per_core) {
            *t += b;
        }
    }
    let total = per_core.iter().sum::<u64>().max(1) as f64;
    per_core
        .iter()
        .map(|&b| format!("{:.0}%", 100.0 * b as f64 / total))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Runs the benchmark and prints two tables per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let cpus = Cpus::pick();
    each_config(opts, |cfg, plan, nofile| {
        let msg = cfg.msg;
        let mut servers = vec![
            Server::spawn("echo-runtime", cpus.server, move |l, c| {
                runtime_server(l, c, msg, false)
            })?,
            Server::spawn("echo-tokio", cpus.server, move |l, c| {
                tokio_server(l, c, msg)
            })?,
            Server::spawn("echo-raw", cpus.server, move |l, c| {
                crate::raw_echo::serve(l, c, msg)
            })?,
            Server::spawn("echo-runtime-own", cpus.server, move |l, c| {
                runtime_server(l, c, msg, true)
            })?,
        ];
        let mut names = vec![
            "runtime",
            "tokio current-thread",
            "raw ring",
            "runtime own-buffer read",
        ];
        for (name, srv) in peer_servers(cpus.server, msg) {
            names.push(name);
            servers.push(srv);
        }
        let spec = Spec {
            name: "echo",
            rows: names
                .iter()
                .zip(&servers)
                .map(|(name, srv)| (name.to_string(), srv as &dyn EchoServer))
                .collect(),
            baseline: (1, "tokio"),
            cpu_vs: vec![(1, "tokio"), (2, "raw")],
            rate_vs: Some((2, "raw")),
            busy: "server busy",
            client_cpu: cpus.client,
            notes: vec![
                format!(
                    "{}; client: tokio current-thread, one task per connection; \
                     RLIMIT_NOFILE {nofile}",
                    cpus.describe()
                ),
                "enters/op: the server's io_uring_enter calls per round trip (runtime::stats; \
                 the raw ring counts its own)"
                    .to_string(),
            ],
            details: "latency (client, median over runs), server CPU per round trip (getrusage \
                      RUSAGE_THREAD); CPU vs X: X's us/rt over this row's (>1: less CPU)",
            after: &[
                "target: >= 1.3x tokio and >= 0.9x the raw ring; < 1 enter per round trip under \
                 load",
                "(where the raw ring itself is under 1.3x tokio, the bar is the raw ring: \
                 within 5% of its server CPU per round trip)",
            ],
        };
        let measured = measure(&spec, cfg, plan);
        drop(spec);
        for srv in servers {
            srv.stop()?;
        }
        measured
    })
}

/// A server of this benchmark is told the phases through its [`Ctl`] and reports its own
/// thread's CPU time and the bytes it echoed.
impl EchoServer for Server {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn phase(&self, phase: Phase) {
        match phase {
            Phase::Warm => self.ctl.warm(),
            Phase::Open => self.ctl.measure(u64::MAX),
            Phase::Close => self.ctl.done(),
        }
    }

    fn figures(&self, cfg: Config, _window: &Window) -> io::Result<ServerFigures> {
        let report = self.ctl.report()?;
        Ok(ServerFigures {
            enters: report.stats.map(|s| s.enters),
            cpu: report.cpu,
            elapsed: report.elapsed,
            rts: report.count as f64 / cfg.msg as f64,
            per_core: Vec::new(),
        })
    }
}

/// The peer runtimes' echo servers (feature `peers`), each a row after the raw ring's.
#[cfg(feature = "peers")]
fn peer_servers(cpu: usize, msg: usize) -> Vec<(&'static str, Server)> {
    crate::peers::echo_servers(cpu, msg)
}

/// No peers without the `peers` feature.
#[cfg(not(feature = "peers"))]
fn peer_servers(_cpu: usize, _msg: usize) -> Vec<(&'static str, Server)> {
    Vec::new()
}

/// The client's view of the current run, shared by its connection tasks.
struct ClientState {
    /// 0 ramp, 1 measuring, 2 stop.
    phase: Cell<u8>,
    count: Cell<u64>,
    hist: RefCell<Histogram>,
}

/// The moments of a client run at which [`drive`] calls its hook, on the client thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Phase {
    /// Every connection is open; traffic (the ramp) is about to start.
    Warm,
    /// The measured window opens (its clock starts right after the hook returns).
    Open,
    /// The measured window has closed (its clock stops right after the hook returns).
    Close,
}

/// What the client measured over one window.
pub(crate) struct Window {
    /// Round trips completed inside the window.
    pub(crate) ops: u64,
    /// The window's wall time.
    pub(crate) elapsed: Duration,
    /// Latency of each round trip counted.
    pub(crate) hist: Histogram,
}

/// The load generator: connect `cfg.conns`, ramp for [`RAMP`], measure for `window`, close;
/// `hook` is told each [`Phase`] as it comes.
fn drive(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    cfg: Config,
    window: Duration,
    hook: &dyn Fn(Phase),
) -> io::Result<Window> {
    let local = tokio::task::LocalSet::new();
    local.block_on(client, async move {
        let mut streams = Vec::with_capacity(cfg.conns);
        for _ in 0..cfg.conns {
            let s = tokio::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            streams.push(s);
        }
        let state = Rc::new(ClientState {
            phase: Cell::new(0),
            count: Cell::new(0),
            hist: RefCell::new(Histogram::default()),
        });
        hook(Phase::Warm);
        let tasks: Vec<_> = streams
            .into_iter()
            .map(|mut s| {
                let state = state.clone();
                tokio::task::spawn_local(async move {
                    let out = vec![0x5au8; cfg.msg];
                    let mut back = vec![0u8; cfg.msg];
                    // Hot path: one write and one full read per round trip.
                    loop {
                        let phase = state.phase.get();
                        if phase == 2 {
                            return Ok::<(), io::Error>(());
                        }
                        let t = Instant::now();
                        s.write_all(&out).await?;
                        s.read_exact(&mut back).await?;
                        if phase == 1 && state.phase.get() == 1 {
                            state.count.set(state.count.get() + 1);
                            state.hist.borrow_mut().record(t.elapsed());
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(RAMP).await;
        hook(Phase::Open);
        state.phase.set(1);
        let start = Instant::now();
        tokio::time::sleep(window).await;
        state.phase.set(2);
        hook(Phase::Close);
        let elapsed = start.elapsed();
        for t in tasks {
            t.await.map_err(io::Error::other)??;
        }
        let state = Rc::into_inner(state).expect("every task has ended");
        Ok::<_, io::Error>(Window {
            ops: state.count.get(),
            elapsed,
            hist: state.hist.into_inner(),
        })
    })
}

/// This runtime's half of one connection, on its default read path: each chunk received
/// (a buffer of the core's provided-buffer ring) is written back as it is, until the end;
/// `echoed` is told the size of each chunk echoed (`echo-cores` has it too).
pub(crate) async fn runtime_conn(mut stream: corering_net::TcpStream, mut echoed: impl FnMut(u64)) {
    let _ = stream.set_nodelay(true);
    // Hot path: one CQE of the multishot recv and one send per message, the task woken
    // once (the send's completion wakes nobody; the next write_chunk collects it).
    loop {
        let chunk = match stream.read_chunk().await {
            Ok(c) if !c.is_empty() => c,
            _ => break,
        };
        let n = chunk.len();
        if stream.write_chunk(chunk).await.is_err() {
            break;
        }
        echoed(n as u64);
    }
    let _ = futures::AsyncWriteExt::flush(&mut stream).await;
}

/// The previous default, for comparison: owned-buffer `read` into one buffer per
/// connection (pinned while the recv waits), then `write_all` of what was read.
pub(crate) async fn runtime_conn_own(
    stream: corering_net::TcpStream,
    msg: usize,
    mut echoed: impl FnMut(u64),
) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; msg].into_boxed_slice();
    // Hot path: one recv and (unless the socket takes a short write) one send per message.
    loop {
        let (res, b) = stream.read_owned(buf).await;
        let n = match res {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (res, slice) = stream.write_all_owned(b.slice(..n)).await;
        buf = slice.into_inner();
        if res.is_err() {
            break;
        }
        echoed(n as u64);
    }
}

fn runtime_server(
    listener: std::net::TcpListener,
    ctl: Arc<Ctl>,
    msg: usize,
    own: bool,
) -> io::Result<()> {
    runtime_server_with(listener, ctl, msg, own, runtime::Builder::new())
}

/// [`runtime_server`] on a runtime from `builder` (its ring entries set to [`ENTRIES`]):
/// `bench features` switches kernel features off through it.
pub(crate) fn runtime_server_with(
    listener: std::net::TcpListener,
    ctl: Arc<Ctl>,
    msg: usize,
    own: bool,
    builder: runtime::Builder,
) -> io::Result<()> {
    let rt = builder.entries(ENTRIES).build()?;
    rt.block_on(async move {
        let listener = corering_net::TcpListener::from_std(listener)?;
        let mut incoming = listener.incoming();
        while let Some(accepted) = incoming.next().await {
            if ctl.stopping() {
                break;
            }
            match accepted {
                Ok(stream) => {
                    let ctl = ctl.clone();
                    runtime::spawn_local(async move {
                        let tick = |n| ctl.tick(n, runtime::stats);
                        if own {
                            runtime_conn_own(stream, msg, tick).await;
                        } else {
                            runtime_conn(stream, tick).await;
                        }
                        ctl.tick(0, runtime::stats);
                    });
                }
                Err(e) => eprintln!("bench echo: runtime server: {e}"),
            }
        }
        Ok(())
    })
}

fn tokio_server(listener: std::net::TcpListener, ctl: Arc<Ctl>, msg: usize) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let accepted = listener.accept().await;
            if ctl.stopping() {
                return Ok(());
            }
            let mut stream = match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    eprintln!("bench echo: tokio server: {e}");
                    continue;
                }
            };
            let ctl = ctl.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut buf = vec![0u8; msg];
                loop {
                    let n = match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if stream.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    ctl.tick(n as u64, no_stats);
                }
                ctl.tick(0, no_stats);
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: Config = Config { conns: 4, msg: 512 };

    fn short_run(body: fn(std::net::TcpListener, Arc<Ctl>, usize) -> io::Result<()>) {
        let srv = Server::spawn("test-echo", Cpus::pick().server, move |l, c| {
            body(l, c, CFG.msg)
        })
        .expect("server");
        two_runs(&srv);
        srv.stop().expect("stop");
    }

    fn two_runs(srv: &Server) {
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime");
        for _ in 0..2 {
            let (w, server) = one_run(&client, srv, CFG, Duration::from_millis(50)).expect("run");
            assert!(w.ops > 0);
            assert!(server.rts > 0.0);
            assert!(w.hist.quantile(0.50) <= w.hist.quantile(0.99));
        }
    }

    #[test]
    fn runtime_server_echoes() {
        short_run(|l, c, msg| runtime_server(l, c, msg, false));
    }

    #[test]
    fn runtime_own_buffer_server_echoes() {
        short_run(|l, c, msg| runtime_server(l, c, msg, true));
    }

    #[test]
    fn tokio_server_echoes() {
        short_run(tokio_server);
    }

    #[test]
    fn raw_server_echoes() {
        short_run(crate::raw_echo::serve);
    }

    /// Every peer that starts here echoes (one that cannot start says why on stderr).
    #[cfg(feature = "peers")]
    #[test]
    fn peer_servers_echo() {
        for (name, srv) in peer_servers(Cpus::pick().server, CFG.msg) {
            eprintln!("peer {name}");
            two_runs(&srv);
            srv.stop().expect("stop");
        }
    }
}
