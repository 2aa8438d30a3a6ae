//! The spawn API: `spawn_local` and `spawn` on the current core, `spawn_on` and
//! `spawn_on_local` on another core of the runtime (through its remote queue), and the
//! runtime's shape as a task sees it (`cores`, `current_core`, `yield_now`).

use std::future::Future;
use std::panic::Location;
use std::task::{Context, Poll};

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use futures::channel::oneshot;

use super::task::{Loc, RawTask};
use super::{with_core, Core, JoinHandle};
use crate::blocking::{BlockingPool, Job};

/// Spawns a future, which need not be `Send`, on the current core.
///
/// # Panics
/// Outside a runtime.
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// let v = rt.block_on(async {
///     let rc = std::rc::Rc::new(5); // not Send
///     runtime::spawn_local(async move { *rc + 1 }).await.unwrap()
/// });
/// assert_eq!(v, 6);
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let loc = Location::caller();
    with_core(|core| core.spawn(future, loc))
        .unwrap_or_else(|| panic!("spawn_local called outside of a runtime"))
}

/// Spawns a `Send` future, on the current core unless another core is idle.
///
/// Placement ([`Placement::Local`], the default): the task is queued on the current core,
/// the newest in a slot that runs next (so a child that its parent awaits runs at once,
/// where its parent runs), older ones in a queue that an idle core of the same runtime may
/// take from before it sleeps. A task moves only before its first poll; once polled it
/// stays on its core for its whole life. With
/// [`Builder::spawn_placement(Placement::RoundRobin)`](crate::Builder::spawn_placement),
/// tasks are dealt out over the cores instead. [`spawn_local`] keeps a task on the current
/// core (and accepts futures that are not `Send`); [`spawn_on`] picks the core.
///
/// # Panics
/// Outside a runtime.
///
/// ```
/// let rt = runtime::Builder::new().cores(2).build().unwrap();
/// let core = rt.block_on(async {
///     // The child runs where its parent awaits it.
///     runtime::spawn(async { runtime::current_core() }).await.unwrap()
/// });
/// assert_eq!(core, Some(0));
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let loc = Location::caller();
    with_core(|core| {
        if core.balances {
            return core.spawn_stealable(future, loc);
        }
        let target = core.set.place();
        // SAFETY: the future is `Send`, so it may move to the target core's thread.
        unsafe { spawn_on_core(core, target, future, loc) }
    })
    .unwrap_or_else(|| panic!("spawn called outside of a runtime"))
}

/// Where [`spawn`] puts a `Send` task on a runtime of several cores
/// ([`Builder::spawn_placement`](crate::Builder::spawn_placement)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Placement {
    /// On the spawning core; an idle core may take it before its first poll (the
    /// default). Keeps a task near the data its parent just touched, and spreads work only
    /// when another core has nothing to do: what tokio's multi-thread scheduler does.
    #[default]
    Local,
    /// Dealt out over the cores in turn, starting from core 0, whichever core spawns;
    /// never moved afterwards. For many long, independent tasks spawned from one place
    /// when every core is known to be free (no stealing happens under this placement).
    RoundRobin,
}

/// Runs the blocking function `f` on the runtime's blocking pool, and returns a handle
/// that resolves to its result; a panic in `f` comes back as a [`JoinError`].
///
/// For work that would stall the core: a system call the kernel has no io_uring op for,
/// a blocking library call (`getaddrinfo`), heavy computation. The pool starts threads on
/// demand, up to [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads),
/// and lets idle ones exit after
/// [`Builder::thread_keep_alive`](crate::Builder::thread_keep_alive). The job's result wakes
/// the awaiting task through the runtime's remote-wake path: nothing polls.
///
/// Aborting the handle does not stop `f` once it runs (a thread cannot be interrupted);
/// its result is then dropped. If the runtime is dropped first, queued jobs never run and
/// running ones finish detached.
///
/// # Panics
/// Outside a runtime.
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// let len = rt.block_on(async {
///     runtime::spawn_blocking(|| std::fs::read_dir("/").map(|d| d.count()))
///         .await
///         .unwrap()
/// });
/// assert!(len.unwrap() > 0);
/// ```
///
/// [`JoinError`]: crate::JoinError
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let loc = Location::caller();
    with_core(|core| core.spawn(blocking_job(&core.set.pool, f), loc))
        .unwrap_or_else(|| panic!("spawn_blocking called outside of a runtime"))
}

/// Queues `f` on `pool` and returns the future that awaits its result (the body of the
/// task `spawn_blocking` returns a handle to).
pub(crate) fn blocking_job<F, R>(
    pool: &BlockingPool,
    f: F,
) -> impl Future<Output = R> + Send + 'static
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (tx, rx) = oneshot::channel::<std::thread::Result<R>>();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    // A closed pool (the runtime is being dropped) gives the job back; dropping it drops
    // the sender, which the task below reads as "never ran".
    let refused = pool.spawn(job).err();
    drop(refused);
    let pool = pool.clone();
    async move {
        match rx.await {
            Ok(Ok(value)) => value,
            Ok(Err(payload)) => resume_unwind(payload),
            Err(oneshot::Canceled) if pool.is_closed() => {
                // The runtime is going away and drops this task with the rest: wait for it.
                std::future::pending().await
            }
            Err(oneshot::Canceled) => {
                panic!("the blocking pool could not start a thread for this job")
            }
        }
    }
}

