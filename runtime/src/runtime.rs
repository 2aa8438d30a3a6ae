//! [`Runtime`]: core 0 on this thread and the worker cores, built by [`Builder`](crate::Builder).

use std::future::Future;
use std::io;
use std::rc::Rc;

use crate::context;
use crate::cores::{self, Worker};
use crate::driver::{Features, RingFlags};
use crate::executor::{Core, JoinHandle};
use crate::Builder;

/// A runtime: core 0 (a ring, a run queue and timers on the building thread, driven by
/// [`Runtime::block_on`]) and the worker cores, if [`Builder::cores`] asked for them.
///
/// Not `Send`: core 0's ring belongs to the thread that built it (SINGLE_ISSUER). Dropping
/// the runtime stops every core, drops their tasks, cancels and reaps their ops, and joins
/// the worker threads; a worker whose loop panicked is reported on stderr. The building
/// thread, pinned to core 0's CPU by `build`, gets its former CPU affinity back.
pub struct Runtime {
    pub(crate) core: Rc<Core>,
    pub(crate) workers: Vec<Worker>,
    /// The building thread's CPU affinity before `build` pinned it (core 0), given back
    /// when the runtime is dropped: a later runtime on this thread sees every CPU again.
    pub(crate) unpinned: Option<libc::cpu_set_t>,
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

    /// Spawns a `Send` future on one of the runtime's cores (tokio's `Runtime::spawn`):
    /// from outside the runtime dealt out round-robin; from inside, as
    /// [`spawn`](crate::spawn) places it. The handle may be awaited anywhere.
    ///
    /// A task placed on a worker core starts at once; one placed on core 0 (this thread's)
    /// runs when this thread next drives the runtime ([`block_on`](Runtime::block_on)).
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = runtime::Builder::new().cores(2).build()?;
    /// let a = rt.spawn(async { 20 });
    /// let b = rt.spawn(async { runtime::current_core() });
    /// let (a, b) = rt.block_on(async { (a.await.unwrap(), b.await.unwrap()) });
    /// assert_eq!(a, 20);
    /// assert!(b.is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::handle::spawn_placed(&self.core.set, future)
    }

    /// Spawns a task on this runtime from outside `block_on`; it runs at the next
    /// `block_on`.
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
    {
        self.core.spawn_outside(future)
    }

    /// The setup flags the kernel granted core 0's ring.
    pub fn flags(&self) -> RingFlags {
        self.core.ctx.driver.borrow().flags()
    }

    /// The setup flags each core's ring was granted, by core index.
    pub fn core_flags(&self) -> Vec<RingFlags> {
        let mut v = vec![self.flags()];
        v.extend(self.workers.iter().map(|w| w.flags));
        v
    }

    /// The kernel features core 0's ring was granted (see [`Features`]; each core probes
    /// its own ring, and [`crate::features`] reads the current core's).
    pub fn features(&self) -> Features {
        self.core.ctx.features
    }

    /// The features each core's ring was granted, by core index.
    pub fn core_features(&self) -> Vec<Features> {
        let mut v = vec![self.features()];
        v.extend(self.workers.iter().map(|w| w.features));
        v
    }

    /// How many cores the runtime runs ([`runtime::cores`](crate::cores) inside it).
    pub fn cores(&self) -> usize {
        1 + self.workers.len()
    }

    /// A handle to this runtime, for other threads (see [`Handle`](crate::Handle)).
    pub fn handle(&self) -> crate::Handle {
        crate::Handle::new(self.core.set.clone())
    }

    /// Every core's metrics, readable from any thread, also after the runtime is dropped
    /// ([`RuntimeMetrics`](crate::RuntimeMetrics)).
    pub fn metrics(&self) -> crate::RuntimeMetrics {
        crate::RuntimeMetrics::new(self.core.set.clone())
    }

    /// Core 0's counters, read now.
    #[deprecated(
        since = "0.1.0",
        note = "read `CoreMetrics`: `Runtime::metrics().core(0)` (read now on this thread)"
    )]
    #[allow(deprecated)]
    pub fn stats(&self) -> crate::Stats {
        crate::Stats::from(self.core.snapshot().unwrap_or_default())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Queued blocking jobs are dropped unrun; running ones finish on their own.
        self.core.set.pool.close();
        for w in &self.workers {
            w.request_stop();
        }
        for w in self.workers.drain(..) {
            w.join();
        }
        self.core.shutdown();
        // Values this core made and that outlive it release what they hold where they are.
        context::set_home(None);
        if let Some(old) = &self.unpinned {
            let _ = cores::set_affinity(old);
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("flags", &self.flags())
            .finish()
    }
}
