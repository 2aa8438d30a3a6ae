//! Task dumps: a core's live tasks, with where each was spawned and how long ago its core
//! last polled it, for finding a task that is stuck (never woken, or waiting on something
//! that never comes).

use std::panic::Location;
use std::time::Duration;

use super::Fresh;
use super::{with_core, Core, Id, JoinHandle, RawTask};

/// One live (not finished) task, as [`dump`] lists it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskDump {
    /// The task's id (as its `JoinHandle::id` says).
    pub id: Id,
    /// The core it runs on (or waits to be taken from, if never polled).
    pub core: usize,
    /// Where it was spawned: the caller of `spawn`, `spawn_local`, `spawn_on`,
    /// `spawn_blocking`, `JoinSet::spawn`... (`#[track_caller]`).
    pub spawned_at: &'static Location<'static>,
    /// How long ago its core last started polling it, as of the loop iteration that did;
    /// `None` if it was never polled.
    pub since_last_poll: Option<Duration>,
}

/// The live tasks of the current core, oldest spawn first in no particular order; `None`
/// outside a runtime.
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// let dump = rt.block_on(async {
///     let stuck = runtime::spawn_local(std::future::pending::<()>());
///     runtime::yield_now().await;
///     let dump = runtime::task::dump().unwrap();
///     stuck.abort();
///     dump
/// });
/// assert_eq!(dump.len(), 1);
/// assert!(dump[0].since_last_poll.is_some());
/// assert_eq!(dump[0].spawned_at.file(), file!());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn dump() -> Option<Vec<TaskDump>> {
    with_core(Core::dump)
}

/// The live tasks of every core of the current runtime: [`dump`] run on each core (through
/// [`spawn_on`](crate::spawn_on)), so a core whose thread never returns to its loop (a task
/// that blocks it) cannot answer, and this waits for it. The dumping tasks themselves are
/// left out. Empty outside a runtime.
pub async fn dump_all() -> Vec<TaskDump> {
    let Some(cores) = super::cores() else {
        return Vec::new();
    };
    let parts: Vec<JoinHandle<Vec<TaskDump>>> = (0..cores)
        .map(|core| crate::spawn_on(core, async { dump().unwrap_or_default() }))
        .collect();
    let mut all = Vec::new();
    for part in parts {
        if let Ok(tasks) = part.await {
            all.extend(tasks);
        }
    }
    // The dumping tasks were spawned above, in this file.
    all.retain(|t| t.spawned_at.file() != file!());
    all
}

impl Core {
    fn dump(&self) -> Vec<TaskDump> {
        let now = crate::stats::coarse_ns().saturating_sub(self.stats.started_ns) + 1;
        let core = self.shared.index;
        let entry = |task: &RawTask| {
            let (spawned_at, last) = task.dump_info();
            TaskDump {
                id: task.id(),
                core,
                spawned_at,
                since_last_poll: (last != 0)
                    .then(|| Duration::from_nanos(now.saturating_sub(last))),
            }
        };
        let mut out: Vec<TaskDump> = self.owned.borrow().iter().map(|(_, t)| entry(t)).collect();
        // Never polled: the slot's and the stealable queue's (not in the task list yet).
        if let Some(f) = self.slot.borrow().as_ref() {
            out.push(entry(&f.list));
        }
        self.shared
            .fresh
            .for_each(|f: &Fresh| out.push(entry(&f.list)));
        out
    }
}
