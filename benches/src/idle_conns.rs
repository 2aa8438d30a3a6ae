//! `bench idle-conns`: what an open, idle connection costs a server, in resident memory and
//! in CPU time while nothing happens.
//!
//! For each contender, in turn (and in alternating rounds with `--runs R`, default 1):
//! 1. the server starts as a child process of its own, so that its RSS is its own: this
//!    binary re-run as the hidden `bench idle-server --kind K`, or an example binary
//!    (`--http`), pinned to the server CPU (sched_setaffinity(2) before exec);
//! 2. its `VmRSS` (proc(5), `/proc/PID/status`) is read once it listens and has settled;
//! 3. the client, a second child (the hidden `bench idle-client`), pinned to the client CPU,
//!    opens N/2 connections in batches of [`BATCH`], sends 64 bytes on each (`--http`: one
//!    `GET /`), reads the echo (the response) back and checks it, and prints `half N/2`; the
//!    server's `VmRSS` is read, the client is told to go on, does the same for the other
//!    half, prints `idle N` and leaves every connection open until its stdin closes;
//! 4. after [`SETTLE`], the server's CPU time is read (the sum over its threads of
//!    `/proc/PID/task/TID/schedstat`: nanoseconds on CPU and times scheduled in, which
//!    counts wake-ups), again after the idle window (2 s, 1 s with `--quick`, `--seconds S`),
//!    and its `VmRSS` at the end of the window;
//! 5. the client's stdin is closed (it resets every connection, `SO_LINGER` 0, so no
//!    `TIME_WAIT` is left) and the server is killed.
//!
//! The figure is the RSS growth per connection, `(after - before) / N` bytes; beside it the
//! growth over the second half alone, `(after - half) / (N - N/2)`, which leaves out fixed
//! costs that the first connections pay once (a per-core receive ring whose buffers' pages
//! are touched as it cycles: 1,024 buffers of which one page each is written, 4 MiB, is
//! 2 KiB per connection at N = 2,000). The server's CPU over the idle window should be
//! about zero. RSS counts the process's own pages only: the kernel's socket memory
//! (buffers, `struct sock`) is not in it.
//!
//! Echo contenders (`bench idle-conns`):
//! - `runtime (read_chunk)`: this runtime, `Builder::new().cores(1)`, `TcpListener::incoming`
//!   and `spawn_local` per connection, the echo example's loop: `read_chunk` (a buffer of the
//!   core's shared receive ring) then `write_chunk` of that chunk, so no buffer is added here
//!   (whatever memory a connection holds is `net`'s);
//! - `tokio current-thread`: an accept loop with `tokio::spawn` per connection, each a read
//!   loop on its own 4 KiB `Vec` (`read` then `write_all`), as a typical tokio echo;
//! - `raw ring`: the io-uring crate loop of `raw_echo.rs` (multishot accept, one recv or
//!   send in flight per connection) with one 4 KiB buffer per connection.
//!
//! HTTP keep-alive contenders (`bench idle-conns --http`; `scripts/idle_http.sh` builds
//! them and runs it): the `axum` example on this runtime (`--cores 1`) and `axum-tokio`
//! (feature `tokio-peer`, current-thread), both found next to this binary; each connection
//! sends one `GET /` and reads its response, then stays open.
//!
//! N defaults to 10,000 (2,000 with `--quick`) and is clamped so that each process stays
//! [`SPARE_FDS`] under the `RLIMIT_NOFILE` hard limit (the soft limit is raised to it, and the
//! children inherit it) and within the ephemeral port range.
//!
//! Everything is bounded in time: the server's start, the client's connects and reads (its
//! own timeouts, and the parent's deadlines on its `half` and `idle` lines), its exit. A child still
//! running when the parent is done with it, on any path, is killed (`SIGKILL`) and reaped,
//! and every child dies with the parent (`PR_SET_PDEATHSIG`).

use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use futures::StreamExt as _;
use socket2::SockRef;

use crate::progress::Measuring;
use crate::report::{self, render_grid, Record, Row, Summary};
use crate::server::{Cpus, Ctl, Server};
use crate::Opts;

