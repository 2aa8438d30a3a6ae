//! Runs `N` NOP ops through the runtime (32 tasks, one op in flight each), for instruction
//! counts per op under callgrind: run it at two sizes and divide the difference, which
//! leaves out start-up and shutdown.
//!
//! ```sh
//! cargo build --release -p corering-runtime --example nop_count
//! for n in 100000 200000; do
//!     valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//!         target/release/examples/nop_count $n 2>&1 | grep 'refs'
//! done
//! ```

fn main() -> std::io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("usage: nop_count N"))
        .unwrap_or(100_000);
    let rt = runtime::Runtime::new()?;
    rt.block_on(async move {
        const TASKS: usize = 32;
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                runtime::spawn_local(async move {
                    for _ in (t..n).step_by(TASKS) {
                        runtime::ext::raw::nop().await?;
                    }
                    Ok::<_, std::io::Error>(())
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task panicked")?;
        }
        Ok(())
    })
}
