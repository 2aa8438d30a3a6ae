//! `bench idle-conns`: what an open, idle connection costs a server, in resident memory and in CPU time while nothing
//! happens (`benches/README.md`). For each contender in turn (in alternating rounds with `--runs R`):
//! 1. the server starts as a child process of its own, pinned to the server CPU (this binary as the hidden `bench
//!    idle-server --kind K`, one of `crate::servers`; with `--http` an example binary); its `VmRSS` is read;
//! 2. the client child (the hidden `bench idle-client`) opens N/2 connections, echoes 64 bytes on each (`--http`: one
//!    `GET /`) and checks it, says `half`; `VmRSS` again; the other half, `idle N`;
//! 3. after [`SETTLE`] and again after the idle window, the server's CPU and wake-ups (`/proc/PID/task/*/schedstat`),
//!    then its `VmRSS`; the client resets every connection (`SO_LINGER` 0) and the server is killed.
//!
//! The figure is the RSS growth per connection; beside it the second half's alone, without fixed costs the first
//! connections pay once (a receive ring's pages). Kernel socket memory is not in RSS. N is clamped to [`SPARE_FDS`]
//! under the `RLIMIT_NOFILE` hard limit and to the ephemeral ports; every wait is bounded (`harness/child.rs`).

mod client;
mod round;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};

use self::round::{http_contenders, measure, Sample};
pub use self::{client::client_main, round::server_main};
use crate::harness::child::this_exe;
use crate::harness::cli::{count, Opts};
use crate::harness::measure::{median, Summary};
use crate::harness::output::record;
use crate::harness::progress::Measuring;
use crate::harness::report::{header, render_grid, Record, Row};
use crate::harness::server::Cpus;

/// Connections without `--conns`.
pub const DEFAULT_CONNS: usize = 10_000;
/// Connections with `--quick` (and in `all --quick`).
pub const QUICK_CONNS: usize = 2_000;
/// The tokio and raw servers' buffer per connection.
const CONN_BUF: usize = 4096;
/// Fds each process keeps free beside its connections.
const SPARE_FDS: u64 = 1_000;
/// Ephemeral ports left unused, for everything else on the machine.
const SPARE_PORTS: u64 = 1_000;
/// Bound on a server's start, up to its `listening` line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a server listens, and after the client is idle, before a figure is read.
const SETTLE: Duration = Duration::from_millis(200);

/// `bench idle-conns`'s own options.
#[derive(Args, Clone, Copy, Debug, Default, PartialEq)]
pub struct IdleConnsArgs {
    /// connections (default 10,000; 2,000 with --quick), clamped to what
    /// the fd hard limit and the ephemeral port range allow
    #[arg(long, value_name = "N", value_parser = count::<1>, verbatim_doc_comment)]
    pub conns: Option<usize>,
    /// HTTP/1.1 keep-alive connections to the `axum` example and to
    /// `axum-tokio` instead of the echo servers; both must be built next to
    /// this binary (scripts/idle_http.sh builds them and runs this)
    #[arg(long, verbatim_doc_comment)]
    pub http: bool,
}

/// The echo server a `bench idle-server` child runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// This runtime, `read_chunk` and `write_chunk` of the chunk.
    Runtime,
    /// tokio current-thread, a 4 KiB buffer per connection.
    Tokio,
    /// The raw io-uring loop of `servers/raw.rs`, a 4 KiB buffer per connection.
    Raw,
}

/// The hidden `bench idle-server`: one echo server, until its stdin closes.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
pub struct ServerArgs {
    /// which server
    #[arg(long, value_enum)]
    pub kind: Kind,
}

