//! `signal::shutdown()` completes on the first SIGTERM or SIGINT, including one that came
//! between the call and the first poll. Alone in its binary: the signals go to the whole
//! process.

use std::time::Duration;

#[test]
fn shutdown_completes_on_sigterm_or_sigint_even_before_its_first_poll() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for sig in [libc::SIGTERM, libc::SIGINT] {
            let stop = runtime::signal::shutdown().unwrap();
            // Sent before the future is polled: the handlers were installed by the call.
            // SAFETY: sends a signal to this process, which has listeners for it.
            unsafe { libc::kill(libc::getpid(), sig) };
            runtime::time::timeout(Duration::from_secs(5), stop)
                .await
                .unwrap_or_else(|_| panic!("shutdown() did not complete on signal {sig}"));
        }
        // Nothing sent since: a new one waits.
        let quiet = runtime::time::timeout(
            Duration::from_millis(20),
            runtime::signal::shutdown().unwrap(),
        )
        .await;
        assert!(quiet.is_err(), "completed with no signal");
    });
}
