//! `Runtime::spawn` from outside the runtime, task ids on handles and errors, and
//! `JoinError`'s panic accessors.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use runtime::{Builder, Runtime};

#[test]
fn runtime_spawn_runs_send_tasks_on_every_core_from_outside() {
    let rt = Builder::new().cores(2).build().unwrap();
    assert_eq!(runtime::cores(), None, "outside the runtime");
    // Spawned before anything drives core 0: those placed there run in the block_on below.
    let handles: Vec<_> = (0..8)
        .map(|i| rt.spawn(async move { (i, runtime::current_core().unwrap()) }))
        .collect();
    let got = rt.block_on(async {
        assert_eq!(runtime::cores(), Some(2));
        let mut got = Vec::new();
        for h in handles {
            got.push(h.await.unwrap());
        }
        got
    });
    let values: Vec<_> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(values, (0..8).collect::<Vec<_>>());
    let cores: HashSet<_> = got.iter().map(|(_, c)| *c).collect();
    assert_eq!(cores, HashSet::from([0, 1]), "round-robin over both cores");
    // From inside the runtime too.
    let inside = rt.block_on(async { rt.spawn(async { 7 }).await.unwrap() });
    assert_eq!(inside, 7);
}

#[test]
fn every_spawn_path_gives_a_distinct_id_and_its_handles_agree() {
    let rt = Builder::new().cores(2).build().unwrap();
    let handle = rt.handle();
    let from_thread = std::thread::spawn(move || {
        (0..100)
            .map(|_| handle.spawn(async {}).id())
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    let mut ids: HashSet<runtime::task::Id> = from_thread.into_iter().collect();
    rt.block_on(async {
        for i in 0..3000usize {
            let h = match i % 4 {
                0 => runtime::spawn_local(async {}),
                1 => runtime::spawn(async {}),
                2 => runtime::spawn_on(1, async {}),
                _ => rt.spawn(async {}),
            };
            assert_eq!(h.id(), h.abort_handle().id());
            assert!(ids.insert(h.id()), "id {} given twice", h.id());
            h.await.unwrap();
        }
    });
    assert_eq!(ids.len(), 3100);
}

#[test]
fn a_join_error_names_its_task_and_gives_the_panic_back() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let panicked = runtime::spawn_local(async { panic!("boom") });
        let id = panicked.id();
        let err = panicked.await.unwrap_err();
        assert!(err.is_panic() && !err.is_cancelled());
        assert_eq!(err.id(), id);
        assert!(err.to_string().contains(&id.to_string()), "{err}");
        let payload = err.into_panic();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));

        let aborted = runtime::spawn_local(std::future::pending::<()>());
        let id = aborted.id();
        aborted.abort();
        let err = aborted.await.unwrap_err();
        assert!(err.is_cancelled() && !err.is_panic());
        assert_eq!(err.id(), id);
        let err = err.try_into_panic().unwrap_err();
        // `into_panic` on a cancelled task panics, as tokio's does.
        let refused = catch_unwind(AssertUnwindSafe(|| err.into_panic()));
        assert!(refused.is_err());
    });
}
