//! The differential stress suite (`tests::stress`): hundreds of connections, each stream
//! made from its connection's number, random write sizes up to 1 MiB, every read and write
//! API, every feature switch; every byte checked, the runtimes back at rest after each case.
//!
//! ```text
//! cargo run --release -p tests --bin stress                  # CI's suite (2 GiB+ default)
//! cargo run --release -p tests --bin stress -- --quick       # the test suite's cases
//! cargo run --release -p tests --bin stress -- --seed 0x2a --case "Unix"   # replay
//! STRESS_SOAK_SECS=3600 cargo run --release -p tests --bin stress          # an hour's soak
//! cargo run --release -p tests --bin stress -- --random 0x1234  # replay a soak case
//! ```
//!
//! A failing case prints its seed and the command that replays it; the exit status is 1.

use std::time::{Duration, Instant};

use tests::stress::{cases, Case};
use tests::Rng;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut quick = false;
    let mut seed = tests::seed_from_env(0x57E5_5ED5);
    let mut filter: Option<String> = None;
    let mut random: Option<u64> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--seed" => {
                let v = args.next().unwrap_or_default();
                std::env::set_var("SEED", &v);
                seed = tests::seed_from_env(seed);
            }
            "--case" => filter = args.next(),
            "--random" => {
                let v = args.next().unwrap_or_default();
                let v = v.trim_start_matches("0x");
                random = Some(u64::from_str_radix(v, 16).unwrap_or_else(|e| {
                    eprintln!("stress: --random takes a hex seed: {e}");
                    std::process::exit(2)
                }));
            }
            other => {
                eprintln!("stress: unknown argument {other:?} (--quick, --seed N, --case TEXT)");
                std::process::exit(2);
            }
        }
    }
    tests::set_nofile_soft(20_000).ok();
    let soak = std::env::var("STRESS_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let started = Instant::now();
    let mut failed = 0;
    let mut run = |case: &Case, replay: String| match case.run() {
        Ok(report) => println!("ok   {report}"),
        Err(e) => {
            failed += 1;
            println!("FAIL {e}");
            println!("     replay: cargo run --release -p tests --bin stress -- {replay}");
        }
    };
    let mut total = 0u64;
    if let Some(s) = random {
        let case = cases::random_case(&mut Rng::new(s), 500, 1024 * 1024);
        total += case.conns as u64 * case.bytes_per_conn;
        run(&case, format!("--random {s:#x}"));
    }
    let suite = match (quick, random) {
        (_, Some(_)) => Vec::new(),
        (true, None) => cases::quick(seed),
        (false, None) => cases::ci(seed),
    };
    for case in &suite {
        if filter
            .as_ref()
            .is_some_and(|f| !case.name.contains(f.as_str()))
        {
            continue;
        }
        total += case.conns as u64 * case.bytes_per_conn;
        let quick = if quick { " --quick" } else { "" };
        run(
            case,
            format!("--seed {seed:#x}{quick} --case {:?}", case.name),
        );
    }
    if let Some(secs) = soak {
        let mut rng = Rng::new(seed);
        while started.elapsed() < Duration::from_secs(secs) {
            let s = rng.next_u64();
            let case = cases::random_case(&mut Rng::new(s), 500, 1024 * 1024);
            total += case.conns as u64 * case.bytes_per_conn;
            run(&case, format!("--random {s:#x}"));
        }
    }
    println!(
        "stress: {:.2} GiB each way in {:.1} s, {failed} case(s) failed (seed {seed:#x})",
        total as f64 / (1u64 << 30) as f64,
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
