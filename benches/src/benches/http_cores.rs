//! `bench http-cores`: an axum HTTP/1.1 server on two cores, this runtime (`cores(2)`, a `SO_REUSEPORT` listener per
//! core) against tokio's multi-thread scheduler with two workers, on four handlers: `/plain` (a static body),
//! `/spawn` (a spawned task awaited), `/mutex` (one `std::sync::Mutex` shared by every request) and `/blocking`
//! (`spawn_blocking` of a 50 us CPU spin).
//!
//! Both servers run at once, each a child process of its own (this binary as the hidden `bench http-server`,
//! `http_cores/server.rs`) on the same two CPUs; wrk runs on a third CPU where there is one. Per handler, each
//! server gets one 1 s warm-up `wrk` run, then `--runs` alternating rounds (A B A B) of `wrk -t1 -c64 -dS --latency`.
//! The server's CPU time (getrusage `RUSAGE_SELF`, which it reports on request) is read before and after each run,
//! and divided by wrk's request count. Without wrk on `PATH` the benchmark says so and is skipped.
//!
//! The rounds run under the conditions asked for, a table each (`http_cores/condition.rs`):
//! the co-located client (always), a CPU hog on the first server CPU (`--hog`), a quota of
//! one CPU per server through the cgroup `cpu` controller (`--quota`).

mod condition;
mod server;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Args;

use self::condition::Condition;
pub use self::server::{server_main, ServerArgs};
use self::server::{Kind, CORES};
use crate::harness::child::{this_exe, ChildProc, EXIT_TIMEOUT};
use crate::harness::cli::Opts;
use crate::harness::measure::{median, Summary};
use crate::harness::output::record;
use crate::harness::progress::Measuring;
use crate::harness::report::{format_rate, header, render_grid, Record, Row};

/// The routes, with what their handler does.
const ROUTES: [(&str, &str); 4] = [
    ("/plain", "a static \"hello\""),
    ("/spawn", "spawn(a 64-step hash).await"),
    (
        "/mutex",
        "one Arc<Mutex<HashMap>> shared by all, a counter incremented",
    ),
    ("/blocking", "spawn_blocking(a 50 us CPU spin).await"),
];
/// The servers, in the order they run in each round; the last is the reference of the ratio columns.
const SERVERS: [(&str, Kind); 3] = [
    ("runtime cores(2)", Kind::Runtime),
    ("runtime unpinned", Kind::RuntimeUnpinned),
    ("tokio multi-thread(2)", Kind::Tokio),
];
/// wrk's connections (`-c`), all on one wrk thread (`-t1`).
const CONNS: usize = 64;
/// Bound on a server's start, up to its `listening` line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on a server's answer to `cpu`.
const CPU_TIMEOUT: Duration = Duration::from_secs(5);
/// The target the title names.
const TARGET: &str =
    "server CPU per request <= 1.0x tokio multi-thread on every handler, p99 <= 1.2x";

/// One wrk run against one server: wrk's figures and the server's CPU time over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Sample {
    /// Requests wrk completed.
    requests: u64,
    /// wrk's `Requests/sec`.
    rps: f64,
    /// wrk's median latency, in microseconds.
    p50_us: f64,
    /// wrk's 99th percentile latency, in microseconds.
    p99_us: f64,
    /// The server process's CPU time (user + system) over the run.
    cpu: Duration,
}

impl Sample {
    /// Server CPU microseconds per request.
    fn cpu_us_per_req(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.requests.max(1) as f64
    }
}

/// Where the servers and wrk run.
#[derive(Clone, Copy, Debug)]
struct Placement {
    /// The two CPUs both servers may run on (one CPU twice where only one is allowed).
    server: [usize; 2],
    /// wrk's CPU, when one is left over; else wrk runs unpinned.
    client: Option<usize>,
}

