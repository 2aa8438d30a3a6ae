//! How long `runtime::process::Command::spawn` holds the core, against std's `spawn` (a
//! `posix_spawn`/`vfork` + `exec` under glibc) alone: `N` children of `true`, each spawn
//! call timed, then the child waited for outside the timed part.
//!
//! ```sh
//! cargo run --release -p corering-runtime --example spawn_cost -- 2000
//! ```

use std::time::{Duration, Instant};

fn main() -> std::io::Result<()> {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("usage: spawn_cost N"))
        .unwrap_or(1000);
    let rt = runtime::Runtime::new()?;
    let (mut ours, mut std_only) = (Vec::new(), Vec::new());
    rt.block_on(async {
        for _ in 0..n {
            let start = Instant::now();
            let mut child = std::process::Command::new("true").spawn()?;
            std_only.push(start.elapsed());
            child.wait()?;
            let start = Instant::now();
            let mut child = runtime::process::Command::new("true").spawn()?;
            ours.push(start.elapsed());
            child.wait().await?;
        }
        Ok::<_, std::io::Error>(())
    })?;
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "spawn call, median of {n}: std {:?}, runtime::process {:?} (+ pidfd_open)",
        median(&mut std_only),
        median(&mut ours)
    );
    Ok(())
}
