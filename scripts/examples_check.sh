#!/usr/bin/env bash
# Real-client checks of the examples (issue 7): each server on a free 127.0.0.1 port, driven
# briefly by a client nobody here wrote; fails on any client error or wrong reply, and on a
# server that does not exit 0 within a few seconds of SIGINT.
# Needs: wrk, curl, redis-cli and redis-benchmark (apt: wrk curl redis-tools), cmp.
# Usage: scripts/examples_check.sh   (honours CARGO_TARGET_DIR; about 30 s after the build)
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in wrk curl redis-cli redis-benchmark cmp; do
    command -v "$tool" >/dev/null || { echo "examples_check: $tool is missing" >&2; exit 1; }
done

cargo build --release -p examples --bins
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "examples_check: FAIL: $*" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start NAME ARGS...: starts $BIN/NAME with --port on a free port; sets PORT and PID.
start() {
    local name=$1; shift
    PORT=$(free_port)
    "$BIN/$name" --port "$PORT" "$@" >"$WORK/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/$name.log"; fail "$name exited at start"; }
        sleep 0.05
    done
    fail "$name did not listen on $PORT within 5 s"
}

# stop NAME PID: SIGINT, then exit status 0 within 5 s.
stop() {
    local name=$1 pid=$2
    kill -INT "$pid"
    for _ in $(seq 50); do
        if ! kill -0 "$pid" 2>/dev/null; then
            local rc=0
            wait "$pid" || rc=$?
            [ "$rc" -eq 0 ] || { cat "$WORK/$name.log"; fail "$name exited $rc on SIGINT"; }
            echo "ok: $name stops on SIGINT"
            return 0
        fi
        sleep 0.1
    done
    fail "$name still running 5 s after SIGINT"
}

# --- echo ---
start echo --cores 2
reply=$(exec 3<>"/dev/tcp/127.0.0.1/$PORT"; printf 'hello, echo\n' >&3; timeout 5 head -c 12 <&3)
[ "$reply" = "hello, echo" ] || fail "echo replied '$reply'"
echo "ok: echo"
stop echo "$PID"

# --- http (hyper) ---
start http
body=$(curl -sS --max-time 5 "http://127.0.0.1:$PORT/")
[ "$body" = "Hello, World!" ] || fail "http body '$body'"
# Keep-alive: two requests on one connection.
raw=$(exec 3<>"/dev/tcp/127.0.0.1/$PORT"
      printf 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
      timeout 5 cat <&3)
[ "$(grep -c 'Hello, World!' <<<"$raw")" -eq 2 ] || fail "keep-alive: $raw"
wrk -t1 -c32 -d3s --timeout 2s "http://127.0.0.1:$PORT/" >"$WORK/wrk.txt"
cat "$WORK/wrk.txt"
! grep -q 'Socket errors' "$WORK/wrk.txt" || fail "wrk socket errors"
! grep -q 'Non-2xx' "$WORK/wrk.txt" || fail "wrk non-2xx responses"
grep -Eq '^ +[1-9][0-9]* requests in' "$WORK/wrk.txt" || fail "wrk made no requests"
echo "ok: http"
stop http "$PID"

# --- redis ---
start redis
R=(redis-cli -h 127.0.0.1 -p "$PORT")
[ "$("${R[@]}" PING)" = "PONG" ] || fail "PING"
[ "$("${R[@]}" SET greeting 'hello world')" = "OK" ] || fail "SET"
[ "$("${R[@]}" GET greeting)" = "hello world" ] || fail "GET after SET"
[ "$("${R[@]}" INCR n)" = "1" ] || fail "INCR"
[ "$("${R[@]}" SET t v PX 50)" = "OK" ] || fail "SET PX"
sleep 0.2
[ -z "$("${R[@]}" GET t)" ] || fail "key with PX 50 still there"
redis-benchmark -h 127.0.0.1 -p "$PORT" -t ping,set,get,incr,mset -P 16 -n 20000 -q \
    >"$WORK/bench.txt" 2>&1
tr '\r' '\n' <"$WORK/bench.txt" | grep 'requests per second' || true
! grep -Eiq 'error|warn' "$WORK/bench.txt" || { cat "$WORK/bench.txt"; fail "redis-benchmark errors"; }
[ "$(tr '\r' '\n' <"$WORK/bench.txt" | grep -c 'requests per second')" -ge 6 ] \
    || { cat "$WORK/bench.txt"; fail "redis-benchmark did not finish every test"; }
# Garbage: an error reply, the connection closed, the server unharmed.
reply=$(exec 3<>"/dev/tcp/127.0.0.1/$PORT"; printf '*1\r\n$xyz\r\n\x00\xff garbage' >&3; timeout 5 cat <&3 || true)
[[ "$reply" == -ERR\ Protocol\ error* ]] || fail "garbage got '$reply'"
head -c 100000 /dev/urandom >"$WORK/noise"
(exec 3<>"/dev/tcp/127.0.0.1/$PORT"; cat "$WORK/noise" >&3; timeout 2 cat <&3 >/dev/null) 2>/dev/null || true
printf '*2\r\n$3\r\nGET\r\n$4\r\nab' | timeout 1 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" || true
[ "$("${R[@]}" PING)" = "PONG" ] || fail "no PONG after garbage"
[ "$("${R[@]}" GET greeting)" = "hello world" ] || fail "GET after garbage"
echo "ok: redis"
stop redis "$PID"

# --- cp ---
# An odd length, so the last block is short.
head -c $(((64 << 20) + 12345)) /dev/urandom >"$WORK/src"
"$BIN/cp" "$WORK/src" "$WORK/dst"
cmp "$WORK/src" "$WORK/dst" || fail "cp (splice): files differ"
"$BIN/cp" --block-size 4K --depth 3 "$WORK/src" "$WORK/dst2"
cmp "$WORK/src" "$WORK/dst2" || fail "cp (splice, 4 KiB blocks): files differ"
"$BIN/cp" --mode rw "$WORK/src" "$WORK/dst3"
cmp "$WORK/src" "$WORK/dst3" || fail "cp (read/write): files differ"
"$BIN/cp" --mode rw --block-size 4K --depth 3 "$WORK/src" "$WORK/dst4"
cmp "$WORK/src" "$WORK/dst4" || fail "cp (read/write, 4 KiB blocks): files differ"
"$BIN/cp" --mode bogus "$WORK/src" "$WORK/dst5" 2>/dev/null && fail "cp: --mode bogus accepted"
: >"$WORK/empty"
"$BIN/cp" "$WORK/empty" "$WORK/empty2" && cmp "$WORK/empty" "$WORK/empty2" || fail "cp: empty file"
echo "ok: cp"

for b in echo http redis cp; do
    "$BIN/$b" --help | grep -q usage || fail "$b --help"
done
echo "examples_check: all passed"