impl Placement {
    /// The first two allowed CPUs for the servers, the third for wrk.
    fn pick() -> Placement {
        let cpus = sysutil::allowed_cpus();
        let first = cpus.first().copied().unwrap_or(0);
        let second = cpus.get(1).copied().unwrap_or(first);
        Placement {
            server: [first, second],
            client: cpus.get(2).copied(),
        }
    }

    /// `servers on CPUs 0,1, wrk on CPU 2`, with a warning when wrk shares the servers' CPUs.
    fn describe(&self) -> String {
        let [a, b] = self.server;
        match self.client {
            Some(c) => format!("servers on CPUs {a},{b}, wrk on CPU {c}"),
            None => format!(
                "servers on CPUs {a},{b}; NOTE: no third CPU allowed, so wrk runs unpinned and shares them: \
                 figures are co-scheduled with the load generator"
            ),
        }
    }
}

/// `bench http-cores`'s own options: the conditions beside the co-located client.
#[derive(Args, Clone, Copy, Debug, Default, PartialEq)]
pub struct HttpCoresArgs {
    /// also run every round with a thread spinning on the first server CPU
    #[arg(long)]
    pub hog: bool,
    /// also run every round with each server limited to one CPU's worth of
    /// time by the cgroup cpu controller (v2 cpu.max, else v1 cpu.cfs_quota_us;
    /// skipped where neither is writable)
    #[arg(long, verbatim_doc_comment)]
    pub quota: bool,
}

/// Runs the benchmark and prints a table per condition.
pub fn run(opts: &Opts, args: HttpCoresArgs) -> io::Result<()> {
    let Some(wrk) = find_wrk() else {
        println!("http-cores: skipped: wrk is not on PATH (apt-get install wrk)");
        return Ok(());
    };
    let rounds = opts.runs.unwrap_or(if opts.quick { 2 } else { 3 });
    // wrk's -d takes whole seconds.
    let secs = opts.seconds_or(1.0, 2.0).ceil().max(1.0) as u64;
    let place = Placement::pick();
    let mut servers = SERVERS
        .iter()
        .map(|&(name, kind)| ServerProc::start(name, kind, place))
        .collect::<io::Result<Vec<_>>>()?;
    let pids: Vec<u32> = servers.iter().map(|s| s.child.pid()).collect();
    let conditions = Condition::chosen(args.hog, args.quota);
    let mut tables = Vec::new();
    for condition in conditions {
        let Some(applied) = condition.apply(place.server[0], &pids)? else {
            continue;
        };
        let samples = measure_all(&mut servers, &wrk, rounds, secs, place)?;
        drop(applied);
        tables.push((condition, samples));
    }
    for server in servers {
        server.stop()?;
    }
    for (condition, samples) in tables {
        print_table(condition, &samples, rounds, secs, place);
    }
    Ok(())
}

/// Every route's warm-up and `rounds` alternating rounds on every server: the samples per
/// route, per server.
fn measure_all(
    servers: &mut [ServerProc],
    wrk: &Path,
    rounds: usize,
    secs: u64,
    place: Placement,
) -> io::Result<Vec<Vec<Vec<Sample>>>> {
    let mut samples = vec![vec![Vec::new(); SERVERS.len()]; ROUTES.len()];
    let progress = Measuring::new((ROUTES.len() * SERVERS.len() * (rounds + 1)) as u64);
    let mut done = 0;
    for (route, per_route) in ROUTES.iter().map(|r| r.0).zip(samples.iter_mut()) {
        // Round 0 is the warm-up, 1 s per server.
        for round in 0..=rounds {
            let what = match round {
                0 => format!("{route} warm-up"),
                r => format!("{route} round {r}/{rounds}"),
            };
            for (server, out) in servers.iter_mut().zip(per_route.iter_mut()) {
                progress.run(done, server.name, &what);
                done += 1;
                let sample = server
                    .measure(wrk, route, if round == 0 { 1 } else { secs }, place.client)
                    .map_err(|e| {
                        io::Error::new(e.kind(), format!("{} {route}: {e}", server.name))
                    })?;
                if round > 0 {
                    out.push(sample);
                }
            }
        }
    }
    drop(progress);
    Ok(samples)
}