/// Connections without `--conns`.
pub const DEFAULT_CONNS: usize = 10_000;
/// Connections with `--quick` (and in `all --quick`).
pub const QUICK_CONNS: usize = 2_000;
/// Bytes each echo connection sends and reads back before it goes idle.
const MSG: usize = 64;
/// The tokio and raw servers' buffer per connection.
const CONN_BUF: usize = 4096;
/// Fds each process keeps free beside its connections (stdio, the ring, the listener,
/// pipes, the allocator's and the runtime's own): with a hard limit of 20,000, at most
/// 19,000 connections.
const SPARE_FDS: u64 = 1_000;
/// Ephemeral ports left unused, for everything else on the machine.
const SPARE_PORTS: u64 = 1_000;
/// Connections the client opens before it reads their echoes back.
const BATCH: usize = 128;
/// Bound on one connect, one read and one write in the client.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on a server's start, up to its `listening` line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on the client's exit once its stdin is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a server listens, and after the client is idle, before a figure is read.
const SETTLE: Duration = Duration::from_millis(200);
/// The request each HTTP connection sends.
const HTTP_GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
/// The most header bytes the HTTP client accepts in a response.
const MAX_HEAD: usize = 16 * 1024;

/// `bench idle-conns`'s own options.
#[derive(Args, Clone, Copy, Debug, Default, PartialEq)]
pub struct IdleConnsArgs {
    /// connections (default 10,000; 2,000 with --quick), clamped to what
    /// the fd hard limit and the ephemeral port range allow
    #[arg(long, value_name = "N", value_parser = crate::count::<1>, verbatim_doc_comment)]
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
    /// The raw io-uring loop of `raw_echo.rs`, a 4 KiB buffer per connection.
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
    #[arg(long, value_parser = crate::count::<1>)]
    pub conns: usize,
    /// send `GET /` and read one HTTP/1.1 response instead of 64 bytes and their echo
    #[arg(long)]
    pub http: bool,
}

/// One server measured: how its child process is started.
struct Contender {
    /// The row's name.
    name: &'static str,
    /// The program and its arguments.
    program: PathBuf,
    args: Vec<String>,
}

impl Contender {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        cmd
    }
}

/// One contender's figures in one round.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rss_before_kib: u64,
    /// With the first half of the connections open.
    rss_half_kib: u64,
    rss_after_kib: u64,
    hwm_kib: u64,
    idle_cpu: Duration,
    /// Times the server's threads were scheduled in over the idle window, where known.
    idle_wakeups: Option<u64>,
}

impl Sample {
    /// RSS growth per connection in bytes (negative if it shrank).
    fn bytes_per_conn(&self, conns: usize) -> f64 {
        (self.rss_after_kib as f64 - self.rss_before_kib as f64) * 1024.0 / conns as f64
    }

