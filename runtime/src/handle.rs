//! [`Handle`]: a runtime seen from anywhere, including threads that run no core.
//!
//! A handle holds the runtime's core set (its cores' remote queues and its blocking pool),
//! not the runtime: it does not keep the runtime alive. Used after the runtime is dropped,
//! every spawn gives a handle that resolves at once to a cancelled [`JoinError`], and
//! [`Handle::block_on`] panics saying so: nothing waits forever.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::executor::CoreSet;
use crate::executor::{self, Id, JoinError, JoinHandle, RawTask};

/// A handle to a runtime: spawn onto it and block on it from any thread (`Send + Sync +
/// Clone`). From [`Handle::current`] inside the runtime, or [`Runtime::handle`].
///
/// # Examples
///
/// ```
/// let rt = runtime::Builder::new().cores(2).build().unwrap();
/// let handle = rt.handle();
/// let worker = std::thread::spawn(move || {
///     // A plain thread: no core runs here, but the runtime is reachable.
///     let task = handle.spawn(async { 6 * 7 });
///     handle.block_on(async move { task.await.unwrap() })
/// });
/// // The runtime runs while this thread drives it (core 0) and on its worker (core 1).
/// let answer = rt.block_on(async {
///     loop {
///         if worker.is_finished() {
///             break worker.join().unwrap();
///         }
///         runtime::time::sleep(std::time::Duration::from_millis(1)).await;
///     }
/// });
/// assert_eq!(answer, 42);
/// ```
///
/// [`Runtime::handle`]: crate::Runtime::handle
#[derive(Clone)]
pub struct Handle {
    set: Arc<CoreSet>,
}

/// There is no runtime on this thread ([`Handle::try_current`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryCurrentError(());

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this thread runs no core of a runtime")
    }
}

impl std::error::Error for TryCurrentError {}

impl Handle {
    pub(crate) fn new(set: Arc<CoreSet>) -> Handle {
        Handle { set }
    }

    /// The handle of the runtime whose core runs on this thread.
    ///
    /// # Panics
    /// On a thread that runs no core (use [`Handle::try_current`] there).
    pub fn current() -> Handle {
        Handle::try_current().unwrap_or_else(|e| panic!("Handle::current(): {e}"))
    }

    /// The handle of the runtime whose core runs on this thread, if any.
    ///
    /// # Errors
    /// On a thread that runs no core.
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        executor::with_core(|c| Handle::new(c.set.clone())).ok_or(TryCurrentError(()))
    }

    /// How many cores the runtime has.
    pub fn cores(&self) -> usize {
        self.set.len()
    }

    /// Every core's metrics, readable from any thread, also after the runtime is dropped
    /// ([`RuntimeMetrics`](crate::RuntimeMetrics)).
    pub fn metrics(&self) -> crate::RuntimeMetrics {
        crate::RuntimeMetrics::new(self.set.clone())
    }

    /// Asks for the poll-time and schedule-delay histograms on or off. They are chosen when
    /// the runtime is built ([`Builder::metrics_histograms`](crate::Builder::metrics_histograms)):
    /// asking for what the runtime already does is `Ok`, anything else an `InvalidInput`
    /// error that says so.
    ///
    /// ```
    /// let rt = runtime::Runtime::new()?;
    /// let err = rt.handle().set_metrics_histograms(true).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// assert!(rt.handle().set_metrics_histograms(false).is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_metrics_histograms(&self, on: bool) -> std::io::Result<()> {
        if on == self.set.histograms {
            return Ok(());
        }
        let (now, want) = if on { ("off", "true") } else { ("on", "false") };
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "the metrics histograms are {now} and cannot be switched on a running \
                 runtime: build it with Builder::metrics_histograms({want})"
            ),
        ))
    }

    /// Spawns a `Send` future on one of the runtime's cores: from one of its cores' threads
    /// as [`spawn`](crate::spawn) places it (on that core unless another is idle); from
    /// any other thread dealt out round-robin.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_placed(&self.set, future)
    }

    /// Spawns a `Send` future on core `core`.
    ///
    /// # Panics
    /// If the runtime has no core `core`.
    #[track_caller]
    pub fn spawn_on<F>(&self, core: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on_set(&self.set, core, future)
    }

    /// Runs `f` on the runtime's blocking pool; as [`spawn_blocking`](crate::spawn_blocking).
    /// The task that awaits the result runs on one of the runtime's cores.
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let job = executor::blocking_job(&self.set.pool, f);
        self.spawn(job)
    }

    /// Runs `future` on the runtime (spawned as [`Handle::spawn`] does) and blocks this
    /// thread until it completes.
    ///
    /// For threads outside the runtime (a std thread, a thread of another library); the
    /// future must be `Send` because it runs on one of the runtime's cores, where its ops
    /// are submitted.
    ///
    /// # Panics
    /// On a thread that runs a core (blocking it would stall that core: `.await` instead);
    /// if the future panics (the panic is resumed here); if the runtime was dropped (or is
    /// dropped before the future completes).
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if executor::with_core(|_| ()).is_some() {
            panic!(
                "Handle::block_on called on a thread that runs a core: blocking it would \
                 stall the core (await the future instead)"
            );
        }
        match park_on(self.spawn(future)) {
            Ok(v) => v,
            Err(e) => block_on_failed(e),
        }
    }
}

/// Spawns a `Send` future on the runtime whose cores are `set`: as [`executor::spawn`]
/// places it on one of its cores' threads, round-robin from any other thread
/// ([`Handle::spawn`], [`Runtime::spawn`](crate::Runtime::spawn)).
#[track_caller]
pub(crate) fn spawn_placed<F>(set: &Arc<CoreSet>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if executor::with_core(|c| Arc::ptr_eq(&c.set, set)) == Some(true) {
        return executor::spawn(future);
    }
    spawn_on_set(set, set.place(), future)
}

/// Spawns a `Send` future on core `core` of the runtime whose cores are `set`, from any
/// thread: [`Handle::spawn_on`], and round-robin placement.
///
/// # Panics
/// If the runtime has no core `core`.
#[track_caller]
pub(crate) fn spawn_on_set<F>(set: &Arc<CoreSet>, core: usize, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // On one of this runtime's own cores, the executor's path (a local spawn when the
    // target is this core).
    if executor::with_core(|c| Arc::ptr_eq(&c.set, set)) == Some(true) {
        return executor::spawn_on(core, future);
    }
    let Some(target) = set.get(core) else {
        panic!("spawn_on({core}): this runtime has {} core(s)", set.len())
    };
    let id = executor::with_core(|c| c.next_task_id()).unwrap_or_else(Id::next);
    let loc = std::panic::Location::caller();
    let (run, list, join) = RawTask::new(future, target.clone(), false, id, loc);
    // A core that is gone cancels the task here: the handle resolves at once.
    target.push_spawn(run, list);
    JoinHandle::new(join)
}

/// Polls `future` on this thread, parking it between wakes (a thread that runs no core).
fn park_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[cold]
fn block_on_failed(e: JoinError) -> ! {
    match e.try_into_panic() {
        Ok(payload) => std::panic::resume_unwind(payload),
        Err(e) => panic!("Handle::block_on: the runtime was shut down ({e})"),
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("cores", &self.set.len())
            .field("blocking_pool", &self.set.pool)
            .finish()
    }
}
