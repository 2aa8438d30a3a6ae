//! `Builder` and `Runtime`: set up one core's ring and run futures on it.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::rc::Rc;

use crate::driver::RingFlags;
use crate::executor::{Core, JoinHandle};
use crate::stats::Stats;

thread_local! {
    /// Whether a runtime is alive on this thread (its ring is bound to it).
    static ALIVE: Cell<bool> = const { Cell::new(false) };
}

/// Configures and builds a [`Runtime`].
///
/// ```
/// let rt = runtime::Builder::new().entries(64).build().unwrap();
/// println!("granted: {}", rt.flags());
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    entries: u32,
    cq_entries: Option<u32>,
    single_issuer: bool,
    defer_taskrun: bool,
    coop_taskrun: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// A builder with 256 SQ entries and every fast setup flag asked for.
    pub fn new() -> Builder {
        Builder {
            entries: 256,
            cq_entries: None,
            single_issuer: true,
            defer_taskrun: true,
            coop_taskrun: true,
        }
    }

    /// Submission queue entries (rounded up to a power of two by the kernel). The SQ never
    /// limits how many ops are in flight: a full SQ is submitted and refilled.
    pub fn entries(mut self, entries: u32) -> Builder {
        self.entries = entries;
        self
    }

    /// Completion queue entries; by default four times the SQ's, so bursts of completions
    /// rarely overflow (overflow is survived either way).
    pub fn cq_entries(mut self, entries: u32) -> Builder {
        self.cq_entries = Some(entries);
        self
    }

    /// Ask for `IORING_SETUP_SINGLE_ISSUER` (default on). Off also turns `DEFER_TASKRUN` off.
    pub fn single_issuer(mut self, on: bool) -> Builder {
        self.single_issuer = on;
        self
    }

    /// Ask for `IORING_SETUP_DEFER_TASKRUN` (default on; needs `SINGLE_ISSUER`).
    pub fn defer_taskrun(mut self, on: bool) -> Builder {
        self.defer_taskrun = on;
        self
    }

    /// Ask for `IORING_SETUP_COOP_TASKRUN` and `TASKRUN_FLAG` (default on).
    pub fn coop_taskrun(mut self, on: bool) -> Builder {
        self.coop_taskrun = on;
        self
    }

    /// The flags this builder asks the kernel for.
    fn wanted(&self) -> io::Result<RingFlags> {
        if self.entries == 0 || self.entries > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring entries must be 1..=32768, got {}", self.entries),
            ));
        }
        let sq = self.entries.next_power_of_two();
        let cq = self.cq_entries.unwrap_or(sq * 4).max(sq);
        let mut f = RingFlags::all(sq, cq);
        f.single_issuer = self.single_issuer;
        f.defer_taskrun = self.defer_taskrun && self.single_issuer;
        f.coop_taskrun = self.coop_taskrun;
        f.taskrun_flag = self.coop_taskrun;
        Ok(f)
    }

    /// Sets up the ring on the calling thread and returns the runtime.
    ///
    /// Fails if a runtime already lives on this thread, if the kernel has no usable
    /// io_uring (the error says why: kernel too old, `kernel.io_uring_disabled`, seccomp), or
    /// if the entries are out of range.
    pub fn build(&self) -> io::Result<Runtime> {
        if ALIVE.with(Cell::get) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a runtime is already running on this thread; one thread drives one ring \
                 (build the second runtime on another thread, or spawn onto the first)",
            ));
        }
        let core = Core::new(self.wanted()?)?;
        ALIVE.with(|a| a.set(true));
        let rt = Runtime {
            core: Rc::new(core),
        };
        if std::env::var_os("RUNTIME_LOG").is_some() {
            eprintln!("runtime: ring set up with {}", rt.flags());
        }
        Ok(rt)
    }
}

/// One core's runtime: a ring, a run queue and timers, driven by [`Runtime::block_on`].
///
/// Not `Send`: the ring belongs to the thread that built it (SINGLE_ISSUER).
pub struct Runtime {
    core: Rc<Core>,
}

impl Runtime {
    /// A runtime with the default [`Builder`] settings.
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    /// Runs `future` to completion on this thread, with every spawned task and op.
    ///
    /// # Panics
    /// If called from inside a `block_on` on this thread, or if `future` panics.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.core.block_on(future)
    }

    /// Spawns a task on this runtime from outside `block_on`; it runs at the next
    /// `block_on`.
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
    {
        self.core.spawn_outside(future)
    }

    /// The setup flags the kernel granted this runtime's ring.
    pub fn flags(&self) -> RingFlags {
        self.core.driver.borrow().flags()
    }

    /// This runtime's counters.
    pub fn stats(&self) -> Stats {
        core_stats(&self.core)
    }
}

pub(crate) fn core_stats(core: &Core) -> Stats {
    let d = core.driver.borrow().counters;
    let c = core.counters();
    Stats {
        sqes_submitted: d.sqes,
        enters: d.enters,
        cqes_reaped: d.cqes,
        tasks_polled: c.tasks_polled,
        remote_wakes: c.remote_wakes,
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.core.shutdown();
        ALIVE.with(|a| a.set(false));
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("flags", &self.flags())
            .finish()
    }
}
