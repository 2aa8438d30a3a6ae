//! Thread-per-core: the threads a runtime's cores run on.
//!
//! Core 0 is the thread that builds the runtime (it runs `block_on`); cores 1..n are worker
//! threads ([`worker`]), each pinned to its CPU ([`pin`]), each with its own ring and loop
//! (the executor's `Core`). What the cores share while they run (each core's remote queue
//! and its wakes, the stealable queues and the idle set, the values sent home to be
//! dropped) is the executor's (`executor::remote`, `executor::balance`, `executor::owner`):
//! this module starts and stops threads on top of it and is imported by nothing below.

mod pin;
mod worker;

pub(crate) use pin::{affinity, allowed_cpus, check_cpu, pin_to, set_affinity};
pub(crate) use worker::{start_worker, Worker};
