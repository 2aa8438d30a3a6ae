//! The per-core receive ring: the provided buffers every connection of a core reads into,
//! made on first use and grown when receives find it empty. The core keeps it in its
//! context (`CoreContext::recv_ring`) and drops it at shutdown, once its ops are reaped.

use super::BufRing;

impl CoreRing {
    /// For the metrics: the ring's buffers, those out of it, and the `ENOBUFS` it saw.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        match self {
            CoreRing::Ready(r) => (
                u64::from(r.inner.entries),
                u64::from(r.inner.out.get()),
                r.inner.starved.get(),
            ),
            _ => (0, 0, 0),
        }
    }
}

/// A core's receive ring, as its context holds it.
#[derive(Default)]
pub(crate) enum CoreRing {
    /// Not made yet: the first [`core_ring`] call on the core makes it.
    #[default]
    Unmade,
    /// The ring receives pick from.
    Ready(BufRing),
    /// Registering it failed on this core (an old kernel, locked memory): not retried.
    Failed,
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
/// [`MultiOp::with_buf_ring`](crate::ext::MultiOp::with_buf_ring)); it starts with 16
/// buffers and doubles each time a receive finds it empty
/// ([`grow_core_ring`](crate::ext::grow_core_ring)), up to the configured number: sized to
/// the load, so a core with little traffic touches few pages.
///
/// `None` outside a runtime, when the runtime was built with
/// [`Builder::recv_multishot(false)`](crate::Builder::recv_multishot) or the kernel has no
/// buffer rings ([`Features::recv_multishot`](crate::Features::recv_multishot)), or when
/// this core could not register one (then callers fall back to a buffer of their own per
/// read); the first failure is not retried.
pub fn core_ring() -> Option<BufRing> {
    crate::driver::with_current(|ctx| {
        let features = ctx.features;
        if !features.recv_multishot {
            return None;
        }
        match &*ctx.recv_ring.borrow() {
            CoreRing::Ready(ring) => return Some(ring.clone()),
            CoreRing::Failed => return None,
            CoreRing::Unmade => {}
        }
        let (max, len) = (features.recv_ring_entries, features.recv_ring_buf_len);
        let (made, ring) =
            match BufRing::build(max.min(CORE_RING_START), len, features.recv_incremental) {
                Ok(ring) => (CoreRing::Ready(ring.clone()), Some(ring)),
                Err(_) => (CoreRing::Failed, None),
            };
        *ctx.recv_ring.borrow_mut() = made;
        ring
    })
    .flatten()
}

/// A receive found `ring` empty (`ENOBUFS`): if it is still the current core's ring and
/// smaller than the configured size, it is replaced by one of twice as many buffers, which
/// is returned. Readers arm their next receive with [`core_ring`]; the old ring goes once
/// its last buffer is back and its last op is done. `None`: nothing changed (the ring is
/// already at its size, was already replaced, or a new one could not be registered).
pub fn grow_core_ring(ring: &BufRing) -> Option<BufRing> {
    crate::driver::with_current(|ctx| {
        let max = ctx.features.recv_ring_entries;
        let bigger = {
            let current = ctx.recv_ring.borrow();
            let CoreRing::Ready(current) = &*current else {
                return None;
            };
            if !current.same(ring) || current.entries() >= max {
                return None;
            }
            let entries = current.entries().saturating_mul(2).min(max);
            BufRing::build(entries, current.buf_len(), current.is_incremental()).ok()?
        };
        let old = std::mem::replace(
            &mut *ctx.recv_ring.borrow_mut(),
            CoreRing::Ready(bigger.clone()),
        );
        if let CoreRing::Ready(old) = &old {
            let (grown, starved) = ctx.recv_grown.get();
            ctx.recv_grown
                .set((grown + 1, starved + old.inner.starved.get()));
        }
        // Dropped outside the borrow: the old ring's last clone may be this one.
        drop(old);
        Some(bigger)
    })
    .flatten()
}