/// Spawns a `Send` future on core `core` of the current runtime (see
/// [`Builder::cores`](crate::Builder::cores)); the handle may be awaited from any core.
///
/// # Panics
/// Outside a runtime, or if the runtime has no core `core`.
///
/// ```
/// let rt = runtime::Builder::new().cores(2).build().unwrap();
/// let on = rt.block_on(async {
///     runtime::spawn_on(1, async { runtime::current_core() }).await.unwrap()
/// });
/// assert_eq!(on, Some(1));
/// ```
#[track_caller]
pub fn spawn_on<F>(core: usize, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: the future is `Send`, so it may move to the target core's thread.
    unsafe { spawn_on_unchecked(core, future) }
}

/// Runs `make` on core `core` and spawns the future it returns there. The future need not
/// be `Send`, only the closure: this is how a core gets work that holds its own sockets.
///
/// # Panics
/// Outside a runtime, or if the runtime has no core `core`.
///
/// ```
/// use std::rc::Rc;
/// let rt = runtime::Builder::new().cores(2).build().unwrap();
/// let n = rt.block_on(async {
///     runtime::spawn_on_local(1, || async {
///         let local = Rc::new(20); // not Send: lives on core 1 only
///         runtime::yield_now().await;
///         *local + 1
///     })
///     .await
///     .unwrap()
/// });
/// assert_eq!(n, 21);
/// ```
#[track_caller]
pub fn spawn_on_local<M, F>(core: usize, make: M) -> JoinHandle<F::Output>
where
    M: FnOnce() -> F + Send + 'static,
    F: Future + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: until its first poll, on the target core, the task holds only `make`, which is
    // `Send`; the future it makes never leaves that core; the output is `Send`.
    unsafe { spawn_on_unchecked(core, Lazy::Make(Some(make))) }
}

/// A future made on its core by its first poll.
enum Lazy<M, F> {
    Make(Option<M>),
    Run(F),
}

impl<M, F> Future for Lazy<M, F>
where
    M: FnOnce() -> F,
    F: Future,
{
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future is never moved out of the pinned enum; `Make` holds no pinned
        // data, and once `Run` is set it is only polled in place.
        let this = unsafe { self.get_unchecked_mut() };
        if let Lazy::Make(make) = this {
            let make = make
                .take()
                .expect("Lazy polled after a panic in its constructor");
            *this = Lazy::Run(make());
        }
        match this {
            // SAFETY: pinned in place inside the task's heap cell (see above).
            Lazy::Run(fut) => unsafe { std::pin::Pin::new_unchecked(fut) }.poll(cx),
            Lazy::Make(_) => unreachable!("Lazy was just made"),
        }
    }
}

/// `spawn_on` without the `Send` bound.
///
/// # Safety
/// The future may be moved to core `core`'s thread (and dropped on this one if that core is
/// gone) before its first poll, and its output may be moved back; the caller guarantees
/// that is sound.
#[track_caller]
unsafe fn spawn_on_unchecked<F>(core: usize, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
{
    let loc = Location::caller();
    // SAFETY: forwarded from the caller.
    with_core(|c| unsafe { spawn_on_core(c, core, future, loc) })
        .unwrap_or_else(|| panic!("spawn_on called outside of a runtime"))
}

/// Spawns `future` on core `target` of `current`'s runtime, from `current`'s thread.
///
/// # Safety
/// As for [`spawn_on_unchecked`].
unsafe fn spawn_on_core<F>(
    current: &Core,
    target: usize,
    future: F,
    loc: Loc,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
{
    if current.shared.index == target {
        return current.spawn(future, loc);
    }
    let Some(shared) = current.set.get(target) else {
        panic!(
            "spawn_on({target}): this runtime has {} core(s)",
            current.set.len()
        )
    };
    let (run, list, join) =
        RawTask::new(future, shared.clone(), false, current.next_task_id(), loc);
    shared.push_spawn(run, list);
    JoinHandle::new(join)
}

/// How many cores the current runtime has, or `None` outside a runtime (as
/// [`Runtime::cores`](crate::Runtime::cores) and [`Handle::cores`](crate::Handle::cores)
/// say from outside).
///
/// ```
/// let rt = runtime::Builder::new().cores(2).build()?;
/// assert_eq!(runtime::cores(), None);
/// assert_eq!(rt.block_on(async { runtime::cores() }), Some(2));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn cores() -> Option<usize> {
    with_core(|c| c.set.len())
}

/// The index of the core this thread runs (0 for the thread that built the runtime), or
/// `None` outside a runtime.
pub fn current_core() -> Option<usize> {
    with_core(|c| c.shared.index)
}

/// Yields to the other ready tasks once.
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// rt.block_on(runtime::yield_now());
/// ```
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
