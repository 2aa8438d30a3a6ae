//! The part of a core other threads reach: its remote queue, its wake-up paths, its stop
//! flag; and the set of a runtime's cores, for `spawn_on`.
//!
//! A remote wake or spawn pushes onto the core's remote queue (a mutex: the one lock on
//! the cross-thread path) and then wakes the core once per batch (`notified`):
//! - from a thread that runs a core of its own, with `IORING_OP_MSG_RING` (Linux 5.18): an SQE
//!   in the sender's ring that posts a CQE into the target's ring, waking its wait;
//! - otherwise (a plain thread, a kernel without MSG_RING, a sender busy inside its driver),
//!   by writing the target's eventfd, on which its driver keeps a read armed.
//!
//! # Invariant
//! `notified` is cleared by the owning core before it drains the queue; whoever sets it
//! must wake the core afterwards. So a push after a drain always wakes the core, and a core
//! asleep in the kernel has nothing left in its queue.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::task::AtomicWaker;

use super::balance::{FreshQueue, Idle};
use crate::blocking::BlockingPool;
use crate::context::{self, CoreId};
use crate::executor::{Placement, RawTask};
use crate::stats::{Published, SharedHistogram};

/// The part of a core other threads reach.
pub(crate) struct Shared {
    pub(crate) id: CoreId,
    /// The core's place in its runtime (`current_core()`).
    pub(crate) index: usize,
    remote: Mutex<Remote>,
    /// Set when the core was woken and has not drained the remote queue since.
    pub(crate) notified: AtomicBool,
    pub(crate) event_fd: OwnedFd,
    /// The core's ring fd, for MSG_RING from other cores; -1 until the ring exists.
    pub(crate) ring_fd: AtomicI32,
    pub(crate) remote_wakes: AtomicU64,
    /// Asks a worker core's loop to return (runtime shutdown).
    pub(crate) stop: AtomicBool,
    pub(crate) stop_waker: AtomicWaker,
    /// `Send` tasks spawned here and never polled, which an idle core may take
    /// (`executor::balance::fresh`).
    pub(crate) fresh: FreshQueue,
    /// The core's metrics as it last published them.
    pub(crate) metrics: Published,
    /// How much its thread waited for its CPU, and ran, lately (`contention.rs`).
    pub(crate) contention: super::contention::Shares,
    /// Its poll-time and schedule-delay histograms, as last published (all zero when off).
    pub(crate) histograms: [SharedHistogram; 2],
    /// Values other threads sent back to be dropped here (`CoreOwner::drop_on_core`).
    pub(crate) orphans: super::owner::Orphans,
}

#[derive(Default)]
struct Remote {
    tasks: Vec<RawTask>,
    /// Tasks spawned from other threads: (run-queue reference, task-list reference).
    spawns: Vec<(RawTask, RawTask)>,
    closed: bool,
}

/// What a core takes from its remote queue in one drain.
pub(crate) struct Drained {
    pub(crate) tasks: Vec<RawTask>,
    pub(crate) spawns: Vec<(RawTask, RawTask)>,
}

impl Shared {
    pub(crate) fn new(index: usize) -> io::Result<Shared> {
        // SAFETY: eventfd takes no pointers; the result is checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(crate::error::context(
                io::Error::last_os_error(),
                "eventfd for the core's wake-ups",
            ));
        }
        Ok(Shared {
            id: CoreId::next(),
            index,
            remote: Mutex::new(Remote::default()),
            notified: AtomicBool::new(false),
            // SAFETY: `fd` is a new eventfd that nothing else owns.
            event_fd: unsafe { OwnedFd::from_raw_fd(fd) },
            ring_fd: AtomicI32::new(-1),
            remote_wakes: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stop_waker: AtomicWaker::new(),
            fresh: FreshQueue::default(),
            metrics: Published::default(),
            contention: Default::default(),
            histograms: Default::default(),
            orphans: Default::default(),
        })
    }

    /// Queues a task woken from another thread and wakes the core.
    pub(crate) fn push_remote(&self, task: RawTask) {
        let mut remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
        if remote.closed {
            // The core is gone; the task's future was already dropped there.
            drop(remote);
            drop(task);
            return;
        }
        remote.tasks.push(task);
        drop(remote);
        self.remote_wakes.fetch_add(1, Ordering::Relaxed);
        self.notify();
    }

    /// Hands a task spawned on another thread to this core, which registers and runs it.
    pub(crate) fn push_spawn(&self, run: RawTask, list: RawTask) {
        let mut remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
        if remote.closed {
            drop(remote);
            drop(run);
            // The core is gone: the task ends as cancelled (its `Send` future is dropped
            // here), so its join handle does not wait forever.
            list.shutdown();
            return;
        }
        remote.spawns.push((run, list));
        drop(remote);
        self.notify();
    }

    /// Wakes and spawns waiting in the remote queue.
    pub(crate) fn remote_depth(&self) -> usize {
        let remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
        remote.tasks.len() + remote.spawns.len()
    }

    /// Takes everything queued for this core (owning thread only).
    pub(crate) fn drain(&self) -> Drained {
        self.notified.store(false, Ordering::SeqCst);
        let mut remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
        Drained {
            tasks: std::mem::take(&mut remote.tasks),
            spawns: std::mem::take(&mut remote.spawns),
        }
    }

    /// Closes the remote queue (the core shuts down) and returns what was left in it.
    pub(crate) fn close(&self) -> Drained {
        let mut remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
        remote.closed = true;
        Drained {
            tasks: std::mem::take(&mut remote.tasks),
            spawns: std::mem::take(&mut remote.spawns),
        }
    }

    /// Wakes the core's ring, once per batch of remote wakes.
    pub(crate) fn notify(&self) {
        if self.notified.swap(true, Ordering::AcqRel) {
            return;
        }
        if !msg_ring_wake(self) {
            self.wake_by_eventfd();
        }
    }

    /// Writes the core's eventfd (the fallback wake path).
    pub(crate) fn wake_by_eventfd(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to the core's eventfd.
        let n = unsafe { libc::write(self.event_fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        // EAGAIN means the counter is saturated: the core is woken anyway.
        debug_assert!(n == 8 || io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN));
    }

    /// Asks the core's loop to stop (worker cores) and wakes it.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.stop_waker.wake();
        // Past the `notified` batching: a MSG_RING wake sent earlier may still wait for its
        // sender's ring to run deferred work, and the sender may be the one shutting down.
        self.wake_by_eventfd();
    }
}

