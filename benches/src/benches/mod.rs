//! One module per `bench` subcommand, and [`ENTRIES`]: each registered as data for the command
//! line (`harness::cli`), in the order of `--help` and `all`.

use std::convert::identity;

use clap::Args as _;

use crate::harness::cli::{args, Entry, Role};

pub mod accept;
pub mod cross;
pub mod echo;
pub mod echo_cores;
pub mod features;
mod fio;
pub mod http_cores;
pub mod idle;
pub mod idle_conns;
pub mod link;
pub mod nop;
pub mod pingpong;
pub mod poll;
pub mod read;
pub mod spawn;
pub mod sync;

/// Entries as data: `bench!(module, "name" => "help line")` (`all` runs it), with `by name` (it
/// does not), or with `args Struct` (its own options, a clap `Args` struct `run` takes); `child!(main,
/// Struct, "name" => "help line")` a hidden child process.
macro_rules! bench {
    ($module:ident, $name:literal => $about:literal) => {
        bench!(@ $name, $about, identity, true, |opts, _| $module::run(opts))
    };
    ($module:ident, $name:literal => $about:literal, by name) => {
        bench!(@ $name, $about, identity, false, |opts, _| $module::run(opts))
    };
    ($module:ident, $name:literal => $about:literal, args $args:ty) => {
        bench!(@ $name, $about, <$args>::augment_args, true, |opts, m| $module::run(opts, args(m)?))
    };
    (@ $name:literal, $about:literal, $augment:expr, $in_all:literal, $run:expr) => {
        Entry {
            name: $name,
            about: $about,
            args: $augment,
            role: Role::Bench {
                in_all: $in_all,
                run: $run,
            },
        }
    };
}

/// A hidden child process: `main` given its options (the clap `Args` struct `$args`).
macro_rules! child {
    ($main:path, $args:ty, $name:literal => $about:literal) => {
        Entry {
            name: $name,
            about: $about,
            args: <$args>::augment_args,
            role: Role::Child(|m| args(m).map_or_else(|e| child_usage(&e), $main)),
        }
    };
}

/// Every subcommand: the benchmarks, then the hidden child processes some of them start.
#[rustfmt::skip]
pub static ENTRIES: &[Entry] = &[
    bench!(nop, "nop" => "32 IORING_OP_NOP in flight: raw ring vs this runtime"),
    bench!(poll, "poll" => "32 POLLIN requests on 32 pipes, triggered by writes: raw ring vs runtime vs tokio"),
    bench!(link, "link" => "chains of 10 and 100 linked NOPs, ns per NOP: raw ring vs runtime"),
    bench!(spawn, "spawn" => "spawn + join of an empty task: this runtime vs tokio current-thread"),
    bench!(accept, "accept" => "10,000 clients connect, echo 128 B, close: singleshot vs multishot accept vs tokio"),
    bench!(echo, "echo" => "connections ping-pong messages for D seconds: runtime vs tokio vs raw ring"),
    // An ablation of this runtime's own kernel feature switches (nine echo servers, about 90 s
    // with `--quick`), not a comparison with the baselines: run by name only.
    bench!(features, "features" => "the echo loads with each kernel feature switched off in turn: what each one buys", by name),
    bench!(pingpong, "pingpong" => "a counter bounced between two cores: runtime cores(2) vs std threads vs tokio"),
    bench!(echo_cores, "echo-cores" => "the echo benchmark's runtime server with cores(1) vs cores(N), SO_REUSEPORT"),
    bench!(idle, "idle" => "a cores(2) runtime asleep for 2 s: process CPU and enters per core"),
    bench!(idle_conns, "idle-conns" => "N idle connections: server RSS per connection and idle CPU, runtime vs tokio vs raw", args idle_conns::IdleConnsArgs),
    bench!(read, "read" => "4 KiB random reads at depth 32 from a file: runtime vs fio vs tokio::fs"),
    bench!(sync, "sync" => "channels: runtime::sync vs sync::local vs futures on one core; across cores vs tokio"),
    bench!(http_cores, "http-cores" => "axum HTTP/1.1 on 2 cores under wrk, four handlers: runtime cores(2) vs tokio multi-thread", args http_cores::HttpCoresArgs),
    child!(idle_conns::server_main, idle_conns::ServerArgs, "idle-server" => "(internal) idle-conns's server process: one echo server until stdin closes"),
    child!(idle_conns::client_main, idle_conns::ClientArgs, "idle-client" => "(internal) idle-conns's client process: N connections, echoed once, then idle"),
    child!(http_cores::server_main, http_cores::ServerArgs, "http-server" => "(internal) http-cores's server process: the axum app on two cores until stdin closes"),
];

/// A child's options that clap parsed but its struct refused (not expected: the same struct
/// declared them).
fn child_usage(e: &std::io::Error) -> std::process::ExitCode {
    eprintln!("bench: {e}");
    std::process::ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use crate::harness::cli::Cli;

    use super::*;

    /// Every subcommand parses with the shared flags; `all` is every benchmark but features;
    /// the internal ones stay out of `--help` and out of `all`; our own value parsers refuse
    /// what they should.
    #[test]
    fn every_subcommand_parses() {
        Cli::command(ENTRIES).debug_assert();
        let parse = |args: &str| {
            Cli::try_parse_args(ENTRIES, std::iter::once("bench").chain(args.split(' ')))
        };
        let names = |cli: &Cli| cli.benches.iter().map(|b| b.0).collect::<Vec<_>>();
        let every: Vec<&str> = (ENTRIES.iter())
            .filter(|e| matches!(e.role, Role::Bench { .. }))
            .map(|e| e.name)
            .collect();
        assert_eq!(every.len(), 14);
        for name in &every {
            let cli = parse(&format!("{name} --quick --json -")).unwrap();
            assert_eq!(names(&cli), [*name]);
            assert!(cli.opts.quick && cli.output.json.as_deref() == Some("-"));
        }
        let all = parse("--runs=2 all").unwrap();
        let want: Vec<_> = every.into_iter().filter(|n| *n != "features").collect();
        assert_eq!(names(&all), want);
        assert_eq!(all.opts.runs, Some(2));
        let hog = parse("http-cores --hog --quota --quick").unwrap();
        assert_eq!(names(&hog), ["http-cores"]);
        assert!(parse("nop --hog").is_err(), "--hog is http-cores' own");
        for child in [
            "idle-server --kind raw",
            "http-server --kind tokio --cpus 0,1",
        ] {
            let cli = parse(child).unwrap();
            assert!(cli.benches.is_empty() && cli.child.is_some(), "{child}");
        }
        let top = Cli::command(ENTRIES).render_long_help().to_string();
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