    /// RSS growth per connection over the second half of them: what one more connection
    /// costs, without the fixed costs the first half already paid (a receive ring's pages).
    fn marginal_bytes_per_conn(&self, conns: usize) -> f64 {
        let second = conns - conns / 2;
        (self.rss_after_kib as f64 - self.rss_half_kib as f64) * 1024.0 / second.max(1) as f64
    }
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
    let window =
        Duration::from_secs_f64(opts.seconds.unwrap_or(if opts.quick { 1.0 } else { 2.0 }));
    let rounds = opts.runs.unwrap_or(1);
    let cpus = Cpus::pick();
    let (contenders, refs, what) = if args.http {
        (
            http_contenders()?,
            vec![(1, "axum-tokio", "tokio")],
            "HTTP/1.1 keep-alive, one GET / each",
        )
    } else {
        (
            echo_contenders()?,
            vec![(1, "tokio", "tokio"), (2, "raw", "raw")],
            "64 B echoed once each",
        )
    };

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); contenders.len()];
    {
        let progress = Measuring::new((rounds * contenders.len()) as u64);
        let mut done = 0;
        for round in 0..rounds {
            for (c, s) in contenders.iter().zip(samples.iter_mut()) {
                progress.run(done, c.name, &format!("round {}/{rounds}", round + 1));
                done += 1;
                let sample = measure(c, conns, window, cpus, args.http)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", c.name)))?;
                s.push(sample);
            }
        }
    }

    let title = format!(
        "idle-conns{}: {conns} connections ({what}) then idle {:.1} s; {rounds} round(s)",
        if args.http { " (http)" } else { "" },
        window.as_secs_f64()
    );
    let table = Figures {
        names: contenders.iter().map(|c| c.name).collect(),
        samples,
        conns,
        refs,
    };
    println!("{title}");
    print!("{}", render_grid(&table.grid(), 2));
    print!(
        "{}",
        report::record(Record {
            name: report::record_name(&title),
            title,
            metric: "bytes/conn".to_string(),
            format: Box::new(|v| format!("{v:.0}")),
            rows: table.rows(),
        })
    );
    let mut notes = vec![
        format!(
            "{}; each server and the client in a process of its own",
            cpus.describe()
        ),
        "bytes/conn: the server's VmRSS growth from before the client connects to the end of \
         the idle window, over N (median, min, max over rounds); kernel socket memory is not \
         in RSS"
            .to_string(),
        "2nd half bytes/conn: the growth from N/2 connections open to N, over N/2: one more \
         connection's cost, without fixed costs the first half paid (e.g. the pages of a \
         receive ring's buffers)"
            .to_string(),
        "idle CPU ms, wake-ups: the server's threads over the idle window \
         (/proc/PID/task/*/schedstat: time on CPU, times scheduled in); target about 0"
            .to_string(),
    ];
    let vs: Vec<&str> = table.refs.iter().map(|r| r.1).collect();
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
    fn per_conn(&self, i: usize) -> Summary {
        let v: Vec<f64> = self.samples[i]
            .iter()
            .map(|s| s.bytes_per_conn(self.conns))
            .collect();
        Summary::of(&v)
    }

    fn median(&self, i: usize, f: impl Fn(&Sample) -> f64) -> f64 {
        Summary::of(&self.samples[i].iter().map(f).collect::<Vec<_>>()).median
    }

    /// The median over rounds of [`Sample::marginal_bytes_per_conn`].
    fn marginal(&self, i: usize) -> f64 {
        self.median(i, |s| s.marginal_bytes_per_conn(self.conns))
    }

    /// `reference / row` of the medians (>1: this row holds less), if both grew.
    fn ratio(&self, row: usize, reference: usize) -> Option<f64> {
        let (r, b) = (self.per_conn(row).median, self.per_conn(reference).median);
        (r > 0.0 && b > 0.0).then(|| b / r)
    }

    fn wakeups(&self, i: usize) -> Option<f64> {
        let v: Option<Vec<f64>> = self.samples[i]
            .iter()
            .map(|s| s.idle_wakeups.map(|w| w as f64))
            .collect();
        v.map(|v| Summary::of(&v).median)
    }

    fn grid(&self) -> Vec<Vec<String>> {
        let mut header: Vec<String> = [
            "",
            "conns",
            "RSS before",
            "RSS after",
            "bytes/conn median",
            "min",
            "max",
            "2nd half bytes/conn",
            "idle CPU ms",
            "idle wake-ups",
        ]
        .map(String::from)
        .to_vec();
        header.extend(self.refs.iter().map(|r| format!("vs {}", r.1)));
        let mut rows = vec![header];
        let mib = |kib: f64| format!("{:.1} MiB", kib / 1024.0);
        for (i, name) in self.names.iter().enumerate() {
            let pc = self.per_conn(i);
            let mut row = vec![
                name.to_string(),
                self.conns.to_string(),
                mib(self.median(i, |s| s.rss_before_kib as f64)),
                mib(self.median(i, |s| s.rss_after_kib as f64)),
                format!("{:.0}", pc.median),
                format!("{:.0}", pc.min),
                format!("{:.0}", pc.max),
                format!("{:.0}", self.marginal(i)),
                format!("{:.2}", self.median(i, |s| s.idle_cpu.as_secs_f64() * 1e3)),
                self.wakeups(i)
                    .map_or_else(|| "-".to_string(), |w| format!("{w:.0}")),
            ];
            row.extend(self.refs.iter().map(|&(j, _, _)| {
                self.ratio(i, j)
                    .map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"))
            }));
            rows.push(row);
        }
        rows
    }

    /// The `--json` rows: the median bytes per connection, `ratio` against the first
    /// reference row (tokio's), and the other figures under `extra`.
    fn rows(&self) -> Vec<Row> {
        let base = self.refs.first().map(|r| r.0);
        (0..self.names.len())
            .map(|i| {
                let pc = self.per_conn(i);
                let mut extra = vec![
                    ("runs".to_string(), self.samples[i].len() as f64),
                    ("conns".to_string(), self.conns as f64),
                    ("bytes_per_conn".to_string(), pc.median),
                    ("marginal_bytes_per_conn".to_string(), self.marginal(i)),
                    (
                        "idle_cpu_ms".to_string(),
                        self.median(i, |s| s.idle_cpu.as_secs_f64() * 1e3),
                    ),
                    (
                        "rss_before_bytes".to_string(),
                        self.median(i, |s| s.rss_before_kib as f64 * 1024.0),
                    ),
                    (
                        "rss_half_bytes".to_string(),
                        self.median(i, |s| s.rss_half_kib as f64 * 1024.0),
                    ),
                    (
                        "rss_after_bytes".to_string(),
                        self.median(i, |s| s.rss_after_kib as f64 * 1024.0),
                    ),
                ];
                if let Some(w) = self.wakeups(i) {
                    extra.push(("idle_wakeups".to_string(), w));
                }
                for &(j, _, key) in &self.refs {
                    // Non-finite figures are written as `null`.
                    let r = self.ratio(i, j).unwrap_or(f64::NAN);
                    extra.push((format!("ratio_vs_{key}"), r));
                }
                Row {
                    name: self.names[i].to_string(),
                    median: pc.median,
                    min: pc.min,
                    max: pc.max,
                    ratio: base.and_then(|b| self.ratio(i, b)),
                    enters_per_op: None,
                    peak_rss_bytes: self.samples[i].iter().map(|s| s.hwm_kib * 1024).max(),
                    extra,
                }
            })
            .collect()
    }
}

