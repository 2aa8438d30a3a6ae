//! Task ids ([`Id`], tokio's `task::Id`): unique among the tasks of this process.
//!
//! Ids come from one process-wide counter. A core takes them from it a block at a time
//! ([`IdBlock`], in the core, touched by its own thread only), so a spawn on a core costs a
//! compare and an increment, and the counter's cache line is touched once per
//! [`BLOCK`] spawns rather than bounced between cores on every one. Spawns from threads
//! that run no core ([`Handle::spawn`](crate::Handle::spawn) on a plain thread) take one id
//! each. Ids are unique, not ordered: a later task may have a smaller id.

use std::cell::Cell;
use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// An opaque id of a task, unique among the tasks this process spawned (tokio's
/// `task::Id`): from [`JoinHandle::id`](crate::JoinHandle::id),
/// [`AbortHandle::id`](crate::task::AbortHandle::id) and
/// [`JoinError::id`](crate::JoinError::id).
///
/// # Examples
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let a = runtime::spawn_local(async {});
///     let b = runtime::spawn_local(async {});
///     assert_ne!(a.id(), b.id());
///     assert_eq!(a.id(), a.abort_handle().id());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(NonZeroU64);

/// Ids a core takes from the process-wide counter at a time.
const BLOCK: u64 = 1024;

/// The next id not given out yet (0 is never one).
static NEXT: AtomicU64 = AtomicU64::new(1);

impl Id {
    /// `n` fresh ids from the process-wide counter; the first of them.
    fn take(n: u64) -> u64 {
        NEXT.fetch_add(n, Ordering::Relaxed)
    }

    /// One id, straight from the process-wide counter (a spawn from a thread with no core).
    pub(crate) fn next() -> Id {
        Id::from_raw(Id::take(1))
    }

    fn from_raw(n: u64) -> Id {
        // The counter starts at 1 and would take centuries to wrap; if it ever did, ids
        // would repeat, which is all a wrap could do.
        Id(NonZeroU64::new(n).unwrap_or(NonZeroU64::MIN))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A core's block of ids: `next..end`, refilled from the counter when it runs out.
pub(crate) struct IdBlock {
    next: Cell<u64>,
    end: Cell<u64>,
}

impl IdBlock {
    /// An empty block (the first spawn fills it).
    pub(crate) fn new() -> IdBlock {
        IdBlock {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    }

    /// The next id of the block. Hot path: a compare and an increment.
    #[inline]
    pub(crate) fn next(&self) -> Id {
        let mut n = self.next.get();
        if n == self.end.get() {
            n = self.refill();
        }
        self.next.set(n.wrapping_add(1));
        Id::from_raw(n)
    }

    /// Takes a new block; its first id.
    #[cold]
    fn refill(&self) -> u64 {
        let start = Id::take(BLOCK);
        self.end.set(start.wrapping_add(BLOCK));
        start
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn blocks_and_single_ids_never_repeat() {
        let (a, b) = (IdBlock::new(), IdBlock::new());
        let mut seen = HashSet::new();
        for _ in 0..3 * BLOCK {
            assert!(seen.insert(a.next()));
            assert!(seen.insert(b.next()));
            assert!(seen.insert(Id::next()));
        }
    }
}
