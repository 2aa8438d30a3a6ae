#!/usr/bin/env bash
# Real-client checks of the examples (issue 7): each server on a free 127.0.0.1 port, driven
# briefly by a client nobody here wrote; fails on any client error or wrong reply, and on a
# server that does not exit 0 within a few seconds of SIGINT (SIGTERM for axum, mid-response).
# Needs: wrk, h2load, curl, redis-cli and redis-benchmark (apt: wrk nghttp2-client curl
# redis-tools), cmp, python3.
# Usage: scripts/examples_check.sh   (honours CARGO_TARGET_DIR; about 40 s after the build)
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in wrk h2load curl redis-cli redis-benchmark cmp python3; do
    command -v "$tool" >/dev/null || {
        hint=""; [ "$tool" = h2load ] && hint=" (apt-get install nghttp2-client)"
        echo "examples_check: $tool is missing$hint" >&2; exit 1
    }
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

# wait_port NAME PID PORT: until something listens on PORT (5 s at most; NAME must live).
wait_port() {
    local name=$1 pid=$2 port=$3
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.log"; fail "$name exited at start"; }
        sleep 0.05
    done
    fail "$name did not listen on $port within 5 s"
}

# start NAME ARGS...: starts $BIN/NAME with --port on a free port; sets PORT and PID.
start() {
    local name=$1; shift
    PORT=$(free_port)
    "$BIN/$name" --port "$PORT" "$@" >"$WORK/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    wait_port "$name" "$PID" "$PORT"
}

# exited NAME PID WHY: exit status 0 within 5 s (WHY: what should have stopped it).
exited() {
    local name=$1 pid=$2 why=$3
    for _ in $(seq 50); do
        if ! kill -0 "$pid" 2>/dev/null; then
            local rc=0
            wait "$pid" || rc=$?
            [ "$rc" -eq 0 ] || { cat "$WORK/$name.log"; fail "$name exited $rc on $why"; }
            echo "ok: $name stops on $why"
            return 0
        fi
        sleep 0.1
    done
    fail "$name still running 5 s after $why"
}

