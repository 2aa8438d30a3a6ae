#!/usr/bin/env bash
# What an idle HTTP/1.1 keep-alive connection costs a server: the `axum` example on this
# runtime (--cores 1) against the same app on tokio (`axum-tokio`, feature `tokio-peer`,
# current-thread). Builds the three binaries into one target directory, then runs
# `bench idle-conns --http`, which starts each server as a child pinned to CPU 0, measures
# its VmRSS before and after N keep-alive connections (each one `GET /`, response read, then
# left open by a client child pinned to CPU 1), and its CPU time while they idle; it prints
# bytes per connection, idle CPU and the ratio to axum-tokio (see benches/src/benches/idle_conns.rs).
#
# Extra arguments go to the bench: --conns N (default 10,000, clamped to the fd hard limit),
# --quick (2,000 connections, 1 s idle), --runs R (alternating rounds), --seconds S (the idle
# window), --json FILE. About 10 s per round after the build.
# Usage: scripts/idle_http.sh [--quick] [--conns N] ...   (honours CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."

# axum-tokio needs the `tokio-peer` feature; `axum` is built without it (so without axum's
# `tokio` feature), as a user of this runtime builds it. Both land next to `bench`, where
# `bench idle-conns --http` looks for them.
cargo build --release -p examples --features tokio-peer --bin axum-tokio
cargo build --release -p examples --bin axum
cargo build --release -p benches --bin bench
exec "${CARGO_TARGET_DIR:-target}/release/bench" idle-conns --http "$@"
