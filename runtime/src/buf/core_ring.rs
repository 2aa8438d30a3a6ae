//! The per-core receive ring: the provided buffers every connection of a core reads into,
//! made on first use and grown when receives find it empty.

use std::cell::RefCell;

use super::BufRing;
use crate::context::{self, CoreId};

/// This thread's core ring: made on first use by the core it belongs to.
enum CoreRing {
    Ready(CoreId, BufRing),
    /// Registering it failed on this core (an old kernel, locked memory): do not retry.
    Failed(CoreId),
}

thread_local! {
    static CORE_RING: RefCell<Option<CoreRing>> = const { RefCell::new(None) };
}

/// Buffers a core's receive ring starts with (fewer if the configured size is smaller).
const CORE_RING_START: u16 = 16;

/// The current core's shared receive ring, made (mapped and registered) on first use: the
/// provided buffers every connection on this core reads into, so an idle connection owns no
/// receive buffer. Its buffer length comes from
/// [`Builder::recv_buffers`](crate::Builder::recv_buffers), and it is
/// [incremental](BufRing::incremental) when
/// [`Features::recv_incremental`](crate::Features::recv_incremental) is granted (ops that
/// pick from it must then register it with
/// [`MultiOp::with_buf_ring`](crate::driver::MultiOp::with_buf_ring)); it starts with 16 buffers and
/// doubles each time a receive finds it empty ([`grow_core_ring`]), up to the configured
/// number: sized to the load, so a core with little traffic touches few pages.
///
/// `None` outside a runtime, when the runtime was built with
/// [`Builder::recv_multishot(false)`](crate::Builder::recv_multishot) or the kernel has no
/// buffer rings ([`Features::recv_multishot`](crate::Features::recv_multishot)), or when
/// this core could not register one (then callers fall back to a buffer of their own per
/// read); the first failure is not retried.
pub fn core_ring() -> Option<BufRing> {
    let core = context::current_core_id()?;
    let features = context::current_features()?;
    if !features.recv_multishot {
        return None;
    }
    CORE_RING.with(|slot| {
        let mut slot = slot.borrow_mut();
        match &*slot {
            Some(CoreRing::Ready(id, ring)) if *id == core => return Some(ring.clone()),
            Some(CoreRing::Failed(id)) if *id == core => return None,
            _ => {}
        }
        let (max, len) = (features.recv_ring_entries, features.recv_ring_buf_len);
        let (made, ring) =
            match BufRing::build(max.min(CORE_RING_START), len, features.recv_incremental) {
                Ok(ring) => (CoreRing::Ready(core, ring.clone()), Some(ring)),
                Err(_) => (CoreRing::Failed(core), None),
            };
        // A ring of a core that ran on this thread before is dropped here (outside its
        // runtime it only unmaps; its ring fd is closed).
        let old = slot.replace(made);
        drop(slot);
        drop(old);
        ring
    })
}

/// A receive found `ring` empty (`ENOBUFS`): if it is still the current core's ring and
/// smaller than the configured size, it is replaced by one of twice as many buffers, which
/// is returned. Readers arm their next receive with [`core_ring`]; the old ring goes once
/// its last buffer is back and its last op is done. `None`: nothing changed (the ring is
/// already at its size, was already replaced, or a new one could not be registered).
pub fn grow_core_ring(ring: &BufRing) -> Option<BufRing> {
    let core = context::current_core_id()?;
    let max = context::current_features()?.recv_ring_entries;
    CORE_RING.with(|slot| {
        let mut slot = slot.borrow_mut();
        let Some(CoreRing::Ready(id, current)) = &*slot else {
            return None;
        };
        if *id != core || current.bgid() != ring.bgid() || current.entries() >= max {
            return None;
        }
        let entries = current.entries().saturating_mul(2).min(max);
        let bigger = BufRing::build(entries, current.buf_len(), current.is_incremental()).ok()?;
        let old = slot.replace(CoreRing::Ready(core, bigger.clone()));
        drop(slot);
        drop(old);
        Some(bigger)
    })
}

/// Drops the current core's ring (its runtime is shutting down, its ops reaped): the group
/// is unregistered while the core's ring still exists.
pub(crate) fn release_core_ring() {
    let old = CORE_RING.with(|slot| slot.borrow_mut().take());
    drop(old);
}
