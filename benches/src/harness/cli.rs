//! The command line: [`Cli`], derived with clap. The benchmarks `all` runs are clap's own
//! list of [`Bench`] subcommands, in order, less [`NOT_IN_ALL`].

use std::io;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::benches::{self, http_cores, idle_conns};

/// The end of every `--help`, the subcommands' included.
const AFTER_HELP: &str = "\
While it measures, a progress bar on stderr names the benchmark, contestant and run; it
appears once the process has run for 2 s, only when stderr is a terminal and without
--quiet, and is cleared before each table is printed.

Output files are created (truncated) before the first benchmark runs, so a bad path fails
at once; they are written at the end, also after a failed benchmark.

Pin for stable figures, e.g. `taskset -c 0 bench all`.";

/// Subcommands `all` leaves out: `features` is an ablation of this runtime's own kernel
/// feature switches (nine echo servers, about 90 s with `--quick`), not a comparison with
/// the baselines; run it by name.
pub const NOT_IN_ALL: [&str; 1] = ["features"];

/// The command line: a subcommand, and options that may come before or after it.
#[derive(Debug, Parser)]
#[command(
    name = "bench",
    about = "The runtime's benchmarks, side by side with the raw ring and tokio",
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands",
    disable_help_subcommand = true
)]
pub struct Cli {
    // (No doc comments on these fields: clap would put them into `--help`.)
    #[command(subcommand)]
    pub which: Which,
    #[command(flatten)]
    pub opts: Opts,
    #[command(flatten)]
    pub output: Output,
}

/// Options shared by every subcommand.
#[derive(Args, Clone, Copy, Debug, Default, PartialEq)]
pub struct Opts {
    /// fewer operations and runs (3 instead of 5): a smoke test, not a result
    #[arg(long, global = true)]
    pub quick: bool,
    /// measured runs per contestant (after one warm-up run each;
    /// idle-conns: alternating rounds, default 1, no warm-up)
    #[arg(long, global = true, value_name = "N", value_parser = count::<1>, verbatim_doc_comment)]
    pub runs: Option<usize>,
    /// size each run so the first contestant takes about S seconds
    /// (echo, echo-cores: the window; idle: the sleep; idle-conns: the idle window)
    #[arg(long, global = true, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    #[arg(verbatim_doc_comment)]
    pub seconds: Option<f64>,
    /// echo-cores: the server's core count compared with cores(1) (default 2)
    #[arg(long, global = true, value_name = "N", value_parser = count::<2>)]
    pub cores: Option<usize>,
}

impl Opts {
    /// `--runs`, else `quick` with `--quick` and `full` without.
    pub fn runs_or(&self, quick: usize, full: usize) -> usize {
        self.runs.unwrap_or(if self.quick { quick } else { full })
    }

    /// `--seconds`, else `quick` with `--quick` and `full` without.
    pub fn seconds_or(&self, quick: f64, full: f64) -> f64 {
        self.seconds
            .unwrap_or(if self.quick { quick } else { full })
    }
}

/// Where results go besides the terminal.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// also write every table's figures to FILE as JSON (schema 1: date, kernel,
    /// cpus, and per table its name, title, metric and rows of median, min, max,
    /// ratio, enters_per_op, peak_rss_bytes and extra figures; null where
    /// absent). `--json -` writes it to stdout instead; the tables then go to
    /// stderr (with --quiet, nowhere), so stdout holds exactly one JSON document
    #[arg(long, global = true, value_name = "FILE|-", verbatim_doc_comment)]
    pub json: Option<String>,
    /// after each table, print each row's median against FILE (written earlier by
    /// --json): `vs FILE: raw ring 11.59M -> 11.62M (+0.3%)`, a `!` marking
    /// changes beyond +-5%; rows and tables missing from FILE are skipped
    #[arg(long, global = true, value_name = "FILE", verbatim_doc_comment)]
    pub compare: Option<String>,
    /// at the end, print every row of every table as one markdown table
    /// (benchmark, row, figure, unit, vs raw, vs tokio, enters/op; `-` where the
    /// table has no raw ring or tokio row), for pasting into README
    #[arg(long, global = true, verbatim_doc_comment)]
    pub markdown: bool,
    /// no banner and no progress bar: stdout gets only the tables (and
    /// --markdown), or with `--json -` only the JSON; errors stay on stderr
    #[arg(short, long, global = true, verbatim_doc_comment)]
    pub quiet: bool,
}

/// A count of at least `MIN` (`--runs`, `--cores`, `--conns`).
pub fn count<const MIN: usize>(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("not a count: {s}"))?;
    (n >= MIN)
        .then_some(n)
        .ok_or(format!("must be at least {MIN}"))
}

