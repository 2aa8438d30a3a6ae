//! Thread-per-core: everything that spans a runtime's cores.
//!
//! Core 0 is the thread that builds the runtime (it runs `block_on`); cores 1..n are worker
//! threads ([`worker`]), each pinned to its CPU ([`pin`]), each with its own ring and loop.
//! Cores share no ring: work crosses to another core through that core's remote queue
//! ([`remote`]: wakes from other threads, `spawn_on`), which wakes the core's ring with an
//! `IORING_OP_MSG_RING` from the sender's ring, or its eventfd; and never-polled `Send`
//! tasks move from a busy core's stealable queue to an idle core ([`fresh`]). An idle core
//! sleeps in `io_uring_enter`. Values a `Send` wrapper carried off their core go back to it
//! to be dropped there ([`owner`]: the remote free list).

mod fresh;
mod owner;
mod pin;
mod remote;
mod worker;

pub(crate) use fresh::{Fresh, STEAL_MAX};
pub use owner::CoreOwner;
pub(crate) use pin::{affinity, allowed_cpus, check_cpu, pin_to, set_affinity};
pub(crate) use remote::{CoreSet, Shared};
pub(crate) use worker::{start_worker, Worker};
