//! `signal::ctrl_c()` completes on SIGINT, through the ring. Alone in its binary: the
//! signal goes to the whole process.

use std::time::Duration;

#[test]
fn ctrl_c_completes_on_sigint() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let waiter = runtime::spawn_local(runtime::signal::ctrl_c());
        let second = runtime::spawn_local(runtime::signal::ctrl_c());
        runtime::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        // SAFETY: sends SIGINT to this process, which has listeners waiting.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        runtime::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("ctrl_c() completed")
            .unwrap()
            .unwrap();
        second.await.unwrap().unwrap();
        // A listener dropped before the signal does not make the next one fire early.
        let dropped =
            runtime::time::timeout(Duration::from_millis(5), runtime::signal::ctrl_c()).await;
        assert!(dropped.is_err());
        let waiter = runtime::spawn_local(runtime::signal::ctrl_c());
        runtime::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished(), "no SIGINT was sent since");
        // SAFETY: as above.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        waiter.await.unwrap().unwrap();
    });
}
