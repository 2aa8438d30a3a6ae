//! Shutdown with ops in flight: every buffer freed after its final CQE, every fd closed.
//! Alone in its binary so the process-wide fd count is not disturbed by other tests.

mod common;

use common::tracked_read;

use std::rc::Rc;
use std::time::Duration;

use runtime::Runtime;

async fn settle() {
    runtime::time::sleep(Duration::from_millis(10)).await;
}

#[test]
fn shutdown_with_ops_in_flight_frees_everything() {
    let fds_before = common::fd_count();
    let (r, w) = common::pipe();
    let token = Rc::new(());
    {
        let rt = Runtime::new().unwrap();
        for _ in 0..16 {
            let t = token.clone();
            let fd = r.try_clone().unwrap();
            rt.spawn_local(async move {
                let _ = tracked_read(&fd, t).await;
            });
        }
        rt.block_on(settle());
        assert_eq!(Rc::strong_count(&token), 17);
        // Dropping the runtime drops the tasks, cancels their reads and reaps the CQEs.
    }
    assert_eq!(
        Rc::strong_count(&token),
        1,
        "buffers freed after their final CQEs"
    );
    drop((r, w));
    assert_eq!(
        common::fd_count(),
        fds_before,
        "ring, eventfd and dup'd fds all closed"
    );
}