/// The hidden `bench idle-client`: N connections that each echo (or GET) once and then idle.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
pub struct ClientArgs {
    /// the server
    #[arg(long)]
    pub addr: SocketAddr,
    /// connections to open
    #[arg(long, value_parser = count::<1>)]
    pub conns: usize,
    /// send `GET /` and read one HTTP/1.1 response instead of 64 bytes and their echo
    #[arg(long)]
    pub http: bool,
}

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts, args: IdleConnsArgs) -> io::Result<()> {
    sysutil::raise_nofile()?;
    let (_, hard) = sysutil::nofile_limit()?;
    let requested = args.conns.unwrap_or(if opts.quick {
        QUICK_CONNS
    } else {
        DEFAULT_CONNS
    });
    let (conns, clamp_note) = clamp_conns(requested, hard, ephemeral_ports())?;
    let window = Duration::from_secs_f64(opts.seconds_or(1.0, 2.0));
    let rounds = opts.runs.unwrap_or(1);
    let cpus = Cpus::pick();
    let (contenders, refs, what) = if args.http {
        (
            http_contenders()?,
            vec![(1, "axum-tokio", "tokio")],
            "HTTP/1.1 keep-alive, one GET / each",
        )
    } else {
        let exe = this_exe()?;
        let server = |name, kind| (name, exe.clone(), vec!["idle-server", "--kind", kind]);
        let echo = vec![
            server("runtime (read_chunk)", "runtime"),
            server("tokio current-thread", "tokio"),
            server("raw ring", "raw"),
        ];
        (
            echo,
            vec![(1, "tokio", "tokio"), (2, "raw", "raw")],
            "64 B echoed once each",
        )
    };

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); contenders.len()];
    let progress = Measuring::new((rounds * contenders.len()) as u64);
    for round in 0..rounds {
        for (i, (c, s)) in contenders.iter().zip(samples.iter_mut()).enumerate() {
            progress.run(
                (round * contenders.len() + i) as u64,
                c.0,
                &format!("round {}/{rounds}", round + 1),
            );
            let sample = measure(c, conns, window, cpus, args.http)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", c.0)))?;
            s.push(sample);
        }
    }
    drop(progress);

    let title = format!(
        "idle-conns{}: {conns} connections ({what}) then idle {:.1} s; {rounds} round(s)",
        if args.http { " (http)" } else { "" },
        window.as_secs_f64()
    );
    let figures = Figures {
        names: contenders.iter().map(|c| c.0).collect(),
        samples,
        conns,
        refs,
    };
    let (grid, rows) = figures.table();
    print!("{title}\n{}", render_grid(&grid, 2));
    print!(
        "{}",
        record(Record::new(
            &title,
            "bytes/conn",
            |v| format!("{v:.0}"),
            rows
        ))
    );
    let mut notes = vec![
        format!("{}; each server and the client in a process of its own", cpus.describe()),
        "bytes/conn: the server's VmRSS growth from before the client connects to the end of the idle window, over N \
         (median, min, max over rounds); kernel socket memory is not in RSS"
            .to_string(),
        "2nd half bytes/conn: the growth from N/2 connections open to N, over N/2: one more connection's cost, \
         without fixed costs the first half paid (e.g. the pages of a receive ring's buffers)"
            .to_string(),
        "idle CPU ms, wake-ups: the server's threads over the idle window (/proc/PID/task/*/schedstat: time on CPU, \
         times scheduled in); target about 0"
            .to_string(),
    ];
    let vs: Vec<&str> = figures.refs.iter().map(|r| r.1).collect();
    notes.push(format!(
        "vs {}: that row's bytes/conn over this row's (>1: less memory per connection)",
        vs.join(", vs ")
    ));
    notes.extend(clamp_note);
    for note in notes {
        println!("  {note}");
    }
    Ok(())
}

/// The samples of every contender, and the rows they make.
struct Figures {
    names: Vec<&'static str>,
    samples: Vec<Vec<Sample>>,
    conns: usize,
    /// Ratio columns: (row index, column name, `--json` key suffix).
    refs: Vec<(usize, &'static str, &'static str)>,
}

impl Figures {
    /// RSS growth per connection in bytes (negative if it shrank), over the rounds.
    fn per_conn(&self, i: usize) -> Summary {
        let grew = |s: &Sample| (s.rss_after_kib as f64 - s.rss_before_kib as f64) * 1024.0;
        let v: Vec<f64> = self.samples[i]
            .iter()
            .map(|s| grew(s) / self.conns as f64)
            .collect();
        Summary::of(&v)
    }

    /// `reference / row` of the medians (>1: this row holds less), if both grew.
    fn ratio(&self, row: usize, reference: usize) -> Option<f64> {
        let (r, b) = (self.per_conn(row).median, self.per_conn(reference).median);
        (r > 0.0 && b > 0.0).then(|| b / r)
    }