/// Prints one condition's table, its notes and its `--json` record.
fn print_table(
    condition: Condition,
    samples: &[Vec<Vec<Sample>>],
    rounds: usize,
    secs: u64,
    place: Placement,
) {
    let title = format!(
        "http-cores, {}: axum HTTP/1.1 on {CORES} cores, `wrk -t1 -c{CONNS} -d{secs}s --latency`, {rounds} round(s); \
         target: {TARGET}",
        condition.title(place.server[0])
    );
    let (grid, rows, verdicts) = table(samples, condition.suffix());
    print!("{title}\n{}", render_grid(&grid, 2));
    let notes = [
        format!("{}; each server a child process of its own, both started once", place.describe()),
        format!(
            "handlers: {}",
            ROUTES.iter().map(|(r, w)| format!("{r} {w}")).collect::<Vec<_>>().join("; ")
        ),
        format!(
            "per handler: a 1 s warm-up run per server, then {rounds} alternating rounds; req/s, p50 and p99 are \
             wrk's (median over rounds; min and max of req/s)"
        ),
        "CPU us/req: the server process's getrusage(RUSAGE_SELF) user + system time from just before wrk starts to \
         just after it ends, over wrk's request count (median over rounds)"
            .to_string(),
        "CPU vs tokio: tokio's us/req over this row's (>= 1.00x meets the CPU target); p99 vs tokio: this row's p99 \
         over tokio's (<= 1.20x meets the latency target)"
            .to_string(),
        format!("here: {}", verdicts.join("; ")),
    ];
    for note in notes {
        println!("  {note}");
    }
    print!(
        "{}",
        record(Record::new(&title, "req/s", format_rate, rows))
    );
}

/// The printed grid (its first row the header), the `--json` rows (their names ending in
/// `suffix`) and a verdict per handler on the runtime's row.
fn table(samples: &[Vec<Vec<Sample>>], suffix: &str) -> (Vec<Vec<String>>, Vec<Row>, Vec<String>) {
    let mut grid = vec![header(&[
        "handler / server",
        "req/s median",
        "min",
        "max",
        "p50",
        "p99",
        "CPU us/req",
        "CPU vs tokio",
        "p99 vs tokio",
    ])];
    let (mut rows, mut verdicts) = (Vec::new(), Vec::new());
    let med = |s: &[Sample], f: fn(&Sample) -> f64| median(&s.iter().map(f).collect::<Vec<_>>());
    for ((route, _), per_server) in ROUTES.iter().zip(samples) {
        let reference = per_server.len() - 1;
        let tokio_cpu = med(&per_server[reference], Sample::cpu_us_per_req);
        let tokio_p99 = med(&per_server[reference], |s| s.p99_us);
        for ((name, _), s) in SERVERS.iter().zip(per_server) {
            let rps = Summary::of(&s.iter().map(|s| s.rps).collect::<Vec<_>>());
            let (p50, p99) = (med(s, |s| s.p50_us), med(s, |s| s.p99_us));
            let cpu = med(s, Sample::cpu_us_per_req);
            let (cpu_vs, p99_vs) = (tokio_cpu / cpu, p99 / tokio_p99);
            let mut row = vec![format!("{route:<9}  {name}")];
            row.extend([rps.median, rps.min, rps.max].map(format_rate));
            row.extend([format_us(p50), format_us(p99), format!("{cpu:.2}")]);
            row.extend([cpu_vs, p99_vs].map(|r| format!("{r:.2}x")));
            grid.push(row);
            if name.starts_with("runtime") {
                let met = cpu_vs >= 1.0 && p99_vs <= 1.2;
                let met = if met { "met" } else { "missed" };
                verdicts.push(format!(
                    "{route} {name}: CPU {cpu_vs:.2}x, p99 {p99_vs:.2}x ({met})"
                ));
            }
            let extra = [
                ("runs", s.len() as f64),
                ("p50_us", p50),
                ("p99_us", p99),
                ("cpu_us_per_req", cpu),
                ("ratio_vs_tokio", cpu_vs),
                ("p99_vs_tokio", p99_vs),
            ];
            rows.push(Row {
                name: format!("{name} {route}{suffix}"),
                median: rps.median,
                min: rps.min,
                max: rps.max,
                // Server CPU per request against tokio's (>1: less CPU), what `--markdown`'s vs-tokio column reads.
                ratio: Some(cpu_vs),
                enters_per_op: None,
                peak_rss_bytes: None,
                extra: extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            });
        }
    }
    (grid, rows, verdicts)
}