/// N clamped to `hard - SPARE_FDS` and to the ephemeral ports less [`SPARE_PORTS`]; the note
/// says so when it was.
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
            "no room for connections: RLIMIT_NOFILE hard limit {hard} (each process keeps \
             {SPARE_FDS} spare), ephemeral ports {}",
            ports.map_or_else(|| "unknown".to_string(), |p| p.to_string())
        )));
    }
    if requested as u64 <= max {
        return Ok((requested, None));
    }
    let why = if by_fds <= by_ports {
        format!("the RLIMIT_NOFILE hard limit {hard} less {SPARE_FDS} spare fds")
    } else {
        format!(
            "the {} ephemeral ports less {SPARE_PORTS}",
            ports.unwrap_or(0)
        )
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

/// This binary, run again (for the hidden subcommands).
fn this_exe() -> io::Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| io::Error::new(e.kind(), format!("finding this executable to re-run: {e}")))
}

fn echo_contenders() -> io::Result<Vec<Contender>> {
    let exe = this_exe()?;
    let server = |name, kind: &str| Contender {
        name,
        program: exe.clone(),
        args: ["idle-server", "--kind", kind].map(String::from).to_vec(),
    };
    Ok(vec![
        server("runtime (read_chunk)", "runtime"),
        server("tokio current-thread", "tokio"),
        server("raw ring", "raw"),
    ])
}

/// `axum` (this runtime, one core) and `axum-tokio` (current-thread), from this binary's
/// directory, where `cargo build --release -p examples` puts them.
fn http_contenders() -> io::Result<Vec<Contender>> {
    let exe = this_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no directory", exe.display())))?;
    let find = |name: &str| {
        let path = dir.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "--http needs the `{name}` example next to this binary, and {} is missing: \
                     build both with `cargo build --release -p examples --features tokio-peer \
                     --bin axum-tokio && cargo build --release -p examples --bin axum` (same \
                     CARGO_TARGET_DIR), or run scripts/idle_http.sh",
                    path.display()
                ),
            ))
        }
    };
    let axum = find("axum")?;
    let axum_tokio = find("axum-tokio")?;
    Ok(vec![
        Contender {
            name: "axum",
            program: axum,
            args: ["--port", "0", "--cores", "1"].map(String::from).to_vec(),
        },
        Contender {
            name: "axum-tokio",
            program: axum_tokio,
            args: ["--port", "0", "--runtime", "current"]
                .map(String::from)
                .to_vec(),
        },
    ])
}

