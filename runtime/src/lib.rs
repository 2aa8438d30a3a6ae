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
//!         runtime::nop().await?;
//!         Ok::<_, std::io::Error>(21)
//!     });
//!     task.await.unwrap()
//! })?;
//! assert_eq!(n * 2, 42);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`sync`] has the async locks and channels, usable across cores and from std threads
//! (tokio's `sync`, re-exported), and core-local channels without atomics
//! ([`sync::local`]).
//!
//! The op API ([`driver::Op`], [`driver::Completable`]) is the one seam other crates build
//! their operations on; ARCHITECTURE.md in the repository describes the loop, the op
//! lifecycle and its safety rules, and thread-per-core.

#[cfg(not(target_os = "linux"))]
compile_error!("this runtime is built on io_uring and runs on Linux only");

mod blocking;
pub mod buf;
mod builder;
mod context;
mod cores;
pub mod driver;
pub mod error;
mod executor;
pub mod fd;
mod handle;
pub mod io;
mod loom;
mod macros;
pub mod process;
mod runtime;
pub mod signal;
mod stats;
pub mod sync;
pub mod time;

pub use driver::ops::{close, nop, poll_add, poll_multi, read, splice, write};

pub use builder::Builder;
pub use driver::{Features, RingFlags};
pub use executor::{
    core_count, current_core, spawn, spawn_blocking, spawn_local, spawn_on, spawn_on_local,
    yield_now, JoinError, JoinHandle,
};
/// futures, for [`impl_async_io!`]'s expansion.
#[doc(hidden)]
pub use futures as __futures;
pub use handle::{Handle, TryCurrentError};
/// The io-uring crate, for [`fd_sqe!`]'s expansion.
#[doc(hidden)]
pub use io_uring as __io_uring;
pub use macros::{main, test};
pub use runtime::Runtime;
pub use stats::Stats;
pub use time::{sleep, timeout};
/// tokio, for [`impl_async_io!`]'s expansion (its I/O traits need no tokio feature).
#[doc(hidden)]
pub use tokio as __tokio;

/// Tasks: spawning, joining, aborting (tokio's `tokio::task` names).
pub mod task {
    pub use crate::executor::{
        spawn, spawn_blocking, spawn_local, spawn_on, spawn_on_local, yield_now, AbortHandle,
        JoinError, JoinHandle, JoinSet,
    };
}

/// The kernel features the current core's ring was granted; `None` outside a runtime.
///
/// Cheap (a copy of a value the core keeps), so code choosing between a fast path and its
/// fallback (say, multishot receives from a buffer ring or plain reads) may call it per
/// socket. Cores of one runtime are built alike, but each probes its own ring.
pub fn features() -> Option<Features> {
    context::current_features()
}

/// The current core's counters; `None` outside a runtime.
pub fn stats() -> Option<Stats> {
    executor::with_current_core(runtime::core_stats)
}