/// The cores of one runtime, by index, and what they share: the blocking pool, where
/// `spawn` puts tasks, and which cores sleep.
pub(crate) struct CoreSet {
    cores: OnceLock<Vec<Arc<Shared>>>,
    pub(crate) pool: BlockingPool,
    /// Where `spawn` puts a `Send` task (`Builder::spawn_placement`).
    pub(crate) placement: Placement,
    /// How many cores the runtime has (known before they all exist: a worker's first
    /// sleep already registers it as idle).
    count: usize,
    /// Whether cores record the histograms (`Builder::metrics_histograms`).
    pub(crate) histograms: bool,
    /// Round-robin placement of `Send` tasks (see `executor::spawn`).
    next: AtomicUsize,
    /// Cores asleep that another core may wake to take stealable tasks.
    pub(crate) idle: Idle,
}

impl CoreSet {
    /// A set whose cores are recorded later (`set`), sharing `pool`.
    pub(crate) fn new(
        pool: BlockingPool,
        placement: Placement,
        count: usize,
        histograms: bool,
    ) -> CoreSet {
        CoreSet {
            cores: OnceLock::new(),
            pool,
            placement,
            count,
            histograms,
            next: AtomicUsize::new(0),
            idle: Idle::default(),
        }
    }

    /// Whether cores take each other's stealable tasks: more than one core, and `spawn`
    /// keeps tasks local.
    #[inline]
    pub(crate) fn balances(&self) -> bool {
        self.placement == Placement::Local && self.count > 1
    }

    /// Wakes one sleeping core other than `from`, if any, to take stealable tasks.
    pub(crate) fn wake_idle(&self, from: usize) {
        if let Some(index) = self.idle.take_one(from) {
            if let Some(core) = self.get(index) {
                core.notify();
            }
        }
    }

    /// Whether any core has stealable tasks waiting (`SeqCst`: see `executor::balance::fresh`).
    pub(crate) fn any_fresh(&self) -> bool {
        self.cores
            .get()
            .is_some_and(|cores| cores.iter().any(|c| c.fresh.len() > 0))
    }

    /// All the runtime's cores.
    pub(crate) fn all(&self) -> &[Arc<Shared>] {
        self.cores.get().map_or(&[], Vec::as_slice)
    }

    /// The core the next `Send` task goes to: round-robin over the runtime's cores.
    pub(crate) fn place(&self) -> usize {
        match self.len() {
            0 | 1 => 0,
            n => self.next.fetch_add(1, Ordering::Relaxed) % n,
        }
    }

    /// Records the cores once they all exist.
    pub(crate) fn set(&self, cores: Vec<Arc<Shared>>) {
        assert!(self.cores.set(cores).is_ok(), "core set filled twice");
    }

    /// Core `index`, if the runtime has it.
    pub(crate) fn get(&self, index: usize) -> Option<&Arc<Shared>> {
        self.cores.get()?.get(index)
    }

    /// How many cores the runtime has.
    pub(crate) fn len(&self) -> usize {
        self.cores.get().map_or(0, Vec::len)
    }
}

/// Wakes `target` with an `IORING_OP_MSG_RING` from the current core's ring, if this thread
/// runs a core (other than `target`), the kernel has MSG_RING and the driver is free.
fn msg_ring_wake(target: &Shared) -> bool {
    if context::current_core_id().is_none_or(|id| id == target.id) {
        return false;
    }
    let fd = target.ring_fd.load(Ordering::Acquire);
    if fd < 0 {
        return false;
    }
    // A wake from inside the driver (while it reaps) takes the eventfd path.
    crate::driver::try_with_driver(|d| d.msg_ring(fd, target.index)).unwrap_or(false)
}
