//! [`JoinSet`]: a set of tasks whose outputs are taken in the order they finish.

use std::fmt;
use std::future::Future;

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;

use super::join::{AbortHandle, JoinError, JoinHandle};

/// A collection of spawned tasks, awaited in the order they complete (tokio's
/// `JoinSet`). Dropping the set aborts every task still in it.
///
/// # Examples
///
/// ```
/// use runtime::task::JoinSet;
///
/// let rt = runtime::Runtime::new().unwrap();
/// let sum = rt.block_on(async {
///     let mut set = JoinSet::new();
///     for i in 1..=4u64 {
///         set.spawn(async move { i * 10 });
///     }
///     let mut sum = 0;
///     while let Some(res) = set.join_next().await {
///         sum += res.unwrap();
///     }
///     sum
/// });
/// assert_eq!(sum, 100);
/// ```
pub struct JoinSet<T> {
    tasks: FuturesUnordered<JoinHandle<T>>,
}

impl<T: 'static> JoinSet<T> {
    /// An empty set.
    pub fn new() -> JoinSet<T> {
        JoinSet {
            tasks: FuturesUnordered::new(),
        }
    }

    /// How many tasks are in the set (finished ones included until they are joined).
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Adds a task already spawned (its handle).
    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        self.tasks.push(handle);
        abort
    }

    /// Spawns a `Send` future as [`spawn`](crate::spawn) does (placed over the runtime's
    /// cores) and adds it to the set.
    ///
    /// # Panics
    /// Outside a runtime.
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(crate::spawn(future))
    }

    /// Spawns a future on the current core, as [`spawn_local`](crate::spawn_local) does,
    /// and adds it to the set.
    ///
    /// # Panics
    /// Outside a runtime.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::spawn_local(future))
    }

    /// Spawns a `Send` future on core `core`, as [`spawn_on`](crate::spawn_on) does, and
    /// adds it to the set.
    ///
    /// # Panics
    /// Outside a runtime, or if the runtime has no core `core`.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, core: usize, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(crate::spawn_on(core, future))
    }

    /// Runs `f` on the blocking pool, as [`spawn_blocking`](crate::spawn_blocking) does,
    /// and adds it to the set.
    ///
    /// # Panics
    /// Outside a runtime.
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        self.insert(crate::spawn_blocking(f))
    }

    /// The output of the next task to finish, removing it from the set; `None` when the
    /// set is empty. A task that panicked or was aborted gives its [`JoinError`].
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing from the set.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.tasks.next().await
    }

    /// The output of a task that has finished already, removing it from the set; `None` if
    /// none has (or the set is empty). Never waits.
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.tasks.next().now_or_never().flatten()
    }

    /// Aborts every task in the set; they stay in it, and `join_next` gives their results
    /// (cancelled, or their output if they finished first).
    pub fn abort_all(&mut self) {
        for task in self.tasks.iter() {
            task.abort();
        }
    }

    /// Removes every task from the set without aborting them: they run on, detached.
    pub fn detach_all(&mut self) {
        self.tasks.clear();
    }

    /// Aborts every task and waits until all of them have ended; the set is then empty.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }
}

impl<T: 'static> Default for JoinSet<T> {
    fn default() -> Self {
        JoinSet::new()
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        for task in self.tasks.iter() {
            task.abort();
        }
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet")
            .field("len", &self.tasks.len())
            .finish()
    }
}
