//! The blocking pool: threads for work that would stall a core (a blocking system call the
//! kernel has no io_uring op for, `getaddrinfo`, CPU-heavy code), behind
//! [`spawn_blocking`](crate::spawn_blocking).
//!
//! One pool per runtime, shared by its cores. Threads start on demand, up to
//! `Builder::max_blocking_threads` (512 by default), and exit after
//! `Builder::thread_keep_alive` (10 s by default) without work. Jobs run in the order they
//! were queued. A job's result reaches the task awaiting it through a channel whose waker is
//! that task's: the finished job wakes its core through the runtime's remote-wake path (an
//! eventfd write, since pool threads have no ring), never by polling.
//!
//! When the runtime is dropped the pool closes: jobs still queued are dropped unrun (their
//! handles report cancellation), and jobs already running finish on their threads, which
//! then exit; the drop does not wait for them.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// A job for a pool thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool's default thread cap (tokio's).
pub(crate) const DEFAULT_MAX_THREADS: usize = 512;
/// How long an idle pool thread waits for work before it exits (tokio's default).
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A runtime's blocking pool (cheap to clone: shared state).
#[derive(Clone)]
pub(crate) struct BlockingPool {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    work: Condvar,
    max_threads: usize,
    keep_alive: Duration,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads waiting for work.
    idle: usize,
    /// Jobs handed to idle threads by `notify_one` and not yet picked up: so a burst of
    /// spawns wakes one idle thread per job instead of all of them for the first.
    wakeups: usize,
    /// Jobs queued since the pool started (the metrics' blocking-pool jobs).
    jobs: u64,
    closed: bool,
}

impl BlockingPool {
    /// A pool of at most `max_threads` threads (at least one), idle ones exiting after
    /// `keep_alive`.
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> BlockingPool {
        BlockingPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                max_threads: max_threads.max(1),
                keep_alive,
            }),
        }
    }

    /// Queues `job`, starting a thread for it if none is idle and the cap allows.
    ///
    /// # Errors
    /// The pool is closed (its runtime was dropped): the job is given back unrun.
    pub(crate) fn spawn(&self, job: Job) -> Result<(), Job> {
        let mut state = self.lock();
        if state.closed {
            return Err(job);
        }
        state.queue.push_back(job);
        state.jobs += 1;
        if state.idle > state.wakeups {
            state.wakeups += 1;
            drop(state);
            self.inner.work.notify_one();
            return Ok(());
        }
        if state.threads >= self.inner.max_threads {
            // Every thread is busy: the job waits its turn.
            return Ok(());
        }
        state.threads += 1;
        drop(state);
        let inner = self.inner.clone();
        let started = thread::Builder::new()
            .name("runtime-blocking".into())
            .spawn(move || inner.run());
        if let Err(e) = started {
            // The job stays queued for a thread already running, if any; with none, it is
            // dropped (its handle reports cancellation) rather than waiting forever.
            let mut state = self.lock();
            state.threads -= 1;
            if state.threads == 0 {
                state.queue.clear();
            }
            drop(state);
            report_spawn_failure(&e);
        }
        Ok(())
    }

    /// Threads alive, threads idle, jobs waiting for a thread, jobs queued since the start.
    pub(crate) fn counts(&self) -> (usize, usize, usize, u64) {
        let state = self.lock();
        (state.threads, state.idle, state.queue.len(), state.jobs)
    }

    /// Closes the pool: queued jobs are dropped unrun; idle threads exit now, busy ones
    /// after their job.
    pub(crate) fn close(&self) {
        let dropped = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.queue)
        };
        // Outside the lock: a job's drop may run user code.
        drop(dropped);
        self.inner.work.notify_all();
    }

    /// Whether the pool was closed (its runtime is being dropped).
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A job never runs under the lock, so a poisoned lock only means a panic between
        // two plain field updates: the state is still consistent.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    /// A pool thread: runs jobs until the pool closes or it idles past the keep-alive.
    fn run(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(job) = state.queue.pop_front() {
                drop(state);
                // A panicking job is the job's business: `spawn_blocking` catches it and
                // hands it to the job's handle.
                job();
                state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            if state.closed {
                break;
            }
            state.idle += 1;
            let (next, timeout) = self
                .work
                .wait_timeout(state, self.keep_alive)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            state.idle -= 1;
            state.wakeups = state.wakeups.saturating_sub(1);
            if timeout.timed_out() && state.queue.is_empty() {
                break;
            }
        }
        state.threads -= 1;
    }
}

#[cold]
fn report_spawn_failure(e: &io::Error) {
    crate::trace::rt_warn!("could not start a blocking-pool thread: {e}");
}

impl std::fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("BlockingPool")
            .field("threads", &state.threads)
            .field("idle", &state.idle)
            .field("queued", &state.queue.len())
            .field("max_threads", &self.inner.max_threads)
            .finish()
    }
}
