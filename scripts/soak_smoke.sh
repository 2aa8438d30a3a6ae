#!/usr/bin/env bash
# CI: builds the soak binary (tests/src/bin/soak.rs) in release and runs it for about 10 s:
# a mixed load (TCP echo, timers, fs, cross-thread wakes, futures dropped in flight) whose
# fd count must return to its baseline after every round and whose RSS must stay within
# the warm-up RSS + 10% + 4 MiB. It exits non-zero, saying what grew, if not.
# SOAK_SECS overrides the length (e.g. SOAK_SECS=600 for a real soak).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${SOAK_SECS:-10}"
cargo build --release -p tests --bin soak
target="${CARGO_TARGET_DIR:-target}"
"$target/release/soak" --secs "$secs" --every 2 --warmup 3
