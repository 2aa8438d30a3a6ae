//! `bench echo`: C connections ping-pong M-byte messages for D seconds, 64 x 128 B and 16 x 16 KiB, against this
//! runtime's echo server (its `read_chunk`/`write_chunk` path and its previous own-buffer one), tokio, the raw ring
//! and the peers (`crate::servers`), alternated (`benches/README.md`). One tokio current-thread client, one task per
//! connection, records each round trip's latency; the figure that depends least on it is the server's CPU per round
//! trip over the same window.
//!
//! The driver serves `echo-cores` and `features` too: [`each_config`] runs both loads, [`measure`] alternates servers
//! and prints a [`Spec`]'s two tables, and a server takes part through [`EchoServer`], which says how it measures.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sysutil::{raise_nofile, PinGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{median, tokio_current, Contestant, Measure, Plan, Summary};
use crate::harness::report::{header, render_grid, Metric};
use crate::harness::server::{Cpus, Server};
use crate::servers;

/// Traffic before each window opens: connections warm, queues at their steady depth.
const RAMP: Duration = Duration::from_millis(100);

/// One configuration: connections and message size.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Client connections, each with one message in flight.
    pub conns: usize,
    /// Message size in bytes.
    pub msg: usize,
}

/// The configurations every echo benchmark runs: per-op overhead, then copying and short reads.
pub const CONFIGS: [Config; 2] = [
    Config {
        conns: 64,
        msg: 128,
    },
    Config {
        conns: 16,
        msg: 16 * 1024,
    },
];

/// Runs `one` for each of [`CONFIGS`] with the plan `opts` asks for.
pub fn each_config(
    opts: &Opts,
    mut one: impl FnMut(Config, Plan, u64) -> io::Result<()>,
) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let plan = Plan::window(opts, if opts.quick { 1.0 } else { 5.0 }, 4, 200);
    for (i, cfg) in CONFIGS.iter().enumerate() {
        if i > 0 {
            println!();
        }
        one(*cfg, plan, nofile)?;
    }
    Ok(())
}

/// A server as the echo driver sees it: where to connect, what it is told of each run, and what it measured.
pub trait EchoServer {
    /// Where its listener is bound.
    fn addr(&self) -> SocketAddr;
    /// Each [`Phase`] of a client run as it comes, on the client thread.
    fn phase(&self, phase: Phase);
    /// Its figures over the window of `cfg`'s load that just closed (`window`: the client's).
    fn figures(&self, cfg: Config, window: &Window) -> io::Result<ServerFigures>;
}

