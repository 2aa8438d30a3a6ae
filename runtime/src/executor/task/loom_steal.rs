//! An abort racing a steal, under loom's model checker (`scripts/loom.sh`), on the real
//! code: a task spawned as stealable (`SCHEDULED` since its creation) on one core's
//! `Shared`, taken by a thief (`RawTask::rehome` to its own `Shared`, `into_local`, then
//! the poll, `RawTask::run`) while another thread calls `RawTask::abort`. The owner pointer
//! and the state word are loom's atomics (`--cfg loom`), so every interleaving and every
//! ordering they allow is tried.
//!
//! The task's future never finishes by itself, so the task completes only through a poll
//! that saw `CANCELLED`: an abort that saw the flag set schedules nothing, and the thief's
//! poll must then see the cancel; one that saw it clear reads the owner and queues the task
//! there, which must be the thief's core (never the old one), whose next drain runs it.

use std::panic::Location;
use std::sync::Arc;

use loom::thread;

use super::RawTask;
use crate::executor::join::JoinError;
use crate::executor::{Id, Shared};

#[test]
fn loom_abort_of_a_task_being_stolen() {
    loom::model(|| {
        let home = Arc::new(Shared::new(0).expect("a core's shared part"));
        let thief_core = Arc::new(Shared::new(1).expect("a core's shared part"));
        let (entry, list, join) = RawTask::new(
            std::future::pending::<u32>(),
            home.clone(),
            false,
            Id::next(),
            Location::caller(),
        );
        // No core's task list here: the model keeps no such reference.
        drop(list);
        let thief = {
            let to = thief_core.clone();
            thread::spawn(move || {
                entry.rehome(&to);
                // The take, then the poll that follows it.
                if let Some(local) = entry.into_local() {
                    local.run();
                }
            })
        };
        join.abort();
        thief.join().unwrap();

        assert_eq!(
            home.remote_depth(),
            0,
            "the abort queued the task on its old core"
        );
        // The thief's core drains its remote queue later and runs what it finds.
        for task in thief_core.drain().tasks {
            if let Some(local) = task.into_local() {
                local.run();
            }
        }
        assert!(
            join.is_complete(),
            "the abort was lost: it scheduled nothing and the poll missed it"
        );
        let mut out: Option<Result<u32, JoinError>> = None;
        // SAFETY: COMPLETE was seen, `join` is the join handle's reference, and `out` is an
        // `Option<Result<F::Output, JoinError>>` for the task's future type.
        unsafe { join.take_output((&mut out as *mut Option<Result<u32, JoinError>>).cast()) };
        assert!(
            out.expect("the output is there")
                .is_err_and(|e| e.is_cancelled()),
            "the task ends cancelled"
        );
        drop(join);
    });
}
