//! `bench`: the benchmark harness of the runtime, side by side with the raw ring and tokio.
//!
//! Usage: `bench <subcommand> [--quick] [--runs N] [--seconds S] [--json FILE|-]
//! [--compare FILE] [--svg FILE] [--markdown] [--quiet]` (all of it in `bench --help`, from
//! [`Cli`]). Each subcommand measures its contestants alternately in this one process and
//! prints a table of medians, min and max, ratios to the baseline, `io_uring_enter` calls per
//! op and peak RSS; the rules are in `shared/BENCHMARKS.md`. Tables go to stdout, a progress
//! bar to stderr. Pin the process for stable figures: `taskset -c 0 bench all`.

mod accept;
mod echo;
mod echo_cores;
mod features;
mod fio;
mod harness;
mod idle;
mod idle_conns;
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
mod sync;

use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

/// The end of every `--help`, the subcommands' included.
const AFTER_HELP: &str = "\
While it measures, a progress bar on stderr names the benchmark, contestant and run; it
appears once the process has run for 2 s, only when stderr is a terminal and without
--quiet, and is cleared before each table is printed.

Output files are created (truncated) before the first benchmark runs, so a bad path fails
at once; they are written at the end, also after a failed benchmark.

Pin for stable figures, e.g. `taskset -c 0 bench all`.";

/// The command line: a subcommand, and options that may come before or after it.
#[derive(Debug, Parser)]
#[command(
    name = "bench",
    about = "The runtime's benchmarks, side by side with the raw ring and tokio",
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands",
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    which: Which,
    #[command(flatten)]
    opts: Opts,
    #[command(flatten)]
    output: Output,
}

/// Options shared by every subcommand.
#[derive(Args, Clone, Copy, Debug, Default, PartialEq)]
pub struct Opts {
    /// fewer operations and runs (3 instead of 5): a smoke test, not a result
    #[arg(long, global = true)]
    pub quick: bool,
    /// measured runs per contestant (after one warm-up run each;
    /// idle-conns: alternating rounds, default 1, no warm-up)
    #[arg(
        long,
        global = true,
        value_name = "N",
        value_parser = count::<1>,
        verbatim_doc_comment
    )]
    pub runs: Option<usize>,
    /// size each run so the first contestant takes about S seconds
    /// (echo, echo-cores: the window; idle: the sleep; idle-conns: the idle window)
    #[arg(
        long,
        global = true,
        value_name = "S",
        value_parser = seconds,
        allow_negative_numbers = true,
        verbatim_doc_comment
    )]
    pub seconds: Option<f64>,
    /// echo-cores: the server's core count compared with cores(1) (default 2)
    #[arg(long, global = true, value_name = "N", value_parser = count::<2>)]
    pub cores: Option<usize>,
}

/// Where results go besides the terminal.
#[derive(Args, Clone, Debug, Default, PartialEq)]
struct Output {
    /// also write every table's figures to FILE as JSON (schema 1: date, kernel,
    /// cpus, and per table its name, title, metric and rows of median, min, max,
    /// ratio, enters_per_op, peak_rss_bytes and extra figures; null where
    /// absent). `--json -` writes it to stdout instead; the tables then go to
    /// stderr (with --quiet, nowhere), so stdout holds exactly one JSON document
    #[arg(long, global = true, value_name = "FILE|-", verbatim_doc_comment)]
    json: Option<String>,
    /// after each table, print each row's median against FILE (written earlier by
    /// --json): `vs FILE: raw ring 11.59M -> 11.62M (+0.3%)`, a `!` marking
    /// changes beyond +-5%; rows and tables missing from FILE are skipped
    #[arg(long, global = true, value_name = "FILE", verbatim_doc_comment)]
    compare: Option<String>,
    /// also write every table to FILE as an SVG bar chart: a bar per row (its
    /// median, a line from min to max), the median in its unit, and as text its
    /// ratios to the table's raw ring and tokio rows (or else to its baseline
    /// row); the same figures as --json
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        value_parser = svg_path,
        verbatim_doc_comment
    )]
    svg: Option<String>,
    /// at the end, print every row of every table as one markdown table
    /// (benchmark, row, figure, unit, vs raw, vs tokio, enters/op; `-` where the
    /// table has no raw ring or tokio row), for pasting into README
    #[arg(long, global = true, verbatim_doc_comment)]
    markdown: bool,
    /// no banner and no progress bar: stdout gets only the tables (and
    /// --markdown), or with `--json -` only the JSON; errors stay on stderr
    #[arg(short, long, global = true, verbatim_doc_comment)]
    quiet: bool,
}

impl Output {
    /// Whether stdout is reserved for the JSON document (`--json -`).
    fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some("-")
    }
}

/// A count of at least `MIN` (`--runs`, `--cores`).
fn count<const MIN: usize>(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("not a count: {s}"))?;
    if n < MIN {
        return Err(format!("must be at least {MIN}"));
    }
    Ok(n)
}

/// A positive, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        Ok(_) => Err("must be positive".to_string()),
        Err(_) => Err(format!("not a number: {s}")),
    }
}