/// What a server spent over one window.
pub struct ServerFigures {
    /// `io_uring_enter` calls, where the server counts them.
    pub enters: Option<u64>,
    /// Server CPU time.
    pub cpu: Duration,
    /// The wall time `cpu` was spent in.
    pub elapsed: Duration,
    /// Round trips `cpu` served.
    pub rts: f64,
    /// Bytes each server core echoed; empty where the server does not count them.
    pub per_core: Vec<u64>,
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

/// What an echo benchmark's tables say.
pub struct Spec {
    /// The tables' name: `echo`, `echo-cores`, `features`.
    pub name: &'static str,
    /// The row the first table's ratios are taken against, and its ratio column (`vs tokio`).
    pub baseline: (usize, &'static str),
    /// The rows every row's server CPU per round trip is compared with (`CPU vs raw`).
    pub cpu_vs: Vec<(usize, &'static str)>,
    /// The row every row's rate is compared with in the details (`rt/s vs raw`), if any.
    pub rate_vs: Option<(usize, &'static str)>,
    /// Header of the server's CPU over wall time.
    pub busy: &'static str,
    /// The CPU the load generator is pinned to.
    pub client_cpu: usize,
    /// Lines under the first table.
    pub notes: Vec<String>,
    /// The line above the details table.
    pub details: &'static str,
    /// Lines under the details table.
    pub after: &'static [&'static str],
}

/// Measures `servers` (the rows, in order) alternately with the load of `cfg`, prints the two tables of `spec`.
pub fn measure<S: EchoServer>(
    spec: &Spec,
    servers: Vec<(String, S)>,
    stop: fn(S) -> io::Result<()>,
    cfg: Config,
    plan: Plan,
) -> io::Result<()> {
    let measured = measure_rows(spec, &servers, cfg, plan);
    servers.into_iter().try_for_each(|(_, srv)| stop(srv))?;
    measured
}

fn measure_rows<S: EchoServer>(
    spec: &Spec,
    rows: &[(String, S)],
    cfg: Config,
    plan: Plan,
) -> io::Result<()> {
    let pin = PinGuard::new(spec.client_cpu)?;
    let client = tokio_current()?;
    let extras: Vec<RefCell<Vec<Extra>>> = rows.iter().map(|_| RefCell::default()).collect();
    let contenders = (rows.iter().zip(&extras)).map(|((name, srv), extra)| {
        let client = &client;
        Contestant::new(name.clone(), move |ms| {
            let (w, server) = one_run(client, srv, cfg, Duration::from_millis(ms))?;
            let m = Measure::new(w.ops, w.elapsed, server.enters);
            let (p50, p99) = [0.50, 0.99]
                .map(|q| Duration::from_nanos(w.hist.value_at_quantile(q)))
                .into();
            extra.borrow_mut().push(Extra { p50, p99, server });
            Ok(m)
        })
    });
    let title = format!(
        "{}: {} connections x {} B ping-pong, {:.1} s windows",
        spec.name,
        cfg.conns,
        cfg.msg,
        plan.count as f64 / 1000.0,
    );
    let mut table = Contest::new(title, Metric::Rate("rt/s"), spec.baseline.1)
        .against(spec.baseline.0)
        .rows(contenders)
        .run(plan)?;
    drop(pin);
    // Each contestant's first extra is its warm-up run's.
    let extras: Vec<Vec<Extra>> = extras
        .into_iter()
        .map(|e| e.into_inner().into_iter().skip(1).collect())
        .collect();
    let rates: Vec<f64> = table.series.iter().map(|s| s.rates().median).collect();
    // The server CPU per round trip the details table prints, also in `--json` rows.
    let cpu: Vec<Summary> = (extras.iter())
        .map(|x| Summary::of(&x.iter().map(|e| e.server.us_per_rt()).collect::<Vec<_>>()))
        .collect();
    for (s, c) in table.series.iter_mut().zip(&cpu) {
        s.extra.push(("server_cpu_us_per_op".to_string(), c.median));
    }
    table.print(spec.notes.iter().cloned());
    println!("  {}", spec.details);

    // The details table: latency, server CPU per round trip, and its ratios between rows.
    let traffic = extras
        .iter()
        .flatten()
        .any(|e| !e.server.per_core.is_empty());
    let mut head = header(&[
        "",
        "p50 us",
        "p99 us",
        "server us/rt median",
        "min",
        "max",
        spec.busy,
    ]);
    head.extend(spec.cpu_vs.iter().map(|(_, to)| format!("CPU vs {to}")));
    head.extend(spec.rate_vs.map(|(_, to)| format!("rt/s vs {to}")));
    head.extend(traffic.then(|| "traffic per core".to_string()));
    let mut grid = vec![head];
    for (i, ((name, _), x)) in rows.iter().zip(&extras).enumerate() {
        let med = |f: &dyn Fn(&Extra) -> f64| median(&x.iter().map(f).collect::<Vec<_>>());
        let mut row = vec![
            name.clone(),
            format!("{:.1}", med(&|e| e.p50.as_secs_f64() * 1e6)),
            format!("{:.1}", med(&|e| e.p99.as_secs_f64() * 1e6)),
            format!("{:.2}", cpu[i].median),
            format!("{:.2}", cpu[i].min),
            format!("{:.2}", cpu[i].max),
            format!("{:.0}%", med(&|e| e.server.busy()) * 100.0),
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
        row.extend(traffic.then(|| traffic_shares(x)));
        grid.push(row);
    }
    print!("{}", render_grid(&grid, 4));
    for line in spec.after {
        println!("  {line}");
    }
    Ok(())
}

/// One run against `srv`: the client's window, and the server's figures over it.
pub fn one_run(
    client: &tokio::runtime::Runtime,
    srv: &dyn EchoServer,
    cfg: Config,
    window: Duration,
) -> io::Result<(Window, ServerFigures)> {
    let w = drive(client, srv.addr(), cfg, window, &|p| srv.phase(p))?;
    let server = srv.figures(cfg, &w)?;
    Ok((w, server))
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
    let shares: Vec<String> = per_core
        .iter()
        .map(|&b| format!("{:.0}%", 100.0 * b as f64 / total))
        .collect();
    shares.join(" / ")
}

/// Runs the benchmark and prints two tables per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let cpus = Cpus::pick();
    each_config(opts, |cfg, plan, nofile| {
        let servers = servers::echo_servers(cpus.server, cfg.msg)?;
        let spec = Spec {
            name: "echo",
            baseline: (1, "vs tokio"),
            cpu_vs: vec![(1, "tokio"), (2, "raw")],
            rate_vs: Some((2, "raw")),
            busy: "server busy",
            client_cpu: cpus.client,
            notes: vec![
                format!(
                    "{}; client: tokio current-thread, one task per connection; RLIMIT_NOFILE {nofile}",
                    cpus.describe()
                ),
                "enters/op: the server's io_uring_enter calls per round trip (runtime::core_metrics; the raw ring counts its \
                 own)"
                    .to_string(),
            ],
            details: "latency (client, median over runs), server CPU per round trip (getrusage RUSAGE_THREAD); CPU vs \
                      X: X's us/rt over this row's (>1: less CPU)",
            after: &[
                "target: >= 1.3x tokio and >= 0.9x the raw ring; < 1 enter per round trip under load",
                "(where the raw ring itself is under 1.3x tokio, the bar is the raw ring: within 5% of its server CPU \
                 per round trip)",
            ],
        };
        measure(&spec, servers, Server::stop, cfg, plan)
    })
}

/// A server of this benchmark is told the phases through its [`Ctl`] and reports its own thread's CPU time and the
/// bytes it echoed.
///
/// [`Ctl`]: crate::harness::server::Ctl
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

/// The client's view of the current run, shared by its connection tasks.
struct ClientState {
    /// 0 ramp, 1 measuring, 2 stop.
    phase: Cell<u8>,
    count: Cell<u64>,
    hist: RefCell<Histogram<u64>>,
}

/// The moments of a client run at which [`drive`] calls its hook, on the client thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// Every connection is open; traffic (the ramp) is about to start.
    Warm,
    /// The measured window opens (its clock starts right after the hook returns).
    Open,
    /// The measured window has closed (its clock stops right after the hook returns).
    Close,
}

/// What the client measured over one window.
pub struct Window {
    /// Round trips completed inside the window.
    pub ops: u64,
    /// The window's wall time.
    pub elapsed: Duration,
    /// Latency of each round trip counted, in ns (1 ns to 1 h, 2 significant digits).
    pub hist: Histogram<u64>,
}

/// The load generator: connect `cfg.conns`, ramp for [`RAMP`], measure for `window`, close.
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
            hist: RefCell::new(
                Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid bounds"),
            ),
        });
        hook(Phase::Warm);
        let tasks: Vec<_> = (streams.into_iter())
            .map(|mut s| {
                let state = state.clone();
                tokio::task::spawn_local(async move {
                    let (out, mut back) = (vec![0x5au8; cfg.msg], vec![0u8; cfg.msg]);
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
                            state
                                .hist
                                .borrow_mut()
                                .saturating_record(t.elapsed().as_nanos() as u64);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every echo server, the peers' included (one that cannot start says why on stderr), echoes over two short runs.
    #[test]
    fn every_server_echoes() {
        const CFG: Config = Config { conns: 4, msg: 512 };
        let client = tokio_current().unwrap();
        for (name, srv) in servers::echo_servers(Cpus::pick().server, CFG.msg).unwrap() {
            for _ in 0..2 {
                let (w, server) =
                    one_run(&client, &srv, CFG, Duration::from_millis(50)).expect(&name);
                assert!(
                    w.ops > 0
                        && server.rts > 0.0
                        && w.hist.value_at_quantile(0.5) <= w.hist.value_at_quantile(0.99),
                    "{name}"
                );
            }
            srv.stop().expect("stop");
        }
    }
}
