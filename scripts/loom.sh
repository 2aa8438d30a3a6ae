#!/usr/bin/env bash
# The task state transitions (runtime/src/executor/task/state.rs), an abort racing a steal
# (runtime/src/executor/task/loom_steal.rs: RawTask::rehome, into_local, run and abort) and the
# stealable queues and idle protocol (runtime/src/executor/balance/fresh.rs) under loom's model checker:
# the real code, with loom's atomics swapped in by `--cfg loom`. Its own target folder, since
# the cfg rebuilds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" CARGO_TARGET_DIR=target/loom \
    cargo test -p corering-runtime --lib --release loom_ -- --test-threads=1 "$@"