/// One contender, one round: server up, RSS, client connects and idles, CPU over the
/// window, RSS; then the client is closed and the server killed.
fn measure(
    c: &Contender,
    conns: usize,
    window: Duration,
    cpus: Cpus,
    http: bool,
) -> io::Result<Sample> {
    let mut server = ChildProc::spawn(&format!("server {}", c.name), c.command(), cpus.server)?;
    let line = server.line_within(START_TIMEOUT, "its listening line")?;
    let addr = listen_addr(&line).ok_or_else(|| {
        io::Error::other(format!("no address in the server's first line: {line:?}"))
    })?;
    std::thread::sleep(SETTLE);
    server.check_alive()?;
    let pid = server.pid();
    let rss_before_kib = proc_status_kib(pid, "VmRSS")?;

    let mut cmd = Command::new(this_exe()?);
    cmd.args([
        "idle-client",
        "--addr",
        &addr.to_string(),
        "--conns",
        &conns.to_string(),
    ]);
    if http {
        cmd.arg("--http");
    }
    let mut client = ChildProc::spawn("client", cmd, cpus.client)?;
    // Generous: connects and echoes take well under 1 ms each, even on a busy machine.
    let ready = Duration::from_secs(30) + Duration::from_millis(3) * conns as u32;
    let half = conns / 2;
    client.expect(&format!("half {half}"), ready)?;
    std::thread::sleep(SETTLE);
    let rss_half_kib = proc_status_kib(pid, "VmRSS")?;
    client.say("go")?;
    client.expect(&format!("idle {conns}"), ready)?;
    std::thread::sleep(SETTLE);
    let cpu0 = proc_cpu(pid)?;
    std::thread::sleep(window);
    let cpu1 = proc_cpu(pid)?;
    let rss_after_kib = proc_status_kib(pid, "VmRSS")?;
    let hwm_kib = proc_status_kib(pid, "VmHWM")?;
    server.check_alive()?;
    client.check_alive()?;
    client.close_and_wait(EXIT_TIMEOUT)?;
    drop(server);
    Ok(Sample {
        rss_before_kib,
        rss_half_kib,
        rss_after_kib,
        hwm_kib,
        idle_cpu: cpu1.time.saturating_sub(cpu0.time),
        idle_wakeups: cpu1
            .switches
            .zip(cpu0.switches)
            .map(|(a, b)| a.saturating_sub(b)),
    })
}

/// The first word of `line` that is a socket address, after an `http://` prefix if any:
/// `listening 127.0.0.1:4000`, `axum: listening on http://127.0.0.1:4000 (HTTP/1.1, h2c)`.
fn listen_addr(line: &str) -> Option<SocketAddr> {
    line.split_whitespace().find_map(|w| {
        w.trim_start_matches("http://")
            .trim_end_matches(['/', ',', ')'])
            .parse()
            .ok()
    })
}

/// A child process whose stdout lines come through a channel (read by a thread of its
/// own), killed and reaped when dropped.
struct ChildProc {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl ChildProc {
    /// Starts `cmd` pinned to `cpu`, stdin and stdout piped, stderr inherited.
    fn spawn(what: &str, mut cmd: Command, cpu: usize) -> io::Result<ChildProc> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot pin {what} to CPU {cpu}: past CPU_SETSIZE"),
            ));
        }
        // SAFETY: an all-zero `cpu_set_t` is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so the bit is inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: the closure runs in the child between fork and exec, and makes only two
        // system calls (async-signal-safe, no allocation, no lock) on data copied into it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("starting the {what} ({:?}): {e}", cmd.get_program()),
                )
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("idle-conns-out".to_string())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })?;
        Ok(ChildProc {
            what: what.to_string(),
            child,
            stdin,
            lines,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line the child prints, within `limit`.
    fn line_within(&mut self, limit: Duration, waiting_for: &str) -> io::Result<String> {
        match self.lines.recv_timeout(limit) {
            Ok(line) => Ok(line),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the {} printed no {waiting_for} within {limit:?}",
                    self.what
                ),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.wait_for(EXIT_TIMEOUT)?;
                Err(io::Error::other(format!(
                    "the {} exited ({}) before printing {waiting_for} (its stderr is above)",
                    self.what,
                    status.map_or_else(|| "still running".to_string(), |s| s.to_string())
                )))
            }
        }
    }

    /// The next line, which must be `want`, within `limit`.
    fn expect(&mut self, want: &str, limit: Duration) -> io::Result<()> {
        let line = self.line_within(limit, &format!("{want:?}"))?;
        if line.trim() != want {
            return Err(io::Error::other(format!(
                "the {} said {line:?}, not {want:?}",
                self.what
            )));
        }
        Ok(())
    }

    /// Writes `line` to its stdin.
    fn say(&mut self, line: &str) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::other(format!("the {}'s stdin is closed", self.what)))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                io::Error::new(e.kind(), format!("telling the {} {line:?}: {e}", self.what))
            })
    }

    /// An error if the child has exited.
    fn check_alive(&mut self) -> io::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(io::Error::other(format!(
                "the {} exited early ({status}; its stderr is above)",
                self.what
            ))),
        }
    }

    /// Its exit status, waiting at most `limit`; `None` if it is still running.
    fn wait_for(&mut self, limit: Duration) -> io::Result<Option<std::process::ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes its stdin and waits for it to exit successfully, at most `limit`.
    fn close_and_wait(&mut self, limit: Duration) -> io::Result<()> {
        drop(self.stdin.take());
        match self.wait_for(limit)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(io::Error::other(format!(
                "the {} failed ({status}; its stderr is above)",
                self.what
            ))),
            None => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the {} did not exit within {limit:?}", self.what),
            )),
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A field of `/proc/PID/status` given in kB (`VmRSS`, `VmHWM`), in KiB.
fn proc_status_kib(pid: u32, key: &str) -> io::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no {key} in {path}")))
}

