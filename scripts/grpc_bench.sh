#!/usr/bin/env bash
# Server CPU per unary gRPC call (issue 29's bench): `grpc-server --cores 1` (tonic's Routes
# on this runtime through corering_net::grpc::server()) vs `grpc-tokio` (the same service on
# tonic's own transport, tokio current-thread; feature `tokio-peer`), driven by h2load, a
# load generator nobody here wrote:
#   h2load -n N -c 8 -m 16 -d request.bin -H 'content-type: application/grpc' \
#          -H 'te: trailers' http://127.0.0.1:PORT/corering.echo.Echo/Unary
# with request.bin one length-prefixed EchoRequest of PAYLOAD bytes.
#
# Both servers are started once (and checked once with grpc-client), then measured in
# alternating rounds, A B A B: the server's CPU time (user + system, /proc/PID/stat) from
# just before h2load starts to just after it ends, divided by the calls h2load completed.
# Servers run on CPU 1 and h2load on CPU 0 (taskset; unpinned with fewer than 2 CPUs).
# Prints each round, the mean µs of CPU per call of each, and the ratio ours / tokio.
#
# Env: N (calls per run, default 200000), ROUNDS (default 3), PAYLOAD (bytes, default 100).
# Needs: h2load (apt: nghttp2-client), python3. A quiet machine for real figures.
# Usage: scripts/grpc_bench.sh   (honours CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200000}
ROUNDS=${ROUNDS:-3}
PAYLOAD=${PAYLOAD:-100}
command -v h2load >/dev/null || { echo "grpc_bench: h2load is missing (apt-get install nghttp2-client)" >&2; exit 1; }

# grpc-tokio first: building grpc-server after it gives a grpc-server without tonic's
# transport, as a user of this runtime builds it.
cargo build --release -p grpc-example --features tokio-peer --bin grpc-tokio
cargo build --release -p grpc-example --bin grpc-server --bin grpc-client
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d "${BENCH_DIR:-/tmp}/grpc_bench.XXXXXX")"
PIDS=()
cleanup() {
    # SIGTERM: both servers stop gracefully on it (no "Killed" job notices).
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "grpc_bench: FAIL: $*" >&2; exit 1; }

SERVER_PIN=(); CLIENT_PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    SERVER_PIN=(taskset -c 1); CLIENT_PIN=(taskset -c 0)
fi

# The request: gRPC's frame header (uncompressed, big-endian length), then EchoRequest
# { payload (field 1, bytes) = PAYLOAD x 'x' }.
python3 - "$WORK/request.bin" "$PAYLOAD" <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
def varint(v):
    out = b""
    while True:
        b = v & 0x7F; v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v: return out
msg = b"\x0a" + varint(n) + b"x" * n
open(path, "wb").write(b"\x00" + struct.pack(">I", len(msg)) + msg)
PY

# start NAME ARGS...: starts $BIN/NAME on a free port; sets PORT and PID.
start() {
    local name=$1; shift
    "${SERVER_PIN[@]}" "$BIN/$name" --addr 127.0.0.1:0 "$@" >"$WORK/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 200); do
        PORT=$(grep -o 'listening on http://[^ ]*' "$WORK/$name.log" 2>/dev/null | grep -o '[0-9]*$' || true)
        [ -n "$PORT" ] && return 0
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/$name.log" >&2; fail "$name exited at start"; }
        sleep 0.05
    done
    fail "$name printed no port within 10 s"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

start grpc-server --cores 1; A_PID=$PID; A_PORT=$PORT
start grpc-tokio; B_PID=$PID; B_PORT=$PORT
for port in "$A_PORT" "$B_PORT"; do
    "$BIN/grpc-client" --addr "http://127.0.0.1:$port" --calls 30 --max-size 65536 >/dev/null \
        || fail "grpc-client against port $port"
done

# run PID PORT: one h2load run; prints "µs-per-call calls-per-second".
run() {
    local pid=$1 port=$2 before after out done rps
    h2() {
        "${CLIENT_PIN[@]}" h2load -n "$1" -c 8 -m 16 -d "$WORK/request.bin" \
            -H 'content-type: application/grpc' -H 'te: trailers' \
            "http://127.0.0.1:$port/corering.echo.Echo/Unary"
    }
    h2 "$(( N / 10 > 100 ? N / 10 : 100 ))" >/dev/null   # warm-up
    before=$(cpu_ticks "$pid")
    out=$(h2 "$N")
    after=$(cpu_ticks "$pid")
    done=$(echo "$out" | awk '/^requests:/ {print $8}')
    [ "${done:-0}" -eq "$N" ] || { echo "$out" >&2; fail "h2load: $done of $N calls succeeded on port $port"; }
    echo "$out" | grep -q "status codes: $N 2xx" || { echo "$out" >&2; fail "h2load: non-2xx on port $port"; }
    rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    python3 -c "print(f'{($after - $before) / $TCK * 1e6 / $N:.2f} {$rps}')"
}

echo "grpc_bench: $N unary calls of $PAYLOAD bytes per run (h2load -c 8 -m 16), $ROUNDS rounds"
printf '%-6s %-34s %12s %12s\n' round server 'µs CPU/call' 'calls/s'
A_ALL=(); B_ALL=()
for r in $(seq "$ROUNDS"); do
    read -r a a_rps <<<"$(run "$A_PID" "$A_PORT")"
    printf '%-6s %-34s %12s %12s\n' "$r" "grpc-server (corering, 1 core)" "$a" "$a_rps"
    read -r b b_rps <<<"$(run "$B_PID" "$B_PORT")"
    printf '%-6s %-34s %12s %12s\n' "$r" "grpc-tokio (tonic, current-thread)" "$b" "$b_rps"
    A_ALL+=("$a"); B_ALL+=("$b")
done
python3 - "${A_ALL[*]}" "${B_ALL[*]}" <<'PY'
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = sum(a) / len(a), sum(b) / len(b)
print(f"mean µs CPU per call: corering {ma:.2f}, tokio {mb:.2f}; "
      f"ratio corering/tokio {ma / mb if mb else float('nan'):.3f}")
PY
