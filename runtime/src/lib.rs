//! A thread-per-core async runtime on Linux io_uring.
//!
//! Each core runs one thread that owns one ring (set up with `SINGLE_ISSUER`,
//! `DEFER_TASKRUN` and `COOP_TASKRUN` where the kernel has them) and one local task queue.
//! The loop runs ready tasks, submits what they queued, waits in the kernel only when
//! nothing is ready, reaps every completion in one pass and wakes their tasks.
//!
//! ```
//! use std::time::Duration;
//!
//! let rt = runtime::Runtime::new()?;
//! let n = rt.block_on(async {
//!     let task = runtime::spawn_local(async {
//!         runtime::time::sleep(Duration::from_millis(1)).await;
//!         21
//!     });
//!     task.await.unwrap()
//! });
//! assert_eq!(n * 2, 42);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`sync`] has the async locks and channels, usable across cores and from std threads
//! (tokio's `sync`, re-exported), and core-local channels without atomics
//! ([`sync::local`]).
//!
//! Crates that build their own operations on the runtime (as `corering-net` and
//! `corering-fs` do) find everything they need in [`ext`]: the op API, the one seam between
//! the ring and everything built on it, shared fds, the I/O core and raw ops. An
//! application does not need it. ARCHITECTURE.md in the repository describes the loop, the
//! op lifecycle and its safety rules, and thread-per-core.

#[cfg(not(target_os = "linux"))]
compile_error!("this runtime is built on io_uring and runs on Linux only");

mod blocking;
pub mod buf;
mod builder;
mod context;
mod cores;
mod driver;
mod error;
mod executor;
pub mod ext;
mod fd;
mod handle;
mod loom;
mod macros;
mod metrics;
pub mod process;
mod runtime;
pub mod signal;
mod stats;
pub mod sync;
pub mod time;
mod trace;

pub use builder::Builder;
pub use driver::{Backend, Features, RingFlags};
pub use executor::{
    cores, current_core, spawn, spawn_blocking, spawn_local, spawn_on, spawn_on_local, yield_now,
    JoinError, JoinHandle, Placement,
};
pub use handle::{Handle, TryCurrentError};
pub use macros::{main, test};
pub use metrics::RuntimeMetrics;
pub use runtime::Runtime;
pub use stats::CoreMetrics;
#[allow(deprecated)]
pub use stats::Stats;
pub use time::{sleep, timeout};

/// futures, for `impl_async_io!`'s expansion.
#[doc(hidden)]
pub use futures as __futures;
/// tokio, for `impl_async_io!`'s expansion (its I/O traits need no tokio feature).
#[doc(hidden)]
pub use tokio as __tokio;

/// Tasks: spawning, joining, aborting (tokio's `tokio::task` names).
pub mod task {
    pub use crate::executor::{
        dump, dump_all, spawn, spawn_blocking, spawn_local, spawn_on, spawn_on_local, yield_now,
        AbortHandle, Id, JoinError, JoinHandle, JoinSet, TaskDump,
    };
}

/// The kernel features the current core's ring was granted; `None` outside a runtime.
///
/// Cheap (a copy of a value the core keeps), so code choosing between a fast path and its
/// fallback (say, multishot receives from a buffer ring or plain reads) may call it per
/// socket. Cores of one runtime are built alike, but each probes its own ring.
pub fn features() -> Option<Features> {
    crate::driver::current_features()
}

/// The current core's counters, read now; `None` outside a runtime. (From other threads,
/// [`Handle::metrics`] reads every core's as it last published them.)
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let before = runtime::core_metrics().unwrap();
///     runtime::spawn_local(async {}).await.unwrap();
///     let d = runtime::core_metrics().unwrap() - before;
///     assert!(d.polls >= 1);
///     assert_eq!(d.spawned_tasks, 1);
/// });
/// assert_eq!(runtime::core_metrics(), None);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn core_metrics() -> Option<CoreMetrics> {
    executor::with_core(|core| core.snapshot()).flatten()
}

/// The current core's counters; `None` outside a runtime.
#[deprecated(
    since = "0.1.0",
    note = "read `CoreMetrics` with `runtime::core_metrics()` (`tasks_polled` is `polls`, \
            `tasks_alive` is `alive_tasks`, `tasks_stolen` is `stolen_tasks`)"
)]
#[allow(deprecated)]
pub fn stats() -> Option<Stats> {
    core_metrics().map(Stats::from)
}
