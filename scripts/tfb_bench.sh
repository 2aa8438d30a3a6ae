#!/usr/bin/env bash
# Server CPU per request of TechEmpower's six tests, `tfb` (this runtime, 1 core) against
# `tfb-tokio` (the same axum handlers on tokio current-thread; feature `tokio-peer`), with
# a private PostgreSQL cluster (scripts/tfb_pg.sh). wrk drives each test for DURATION
# seconds per round, alternating A B A B for ROUNDS rounds; the server's CPU time is
# utime+stime from /proc/<pid>/stat before and after each run. Prints µs of server CPU per
# request for each runtime and round, then the medians and their ratio (this runtime / tokio;
# below 1 is cheaper).
# Tests: plaintext (16 requests pipelined per connection, a wrk Lua script), json, db,
# queries (20), fortunes, updates (20). Needs wrk and python3.
# Usage: [DURATION=5] [ROUNDS=2] [CONNS=64] [POOL=4] scripts/tfb_bench.sh
# Only meaningful on a quiet machine; DURATION=1 ROUNDS=1 just shows it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tfb_pg.sh

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-2}
CONNS=${CONNS:-64}
POOL=${POOL:-4}
command -v wrk >/dev/null || { echo "tfb_bench: wrk is missing (apt-get install wrk)" >&2; exit 1; }

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    pg_cleanup
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "tfb_bench: FAIL: $*" >&2; exit 1; }

# Two builds: `tfb` without the peer feature (no tokio runtime in it), then the peer.
cargo build --release -p tfb --bin tfb
BIN="${CARGO_TARGET_DIR:-target}/release"
cp "$BIN/tfb" "$WORK/tfb"
cargo build --release -p tfb --features tokio-peer --bin tfb-tokio
cp "$BIN/tfb-tokio" "$WORK/tfb-tokio"

chmod 755 "$WORK"  # the postgres user must reach its cluster below it
mkdir "$WORK/pg"
pg_setup "$WORK/pg" || fail "the PostgreSQL cluster did not start"

cat >"$WORK/pipeline.lua" <<'LUA'
-- TechEmpower's plaintext: `depth` requests per write on each connection.
init = function(args)
  local depth = tonumber(args[1]) or 16
  local r = {}
  for i = 1, depth do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
LUA

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start NAME: the server on a free port; sets its PORT_<NAME> and PID_<NAME>.
start() {
    local name=$1 port pid
    port=$(free_port)
    "$WORK/$name" --port "$port" --pool "$POOL" --db "$PG_URL" >"$WORK/$name.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
        kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.log"; fail "$name exited at start"; }
        sleep 0.05
    done
    printf -v "PORT_${name//-/_}" %s "$port"
    printf -v "PID_${name//-/_}" %s "$pid"
}
start tfb
start tfb-tokio

# Both pass TechEmpower's rules before they are measured.
PSQL=("${PG_BIN}/psql" -X -h "$PG_SOCK" -p "$PG_PORT" -U benchmarkdbuser -d hello_world)
[ -x "${PSQL[0]}" ] || PSQL[0]=psql
python3 scripts/tfb_verify.py check "$PORT_tfb" "${PSQL[@]}" >/dev/null || fail "tfb breaks the rules"
python3 scripts/tfb_verify.py check "$PORT_tfb_tokio" "${PSQL[@]}" >/dev/null || fail "tfb-tokio breaks the rules"

TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME PATH [LUA ARGS]: one wrk run; prints "requests ticks".
run() {
    local name=${1//-/_} path=$2; shift 2
    local port_var="PORT_$name" pid_var="PID_$name"
    local port=${!port_var} pid=${!pid_var} before after out reqs bad
    before=$(cpu_ticks "$pid")
    out=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://127.0.0.1:$port$path" "$@")
    after=$(cpu_ticks "$pid")
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    bad=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || { echo "$out" >&2; fail "$1 $path: no requests"; }
    [ -z "$bad" ] || echo "tfb_bench: warning: $1 $path: $bad non-2xx responses" >&2
    echo "$reqs $((after - before))"
}

echo "each round: µs of server CPU per request and requests/s, this runtime then tokio"
for spec in "plaintext (pipelined 16)|/plaintext|-s $WORK/pipeline.lua -- 16" \
            "json|/json|" "db|/db|" "queries (20)|/queries?queries=20|" \
            "fortunes|/fortunes|" "updates (20)|/updates?queries=20|"; do
    IFS='|' read -r label path extra <<<"$spec"
    rounds=()
    for _ in $(seq "$ROUNDS"); do
        for name in tfb tfb-tokio; do
            # shellcheck disable=SC2086
            read -r r t < <(run "$name" "$path" $extra)
            rounds+=("$name:$r:$t")
        done
    done
    python3 - "$label" "$TICK" "$DURATION" "${rounds[@]}" >>"$WORK/summary" <<'PY'
import statistics, sys
label, tick, secs, rounds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
us = {"tfb": [], "tfb-tokio": []}
for i, r in enumerate(rounds):
    name, reqs, ticks = r.split(":")
    us[name].append(int(ticks) / tick / int(reqs) * 1e6)
    print("  %-24s %-10s round %d: %8.2f us/req %10.0f req/s" % (
        label, name, i // 2 + 1, us[name][-1], int(reqs) / secs), file=sys.stderr)
a, b = statistics.median(us["tfb"]), statistics.median(us["tfb-tokio"])
print("%-24s %14.2f %14.2f %8s" % (label, a, b, "%.2fx" % (a / b) if b else "n/a"))
PY
done
echo
python3 -c 'print("%-24s %14s %14s %8s" % ("test (medians)", "tfb µs/req", "tokio µs/req", "ratio"))'
cat "$WORK/summary"
for name in tfb tfb-tokio; do
    pid_var="PID_${name//-/_}"
    kill -TERM "${!pid_var}"
done
echo "tfb_bench: ${ROUNDS} round(s) of ${DURATION} s per runtime and test, wrk -t1 -c${CONNS}, ${POOL} database connections, CPU ticks of ${TICK} Hz"
