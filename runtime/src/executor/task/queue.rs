//! A core's local run queue.

use std::cell::Cell as StdCell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use super::raw::{Header, RawTask};

/// A core's local run queue: a FIFO list threaded through the queued tasks' headers
/// (`Header::next`), each entry owning one reference. Owner thread only.
///
/// A task is in it at most once: every push is of a task whose `queued` flag was just set
/// from clear (`push_local`, `RawTask::into_local`, a local spawn), and the flag is cleared
/// only by the poll that follows the entry's pop. So one link per task suffices, a push is
/// three stores and a pop two loads and two stores: no capacity to check, no index to wrap,
/// no borrow flag (nothing runs while a push or pop is half done).
pub(crate) struct LocalQueue {
    head: StdCell<*const Header>,
    tail: StdCell<*const Header>,
    /// Entries queued (for the metrics' local queue depth).
    len: StdCell<usize>,
}

impl LocalQueue {
    pub(crate) fn new() -> Self {
        LocalQueue {
            head: StdCell::new(std::ptr::null()),
            tail: StdCell::new(std::ptr::null()),
            len: StdCell::new(0),
        }
    }

    /// Appends `task`, whose `queued` flag the caller just set; the entry keeps its
    /// reference.
    #[inline(always)]
    pub(crate) fn push(&self, task: RawTask) {
        let task = ManuallyDrop::new(task);
        let p = task.ptr.as_ptr();
        // SAFETY: the entry's reference keeps the header alive.
        unsafe { &*p }
            .next
            .store(std::ptr::null_mut(), Ordering::Relaxed);
        let tail = self.tail.get();
        if tail.is_null() {
            self.head.set(p);
        } else {
            // SAFETY: the tail is an entry of this queue, alive by its reference.
            unsafe { &*tail }.next.store(p, Ordering::Relaxed);
        }
        self.tail.set(p);
        self.len.set(self.len.get() + 1);
    }

    /// Takes the first entry, with its reference.
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<RawTask> {
        let head = NonNull::new(self.head.get().cast_mut())?;
        // SAFETY: the head is an entry of this queue, alive by its reference.
        let next = unsafe { head.as_ref() }.next.load(Ordering::Relaxed);
        self.head.set(next);
        if next.is_null() {
            self.tail.set(std::ptr::null());
        }
        self.len.set(self.len.get() - 1);
        Some(RawTask { ptr: head })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.get().is_null()
    }

    /// How many entries are queued.
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }
}

impl Drop for LocalQueue {
    fn drop(&mut self) {
        // Dropping the entries gives up their references.
        while self.pop().is_some() {}
    }
}
