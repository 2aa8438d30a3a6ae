//! Async synchronization for tasks on any core and for std threads: tokio's `sync` module,
//! re-exported, plus core-local channels in [`local`].
//!
//! Everything at this level is [`tokio::sync`] (the `tokio` crate with only its `sync`
//! feature: no tokio runtime is started or needed). Its primitives depend on nothing but
//! wakers, and this runtime's wakers may be woken from any core or thread (a wake from
//! another thread goes through the task's core's remote queue), so they work across cores
//! and between tasks and std threads. The names and signatures are tokio's, so a port from
//! tokio is a rename of `tokio::sync` to `runtime::sync`: [`Mutex`], [`RwLock`],
//! [`Semaphore`], [`Notify`], [`Barrier`], [`OnceCell`], [`oneshot`], [`mpsc`] (bounded
//! and unbounded), [`watch`], [`broadcast`]. Each item's own documentation is tokio's.
//!
//! Why tokio's and not async-lock, async-channel and event-listener (or `futures`): it is
//! the only one with the whole set under the names a tokio program already uses, it brings
//! no crate besides itself (its one dependency, `pin-project-lite`, the runtime already
//! has), and on this
//! runtime it costs the same order of time. Measured on one core of this runtime (release
//! build, 2 million operations, two rounds): an uncontended `Mutex` lock and unlock 40 ns
//! (async-lock 32-39 ns); one message sent and received through a bounded `mpsc` 71-87 ns
//! (async-channel 79-100 ns), unbounded 43 ns (async-channel 94-101 ns); a round trip
//! between two cores is some 20-28 µs for all of them on a 2-CPU VM, the cores' wake-up.
//! `futures` is quicker for the channel and the lock but has none of the rest. The
//! `bench sync` subcommand of `bench` prints the channel figures.
//!
//! # Across cores and threads
//!
//! ```
//! use std::sync::Arc;
//! use runtime::sync::Mutex;
//!
//! let rt = runtime::Builder::new().cores(2).build()?;
//! let total = Arc::new(Mutex::new(0u64));
//! let t = total.clone();
//! let thread = std::thread::spawn(move || *t.blocking_lock() += 1); // a std thread
//! rt.block_on(async {
//!     let t = total.clone();
//!     runtime::spawn_on(1, async move { *t.lock().await += 1 }).await.unwrap();
//!     *total.lock().await += 1;
//! });
//! thread.join().unwrap();
//! assert_eq!(*total.blocking_lock(), 3);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The `blocking_*` methods (`Mutex::blocking_lock`, `RwLock::blocking_read`,
//! `mpsc::Sender::blocking_send`, `mpsc::Receiver::blocking_recv`,
//! `oneshot::Receiver::blocking_recv`, ...) park the calling thread: call them from std
//! threads (or inside [`spawn_blocking`](crate::spawn_blocking)) only. tokio's check that panics when they are called inside an async context
//! knows only tokio's runtime, so here, on a core's thread, they would not panic but block
//! the whole core (and deadlock if the value must come from that core).
//!
//! # tokio's cooperative budget
//!
//! tokio's primitives consume tokio's task budget (`tokio::task::coop`), which only a tokio
//! runtime sets, around each of its task polls. On this runtime it stays unconstrained, so
//! they never return `Pending` to force a yield (tested: ten thousand ready messages are
//! received in one poll). The other side of that: a loop that keeps finding values ready
//! never yields by itself (this runtime's own budget counts ring ops); call
//! [`yield_now`](crate::yield_now) now and then in such a loop so the core's other tasks
//! run.
//!
//! # Outcomes worth knowing
//!
//! - [`Mutex`] and [`RwLock`] are not poisoned: a task that panics while holding a guard
//!   drops it while unwinding, and the next lock succeeds, with the data as the panicking
//!   task left it (check your invariants if a panic can leave them half-updated).
//! - [`Semaphore::acquire_many`] for more permits than the semaphore will ever hold waits
//!   forever; it returns `Err(AcquireError)` only once the semaphore is
//!   [closed](Semaphore::close). Where `n` may be too large, use
//!   [`Semaphore::try_acquire_many`] (`Err(TryAcquireError::NoPermits)`) or bound the wait
//!   with [`timeout`](crate::time::timeout).
//! - A send on a closed channel gives the value back in its error (`SendError(value)`).
//! - tokio panics on a few bad arguments, and so do these re-exports: `mpsc::channel(0)`,
//!   `broadcast::channel(0)`, `Semaphore::new(n)` or `add_permits` beyond
//!   [`Semaphore::MAX_PERMITS`]. Check such values before passing them. (The local
//!   `mpsc::channel(0)` takes 0 as 1 instead.)
//!
//! # Core-local versions
//!
//! [`local::mpsc`], [`local::oneshot`] and [`local::Notify`] have the same API for tasks of
//! one core: `!Send`, no atomics, no lock. Use them for conversations that stay on a core.

pub mod local;

pub use tokio::sync::*;
