//! `JoinHandle` and `JoinError`: awaiting a task's output, aborting it.
//!
//! # Invariant
//! The output is written by the task's core before it sets `COMPLETE` (release) and read
//! by the handle only after it sees `COMPLETE` (acquire). Exactly one side drops an output
//! nobody took: the handle's `fetch_and(!JOIN_INTEREST)` and the task's
//! `fetch_or(COMPLETE)` are ordered, and whichever comes second sees the other's bit.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use super::task::RawTask;
use super::Id;

/// Why a task gave no output: it was aborted (or its runtime shut down), or it panicked
/// (tokio's `JoinError`).
///
/// # Examples
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let task = runtime::spawn_local(async { panic!("boom") });
///     let id = task.id();
///     let err = task.await.unwrap_err();
///     assert!(err.is_panic() && !err.is_cancelled());
///     assert_eq!(err.id(), id);
///     let payload = err.into_panic();
///     assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinError {
    id: Id,
    repr: Repr,
}

enum Repr {
    Cancelled,
    // A Mutex makes the error `Sync` (so it converts into `io::Error`) without requiring the
    // payload to be.
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

impl JoinError {
    pub(crate) fn cancelled(id: Id) -> JoinError {
        JoinError {
            id,
            repr: Repr::Cancelled,
        }
    }

    pub(crate) fn panic(id: Id, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            id,
            repr: Repr::Panic(Mutex::new(payload)),
        }
    }

    /// The id of the task that gave no output.
    pub fn id(&self) -> Id {
        self.id
    }

    /// Whether the task was aborted or dropped by a shutdown.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic's payload, for `std::panic::resume_unwind`; `Err(self)` if it was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(p.into_inner().unwrap_or_else(|e| e.into_inner())),
            Repr::Cancelled => Err(self),
        }
    }

    /// The panic's payload, for `std::panic::resume_unwind` (check
    /// [`is_panic`](JoinError::is_panic) first, or use
    /// [`try_into_panic`](JoinError::try_into_panic)).
    ///
    /// # Panics
    /// If the task was cancelled rather than panicked, as tokio's does.
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .unwrap_or_else(|e| panic!("JoinError::into_panic on a task that did not panic: {e}"))
    }

    fn panic_message(&self) -> Option<String> {
        let Repr::Panic(p) = &self.repr else {
            return None;
        };
        let p = p.lock().unwrap_or_else(|e| e.into_inner());
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panic(_) => match self.panic_message() {
                Some(m) => write!(f, "task {} panicked: {m}", self.id),
                None => write!(f, "task {} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({})", self.id),
            Repr::Panic(_) => write!(
                f,
                "JoinError::Panic({}, {:?})",
                self.id,
                self.panic_message()
            ),
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for io::Error {
    fn from(e: JoinError) -> io::Error {
        io::Error::other(e)
    }
}

/// An owned permission to await a spawned task's output; dropping it detaches the task.
///
/// Awaiting gives `Ok(output)`, or a [`JoinError`] if the task panicked or was aborted.
pub struct JoinHandle<T> {
    raw: RawTask,
    _output: PhantomData<T>,
}

// SAFETY: the handle touches the task's header atomics and, after `COMPLETE`, its output;
// moving it to another thread moves the output there, so `T: Send` is required.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reaches `abort` and `is_finished`, which touch atomics.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    pub(crate) fn new(raw: RawTask) -> Self {
        JoinHandle {
            raw,
            _output: PhantomData,
        }
    }

    /// Asks the task to stop: its future is dropped before its next poll, and awaiting the
    /// handle gives a cancelled `JoinError`. A task that already finished keeps its output.
    pub fn abort(&self) {
        self.raw.abort();
    }

    /// Whether the task has finished (output ready, panicked, or aborted).
    pub fn is_finished(&self) -> bool {
        self.raw.is_complete()
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.raw.id()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if !self.raw.poll_join(cx) {
            return Poll::Pending;
        }
        let mut out: Option<Result<T, JoinError>> = None;
        // SAFETY: `T` is the task's output type (the handle was made by `spawn` for it), and
        // `poll_join` saw COMPLETE, so the output is written and ours to take.
        unsafe {
            self.raw
                .take_output((&mut out as *mut Option<Result<T, JoinError>>).cast())
        };
        Poll::Ready(out.expect("JoinHandle polled after it returned the output"))
    }
}

impl<T> JoinHandle<T> {
    /// A handle that can abort the task (and ask whether it finished) but not take its
    /// output; it may go to another thread.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            raw: self.raw.clone_ref(),
        }
    }
}

/// Aborts a task without owning its output: from [`JoinHandle::abort_handle`] or
/// [`JoinSet::spawn`](crate::task::JoinSet::spawn). Dropping it does nothing to the task.
pub struct AbortHandle {
    raw: RawTask,
}

// SAFETY: `&AbortHandle` only reaches `abort` and `is_finished`, which touch the task
// header's atomics (and schedule it through its core's remote queue, a mutex): never the
// task's future or output.
unsafe impl Sync for AbortHandle {}

impl AbortHandle {
    /// Asks the task to stop, as [`JoinHandle::abort`] does.
    pub fn abort(&self) {
        self.raw.abort();
    }

    /// Whether the task has finished (output ready, panicked, or aborted).
    pub fn is_finished(&self) -> bool {
        self.raw.is_complete()
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.raw.id()
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        self.raw.drop_join();
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