/// A file name for `--svg`: stdout (`-`) is not supported.
fn svg_path(s: &str) -> Result<String, String> {
    if s == "-" {
        return Err("needs a file name (stdout is not supported)".to_string());
    }
    Ok(s.to_string())
}

/// What the subcommand names: one benchmark or all of them.
#[derive(Clone, Copy, Debug, Subcommand)]
enum Which {
    #[command(flatten)]
    One(Bench),
    /// every benchmark above, in order
    All,
    /// (internal) idle-conns's server process: one echo server until stdin closes
    #[command(hide = true)]
    IdleServer(idle_conns::ServerArgs),
    /// (internal) idle-conns's client process: N connections, echoed once, then idle
    #[command(hide = true)]
    IdleClient(idle_conns::ClientArgs),
}

/// A benchmark the command line can name.
#[derive(Clone, Copy, Debug, PartialEq, Subcommand)]
enum Bench {
    /// 32 IORING_OP_NOP in flight: raw ring vs this runtime
    Nop,
    /// 32 POLLIN requests on 32 pipes, triggered by writes: raw ring vs runtime vs tokio
    Poll,
    /// chains of 10 and 100 linked NOPs, ns per NOP: raw ring vs runtime
    Link,
    /// spawn + join of an empty task: this runtime vs tokio current-thread
    Spawn,
    /// 10,000 clients connect, echo 128 B, close: singleshot vs multishot accept vs tokio
    Accept,
    /// connections ping-pong messages for D seconds: runtime vs tokio vs raw ring
    Echo,
    /// the echo loads with each kernel feature switched off in turn: what each one buys
    Features,
    /// a counter bounced between two cores: runtime cores(2) vs std threads vs tokio
    #[command(name = "pingpong")]
    PingPong,
    /// the echo benchmark's runtime server with cores(1) vs cores(N), SO_REUSEPORT
    EchoCores,
    /// a cores(2) runtime asleep for 2 s: process CPU and enters per core
    Idle,
    /// N idle connections: server RSS per connection and idle CPU, runtime vs tokio vs raw
    IdleConns(idle_conns::IdleConnsArgs),
    /// 4 KiB random reads at depth 32 from a file: runtime vs fio vs tokio::fs
    Read,
    /// channels: runtime::sync vs sync::local vs futures on one core; across cores vs tokio
    Sync,
}

impl Bench {
    const ALL: [Bench; 12] = [
        Bench::Nop,
        Bench::Poll,
        Bench::Link,
        Bench::Spawn,
        Bench::Accept,
        Bench::Echo,
        Bench::PingPong,
        Bench::EchoCores,
        Bench::Idle,
        // In `all`: 10,000 connections (2,000 with --quick), the echo servers.
        Bench::IdleConns(idle_conns::IdleConnsArgs {
            conns: None,
            http: false,
        }),
        Bench::Read,
        Bench::Sync,
    ];

    fn run(self, opts: &Opts) -> io::Result<()> {
        match self {
            Bench::Nop => nop::run(opts),
            Bench::Poll => poll::run(opts),
            Bench::Link => link::run(opts),
            Bench::Spawn => spawn::run(opts),
            Bench::Accept => accept::run(opts),
            Bench::Echo => echo::run(opts),
            Bench::Features => features::run(opts),
            Bench::PingPong => pingpong::run(opts),
            Bench::EchoCores => echo_cores::run(opts),
            Bench::Idle => idle::run(opts),
            Bench::IdleConns(args) => idle_conns::run(opts, args),
            Bench::Read => read::run(opts),
            Bench::Sync => sync::run(opts),
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
            Bench::Features => "features",
            Bench::PingPong => "pingpong",
            Bench::EchoCores => "echo-cores",
            Bench::Idle => "idle",
            Bench::IdleConns(_) => "idle-conns",
            Bench::Read => "read",
            Bench::Sync => "sync",
        }
    }
}

impl Cli {
    /// The command [`Cli`] derives, with [`AFTER_HELP`] under every subcommand's help too.
    fn command_with_help() -> clap::Command {
        Cli::command()
            .after_help(AFTER_HELP)
            .mut_subcommands(|sub| sub.after_help(AFTER_HELP))
    }

