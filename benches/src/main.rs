//! `bench`: the benchmark harness of the runtime, side by side with the raw ring and tokio.

mod benches;
mod harness;
mod servers;

use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::ExitCode;

use harness::cli::{Cli, Output};
use harness::{output, progress};

/// The running kernel's release string (`/proc/sys/kernel/osrelease`, as uname(2) has it).
fn kernel_release() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease");
    release.map_or_else(|_| "unknown".to_string(), |r| r.trim().to_string())
}

/// Points fd 1 at stderr (`/dev/null` when `quiet`), keeping stdout for the JSON; returns the real stdout.
fn divert_stdout(quiet: bool) -> io::Result<OwnedFd> {
    io::stdout().flush()?;
    // SAFETY: dup(2) takes no pointers; the result is checked below.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `saved` is a descriptor dup(2) just returned, owned by nothing else.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    let null = match quiet {
        true => Some(std::fs::OpenOptions::new().write(true).open("/dev/null")?),
        false => None,
    };
    dup_onto_stdout(null.as_ref().map_or(2, |f| f.as_raw_fd()))?;
    Ok(saved)
}

/// Points fd 1 at `fd` (dup2(2)), after flushing what stdout holds.
fn dup_onto_stdout(fd: i32) -> io::Result<()> {
    io::stdout().flush()?;
    // SAFETY: dup2(2) takes no pointers; `fd` is open for the caller's whole call.
    if unsafe { libc::dup2(fd, 1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Checks `--compare`'s file and creates (truncates) `--json`'s up front.
fn prepare(output: &Output) -> Result<(), String> {
    if let Some(path) = &output.compare {
        output::load_baseline(path)?;
    }
    if let Some(path) = output.json.as_deref().filter(|p| *p != "-") {
        std::fs::File::create(path).map_err(|e| format!("--json {path}: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse_args(benches::ENTRIES, std::env::args_os()) {
        Ok(parsed) => parsed,
        // `--help` (exit 0) or a usage error (exit 2), printed as clap formats it.
        Err(e) => e.exit(),
    };
    // The child processes `idle-conns` and `http-cores` run: no banner, no output files.
    if let Some((main, matches)) = &cli.child {
        return main(matches);
    }
    let (opts, output, benches) = (cli.opts, cli.output, cli.benches);
    if let Err(e) = prepare(&output) {
        eprintln!("bench: {e}");
        return ExitCode::from(2);
    }
    let real_stdout = match output.json.as_deref() {
        Some("-") => match divert_stdout(output.quiet) {
            Ok(fd) => Some(fd),
            Err(e) => {
                eprintln!("bench: --json -: redirecting the tables off stdout: {e}");
                return ExitCode::FAILURE;
            }
        },
        _ => None,
    };
    progress::init(output.quiet);
    let cpus = sysutil::allowed_cpus();
    let kernel = kernel_release();
    if !output.quiet {
        let quick = if opts.quick {
            ", --quick (smoke test)"
        } else {
            ""
        };
        println!(
            "bench: kernel {kernel}, {} CPU(s) allowed {cpus:?}{quick}",
            cpus.len()
        );
    }
    let mut code = ExitCode::SUCCESS;
    for (i, (name, run, matches)) in benches.iter().enumerate() {
        if !output.quiet || i > 0 {
            println!();
        }
        progress::bench(i, benches.len(), name);
        if let Err(e) = run(&opts, matches) {
            eprintln!("bench {name}: {e}");
            code = ExitCode::FAILURE;
            break;
        }
    }
    if output.markdown {
        println!();
        print!("{}", output::markdown_summary());
    }
    if let Some(saved) = real_stdout {
        if let Err(e) = dup_onto_stdout(saved.as_raw_fd()) {
            eprintln!("bench: --json -: restoring stdout: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Written even after a failure, with the tables that did complete.
    if let Some(path) = &output.json {
        let text = output::json_text(&kernel, &cpus);
        let written = match path.as_str() {
            "-" => io::stdout().write_all(text.as_bytes()),
            _ => std::fs::write(path, text),
        };
        if let Err(e) = written {
            eprintln!("bench: --json {path}: {e}");
            code = ExitCode::FAILURE;
        }
    }
    code
}
