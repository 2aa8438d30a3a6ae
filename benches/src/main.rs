//! `bench`: the benchmark harness of the runtime, side by side with the raw ring and tokio.
//!
//! Usage: `bench <subcommand> [--quick] [--runs N] [--seconds S] [--json FILE|-]
//! [--compare FILE] [--svg FILE] [--markdown] [--quiet]` (all of it in `USAGE`). Each
//! subcommand measures its contestants alternately in this one process and prints a table of
//! medians, min and max, ratios to the baseline, `io_uring_enter` calls per op and peak RSS;
//! the rules are in `shared/BENCHMARKS.md`. Tables go to stdout, a progress bar to stderr.
//! Pin the process for stable figures: `taskset -c 0 bench all`.

mod accept;
mod echo;
mod echo_cores;
mod fio;
mod harness;
mod idle;
mod json;
mod link;
mod nop;
#[cfg(feature = "peers")]
mod peers;
mod pingpong;
mod poll;
mod progress;
mod raw;
mod raw_echo;
mod read;
mod report;
mod server;
mod spawn;
mod svg;

use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::ExitCode;

const USAGE: &str = "\
usage: bench <subcommand> [--quick] [--runs N] [--seconds S] [--cores N]
             [--json FILE|-] [--compare FILE] [--svg FILE] [--markdown] [--quiet]

subcommands:
  nop         32 IORING_OP_NOP in flight: raw ring vs this runtime
  poll        32 POLLIN requests on 32 pipes, triggered by writes: raw ring vs runtime vs tokio
  link        chains of 10 and 100 linked NOPs, ns per NOP: raw ring vs runtime
  spawn       spawn + join of an empty task: this runtime vs tokio current-thread
  accept      10,000 clients connect, echo 128 B, close: singleshot vs multishot accept vs tokio
  echo        connections ping-pong messages for D seconds: runtime vs tokio vs raw ring
  pingpong    a counter bounced between two cores: runtime cores(2) vs std threads vs tokio
  echo-cores  the echo benchmark's runtime server with cores(1) vs cores(N), SO_REUSEPORT
  idle        a cores(2) runtime asleep for 2 s: process CPU and enters per core
  read        4 KiB random reads at depth 32 from a file: runtime vs fio vs tokio::fs
  all         every benchmark above, in order

options:
  --quick        fewer operations and runs (3 instead of 5): a smoke test, not a result
  --runs N       measured runs per contestant (after one warm-up run each)
  --seconds S    size each run so the first contestant takes about S seconds
                 (echo, echo-cores: the window; idle: the sleep)
  --cores N      echo-cores: the server's core count compared with cores(1) (default 2)
  --json FILE    also write every table's figures to FILE as JSON (schema 1: date, kernel,
                 cpus, and per table its name, title, metric and rows of median, min, max,
                 ratio, enters_per_op, peak_rss_bytes and extra figures; null where absent).
                 `--json -` writes it to stdout instead; the tables then go to stderr (with
                 --quiet, nowhere), so stdout holds exactly one JSON document
  --compare FILE after each table, print each row's median against FILE (written earlier by
                 --json): `vs FILE: raw ring 11.59M -> 11.62M (+0.3%)`, a `!` marking
                 changes beyond +-5%; rows and tables missing from FILE are skipped
  --svg FILE     also write every table to FILE as an SVG bar chart: a bar per row (its
                 median, a line from min to max), the median in its unit, and as text its
                 ratios to the table's raw ring and tokio rows (or else to its baseline
                 row); the same figures as --json
  --markdown     at the end, print every row of every table as one markdown table
                 (benchmark, row, figure, unit, vs raw, vs tokio, enters/op; `-` where the
                 table has no raw ring or tokio row), for pasting into README
  -q, --quiet    no banner and no progress bar: stdout gets only the tables (and
                 --markdown), or with `--json -` only the JSON; errors stay on stderr
  -h, --help     print this help

While it measures, a progress bar on stderr names the benchmark, contestant and run; it
appears once the process has run for 2 s, only when stderr is a terminal and without
--quiet, and is cleared before each table is printed.