# stop NAME PID: SIGINT, then exit status 0 within 5 s.
stop() {
    kill -INT "$2"
    exited "$1" "$2" SIGINT
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

# --- axum (HTTP/1.1, h2c and HTTPS on corering_net::hyper) and http-client ---
TLS_PORT=$(free_port)
start axum --tls-port "$TLS_PORT" --save-cert "$WORK/axum.pem" --grace 5
wait_port axum "$PID" "$TLS_PORT"
H="http://127.0.0.1:$PORT"; S="https://127.0.0.1:$TLS_PORT"
C=(curl -sS --max-time 5)
# get WANT_CODE CURL_ARGS...: the body goes to $WORK/body; prints "CODE CONTENT-TYPE VERSION".
get() {
    local want=$1; shift
    local out
    out=$("${C[@]}" -o "$WORK/body" -w '%{http_code} %{content_type} %{http_version}' "$@") \
        || fail "curl $*"
    [ "${out%% *}" = "$want" ] || fail "curl $*: got '$out', wanted $want"
    echo "$out"
}
[ "$(get 200 --http1.1 "$H/")" = "200 text/plain 1.1" ] || fail "axum GET / head"
[ "$(cat "$WORK/body")" = "Hello, World!" ] || fail "axum GET / body '$(cat "$WORK/body")'"
[ "$(get 200 --http1.1 "$H/json")" = "200 application/json 1.1" ] || fail "axum GET /json head"
[ "$(cat "$WORK/body")" = '{"message":"Hello, World!"}' ] || fail "axum /json body '$(cat "$WORK/body")'"
get 200 --http1.1 "$H/greet/ada?times=2" >/dev/null
[ "$(cat "$WORK/body")" = $'Hello, ada!\nHello, ada!' ] || fail "axum /greet body '$(cat "$WORK/body")'"
get 400 --http1.1 "$H/greet/ada?times=many" >/dev/null
get 404 --http1.1 "$H/no/such/path" >/dev/null
get 405 --http1.1 -X DELETE "$H/json" >/dev/null
head -c 65536 /dev/urandom >"$WORK/64k"
head -c 65537 /dev/urandom >"$WORK/64k+1"
get 200 --http1.1 --data-binary "@$WORK/64k" "$H/echo" >/dev/null
cmp -s "$WORK/64k" "$WORK/body" || fail "axum /echo of 64 KiB: body differs"
get 413 --http1.1 --data-binary "@$WORK/64k+1" "$H/echo" >/dev/null
get 413 --http2-prior-knowledge --data-binary "@$WORK/64k+1" "$H/echo" >/dev/null
[ "$(get 200 --http2-prior-knowledge "$H/")" = "200 text/plain 2" ] || fail "axum h2c"
[ "$(cat "$WORK/body")" = "Hello, World!" ] || fail "axum h2c body"
[ "$(get 200 -k --http2 "$S/json")" = "200 application/json 2" ] || fail "axum https h2"
[ "$(cat "$WORK/body")" = '{"message":"Hello, World!"}' ] || fail "axum https h2 body"
# The self-signed certificate verifies for localhost; http/1.1 by ALPN.
[ "$(get 200 --cacert "$WORK/axum.pem" --http1.1 "https://localhost:$TLS_PORT/")" = "200 text/plain 1.1" ] \
    || fail "axum https http/1.1 with --cacert"
get 200 --http1.1 "$H/stats" >/dev/null
grep -Eq '^\{"core":0,"requests":[1-9][0-9]*\}$' "$WORK/body" || fail "axum /stats '$(cat "$WORK/body")'"
echo "ok: axum with curl (HTTP/1.1, h2c, https h2 and http/1.1; 404, 405, 413)"

# h2load URL PROTOCOL: every request succeeds, over h2c and over TLS (h2 by ALPN).
h2load_check() {
    timeout 60 h2load -n 20000 -c 16 -m 32 "$1" >"$WORK/h2load.txt" 2>&1 \
        || { cat "$WORK/h2load.txt"; fail "h2load $1 failed"; }
    grep -E '^(finished in|requests:|status codes:|Application protocol:)' "$WORK/h2load.txt"
    grep -q '^requests: 20000 total, 20000 started, 20000 done, 20000 succeeded, 0 failed, 0 errored, 0 timeout' \
        "$WORK/h2load.txt" || { cat "$WORK/h2load.txt"; fail "h2load $1: not every request succeeded"; }
    grep -q '^status codes: 20000 2xx' "$WORK/h2load.txt" || fail "h2load $1: non-2xx"
    grep -qx "Application protocol: $2" "$WORK/h2load.txt" || fail "h2load $1: not $2"
}
h2load_check "$H/" h2c
h2load_check "$S/" h2
wrk -t1 -c64 -d3s --timeout 2s "$H/" >"$WORK/wrk.txt"
cat "$WORK/wrk.txt"
! grep -q 'Socket errors' "$WORK/wrk.txt" || fail "axum: wrk socket errors"
! grep -q 'Non-2xx' "$WORK/wrk.txt" || fail "axum: wrk non-2xx responses"
grep -Eq '^ +[1-9][0-9]* requests in' "$WORK/wrk.txt" || fail "axum: wrk made no requests"
echo "ok: axum with h2load (h2c, https) and wrk"

# http-client: 5 requests per URL on one connection, over HTTP/1.1, h2c and https (h2).
client_check() {
    local want=$1; shift
    timeout 30 "$BIN/http-client" -n 5 "$@" >"$WORK/client.txt" 2>&1 \
        || { cat "$WORK/client.txt"; fail "http-client $*"; }
    [ "$(grep -c ": 200 OK, $want, 13 bytes\$" "$WORK/client.txt")" -eq 5 ] \
        || { cat "$WORK/client.txt"; fail "http-client $*: not 5 x 200 $want"; }
    grep -qx 'connections opened: 1' "$WORK/client.txt" \
        || { cat "$WORK/client.txt"; fail "http-client $*: not one connection"; }
}
client_check HTTP/1.1 "$H/"
client_check HTTP/2.0 --http2-prior-knowledge "$H/"
client_check HTTP/2.0 -k "$S/"
client_check HTTP/1.1 --cacert "$WORK/axum.pem" --http1.1 "https://localhost:$TLS_PORT/"
reply=$(timeout 10 "$BIN/http-client" --body -d 'echo me' "$H/echo")
[[ "$reply" == *$'\necho me\n'* ]] || fail "http-client POST: '$reply'"
timeout 10 "$BIN/http-client" "$H/no/such/path" >/dev/null 2>&1 && fail "http-client: 404 exited 0"
timeout 10 "$BIN/http-client" "$S/" >/dev/null 2>&1 && fail "http-client: unknown issuer accepted"
echo "ok: http-client (HTTP/1.1, h2c, https h2 and http/1.1; one connection each)"

# port-scan (the tokio program ported in docs/coming-from-tokio.md): axum's port by the
# name localhost (DNS on the blocking pool) is open, port 1 is closed, and it exits 0.
scan=$(timeout 20 "$BIN/port-scan" localhost "$PORT" 1) || fail "port-scan: $scan"
[[ "$scan" == *"$PORT/tcp open"* && "$scan" == *"1/tcp closed"* ]] || fail "port-scan: '$scan'"
echo "ok: port-scan"

# Graceful stop: SIGTERM in the middle of three streaming responses (10 chunks, 200 ms
# apart: HTTP/1.1, h2c, https h2); each completes, new connections are refused, exit 0.
CURLS=()
for i in 1 2 3; do
    case $i in
        1) args=(--http1.1 "$H/stream?chunks=10&ms=200") ;;
        2) args=(--http2-prior-knowledge "$H/stream?chunks=10&ms=200") ;;
        3) args=(-k --http2 "$S/stream?chunks=10&ms=200") ;;
    esac
    "${C[@]}" "${args[@]}" >"$WORK/stream$i" 2>&1 &
    CURLS+=($!); PIDS+=($!)
done
sleep 0.6
kill -TERM "$PID"
sleep 0.3
! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || fail "axum accepts after SIGTERM"
kill -0 "$PID" 2>/dev/null || fail "axum exited before its streaming responses were done"
for i in 1 2 3; do
    wait "${CURLS[$((i - 1))]}" || { cat "$WORK/stream$i"; fail "streaming curl $i failed across SIGTERM"; }
    [ "$(cat "$WORK/stream$i")" = "$(printf 'chunk %d\n' $(seq 0 9))" ] \
        || { cat "$WORK/stream$i"; fail "streaming response $i incomplete across SIGTERM"; }
done
exited axum "$PID" SIGTERM
echo "ok: axum finishes streaming responses (HTTP/1.1, h2c, https) on SIGTERM, exits 0"

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

for b in echo http axum http-client port-scan redis cp; do
    "$BIN/$b" --help | grep -q usage || fail "$b --help"
done
echo "examples_check: all passed"
