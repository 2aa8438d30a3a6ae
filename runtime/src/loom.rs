//! The atomics the task state uses: std's, or loom's under `--cfg loom` (the loom tests run
//! the real transitions under loom's model checker; see `scripts/loom.sh`).

#[cfg(loom)]
pub(crate) use loom::sync;
#[cfg(not(loom))]
pub(crate) use std::sync;