Output files are created (truncated) before the first benchmark runs, so a bad path fails
at once; they are written at the end, also after a failed benchmark.

Pin for stable figures, e.g. `taskset -c 0 bench all`.";

/// Options shared by every subcommand.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Opts {
    /// Fewer operations and runs.
    pub quick: bool,
    /// Measured runs per contestant; each benchmark has its default.
    pub runs: Option<usize>,
    /// Target seconds per run; each benchmark has a fixed count otherwise.
    pub seconds: Option<f64>,
    /// `echo-cores`: the multi-core server's core count (default 2).
    pub cores: Option<usize>,
}

/// A benchmark the command line can name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bench {
    Nop,
    Poll,
    Link,
    Spawn,
    Accept,
    Echo,
    PingPong,
    EchoCores,
    Idle,
    Read,
}

impl Bench {
    const ALL: [Bench; 10] = [
        Bench::Nop,
        Bench::Poll,
        Bench::Link,
        Bench::Spawn,
        Bench::Accept,
        Bench::Echo,
        Bench::PingPong,
        Bench::EchoCores,
        Bench::Idle,
        Bench::Read,
    ];

    fn run(self, opts: &Opts) -> io::Result<()> {
        match self {
            Bench::Nop => nop::run(opts),
            Bench::Poll => poll::run(opts),
            Bench::Link => link::run(opts),
            Bench::Spawn => spawn::run(opts),
            Bench::Accept => accept::run(opts),
            Bench::Echo => echo::run(opts),
            Bench::PingPong => pingpong::run(opts),
            Bench::EchoCores => echo_cores::run(opts),
            Bench::Idle => idle::run(opts),
            Bench::Read => read::run(opts),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Bench::Nop => "nop",
            Bench::Poll => "poll",
            Bench::Link => "link",
            Bench::Spawn => "spawn",
            Bench::Accept => "accept",
            Bench::Echo => "echo",
            Bench::PingPong => "pingpong",
            Bench::EchoCores => "echo-cores",
            Bench::Idle => "idle",
            Bench::Read => "read",
        }
    }
}

/// Where results go besides the terminal.
#[derive(Clone, Debug, Default, PartialEq)]
struct Output {
    /// `--json FILE`: write every table's figures here at the end (`-`: to stdout).
    json: Option<String>,
    /// `--compare FILE`: compare every table with this earlier `--json` file.
    compare: Option<String>,
    /// `--svg FILE`: write every table as a bar chart here at the end.
    svg: Option<String>,
    /// `--markdown`: print one markdown table of every row at the end.
    markdown: bool,
    /// `--quiet`: no banner or progress bar.
    quiet: bool,
}

impl Output {
    /// Whether stdout is reserved for the JSON document (`--json -`).
    fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some("-")
    }
}

/// What the command line asked for.
#[derive(Debug, PartialEq)]
enum Command {
    Help,
    Run(Vec<Bench>, Opts, Output),
}

/// Parses the arguments after the program name.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut opts = Opts::default();
    let mut output = Output::default();
    let mut benches = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let switch = matches!(
            flag.as_str(),
            "-h" | "--help" | "--quick" | "--markdown" | "-q" | "--quiet"
        );
        if switch && inline.is_some() {
            return Err(format!("{flag} takes no value"));
        }
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--quick" => opts.quick = true,
            "--runs" => {
                let v = value("--runs")?;
                let n: usize = v.parse().map_err(|_| format!("--runs: not a count: {v}"))?;
                if n == 0 {
                    return Err("--runs must be at least 1".to_string());
                }
                opts.runs = Some(n);
            }
            "--seconds" => {
                let v = value("--seconds")?;
                let s: f64 = v
                    .parse()
                    .map_err(|_| format!("--seconds: not a number: {v}"))?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err("--seconds must be positive".to_string());
                }
                opts.seconds = Some(s);
            }
            "--cores" => {
                let v = value("--cores")?;
                let n: usize = v
                    .parse()
                    .map_err(|_| format!("--cores: not a count: {v}"))?;
                if n < 2 {
                    return Err("--cores must be at least 2 (cores(1) is the baseline)".into());
                }
                opts.cores = Some(n);
            }
            "--json" => output.json = Some(value("--json")?),
            "--compare" => output.compare = Some(value("--compare")?),
            "--svg" => {
                let v = value("--svg")?;
                if v == "-" {
                    return Err("--svg needs a file name (stdout is not supported)".into());
                }
                output.svg = Some(v);
            }
            "--markdown" => output.markdown = true,
            "-q" | "--quiet" => output.quiet = true,
            f if f.starts_with('-') => return Err(format!("unknown option {f}")),
            name => {
                if benches.is_some() {
                    return Err(format!("more than one subcommand: {name}"));
                }
                benches = Some(match name {
                    "all" => Bench::ALL.to_vec(),
                    _ => match Bench::ALL.iter().find(|b| b.name() == name) {
                        Some(b) => vec![*b],
                        None => return Err(format!("unknown subcommand {name}")),
                    },
                });
            }
        }
    }
    match benches {
        Some(b) => Ok(Command::Run(b, opts, output)),
        None => Err("no subcommand".to_string()),
    }
}

