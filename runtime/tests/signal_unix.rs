//! `signal::unix::signal` through the ring: every listener sees each delivery, deliveries
//! between two `recv`s are kept, a dropped `recv` loses none, and bad signals are refused.
//! Alone in its binary: signals go to the whole process.

use std::time::Duration;

use runtime::signal::unix::{signal, SignalKind};

fn raise(sig: libc::c_int) {
    // SAFETY: sends `sig` to this process, which has a listener for it.
    unsafe { libc::kill(libc::getpid(), sig) };
}

#[test]
fn every_listener_sees_each_delivery() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut a = signal(SignalKind::terminate()).unwrap();
        let mut b = signal(SignalKind::terminate()).unwrap();
        let mut other = signal(SignalKind::user_defined2()).unwrap();
        raise(libc::SIGTERM);
        let within = Duration::from_secs(5);
        runtime::time::timeout(within, a.recv())
            .await
            .unwrap()
            .unwrap();
        runtime::time::timeout(within, b.recv())
            .await
            .unwrap()
            .unwrap();
        // No SIGUSR2 was sent, and SIGTERM was counted once per listener.
        let nothing = Duration::from_millis(20);
        assert!(runtime::time::timeout(nothing, other.recv()).await.is_err());
        assert!(runtime::time::timeout(nothing, a.recv()).await.is_err());

        // Sent while nobody is in `recv` (the listener exists): kept for the next `recv`.
        raise(libc::SIGTERM);
        runtime::time::sleep(Duration::from_millis(10)).await;
        runtime::time::timeout(within, a.recv())
            .await
            .unwrap()
            .unwrap();

        // A `recv` dropped while waiting loses nothing: the read stays in the listener.
        let mut usr1 = signal(SignalKind::user_defined1()).unwrap();
        assert!(runtime::time::timeout(nothing, usr1.recv()).await.is_err());
        raise(libc::SIGUSR1);
        runtime::time::timeout(within, usr1.recv())
            .await
            .unwrap()
            .unwrap();
    });
}

#[test]
fn signals_that_cannot_be_handled_are_refused() {
    for sig in [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, 0, 64, -1] {
        let err = signal(SignalKind::from_raw(sig)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "signal {sig}");
    }
}

#[test]
fn a_signal_that_arrives_while_the_core_is_busy_is_delivered_after() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut hup = signal(SignalKind::hangup()).unwrap();
        // Another thread signals while this core is busy in a task that does not yield.
        let sender = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            raise(libc::SIGHUP);
        });
        let busy = runtime::spawn_local(async {
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_millis(100) {
                std::hint::spin_loop();
            }
        });
        busy.await.unwrap();
        sender.join().unwrap();
        runtime::time::timeout(Duration::from_secs(5), hup.recv())
            .await
            .expect("the SIGHUP that came during the busy task is delivered")
            .unwrap();
    });
}