/// Microseconds as `850 us` or `1.25 ms`.
fn format_us(us: f64) -> String {
    match us {
        us if us >= 1000.0 => format!("{:.2} ms", us / 1000.0),
        us => format!("{us:.0} us"),
    }
}

/// A server child process (`bench http-server`), its address and its row name.
struct ServerProc {
    name: &'static str,
    child: ChildProc,
    addr: SocketAddr,
}

impl ServerProc {
    /// Starts `bench http-server --kind K` on the placement's server CPUs and waits for its `listening` line.
    fn start(name: &'static str, kind: Kind, place: Placement) -> io::Result<ServerProc> {
        let cpus = format!("{},{}", place.server[0], place.server[1]);
        let mut cmd = Command::new(this_exe()?);
        cmd.args(["http-server", "--kind", kind.arg(), "--cpus", &cpus]);
        // Pinned to the first CPU until the child widens its own set to both.
        let mut child = ChildProc::spawn(&format!("server {name}"), &mut cmd, place.server[0])?;
        let addr = child.listening(START_TIMEOUT)?;
        Ok(ServerProc { name, child, addr })
    }

    /// The server process's CPU time so far, as it reports it.
    fn cpu(&mut self) -> io::Result<Duration> {
        self.child.say("cpu")?;
        let line = self.child.line_within(CPU_TIMEOUT, "its CPU time")?;
        let nanos = line
            .strip_prefix("cpu ")
            .and_then(|n| n.trim().parse::<u64>().ok());
        let nanos =
            nanos.ok_or_else(|| io::Error::other(format!("said {line:?}, not `cpu NANOS`")))?;
        Ok(Duration::from_nanos(nanos))
    }

    /// One wrk run of `secs` seconds on `route`, with the server's CPU time over it.
    fn measure(
        &mut self,
        wrk: &Path,
        route: &str,
        secs: u64,
        cpu: Option<usize>,
    ) -> io::Result<Sample> {
        let before = self.cpu()?;
        let sample = run_wrk(wrk, &format!("http://{}{route}", self.addr), secs, cpu)?;
        let after = self.cpu()?;
        self.child.check_alive()?;
        Ok(Sample {
            cpu: after.saturating_sub(before),
            ..sample
        })
    }

    /// Closes its stdin and waits for it to exit.
    fn stop(mut self) -> io::Result<()> {
        self.child.close_and_wait(EXIT_TIMEOUT)
    }
}

/// `wrk` on `PATH`, if there is one.
fn find_wrk() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("wrk"))
        .find(|p| p.is_file())
}

