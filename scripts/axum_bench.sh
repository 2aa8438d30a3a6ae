#!/usr/bin/env bash
# The axum comparison the README quotes: the `axum` example on this runtime (--cores 1) vs
# the same app on its epoll backend (RUNTIME_BACKEND=epoll), and the same app and handlers on tokio (`axum-tokio`, feature `tokio-peer`), current-thread and
# multi-thread (tokio's default worker count; under `taskset -c 0` that is 1 worker, as
# tokio counts the CPUs the process may run on).
#
# Every server runs on CPU 0, every client on CPU 1 (taskset; with fewer than 2 CPUs, both
# unpinned). ROUNDS alternating rounds (default 3); in each, every server is started fresh,
# in turn, and measured by:
#   - HTTP/1.1: wrk -t1 -c64 -d${DURATION}s on /
#   - h2c:      h2load -c16 -m32 -D ${DURATION} on / (HTTP/2 by prior knowledge)
#   - HTTPS h2: h2load -c16 -m32 -D ${DURATION} on https:// / (h2 by ALPN, self-signed cert)
# For each: requests/s; the server's CPU time (user + system, /proc/PID/stat) from just before
# the client starts to just after it ends, per request; and how busy the client was (its own
# CPU time over its wall time: near 100% means the client, not the server, set the pace).
# Prints the per-round figures, then a table of medians with the ratios of ours to each
# tokio variant.
#
# Env: ROUNDS (default 3), DURATION (seconds per client run, default 5). About
# ROUNDS x 3 servers x 3 x (DURATION + 1) s after the build: 3 minutes by default.
# Needs: wrk, h2load (apt: nghttp2-client), taskset, python3.
# Usage: scripts/axum_bench.sh   (honours CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
for tool in wrk h2load python3; do
    command -v "$tool" >/dev/null || { echo "axum_bench: $tool is missing" >&2; exit 1; }
done

# Two builds: axum-tokio needs the `tokio-peer` feature, and `axum` is built without it (so
# without axum's `tokio` feature), as a user of this runtime would build it.
cargo build --release -p examples --features tokio-peer --bin axum-tokio
cargo build --release -p examples --bin axum
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d "${BENCH_DIR:-/tmp}/axum_bench.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(nproc)" -ge 2 ]; then SRV=(taskset -c 0); CLI=(taskset -c 1); else SRV=(); CLI=(); fi
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/server.log" >&2; echo "server exited" >&2; exit 1; }
        sleep 0.05
    done
    echo "axum_bench: nothing listens on $1" >&2; exit 1
}
# start_server CMD...: on CPU 0 with --port and --tls-port on free ports; sets PID, PORT,
# TLS_PORT.
start_server() {
    PORT=$(free_port); TLS_PORT=$(free_port)
    "${SRV[@]}" "$@" --port "$PORT" --tls-port "$TLS_PORT" >"$WORK/server.log" 2>&1 &
    PID=$!; PIDS+=("$PID")
    wait_port "$PORT"; wait_port "$TLS_PORT"
}
stop_server() { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }

HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# timed OUT CMD...: runs CMD on CPU 1, its output to OUT; writes "cpu-seconds wall-seconds"
# of CMD (from wait4's rusage) to $WORK/timed.
timed() {
    local out=$1; shift
    python3 -c '
import os, subprocess, sys, time
t = time.time()
with open(sys.argv[2], "w") as out:
    p = subprocess.Popen(sys.argv[3:], stdout=out, stderr=subprocess.STDOUT)
    _, status, ru = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write("%f %f\n" % (ru.ru_utime + ru.ru_stime, time.time() - t))
sys.exit(os.waitstatus_to_exitcode(status))' "$WORK/timed" "$out" "${CLI[@]}" "$@"
}

