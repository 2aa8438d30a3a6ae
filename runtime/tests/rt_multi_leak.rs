//! A multi-core runtime leaves no thread and no fd behind. Alone in its binary: thread and
//! fd counts are process-wide.

mod common;

use std::time::Duration;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn no_thread_or_fd_left_behind() {
    let (threads, fds) = (thread_count(), common::fd_count());
    for round in 0..3 {
        let rt = runtime::Builder::new().cores(2).build().unwrap();
        assert_eq!(
            thread_count(),
            threads + 1,
            "round {round}: one worker thread"
        );
        rt.block_on(async {
            let h = runtime::spawn_on(1, async {
                runtime::ext::raw::nop().await.unwrap();
                // Left pending at shutdown: cancelled there.
                runtime::time::sleep(Duration::from_secs(3600)).await;
            });
            runtime::time::sleep(Duration::from_millis(5)).await;
            drop(h);
        });
        drop(rt);
        assert_eq!(thread_count(), threads, "round {round}: worker joined");
        assert_eq!(
            common::fd_count(),
            fds,
            "round {round}: rings and eventfds closed"
        );
    }
}
