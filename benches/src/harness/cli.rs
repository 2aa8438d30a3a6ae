//! The command line: [`Cli`], built with clap from the shared options ([`Opts`], [`Output`],
//! derived) and the subcommands the benchmarks register as data ([`Entry`]), so this module
//! names no benchmark. `all` runs every [`Role::Bench`] entry with `in_all`, in order.

use std::io;
use std::process::ExitCode;

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The end of every `--help`, the subcommands' included.
const AFTER_HELP: &str = "\
While it measures, a progress bar on stderr names the benchmark, contestant and run; it
appears once the process has run for 2 s, only when stderr is a terminal and without
--quiet, and is cleared before each table is printed.

Output files are created (truncated) before the first benchmark runs, so a bad path fails
at once; they are written at the end, also after a failed benchmark.

Pin for stable figures, e.g. `taskset -c 0 bench all`.";

/// A subcommand as its benchmark registers it: name, help line, own options, what it runs.
pub struct Entry {
    /// Its name on the command line.
    pub name: &'static str,
    /// Its line in `--help`.
    pub about: &'static str,
    /// Adds its own options (a clap `Args` struct's `augment_args`; `identity` for none).
    pub args: fn(Command) -> Command,
    /// What naming it runs.
    pub role: Role,
}

/// What an [`Entry`] runs.
pub enum Role {
    /// A benchmark, printing its tables; `all` runs it when `in_all`.
    Bench {
        /// Whether `all` runs it (else it runs by name only).
        in_all: bool,
        /// Runs it.
        run: Run,
    },
    /// A hidden child process a benchmark starts (this binary again): no banner, no output files.
    Child(Main),
}

/// A child process's `main`, given its matches.
pub type Main = fn(&ArgMatches) -> ExitCode;

/// A benchmark's run, given the shared options and its own matches.
pub type Run = fn(&Opts, &ArgMatches) -> io::Result<()>;

/// An entry's own options out of its matches (its `args` struct, `A`).
pub fn args<A: FromArgMatches>(m: &ArgMatches) -> io::Result<A> {
    A::from_arg_matches(m).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
}

/// The parsed command line: the shared options, and what to run.
pub struct Cli {
    /// Options every subcommand takes.
    pub opts: Opts,
    /// Where results go besides the terminal.
    pub output: Output,
    /// The benchmarks to run, in order: name, run and its own matches (none for a child).
    pub benches: Vec<(&'static str, Run, ArgMatches)>,
    /// The child process's `main` to run instead, with its matches.
    pub child: Option<(Main, ArgMatches)>,
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

impl Cli {
    /// The command line of `entries`: the shared options, each entry a subcommand (the
    /// benchmarks, then `all`, then the hidden children), [`AFTER_HELP`] under every help.
    pub fn command(entries: &[Entry]) -> Command {
        // The shared options list after a subcommand's own in its help (display order 100 on).
        let cmd = Command::new("bench").next_display_order(100);
        let cmd = Output::augment_args(Opts::augment_args(cmd))
            .about("The runtime's benchmarks, side by side with the raw ring and tokio")
            .subcommand_value_name("SUBCOMMAND")
            .subcommand_help_heading("Subcommands")
            .disable_help_subcommand(true)
            .subcommand_required(true)
            .arg_required_else_help(true);
        // `about` after `args`: an `Args` struct's own doc comment would replace it.
        let sub = |e: &Entry| (e.args)(Command::new(e.name)).about(e.about);
        let (benches, children): (Vec<_>, Vec<_>) = entries
            .iter()
            .partition(|e| matches!(e.role, Role::Bench { .. }));
        let by_name: Vec<&str> = (entries.iter())
            .filter(|e| matches!(e.role, Role::Bench { in_all: false, .. }))
            .map(|e| e.name)
            .collect();
        let all = match by_name.is_empty() {
            true => "every benchmark above, in order".to_string(),
            false => format!("every benchmark above but {}, in order", by_name.join(", ")),
        };
        let all = Command::new("all").about(all);
        cmd.subcommands(benches.into_iter().map(sub))
            .subcommand(all)
            .subcommands(children.into_iter().map(|e| sub(e).hide(true)))
            .after_help(AFTER_HELP)
            .mut_subcommands(|sub| sub.after_help(AFTER_HELP))
    }

    /// Parses `args` (the program name first) against `entries`.
    pub fn try_parse_args<I, T>(entries: &'static [Entry], args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut cmd = Cli::command(entries);
        let matches = cmd.try_get_matches_from_mut(args)?;
        let opts = Opts::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
        let output = Output::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
        let (name, sub) = matches.subcommand().expect("a subcommand is required");
        let named = entries.iter().find(|e| e.name == name);
        let (mut benches, mut child) = (Vec::new(), None);
        match named.map(|e| (e.name, &e.role)) {
            Some((name, &Role::Bench { run, .. })) => benches.push((name, run, sub.clone())),
            Some((_, &Role::Child(main))) => child = Some((main, sub.clone())),
            // `all`: every benchmark in it, each with its own defaults.
            None => {
                for e in entries {
                    if let Role::Bench { in_all: true, run } = e.role {
                        let own = (e.args)(Command::new(e.name)).try_get_matches_from([e.name]);
                        benches.push((e.name, run, own.map_err(|e| e.format(&mut cmd))?));
                    }
                }
            }
        }
        Ok(Cli {
            opts,
            output,
            benches,
            child,
        })
    }
}
