//! Values sent back to the core that owns them, to be dropped there: the remote free list
//! (as mimalloc's and snmalloc's per-thread remote frees: the foreign thread pushes onto the
//! owner's list and wakes it; the owner drains the list on its next turn).
//!
//! Every value of this runtime that holds something of a core is `!Send`, so it is dropped
//! on its core's thread, where `driver::EnterHome` releases it even outside the loop. A
//! wrapper that makes such a value `Send` (hyper's upgrades need `Send` I/O:
//! `corering_net::hyper::UpgradableIo`) cannot run its destructor on another thread; it
//! hands the value to [`CoreOwner::drop_on_core`] instead.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::remote::Shared;
use crate::context::{self, CoreLife};

/// A value bound to a core, on its way back to it to be dropped there.
struct Orphan(#[allow(dead_code)] Box<dyn Any>);

// SAFETY: an `Orphan` is made only by `CoreOwner::drop_on_core`, whose caller guarantees that
// no thread but the owner core's touches the value's `!Send` parts (the value shares them
// with nothing on other threads); it is moved to the owner's thread and dropped there
// (`Orphans::drain`, `Orphans::close`), or, once the owner has ended, where it is.
unsafe impl Send for Orphan {}

/// A core's remote free list; `None` once the core shuts down.
pub(crate) struct Orphans(Mutex<Option<Vec<Orphan>>>);

impl Default for Orphans {
    fn default() -> Self {
        Orphans(Mutex::new(Some(Vec::new())))
    }
}

impl Orphans {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<Orphan>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops what was sent back (the owning core, entered, on its turn).
    pub(crate) fn drain(&self) {
        let list = self.lock().as_mut().map(std::mem::take);
        drop(list);
    }

    /// Drops what was sent back and refuses more (the owning core, entered, as it shuts
    /// down, before its ops are cancelled and reaped).
    pub(crate) fn close(&self) {
        let list = self.lock().take();
        drop(list);
    }
}

/// The core a value was made on, reachable from any thread (`Send` and `Sync`): a value
/// bound to that core that a wrapper made `Send` is handed back to it to be dropped there.
#[derive(Clone)]
pub struct CoreOwner {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CoreOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreOwner")
            .field("core", &self.shared.index)
            .finish()
    }
}

impl CoreOwner {
    /// The core running on this thread; `None` outside a runtime.
    pub fn current() -> Option<CoreOwner> {
        crate::executor::with_core(|c| CoreOwner {
            shared: c.shared.clone(),
        })
    }

    /// Whether this thread runs the core (inside its `block_on` or its loop).
    pub fn is_current(&self) -> bool {
        context::current_core_id() == Some(self.shared.id)
    }

    /// Drops `value` on the core: here if this thread runs it, else on the core's next turn
    /// (it is woken for it). Once the core has ended (its ops all reaped), `value` is
    /// dropped here; while it shuts down, this waits for that end.
    ///
    /// # Safety
    /// `value` was made on the core's thread and shares its `!Send` parts (`Rc`s, cells)
    /// with nothing that another thread uses: only its drop touches them, and only on the
    /// core's thread (or, after the core ended, on this one).
    pub unsafe fn drop_on_core<T: 'static>(&self, value: T) {
        if self.is_current() {
            return drop(value);
        }
        let orphan = Orphan(Box::new(value));
        let mut guard = self.shared.orphans.lock();
        if let Some(list) = guard.as_mut() {
            list.push(orphan);
            drop(guard);
            self.shared.notify();
            return;
        }
        drop(guard);
        // Shutting down: it reaps its ops, then ends; the value goes after that.
        while context::core_life(self.shared.id) == CoreLife::Live {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(orphan);
    }
}