# measure PROTO: one client run against $PID (exits the script on any client error, error
# status or wrong protocol); prints "req/s server-us-per-request client-%".
measure() {
    local proto=$1 out="$WORK/client.txt" s0 s1 n rps
    s0=$(ticks "$PID")
    case $proto in
        h1) timed "$out" wrk -t1 -c64 -d"${DURATION}s" "http://127.0.0.1:$PORT/" ;;
        h2c) timed "$out" h2load -c16 -m32 -D "$DURATION" "http://127.0.0.1:$PORT/" ;;
        h2tls) timed "$out" h2load -c16 -m32 -D "$DURATION" "https://127.0.0.1:$TLS_PORT/" ;;
    esac || { cat "$out" >&2; echo "axum_bench: $proto client failed" >&2; exit 1; }
    s1=$(ticks "$PID")
    if [ "$proto" = h1 ]; then
        ! grep -Eq 'Socket errors|Non-2xx' "$out" || { cat "$out" >&2; exit 1; }
        n=$(awk '/requests in/ { print $1 }' "$out")
        rps=$(awk '/^Requests\/sec/ { print $2 }' "$out")
    else
        # requests: T total, S started, D done, OK succeeded, F failed, E errored, X timeout
        grep -Eq '^requests: .* 0 failed, 0 errored, 0 timeout' "$out" || { cat "$out" >&2; exit 1; }
        grep -q "^Application protocol: $([ "$proto" = h2c ] && echo h2c || echo h2)\$" "$out" \
            || { cat "$out" >&2; echo "axum_bench: $proto: wrong protocol" >&2; exit 1; }
        n=$(awk '/^requests:/ { print $8 }' "$out")
        rps=$(awk '/^finished in/ { print $4 }' "$out")
    fi
    [ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$out" >&2; echo "axum_bench: $proto: no requests" >&2; exit 1; }
    awk -v s="$((s1 - s0))" -v hz="$HZ" -v n="$n" -v rps="$rps" '
        { cpu = $1; wall = $2 }
        END { printf "%.0f %.2f %.0f\n", rps, s / hz * 1e6 / n, cpu / wall * 100 }' "$WORK/timed"
}

SERVERS=(ours epoll current multi)
PROTOS=(h1 h2c h2tls)
declare -A RPS US CLI_PCT
for round in $(seq "$ROUNDS"); do
    for srv in "${SERVERS[@]}"; do
        case $srv in
            ours) start_server "$BIN/axum" --cores 1 ;;
            epoll) RUNTIME_BACKEND=epoll start_server "$BIN/axum" --cores 1 ;;
            current) start_server "$BIN/axum-tokio" --runtime current ;;
            multi) start_server "$BIN/axum-tokio" --runtime multi ;;
        esac
        for proto in "${PROTOS[@]}"; do
            measure "$proto" >"$WORK/measured"
            read -r rps us cli <"$WORK/measured"
            RPS[$srv,$proto]+="$rps "; US[$srv,$proto]+="$us "; CLI_PCT[$srv,$proto]+="$cli "
            printf 'round %s %-7s %-5s %9s req/s %7s us/req server CPU, client %s%% busy\n' \
                "$round" "$srv" "$proto" "$rps" "$us" "$cli" >&2
        done
        stop_server
    done
done

median() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
f() { awk -v a="$1" 'BEGIN { printf "%.1fk", a / 1e3 }'; }
name() { case $1 in h1) echo "HTTP/1.1, \`wrk -t1 -c64 -d${DURATION}s\`" ;; h2c) echo "h2c, \`h2load -c16 -m32 -D ${DURATION}\`" ;; h2tls) echo "HTTPS h2, \`h2load -c16 -m32 -D ${DURATION}\`" ;; esac; }

echo
echo "$(date -u +%F), $(nproc) CPU(s), $(uname -r); servers on CPU 0, clients on CPU 1;"
echo "$ROUNDS alternating rounds of ${DURATION} s runs, each server started fresh per round; medians"
echo
echo "| axum, \`/\` | this runtime (1 core) | its epoll backend | tokio current-thread | tokio multi-thread | ours / current | ours / multi | epoll / current |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for proto in "${PROTOS[@]}"; do
    o=$(median "${RPS[ours,$proto]}"); e=$(median "${RPS[epoll,$proto]}"); c=$(median "${RPS[current,$proto]}"); m=$(median "${RPS[multi,$proto]}")
    echo "| $(name "$proto") req/s | $(f "$o") | $(f "$e") | $(f "$c") | $(f "$m") | $(r "$o" "$c") | $(r "$o" "$m") | $(r "$e" "$c") |"
    o=$(median "${US[ours,$proto]}"); e=$(median "${US[epoll,$proto]}"); c=$(median "${US[current,$proto]}"); m=$(median "${US[multi,$proto]}")
    echo "| $(name "$proto") server CPU us/req (ratio: as efficient) | $o | $e | $c | $m | $(r "$c" "$o") | $(r "$m" "$o") | $(r "$c" "$e") |"
    o=$(median "${CLI_PCT[ours,$proto]}"); e=$(median "${CLI_PCT[epoll,$proto]}"); c=$(median "${CLI_PCT[current,$proto]}"); m=$(median "${CLI_PCT[multi,$proto]}")
    echo "| $(name "$proto") client busy | ${o}% | ${e}% | ${c}% | ${m}% | | | |"
done
echo
echo "Per round (req/s; server us/req):"
for proto in "${PROTOS[@]}"; do
    for srv in "${SERVERS[@]}"; do
        printf '  %-5s %-7s req/s: %s; us/req: %s\n' "$proto" "$srv" "${RPS[$srv,$proto]% }" "${US[$srv,$proto]% }"
    done
done