/// `wrk -t1 -c64 -dSs --latency URL`, started from a thread pinned to `cpu` (which wrk inherits), parsed.
fn run_wrk(wrk: &Path, url: &str, secs: u64, cpu: Option<usize>) -> io::Result<Sample> {
    let args = [
        "-t1".to_string(),
        format!("-c{CONNS}"),
        format!("-d{secs}s"),
        "--latency".to_string(),
        url.to_string(),
    ];
    let run = || {
        if let Some(cpu) = cpu {
            sysutil::pin_to(cpu)?;
        }
        Command::new(wrk).args(&args).stdin(Stdio::null()).output()
    };
    let output = std::thread::scope(|s| s.spawn(run).join())
        .map_err(|_| io::Error::other("the thread running wrk panicked"))?
        .map_err(|e| io::Error::new(e.kind(), format!("running {}: {e}", wrk.display())))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(io::Error::other(format!(
            "wrk failed ({}): {text}{err}",
            output.status
        )));
    }
    parse_wrk(&text).map_err(|e| io::Error::other(format!("{e}; wrk printed:\n{text}")))
}

/// wrk's request count, `Requests/sec` and 50% and 99% latencies; an error if any request failed.
fn parse_wrk(text: &str) -> Result<Sample, String> {
    if let Some(bad) = text
        .lines()
        .find(|l| l.contains("Socket errors") || l.contains("Non-2xx"))
    {
        return Err(format!("failed requests: {}", bad.trim()));
    }
    let find = |pred: &dyn Fn(&str) -> bool, what: &str| {
        let line = text.lines().map(str::trim).find(|l| pred(l));
        line.ok_or_else(|| format!("no {what} line"))
    };
    let field = |line: &str, i: usize| line.split_whitespace().nth(i).unwrap_or("").to_string();
    let requests = field(
        find(&|l| l.contains(" requests in "), "`N requests in`")?,
        0,
    );
    let requests = requests
        .parse::<u64>()
        .map_err(|_| format!("request count {requests:?}"))?;
    let rps = field(
        find(&|l| l.starts_with("Requests/sec:"), "`Requests/sec:`")?,
        1,
    );
    let rps = rps
        .parse::<f64>()
        .map_err(|_| format!("Requests/sec {rps:?}"))?;
    let latency = |pct: &str| {
        let v = field(find(&|l| l.starts_with(pct), pct)?, 1);
        parse_latency(&v).ok_or_else(|| format!("{pct} latency {v:?}"))
    };
    if requests == 0 {
        return Err("no requests completed".to_string());
    }
    Ok(Sample {
        requests,
        rps,
        p50_us: latency("50%")?,
        p99_us: latency("99%")?,
        cpu: Duration::ZERO,
    })
}

/// A wrk latency (`812.00us`, `1.25ms`, `2.00s`, `1.00m`) in microseconds.
fn parse_latency(s: &str) -> Option<f64> {
    let (num, scale) = [("us", 1.0), ("ms", 1e3), ("s", 1e6), ("m", 60e6)]
        .iter()
        .find_map(|&(unit, scale)| s.strip_suffix(unit).map(|n| (n, scale)))?;
    num.parse::<f64>().ok().map(|v| v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRK: &str = "\
Running 1s test @ http://127.0.0.1:40000/plain
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   412.00us  100.00us   2.00ms   90.00%
    Req/Sec    50.00k     1.00k   52.00k    80.00%
  Latency Distribution
     50%  400.00us
     75%  450.00us
     90%  500.00us
     99%    1.25ms
  50000 requests in 1.00s, 6.00MB read
Requests/sec:  49950.05
Transfer/sec:      6.00MB
";

    #[test]
    fn parses_wrk_output() {
        let s = parse_wrk(WRK).unwrap();
        assert_eq!(s.requests, 50_000);
        assert!((s.rps - 49_950.05).abs() < 1e-6);
        assert_eq!((s.p50_us, s.p99_us), (400.0, 1250.0));
        let errors = WRK.replace(
            "Requests/sec",
            "  Socket errors: connect 0, read 3, write 0, timeout 0\nRequests/sec",
        );
        assert!(parse_wrk(&errors).unwrap_err().contains("read 3"));
        assert_eq!(parse_latency("2.00s"), Some(2e6));
        assert_eq!(parse_latency("abc"), None);
    }
}