    /// Parses `args` (the program name first).
    fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut cmd = Cli::command_with_help();
        let matches = cmd.try_get_matches_from_mut(args)?;
        Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
    }

    /// The benchmarks to run, in order.
    fn benches(&self) -> Vec<Bench> {
        match self.which {
            Which::One(b) => vec![b],
            Which::All => Bench::ALL.to_vec(),
            Which::IdleServer(_) | Which::IdleClient(_) => Vec::new(),
        }
    }
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
    let cli = match Cli::try_parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        // `--help` (exit 0) or a usage error (exit 2), printed as clap formats it.
        Err(e) => e.exit(),
    };
    // The child processes `idle-conns` runs: no banner, no output files.
    match cli.which {
        Which::IdleServer(args) => return idle_conns::server_main(args),
        Which::IdleClient(args) => return idle_conns::client_main(args),
        Which::One(_) | Which::All => {}
    }
    let (benches, opts, output) = (cli.benches(), cli.opts, cli.output);
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
    let cpus = sysutil::allowed_cpus();
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

    use clap::error::ErrorKind;

    /// What `bench <s>` asks for, or the kind of clap's answer (an error, or help).
    fn parse(s: &str) -> Result<(Vec<Bench>, Opts, Output), ErrorKind> {
        let args = std::iter::once("bench").chain(s.split_whitespace());
        let cli = Cli::try_parse_args(args).map_err(|e| e.kind())?;
        Ok((cli.benches(), cli.opts, cli.output))
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
            parse("nop --quick --runs 7 --seconds=0.5"),
            Ok((vec![Bench::Nop], want, Output::default()))
        );
        assert_eq!(
            parse("--runs=2 all"),
            Ok((
                Bench::ALL.to_vec(),
                Opts {
                    runs: Some(2),
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse("echo-cores --cores 3"),
            Ok((
                vec![Bench::EchoCores],
                Opts {
                    cores: Some(3),
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse("pingpong"),
            Ok((vec![Bench::PingPong], Opts::default(), Output::default()))
        );
        assert_eq!(
            parse("sync --quick"),
            Ok((
                vec![Bench::Sync],
                Opts {
                    quick: true,
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse("idle --quick"),
            Ok((
                vec![Bench::Idle],
                Opts {
                    quick: true,
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse("idle-conns --conns 2000 --http --quick"),
            Ok((
                vec![Bench::IdleConns(idle_conns::IdleConnsArgs {
                    conns: Some(2000),
                    http: true,
                })],
                Opts {
                    quick: true,
                    ..Opts::default()
                },
                Output::default()
            ))
        );
        assert_eq!(
            parse("all --json a.json --compare=b.json"),
            Ok((
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
            parse("all --quick --svg=b.svg --markdown -q --json -"),
            Ok((
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
            parse("nop --quiet"),
            Ok((
                vec![Bench::Nop],
                Opts::default(),
                Output {
                    quiet: true,
                    ..Output::default()
                }
            ))
        );
    }

    /// The child processes of `idle-conns` parse, stay out of `--help`, and name no benchmark.
    #[test]
    fn idle_conns_children_parse_and_hide() {
        let cli = Cli::try_parse_args(["bench", "idle-server", "--kind", "raw"]).unwrap();
        assert!(matches!(
            cli.which,
            Which::IdleServer(idle_conns::ServerArgs {
                kind: idle_conns::Kind::Raw
            })
        ));
        assert!(cli.benches().is_empty());
        let cli = Cli::try_parse_args([
            "bench",
            "idle-client",
            "--addr",
            "127.0.0.1:9",
            "--conns",
            "5",
            "--http",
        ])
        .unwrap();
        assert!(matches!(
            cli.which,
            Which::IdleClient(idle_conns::ClientArgs {
                conns: 5,
                http: true,
                ..
            })
        ));
        let top = Cli::command_with_help().render_long_help().to_string();
        assert!(
            !top.contains("idle-server") && !top.contains("idle-client"),
            "{top}"
        );
        for bad in [
            "idle-server",
            "idle-server --kind fast",
            "idle-client --conns 5",
            "idle-client --addr x --conns 5",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn help_is_not_an_error() {
        for args in [
            "--help",
            "-h",
            "spawn --help",
            "echo -h",
            "all --quick --help",
        ] {
            assert_eq!(parse(args).err(), Some(ErrorKind::DisplayHelp), "{args}");
        }
    }

    /// `bench --help` and each subcommand's `--help` describe every option.
    #[test]
    fn help_names_every_option() {
        Cli::command().debug_assert();
        let mut cmd = Cli::command_with_help();
        let top = cmd.render_long_help().to_string();
        let echo = cmd
            .find_subcommand_mut("echo")
            .expect("echo")
            .render_long_help()
            .to_string();
        for help in [&top, &echo] {
            for flag in [
                "--quick",
                "--runs",
                "--seconds",
                "--cores",
                "--json",
                "--compare",
                "--svg",
                "--markdown",
                "--quiet",
                "--help",
                "taskset -c 0",
            ] {
                assert!(help.contains(flag), "{flag} missing from\n{help}");
            }
        }
        for bench in Bench::ALL.iter().map(|b| b.name()).chain(["all"]) {
            assert!(
                top.contains(&format!("  {bench} ")),
                "{bench} missing from\n{top}"
            );
        }
    }

    #[test]
    fn rejects_bad_input() {
        for args in [
            "",
            "frobnicate",
            "nop spawn",
            "nop --runs",
            "nop --runs 0",
            "nop --seconds -1",
            "nop --seconds 0",
            "nop --fast",
            "echo-cores --cores 1",
            "echo-cores --cores x",
            "nop --json",
            "nop --compare",
            "nop --svg",
            "nop --svg -",
            "nop --markdown=yes",
            "nop --quick=1",
            "idle-conns --conns 0",
            "idle-conns --conns x",
            "nop --conns 5",
            "help",
        ] {
            assert!(parse(args).is_err(), "{args}");
        }
    }
}