/// A process's CPU time so far, and how often its threads were scheduled in.
#[derive(Clone, Copy, Debug)]
struct ProcCpu {
    time: Duration,
    /// `None` where only `/proc/PID/stat` could be read.
    switches: Option<u64>,
}

/// The sum over the live threads of `pid` of `/proc/PID/task/TID/schedstat` (ns on CPU,
/// ns waiting, times scheduled in); where that is missing (no `CONFIG_SCHED_INFO`), utime +
/// stime of `/proc/PID/stat`, in clock ticks.
fn proc_cpu(pid: u32) -> io::Result<ProcCpu> {
    match schedstat(pid) {
        Ok(cpu) => Ok(cpu),
        Err(_) => stat_cpu(pid),
    }
}

fn schedstat(pid: u32) -> io::Result<ProcCpu> {
    let mut ns = 0u64;
    let mut switches = 0u64;
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = entry?.path().join("schedstat");
        // A thread may end between the listing and the read.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(0))
            .collect();
        if f.len() < 3 {
            return Err(io::Error::other(format!("{}: {text:?}", path.display())));
        }
        ns += f[0];
        switches += f[2];
    }
    Ok(ProcCpu {
        time: Duration::from_nanos(ns),
        switches: Some(switches),
    })
}

fn stat_cpu(pid: u32) -> io::Result<ProcCpu> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
    let (Some(u), Some(s)) = (ticks(14), ticks(15)) else {
        return Err(io::Error::other(format!("no utime/stime in {path}")));
    };
    // SAFETY: sysconf takes no pointers.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(ProcCpu {
        time: Duration::from_nanos((u + s) * 1_000_000_000 / hz),
        switches: None,
    })
}

// ---------------------------------------------------------------------------------------
// The hidden subcommands.

/// `bench idle-server --kind K`: serves on 127.0.0.1 (an ephemeral port), prints
/// `listening ADDR`, and exits when its stdin closes (or when killed).
pub fn server_main(args: ServerArgs) -> ExitCode {
    let kind = args.kind;
    let body = move |l: std::net::TcpListener, ctl: Arc<Ctl>| {
        let res = match kind {
            Kind::Runtime => runtime_server(l),
            Kind::Tokio => tokio_server(l),
            Kind::Raw => crate::raw_echo::serve(l, ctl, CONN_BUF),
        };
        // A server that stops serving ends the process, so the parent sees it at once.
        match &res {
            Ok(()) => eprintln!("bench idle-server: {kind:?} server returned"),
            Err(e) => eprintln!("bench idle-server: {kind:?} server: {e}"),
        }
        std::process::exit(1)
    };
    let cpu = Cpus::pick().server;
    let server = match Server::spawn("idle-server", cpu, body) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench idle-server: starting the {kind:?} server: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening {}", server.addr);
    if let Err(e) = io::stdout().flush() {
        eprintln!("bench idle-server: stdout: {e}");
        return ExitCode::FAILURE;
    }
    // Blocks, using no CPU, until the parent closes the pipe.
    let _ = io::stdin().read_to_end(&mut Vec::new());
    // Not `Server::stop`: the connections may still be open; the process ends them all.
    std::process::exit(0)
}