/// The CPUs this process may run on, as `sched_getaffinity(2)` reports them.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, inside `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// The running kernel's release string, from uname(2).
fn kernel_release() -> String {
    // SAFETY: an all-zero `utsname` is valid (arrays of C chars).
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable `utsname`.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return "unknown".to_string();
    }
    let bytes: Vec<u8> = uts
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Creates (truncates) every output file up front, so that a bad path fails before minutes
/// of measuring rather than after them.
fn create_outputs(output: &Output) -> Result<(), String> {
    let files = [("--json", &output.json), ("--svg", &output.svg)];
    for (flag, path) in files {
        if let Some(path) = path.as_deref().filter(|p| *p != "-") {
            std::fs::File::create(path).map_err(|e| format!("{flag} {path}: {e}"))?;
        }
    }
    Ok(())
}

/// Points fd 1 at stderr, or at `/dev/null` when `quiet`, so that everything the benchmarks
/// print (and any child process they run) stays off stdout; returns the real stdout.
fn divert_stdout(quiet: bool) -> io::Result<OwnedFd> {
    io::stdout().flush()?;
    // SAFETY: dup(2) takes no pointers; the result is checked below.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `saved` is a descriptor dup(2) just returned, owned by nothing else.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    let null = if quiet {
        Some(std::fs::OpenOptions::new().write(true).open("/dev/null")?)
    } else {
        None
    };
    let target = null.as_ref().map_or(2, |f| f.as_raw_fd());
    // SAFETY: dup2(2) takes no pointers; `target` is open (stderr, or `null` alive here).
    if unsafe { libc::dup2(target, 1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(saved)
}

/// Puts back the stdout [`divert_stdout`] saved.
fn restore_stdout(saved: OwnedFd) -> io::Result<()> {
    io::stdout().flush()?;
    // SAFETY: dup2(2) takes no pointers; `saved` is open until dropped after the call.
    if unsafe { libc::dup2(saved.as_raw_fd(), 1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn main() -> ExitCode {
    let (benches, opts, output) = match parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(b, o, out)) => (b, o, out),
        Err(e) => {
            eprintln!("bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &output.compare {
        if let Err(e) = report::load_baseline(path) {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    }
    if let Err(e) = create_outputs(&output) {
        eprintln!("bench: {e}");
        return ExitCode::from(2);
    }
    let real_stdout = if output.json_to_stdout() {
        match divert_stdout(output.quiet) {
            Ok(fd) => Some(fd),
            Err(e) => {
                eprintln!("bench: --json -: redirecting the tables off stdout: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    progress::init(output.quiet);
    let cpus = allowed_cpus();
    let kernel = kernel_release();
    if !output.quiet {
        println!(
            "bench: kernel {}, {} CPU(s) allowed {:?}{}",
            kernel,
            cpus.len(),
            cpus,
            if opts.quick {
                ", --quick (smoke test)"
            } else {
                ""
            }
        );
    }
    let mut code = ExitCode::SUCCESS;
    for (i, bench) in benches.iter().enumerate() {
        if !output.quiet || i > 0 {
            println!();
        }
        progress::bench(i, benches.len(), bench.name());
        if let Err(e) = bench.run(&opts) {
            eprintln!("bench {}: {e}", bench.name());
            code = ExitCode::FAILURE;
            break;
        }
    }
    if output.markdown {
        println!();
        print!("{}", report::markdown_summary());
    }
    if let Some(saved) = real_stdout {
        if let Err(e) = restore_stdout(saved) {
            eprintln!("bench: --json -: restoring stdout: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Written even after a failure, with the tables that did complete.
    if let Some(path) = &output.json {
        let text = report::json_text(&kernel, &cpus);
        let written = if path == "-" {
            io::stdout().write_all(text.as_bytes())
        } else {
            std::fs::write(path, text)
        };
        if let Err(e) = written {
            eprintln!("bench: --json {path}: {e}");
            code = ExitCode::FAILURE;
        }
    }
    if let Some(path) = &output.svg {
        if let Err(e) = report::write_svg(path) {
            eprintln!("bench: --svg {path}: {e}");
            code = ExitCode::FAILURE;
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_subcommand_and_flags() {
        let want = Opts {
            quick: true,
            runs: Some(7),
            seconds: Some(0.5),
            cores: None,
        };
        assert_eq!(
            parse(args("nop --quick --runs 7 --seconds=0.5")),
            Ok(Command::Run(vec![Bench::Nop], want, Output::default()))
        );
        assert_eq!(
            parse(args("--runs=2 all")),
            Ok(Command::Run(
                Bench::ALL.to_vec(),
                Opts {
                    runs: Some(2),
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(parse(args("spawn --help")), Ok(Command::Help));
        assert_eq!(
            parse(args("echo-cores --cores 3")),
            Ok(Command::Run(
                vec![Bench::EchoCores],
                Opts {
                    cores: Some(3),
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse(args("pingpong")),
            Ok(Command::Run(
                vec![Bench::PingPong],
                Opts::default(),
                Output::default()
            ))
        );
        assert_eq!(
            parse(args("idle --quick")),
            Ok(Command::Run(
                vec![Bench::Idle],
                Opts {
                    quick: true,
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse(args("all --json a.json --compare=b.json")),
            Ok(Command::Run(
                Bench::ALL.to_vec(),
                Opts::default(),
                Output {
                    json: Some("a.json".into()),
                    compare: Some("b.json".into()),
                    ..Output::default()
                }
            ))
        );
        assert_eq!(
            parse(args("all --quick --svg=b.svg --markdown -q --json -")),
            Ok(Command::Run(
                Bench::ALL.to_vec(),
                Opts {
                    quick: true,
                    ..Opts::default()
                },
                Output {
                    json: Some("-".into()),
                    svg: Some("b.svg".into()),
                    markdown: true,
                    quiet: true,
                    ..Output::default()
                }
            ))
        );
        assert_eq!(
            parse(args("nop --quiet")),
            Ok(Command::Run(
                vec![Bench::Nop],
                Opts::default(),
                Output {
                    quiet: true,
                    ..Output::default()
                }
            ))
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(args("")).is_err());
        assert!(parse(args("frobnicate")).is_err());
        assert!(parse(args("nop spawn")).is_err());
        assert!(parse(args("nop --runs")).is_err());
        assert!(parse(args("nop --runs 0")).is_err());
        assert!(parse(args("nop --seconds -1")).is_err());
        assert!(parse(args("nop --fast")).is_err());
        assert!(parse(args("echo-cores --cores 1")).is_err());
        assert!(parse(args("echo-cores --cores x")).is_err());
        assert!(parse(args("nop --json")).is_err());
        assert!(parse(args("nop --compare")).is_err());
        assert!(parse(args("nop --svg")).is_err());
        assert!(parse(args("nop --svg -")).is_err());
        assert!(parse(args("nop --markdown=yes")).is_err());
        assert!(parse(args("nop --quick=1")).is_err());
    }
}
