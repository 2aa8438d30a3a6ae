#!/usr/bin/env bash
# User-space instructions per HTTP request of server binaries, under callgrind: a figure
# that does not move with the machine's fast and slow modes, for changes of a few percent
# that CPU time cannot resolve on this 2-CPU machine (the kernel's share is not counted:
# pair it with server CPU time, e.g. scripts/db_profile.sh or scripts/ab_http.sh).
# Each binary runs under `valgrind --tool=callgrind` on CPU 0 with `--port P ARGS...`;
# `wrk -t1 -c16` on CPU 1 warms it for 3 s, the counts are zeroed, wrk runs 5 s more, and the
# instructions of those 5 s are divided by wrk's request count.
# With PG=1, a private PostgreSQL cluster is started (scripts/tfb_pg.sh) and
# `--db <its URL>` is added to ARGS (for examples/tfb's binaries, e.g. with `--pool 1`).
# With KEEP=DIR, each binary's callgrind file is kept as DIR/<binary>.<n>.out.
# Usage: [PG=1] [KEEP=DIR] scripts/instr_per_request.sh URL_PATH "ARGS" BIN...
#   scripts/instr_per_request.sh / "--cores 1" target/release/axum /tmp/old-axum
#   PG=1 scripts/instr_per_request.sh /db "--pool 1" target/release/tfb target/release/tfb-tokio
set -euo pipefail
cd "$(dirname "$0")/.."
URL_PATH=$1
ARGS=$2
shift 2
for tool in valgrind callgrind_control wrk; do
    command -v "$tool" >/dev/null || { echo "instr_per_request: $tool is missing" >&2; exit 1; }
done
WORK="$(mktemp -d)"
chmod 755 "$WORK"
cleanup() { rm -rf "$WORK"; }
if [ "${PG:-0}" = 1 ]; then
    source scripts/tfb_pg.sh
    cleanup() { pg_cleanup; rm -rf "$WORK"; }
    mkdir "$WORK/pg"
    pg_setup "$WORK/pg" >/dev/null
    for pid in $(pgrep -f postgres); do taskset -pc 1 "$pid" >/dev/null 2>&1 || true; done
    ARGS="$ARGS --db $PG_URL"
fi
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

n=0
for bin in "$@"; do
    n=$((n + 1))
    port=$(free_port)
    out="$WORK/cg.$n"
    mkdir "$out"
    # shellcheck disable=SC2086
    taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" \
        "$bin" --port "$port" $ARGS >"$out/log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
    taskset -c 1 wrk -t1 -c16 -d3s "http://127.0.0.1:$port$URL_PATH" >/dev/null 2>&1
    callgrind_control -z "$pid" >/dev/null 2>&1
    res=$(taskset -c 1 wrk -t1 -c16 -d5s "http://127.0.0.1:$port$URL_PATH" 2>&1)
    callgrind_control -d "$pid" >/dev/null 2>&1
    sleep 1
    kill -INT "$pid" 2>/dev/null || true
    sleep 2
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    req=$(echo "$res" | awk '/requests in/{print $1}')
    # The dump after the zeroing: files named cg.PID.1 (one per thread with --separate-threads).
    ir=$(cat "$out"/cg.*.1 | awk '/^summary:/{s+=$2} END{print s+0}')
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out"/cg.*.1 "$KEEP/$(basename "$bin").$n.out"
    printf '%-40s %s requests %s instructions %s per request\n' "$bin" "$req" "$ir" \
        "$((ir / req))"
done