    /// The printed grid (its first row the header) and the `--json` rows, `ratio` against the first reference row.
    fn table(&self) -> (Vec<Vec<String>>, Vec<Row>) {
        let mut head = header(&[
            "",
            "conns",
            "RSS before",
            "RSS after",
            "bytes/conn median",
            "min",
            "max",
        ]);
        head.extend(["2nd half bytes/conn", "idle CPU ms", "idle wake-ups"].map(String::from));
        head.extend(self.refs.iter().map(|r| format!("vs {}", r.1)));
        let (mut grid, mut rows) = (vec![head], Vec::new());
        let second = (self.conns - self.conns / 2).max(1) as f64;
        for (i, name) in self.names.iter().enumerate() {
            let samples = &self.samples[i];
            let med =
                |f: &dyn Fn(&Sample) -> f64| median(&samples.iter().map(f).collect::<Vec<_>>());
            let bytes = |kib: u64| kib as f64 * 1024.0;
            let pc = self.per_conn(i);
            // The second half's growth: one more connection's cost, without the fixed costs.
            let marginal = med(&|s| (bytes(s.rss_after_kib) - bytes(s.rss_half_kib)) / second);
            let idle_cpu = med(&|s| s.idle_cpu.as_secs_f64() * 1e3);
            let before = med(&|s| bytes(s.rss_before_kib));
            let (half, after) = (
                med(&|s| bytes(s.rss_half_kib)),
                med(&|s| bytes(s.rss_after_kib)),
            );
            let wakeups: Option<Vec<f64>> = samples
                .iter()
                .map(|s| s.idle_wakeups.map(|w| w as f64))
                .collect();
            let wakeups = wakeups.map(|w| median(&w));
            let ratios: Vec<Option<f64>> = self
                .refs
                .iter()
                .map(|&(j, _, _)| self.ratio(i, j))
                .collect();
            let mut row = vec![name.to_string(), self.conns.to_string()];
            row.extend([before, after].map(|b| format!("{:.1} MiB", b / 1024.0 / 1024.0)));
            row.extend([pc.median, pc.min, pc.max, marginal].map(|v| format!("{v:.0}")));
            row.push(format!("{idle_cpu:.2}"));
            row.push(wakeups.map_or("-".into(), |w| format!("{w:.0}")));
            row.extend(
                ratios
                    .iter()
                    .map(|r| r.map_or("-".into(), |r| format!("{r:.2}x"))),
            );
            grid.push(row);
            let mut extra = vec![
                ("runs", samples.len() as f64),
                ("conns", self.conns as f64),
                ("bytes_per_conn", pc.median),
                ("marginal_bytes_per_conn", marginal),
                ("idle_cpu_ms", idle_cpu),
                ("rss_before_bytes", before),
                ("rss_half_bytes", half),
                ("rss_after_bytes", after),
            ];
            extra.extend(wakeups.map(|w| ("idle_wakeups", w)));
            let mut extra: Vec<(String, f64)> =
                extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            // Non-finite figures are written as `null`.
            let vs = |(r, v): (&(usize, &str, &str), &Option<f64>)| {
                (format!("ratio_vs_{}", r.2), v.unwrap_or(f64::NAN))
            };
            extra.extend(self.refs.iter().zip(&ratios).map(vs));
            rows.push(Row {
                name: name.to_string(),
                median: pc.median,
                min: pc.min,
                max: pc.max,
                ratio: ratios.first().copied().flatten(),
                enters_per_op: None,
                peak_rss_bytes: samples.iter().map(|s| s.hwm_kib * 1024).max(),
                extra,
            });
        }
        (grid, rows)
    }
}

/// N clamped to `hard - SPARE_FDS` and to the ephemeral ports less [`SPARE_PORTS`]; the note says so when it was.
fn clamp_conns(
    requested: usize,
    hard: u64,
    ports: Option<u64>,
) -> io::Result<(usize, Option<String>)> {
    let by_fds = hard.saturating_sub(SPARE_FDS);
    let by_ports = ports.map_or(u64::MAX, |p| p.saturating_sub(SPARE_PORTS));
    let max = by_fds.min(by_ports);
    if max == 0 {
        return Err(io::Error::other(format!(
            "no room for connections: RLIMIT_NOFILE hard limit {hard} (each process keeps {SPARE_FDS} spare), \
             ephemeral ports {}",
            ports.map_or_else(|| "unknown".to_string(), |p| p.to_string())
        )));
    }
    if requested as u64 <= max {
        return Ok((requested, None));
    }
    let why = match by_fds <= by_ports {
        true => format!("the RLIMIT_NOFILE hard limit {hard} less {SPARE_FDS} spare fds"),
        false => format!(
            "the {} ephemeral ports less {SPARE_PORTS}",
            ports.unwrap_or(0)
        ),
    };
    Ok((
        max as usize,
        Some(format!(
            "{requested} connections asked, clamped to {max}: {why}"
        )),
    ))
}

/// The number of local ports `connect` picks from (`/proc/sys/net/ipv4/ip_local_port_range`).
fn ephemeral_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.saturating_sub(lo) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_to_fds_and_ports() {
        assert_eq!(
            clamp_conns(10_000, 20_000, Some(28_232)).unwrap(),
            (10_000, None)
        );
        let (n, note) = clamp_conns(50_000, 20_000, Some(28_232)).unwrap();
        assert_eq!(n, 19_000);
        assert!(note.unwrap().contains("hard limit 20000"));
        let (n, note) = clamp_conns(50_000, 1 << 20, Some(28_232)).unwrap();
        assert_eq!(n, 27_232);
        assert!(note.unwrap().contains("ephemeral ports"));
        assert!(clamp_conns(10, 1_000, None).is_err());
    }
}