/// A positive, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        Ok(_) => Err("must be positive".to_string()),
        Err(_) => Err(format!("not a number: {s}")),
    }
}

/// What the subcommand names: one benchmark or all of them.
#[derive(Clone, Copy, Debug, Subcommand)]
pub enum Which {
    // One benchmark (a doc comment here would reach `--help`).
    #[command(flatten)]
    One(Bench),
    /// every benchmark above but features, in order
    All,
    /// (internal) idle-conns's server process: one echo server until stdin closes
    #[command(hide = true)]
    IdleServer(idle_conns::ServerArgs),
    /// (internal) idle-conns's client process: N connections, echoed once, then idle
    #[command(hide = true)]
    IdleClient(idle_conns::ClientArgs),
    /// (internal) http-cores's server process: the axum app on two cores until stdin closes
    #[command(hide = true)]
    HttpServer(http_cores::ServerArgs),
}

/// A benchmark the command line can name.
#[derive(Clone, Copy, Debug, PartialEq, Subcommand)]
pub enum Bench {
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
    /// axum HTTP/1.1 on 2 cores under wrk, four handlers: runtime cores(2) vs tokio multi-thread
    HttpCores,
}

impl Bench {
    /// Runs the benchmark, printing its tables.
    pub fn run(self, opts: &Opts) -> io::Result<()> {
        use benches::*;
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
            Bench::HttpCores => http_cores::run(opts),
        }
    }

    /// Every benchmark clap knows, by subcommand name, in the order of `--help`, each name
    /// parsed back through clap with its defaults (idle-conns: the echo servers).
    pub fn every() -> Vec<(String, Bench)> {
        let cmd = Bench::augment_subcommands(clap::Command::new("bench"));
        let parse = |name: &str| {
            cmd.clone()
                .try_get_matches_from(["bench", name])
                .and_then(|m| Bench::from_arg_matches(&m))
        };
        let names = cmd.get_subcommands().map(|sub| sub.get_name().to_string());
        names
            .map(|name| {
                (
                    name.clone(),
                    parse(&name).expect("a bare subcommand parses"),
                )
            })
            .collect()
    }
}

impl Cli {
    /// The command [`Cli`] derives, with [`AFTER_HELP`] under every subcommand's help too.
    pub fn command_with_help() -> clap::Command {
        Cli::command()
            .after_help(AFTER_HELP)
            .mut_subcommands(|sub| sub.after_help(AFTER_HELP))
    }

    /// Parses `args` (the program name first), with the name of each benchmark to run.
    pub fn try_parse_args<I, T>(args: I) -> Result<(Cli, Vec<(String, Bench)>), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut cmd = Cli::command_with_help();
        let matches = cmd.try_get_matches_from_mut(args)?;
        let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
        let benches = match (cli.which, matches.subcommand_name()) {
            (Which::One(b), Some(name)) => vec![(name.to_string(), b)],
            (Which::All, _) => (Bench::every().into_iter())
                .filter(|(name, _)| !NOT_IN_ALL.contains(&name.as_str()))
                .collect(),
            _ => Vec::new(),
        };
        Ok((cli, benches))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand parses with the shared flags; `all` is every benchmark but
    /// [`NOT_IN_ALL`]; the internal ones stay out of `--help` and out of `all`; our own value
    /// parsers refuse what they should.
    #[test]
    fn every_subcommand_parses() {
        Cli::command().debug_assert();
        let parse =
            |args: &str| Cli::try_parse_args(std::iter::once("bench").chain(args.split(' ')));
        let every = Bench::every();
        assert_eq!(every.len(), 14);
        for (name, bench) in &every {
            let (cli, benches) = parse(&format!("{name} --quick --json -")).unwrap();
            assert_eq!(benches, [(name.clone(), *bench)]);
            assert!(cli.opts.quick && cli.output.json.as_deref() == Some("-"));
        }
        let (_, all) = parse("--runs=2 all").unwrap();
        let want: Vec<_> = every.into_iter().filter(|(n, _)| n != "features").collect();
        assert_eq!(all, want);
        assert!(parse("idle-server --kind raw").unwrap().1.is_empty());
        assert!(parse("http-server --kind tokio --cpus 0,1")
            .unwrap()
            .1
            .is_empty());
        let top = Cli::command_with_help().render_long_help().to_string();
        assert!(
            !top.contains("idle-server")
                && !top.contains("http-server")
                && top.contains("  features "),
            "{top}"
        );
        for bad in [
            "nop --runs 0",
            "nop --seconds -1",
            "echo-cores --cores 1",
            "idle-conns --conns x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
