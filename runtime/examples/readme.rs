//! The first example from README.md, compiled with the tests so the README stays true.

use std::time::Duration;

#[runtime::main]
async fn main() -> std::io::Result<()> {
    let task = runtime::spawn_local(async {
        runtime::sleep(Duration::from_millis(10)).await;
        21
    });
    assert_eq!(task.await? * 2, 42);
    println!("stats: {:?}", runtime::stats());
    Ok(())
}
