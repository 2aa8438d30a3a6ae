#!/usr/bin/env bash
# Side by side (issue 7), printed as a markdown table:
#  - hyper on this runtime (1 core) vs the same service on tokio current-thread and
#    multi-thread: wrk -c 64 -d 5s, three alternating rounds, medians. Target: >= 1.2x
#    tokio current-thread. Also the server's CPU time per request in the same runs, and
#    how busy wrk was: on 2 CPUs wrk saturates its own CPU first, so requests/s measure
#    the client as much as the server, and CPU per request is the server's own cost.
#  - the redis example (1 core) vs redis-server (persistence off): redis-benchmark -P 16
#    -c 50, GET and SET, one run each. Target: >= redis-server's requests/s.
#  - examples cp vs cp on a 1 GiB file (page cache warm), a warm-up copy each, then three
#    alternating copies, medians. Target: <= cp's time.
# With 2+ CPUs, servers run on CPU 0 and clients on CPU 1 (taskset).
# Needs: wrk, redis-tools, redis-server. Usage: scripts/examples_bench.sh (honours
# CARGO_TARGET_DIR); about 2.5 minutes after the build.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p examples --bins
cargo build --release -p benches --bin hyper_tokio
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d "${BENCH_DIR:-/tmp}/examples_bench.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(nproc)" -ge 2 ]; then SRV=(taskset -c 0); CLI=(taskset -c 1); else SRV=(); CLI=(); fi
# Nothing dirty left from an earlier run writing back under the first measurement.
sync
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on $1" >&2; exit 1
}
# run_server CMD...: starts it on CPU 0; sets PID (PORT chosen by the caller).
run_server() { "${SRV[@]}" "$@" >/dev/null 2>&1 & PID=$!; PIDS+=("$PID"); wait_port "$PORT"; }
stop_server() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# One wrk run against $PID on $PORT; prints "req/s server-us-per-request client-cpu-%": the
# server's CPU time (user + system) over the run divided by the requests served, and how
# busy wrk itself was (near 100% means the client, not the server, set the pace).
wrk_run() {
    "${CLI[@]}" wrk -t1 -c64 -d5s "http://127.0.0.1:$PORT/" >"$WORK/wrk.txt" &
    local w=$! s0 s1 c0 c1
    s0=$(ticks "$PID"); sleep 1; c0=$(ticks "$w"); sleep 3; c1=$(ticks "$w")
    wait "$w"; s1=$(ticks "$PID")
    ! grep -Eq 'Socket errors|Non-2xx' "$WORK/wrk.txt" || { cat "$WORK/wrk.txt" >&2; exit 1; }
    awk -v s="$((s1 - s0))" -v c="$((c1 - c0))" -v hz="$HZ" '
        /requests in/ { n = $1 }
        /^Requests\/sec/ { rps = $2 }
        END { printf "%s %.2f %.0f\n", rps, s / hz * 1e6 / n, c / hz / 3 * 100 }' "$WORK/wrk.txt"
}

# Three alternating rounds; each figure is its server's median (single 5 s runs swing by
# 30% here, for tokio as for this runtime).
med3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
ours=(); ct=(); mt=(); ours_us=(); ct_us=(); mt_us=(); cli=()
# measure SERVER ARGS...: one wrk run against it (its port appended); sets RPS, US, CLI_PCT.
measure() {
    PORT=$(free_port); run_server "$@" --port "$PORT"
    read -r RPS US CLI_PCT <<<"$(wrk_run)"; stop_server; cli+=("$CLI_PCT")
}
for _ in 1 2 3; do
    measure "$BIN/http"; ours+=("$RPS"); ours_us+=("$US")
    measure "$BIN/hyper_tokio" --flavor current; ct+=("$RPS"); ct_us+=("$US")
    measure "$BIN/hyper_tokio" --flavor multi; mt+=("$RPS"); mt_us+=("$US")
done
http_ours=$(med3 "${ours[@]}"); http_ct=$(med3 "${ct[@]}"); http_mt=$(med3 "${mt[@]}")
us_ours=$(med3 "${ours_us[@]}"); us_ct=$(med3 "${ct_us[@]}"); us_mt=$(med3 "${mt_us[@]}")
cli_min=$(printf '%s\n' "${cli[@]}" | sort -g | head -1)