/// This runtime's echo: `incoming()`, a task per connection, [`echo_conn`] on each.
fn runtime_server(listener: std::net::TcpListener) -> io::Result<()> {
    let rt = runtime::Builder::new().cores(1).build()?;
    rt.block_on(async move {
        // Accepted sockets inherit TCP_NODELAY: no option call per connection.
        socket2::SockRef::from(&listener).set_tcp_nodelay(true)?;
        let listener = corering_net::TcpListener::from_std(listener)?;
        let mut incoming = listener.incoming();
        while let Some(accepted) = incoming.next().await {
            match accepted {
                Ok(stream) => {
                    // A connection's error ends it, as in the other servers: the client resets
                    // them all at the end, and checks every echo itself.
                    // Spawned as it is: a wrapping `async move` block would hold the stream
                    // twice (the block's capture and the inner future's argument).
                    runtime::spawn_local(echo_conn(stream));
                }
                Err(e) => {
                    eprintln!("bench idle-server: runtime accept: {e}");
                    // Out of fds, say: do not spin.
                    runtime::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        Err(io::Error::other("the multishot accept stream ended"))
    })
}

/// One connection on this runtime, as the echo example serves it: each chunk received (a
/// buffer of the core's shared receive ring) is written back as it is, until end of
/// stream; no buffer of its own.
async fn echo_conn(mut stream: corering_net::TcpStream) -> io::Result<()> {
    loop {
        let chunk = stream.read_chunk().await?;
        if chunk.is_empty() {
            return Ok(());
        }
        stream.write_chunk(chunk).await?;
    }
}

/// tokio current-thread: an accept loop, `tokio::spawn` per connection, each a read loop on
/// its own 4 KiB buffer.
fn tokio_server(listener: std::net::TcpListener) -> io::Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let mut stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    eprintln!("bench idle-server: tokio accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut buf = vec![0u8; CONN_BUF];
                loop {
                    let n = match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if stream.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    })
}

/// `bench idle-client --addr A --conns N [--http]`: opens N/2 connections (see [`open`]),
/// prints `half N/2` and waits for a line on stdin; opens the rest, prints `idle N`, waits
/// for its stdin to close, resets every connection and exits 0. Any failure is printed and
/// exits 1.
pub fn client_main(args: ClientArgs) -> ExitCode {
    if let Err(e) = sysutil::raise_nofile() {
        eprintln!("bench idle-client: raising the fd soft limit: {e}");
        return ExitCode::FAILURE;
    }
    let fail = |e: io::Error| {
        eprintln!("bench idle-client: {e}");
        ExitCode::FAILURE
    };
    let say = |line: String| {
        println!("{line}");
        io::stdout()
            .flush()
            .map_err(|e| io::Error::new(e.kind(), format!("stdout: {e}")))
    };
    let half = args.conns / 2;
    let mut conns = Vec::with_capacity(args.conns);
    if let Err(e) = open(&mut conns, args.addr, half, args.http) {
        return fail(e);
    }
    if let Err(e) = say(format!("half {half}")) {
        return fail(e);
    }
    let mut stdin = io::stdin().lock();
    let mut go = String::new();
    if stdin.read_line(&mut go).unwrap_or(0) == 0 {
        // The parent gave up: nothing more to do.
        return ExitCode::SUCCESS;
    }
    if let Err(e) = open(&mut conns, args.addr, args.conns, args.http) {
        return fail(e);
    }
    if let Err(e) = say(format!("idle {}", conns.len())) {
        return fail(e);
    }
    let _ = stdin.read_to_end(&mut Vec::new());
    for s in &conns {
        // An RST on close: no TIME_WAIT left on this side for the next contender's ports.
        let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
    }
    drop(conns);
    ExitCode::SUCCESS
}

/// Opens connections to `addr` until `conns` holds `n`, in batches of [`BATCH`] (connect
/// and send on each, then read each reply), and leaves them open. Echo: 64 bytes, the first
/// 8 the connection's index, must come back as sent. HTTP: `GET /` must get a `200` with a
/// `Content-Length` body and nothing more. Every connect, read and write is bounded by
/// [`IO_TIMEOUT`].
fn open(conns: &mut Vec<TcpStream>, addr: SocketAddr, n: usize, http: bool) -> io::Result<()> {
    while conns.len() < n {
        let first = conns.len();
        let end = (first + BATCH).min(n);
        for i in first..end {
            let ctx = |what: &str, e: io::Error| {
                io::Error::new(e.kind(), format!("connection {i} to {addr}: {what}: {e}"))
            };
            let mut s =
                TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| ctx("connect", e))?;
            s.set_nodelay(true).map_err(|e| ctx("TCP_NODELAY", e))?;
            s.set_read_timeout(Some(IO_TIMEOUT))
                .map_err(|e| ctx("SO_RCVTIMEO", e))?;
            s.set_write_timeout(Some(IO_TIMEOUT))
                .map_err(|e| ctx("SO_SNDTIMEO", e))?;
            let out = if http { HTTP_GET.to_vec() } else { echo_msg(i) };
            s.write_all(&out).map_err(|e| ctx("write", e))?;
            conns.push(s);
        }
        for (i, s) in conns.iter_mut().enumerate().skip(first) {
            let res = if http {
                read_http_response(s)
            } else {
                read_echo(s, &echo_msg(i))
            };
            res.map_err(|e| io::Error::new(e.kind(), format!("connection {i} to {addr}: {e}")))?;
        }
    }
    Ok(())
}

/// Connection `i`'s message: its index (8 bytes, little-endian), then a filler.
fn echo_msg(i: usize) -> Vec<u8> {
    let mut m = vec![0x5a; MSG];
    m[..8].copy_from_slice(&(i as u64).to_le_bytes());
    m
}

fn read_echo(s: &mut TcpStream, sent: &[u8]) -> io::Result<()> {
    let mut back = vec![0u8; sent.len()];
    s.read_exact(&mut back)
        .map_err(|e| io::Error::new(e.kind(), format!("reading the echo: {e}")))?;
    if back != sent {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sent {sent:?}, got back {back:?}"),
        ));
    }
    Ok(())
}

