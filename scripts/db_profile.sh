#!/usr/bin/env bash
# Server CPU per request of one TechEmpower test with ONE PostgreSQL connection per core
# (`--pool 1`: every handler of the core pipelines its queries on it), `tfb` (this runtime)
# against `tfb-tokio` (the same handlers on tokio current-thread), and optionally a perf
# profile of each: the measurement behind issue 39's database round trips.
# The server is pinned to CPU 0; wrk -t1 -c64 and PostgreSQL to CPU 1. Rounds alternate
# (A B A B ...); each prints requests/s and the server's µs of CPU per request
# (utime+stime of /proc/PID/stat over the measured 6 s, after 2 s of warm-up).
# With PERF=1, one more round each runs under `perf record -C 0 -g` (3 s in the middle),
# written to target/db-profile.{tfb,tfb-tokio}.data (`perf report -i ... --comm tfb`).
# With BASE=FILE (an earlier build of tfb), that binary runs too, as `tfb-base`, in every
# round: a change measured against the build before it and against tokio in one run.
# Usage: [ROUNDS=4] [PERF=1] [BASE=FILE] scripts/db_profile.sh [PATH]   (PATH: /db by default, or
#        "/queries?queries=20", "/updates?queries=20", /fortunes)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tfb_pg.sh
ROUNDS=${ROUNDS:-4}
PERF=${PERF:-0}
URL_PATH=${1:-/db}
command -v wrk >/dev/null || { echo "db_profile: wrk is missing (apt-get install wrk)" >&2; exit 1; }

cargo build --release -p tfb --bin tfb
cargo build --release -p tfb --features tokio-peer --bin tfb-tokio
WORK="$(mktemp -d)"
cp target/release/tfb target/release/tfb-tokio "$WORK/"
BASE=${BASE:-}
[ -z "$BASE" ] || cp "$BASE" "$WORK/tfb-base"
trap 'pg_cleanup; rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
mkdir "$WORK/pg"
pg_setup "$WORK/pg" >/dev/null
for pid in $(pgrep -f postgres); do taskset -pc 1 "$pid" >/dev/null 2>&1 || true; done

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# run NAME PERF_FILE: one round of NAME; profiled into PERF_FILE when that is not empty.
run() {
    local name=$1 perf_file=$2 port pid t0 t1 out req
    port=$(free_port)
    taskset -c 0 "$WORK/$name" --port "$port" --pool 1 --db "$PG_URL" >"$WORK/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.05
    done
    taskset -c 1 wrk -t1 -c64 -d2s "http://127.0.0.1:$port$URL_PATH" >/dev/null 2>&1
    t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
    if [ -n "$perf_file" ]; then
        (sleep 2; perf record -C 0 -g -o "$perf_file" -- sleep 3 >/dev/null 2>&1) &
    fi
    out=$(taskset -c 1 wrk -t1 -c64 -d6s "http://127.0.0.1:$port$URL_PATH" 2>&1)
    t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    req=$(echo "$out" | awk '/requests in/{print $1}')
    printf '%-10s %s rps=%s us/req=%s\n' "$name" "$URL_PATH" \
        "$(echo "$out" | awk '/Requests\/sec/{print $2}')" \
        "$(echo "($t1-$t0)*1000000/$(getconf CLK_TCK)/$req" | bc -l | cut -c1-6)"
}

for _ in $(seq "$ROUNDS"); do
    run tfb ""
    [ -z "$BASE" ] || run tfb-base ""
    run tfb-tokio ""
done
if [ "$PERF" = 1 ]; then
    run tfb target/db-profile.tfb.data
    run tfb-tokio target/db-profile.tfb-tokio.data
    wait
fi