# redis-benchmark --csv: "GET","812345.00",...
rb_rps() {
    "${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$PORT" -t set,get -P 16 -c 50 -n 2000000 --csv \
        2>/dev/null | tr -d '"' | awk -F, -v t="$1" '$1 == t {print $2}'
}
PORT=$(free_port); run_server "$BIN/redis" --port "$PORT"
ours_csv=$("${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$PORT" -t set,get -P 16 -c 50 -n 2000000 --csv 2>/dev/null | tr -d '"')
stop_server
PORT=$(free_port)
run_server redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no
theirs_csv=$("${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$PORT" -t set,get -P 16 -c 50 -n 2000000 --csv 2>/dev/null | tr -d '"')
stop_server
field() { awk -F, -v t="$2" '$1 == t {print $2}' <<<"$1"; }
set_ours=$(field "$ours_csv" SET); get_ours=$(field "$ours_csv" GET)
set_theirs=$(field "$theirs_csv" SET); get_theirs=$(field "$theirs_csv" GET)

head -c $((1 << 30)) /dev/urandom >"$WORK/src"
cat "$WORK/src" >/dev/null
# Each copy starts with nothing dirty (the source's own writeback, or the last copy's, would
# otherwise land on whichever copy runs next), and the two alternate three times after a
# warm-up copy each: the figure is each one's median.
secs() {
    local t0 t1
    sync
    t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
# One copy of each first, not counted: on this VM the first large copy after a pause runs
# 2-3x slower for either program (kernel time, not I/O), which would land on one side.
secs "${SRV[@]}" "$BIN/cp" "$WORK/src" "$WORK/dst1" >/dev/null; rm -f "$WORK/dst1"
secs "${SRV[@]}" cp "$WORK/src" "$WORK/dst2" >/dev/null; rm -f "$WORK/dst2"
ours=(); theirs=()
for _ in 1 2 3; do
    ours+=("$(secs "${SRV[@]}" "$BIN/cp" "$WORK/src" "$WORK/dst1")"); rm -f "$WORK/dst1"
    theirs+=("$(secs "${SRV[@]}" cp "$WORK/src" "$WORK/dst2")"); rm -f "$WORK/dst2"
done
cp_ours=$(med3 "${ours[@]}"); cp_theirs=$(med3 "${theirs[@]}")

r() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
f() { awk -v a="$1" 'BEGIN { if (a >= 1e6) printf "%.2fM", a / 1e6; else printf "%.1fk", a / 1e3 }'; }
echo
echo "$(date -u +%F), $(nproc) CPU(s); servers on CPU 0, clients on CPU 1; wrk itself used at"
echo "least ${cli_min}% of its CPU in every hyper run (near 100%: the client set the pace)"
echo
echo "| comparison | this runtime | against | ratio (target) |"
echo "|---|---|---|---|"
echo "| hyper, \`wrk -c 64 -d 5s\`, median of 3 alternating | $(f "$http_ours") req/s | tokio current-thread $(f "$http_ct") req/s | $(r "$http_ours" "$http_ct") (>= 1.2x) |"
echo "| hyper, \`wrk -c 64 -d 5s\`, median of 3 alternating | $(f "$http_ours") req/s | tokio multi-thread $(f "$http_mt") req/s | $(r "$http_ours" "$http_mt") |"
echo "| hyper server CPU per request (user + system), same runs | $us_ours us | tokio current-thread $us_ct us, multi-thread $us_mt us | $(r "$us_ct" "$us_ours") / $(r "$us_mt" "$us_ours") as efficient |"
echo "| redis SET, \`redis-benchmark -P 16 -c 50\` | $(f "$set_ours") req/s | redis-server $(f "$set_theirs") req/s | $(r "$set_ours" "$set_theirs") (>= 1x) |"
echo "| redis GET, \`redis-benchmark -P 16 -c 50\` | $(f "$get_ours") req/s | redis-server $(f "$get_theirs") req/s | $(r "$get_ours" "$get_theirs") (>= 1x) |"
echo "| cp 1 GiB (page cache, median of 3 alternating) | $(printf %.3f "$cp_ours") s | cp $(printf %.3f "$cp_theirs") s | $(r "$cp_theirs" "$cp_ours") as fast (>= 1x) |"
