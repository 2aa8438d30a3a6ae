//! Task dumps: a task that never wakes shows up with where it was spawned and how long ago
//! it was last polled; never-polled tasks say so; `dump_all` covers every core and leaves
//! its own tasks out; finished tasks are gone.

use std::time::Duration;

use runtime::task::{dump, dump_all};
use runtime::Builder;

#[test]
fn a_task_that_never_wakes_is_listed_with_its_spawn_site_and_age() {
    assert!(dump().is_none(), "outside a runtime");
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let line = line!() + 1;
        let stuck = runtime::spawn_local(std::future::pending::<()>());
        let fresh = runtime::spawn_local(async {});
        // Not polled yet: both listed, neither with a poll time.
        let before = dump().unwrap();
        assert_eq!(before.len(), 2, "{before:?}");
        assert!(before.iter().all(|t| t.since_last_poll.is_none()));
        runtime::sleep(Duration::from_millis(50)).await;
        fresh.await.unwrap();
        let after = dump().unwrap();
        assert_eq!(after.len(), 1, "the finished task is gone: {after:?}");
        let t = &after[0];
        assert_eq!(t.id, stuck.id());
        assert_eq!(t.core, 0);
        assert_eq!((t.spawned_at.file(), t.spawned_at.line()), (file!(), line));
        let age = t.since_last_poll.expect("polled once");
        assert!(age >= Duration::from_millis(40), "{age:?}");
        stuck.abort();
        let _ = stuck.await;
        assert!(dump().unwrap().is_empty());
    });
}

#[test]
fn dump_all_lists_every_cores_tasks_but_its_own() {
    let rt = Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let on1 = runtime::spawn_on(1, std::future::pending::<()>());
        let on0 = runtime::spawn_local(std::future::pending::<()>());
        runtime::yield_now().await;
        runtime::sleep(Duration::from_millis(10)).await;
        let all = dump_all().await;
        let mut found: Vec<_> = all.iter().map(|t| (t.id, t.core)).collect();
        found.sort_by_key(|&(_, core)| core);
        assert_eq!(found, vec![(on0.id(), 0), (on1.id(), 1)], "{all:?}");
        assert!(all.iter().all(|t| t.spawned_at.file() == file!()));
        on0.abort();
        on1.abort();
    });
}
