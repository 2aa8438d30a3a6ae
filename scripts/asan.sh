#!/usr/bin/env bash
# Runs the randomized cancellation test under AddressSanitizer. The quarantine allocator is
# switched off (QUARANTINE=off) so ASan's own quarantine sees every free; the normal
# `cargo test -p tests` run keeps the quarantine on (kernel writes after free).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR_ASAN:-target/asan}"
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
QUARANTINE=off cargo test -p tests --target x86_64-unknown-linux-gnu --test cancel_random
echo "asan: no errors"