/// Reads one HTTP/1.1 response: status 200, a `Content-Length` body, nothing after it.
fn read_http_response(s: &mut impl io::Read) -> io::Result<()> {
    let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidData, msg);
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(bad(format!(
                "the server closed after {} bytes of response",
                buf.len()
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad(format!("no end of headers in {MAX_HEAD} bytes")));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 200") {
        return Err(bad(format!("status line {status:?}")));
    }
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| bad(format!("no Content-Length in {head:?}")))?;
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(bad("the server closed inside the body".to_string()));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if buf.len() > head_end + len {
        return Err(bad(format!(
            "{} bytes after the response",
            buf.len() - head_end - len
        )));
    }
    Ok(())
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

    #[test]
    fn finds_listening_addresses() {
        let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(listen_addr("listening 127.0.0.1:4000"), Some(a));
        assert_eq!(
            listen_addr("axum: listening on http://127.0.0.1:4000 (HTTP/1.1, h2c) with 1 core(s)"),
            Some(a)
        );
        assert_eq!(
            listen_addr("axum-tokio: listening on http://127.0.0.1:4000/, tokio"),
            Some(a)
        );
        assert_eq!(listen_addr("starting"), None);
    }

    #[test]
    fn reads_http_responses() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nHello, World!";
        read_http_response(&mut &ok[..]).unwrap();
        for bad in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nHello",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nHello",
        ] {
            assert!(read_http_response(&mut &bad[..]).is_err());
        }
    }

    #[test]
    fn proc_figures_of_this_process() {
        let pid = std::process::id();
        assert!(proc_status_kib(pid, "VmRSS").unwrap() > 0);
        assert!(proc_status_kib(pid, "VmHWM").unwrap() > 0);
        assert!(proc_status_kib(pid, "NoSuchKey").is_err());
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(proc_cpu(pid).unwrap().time > Duration::ZERO);
        assert!(stat_cpu(pid).unwrap().time > Duration::ZERO);
    }

    /// Each echo server, in this process, answers the client's connections and keeps them.
    #[test]
    fn every_echo_server_serves_the_client() {
        type Body = fn(std::net::TcpListener, Arc<Ctl>) -> io::Result<()>;
        let kinds: [(&str, Body); 3] = [
            ("runtime", |l, _| runtime_server(l)),
            ("tokio", |l, _| tokio_server(l)),
            ("raw", |l, c| crate::raw_echo::serve(l, c, CONN_BUF)),
        ];
        for (name, body) in kinds {
            let srv = Server::spawn(name, Cpus::pick().server, body).expect("server");
            let mut conns = Vec::new();
            open(&mut conns, srv.addr, 100, false).unwrap_or_else(|e| panic!("{name}: {e}"));
            open(&mut conns, srv.addr, 300, false).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(conns.len(), 300, "{name}");
            // The server loops never look at `Ctl`: leave them running, the process ends
            // them (a stop would wait for an accept they do not check).
            std::mem::forget(srv);
        }
    }
}
