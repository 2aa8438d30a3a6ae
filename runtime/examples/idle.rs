//! Sleeps one second on an idle runtime and prints the CPU time it used and its counters.
fn main() {
    let rt = runtime::Runtime::new().unwrap();
    let before = rt.stats();
    let t = std::time::Instant::now();
    rt.block_on(runtime::sleep(std::time::Duration::from_secs(1)));
    let d = rt.stats() - before;
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    println!(
        "slept {:?}: cpu user {} us, sys {} us; {d:?}",
        t.elapsed(),
        ru.ru_utime.tv_sec * 1_000_000 + ru.ru_utime.tv_usec,
        ru.ru_stime.tv_sec * 1_000_000 + ru.ru_stime.tv_usec
    );
}
