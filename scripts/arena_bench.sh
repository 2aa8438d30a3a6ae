#!/usr/bin/env bash
# HttpArena's load shapes (github MDA2AV/HttpArena, MIT, commit
# 28606bafd5526c28b8438f630d7dca73b2869e28: scripts/lib/profiles.sh and scripts/lib/tools/*.sh,
# the request templates of requests/, vendored in peers/arena/requests) at this machine's scale:
# the server pinned to CPU 0 (taskset -c 0, one core/thread), the load generator pinned to CPU 1
# with one thread, PostgreSQL and Redis (scripts/arena_env.sh) pinned to CPU 1 too, so CPU 0 is
# the server's alone. Contenders run in alternating rounds (A B C D E, A B C D E, ...), each run
# a fresh server process (as HttpArena starts a fresh container per profile); for each run the
# loader's requests/s and the server's CPU time (utime+stime of /proc/PID/stat, all its
# threads, before and after the measured run) give the server's µs of CPU per request. A run
# whose server was less than --min-busy (90 %) busy on CPU 0 in the run's steady middle (1 s
# after the start to 1 s before the end; a quarter of the run for runs under 4 s) is void
# (listed, left out of the medians): the loader, a database or a wait, not the server's CPU,
# set its pace. So is a run with more than 1 % errors (non-2xx, failed requests).
#
# Per profile (HttpArena's tool, arguments and templates; -t 1 everywhere; durations all
# --duration, where upstream runs api-4/api-16/crud 15 s and async-db 10 s):
#   baseline       gcannon --raw get,post_cl,post_chunked        -c 512,4096
#   pipelined      gcannon /pipeline -p 16                        -c 512,4096
#   limited-conn   gcannon --raw get,post_cl,post_chunked -r 10   -c 512,4096
#   json           gcannon --raw json-{1,5,10,15,25,40,50} -r 25  -c 4096
#   json-comp      gcannon --raw json-gzip-{25,40,50} -r 25       -c 512,4096,16384
#   json-tls       wrk -s json-tls-rotate.lua https://:8081       -c 4096
#   upload         gcannon --raw upload-{500k,2m,10m,20m} -r 5    -c 32,256
#   api-4, api-16  gcannon --raw 3 get, 3 json-get, 2 async-db-get -r 5   -c 256 / 1024
#   static         wrk -s static-rotate.lua                       -c 1024,4096,6800
#   async-db       gcannon --raw async-db-{5,10,20,35,50} -r 25   -c 1024
#   crud           gcannon --raw crud-{list,get,create,update}-* -r 200   -c 4096
#   baseline-h2    h2load https://:8443/baseline2?a=1&b=1 -m 100  -c 256,1024
#   static-h2      h2load -i static-h2-uris.txt -m 32 (Accept-Encoding br, gzip)  -c 256,1024
#   baseline-h2c   h2load -p h2c http://:8082/baseline2?a=1&b=1 -m 100  -c 256,1024,4096
#   json-h2c       h2load -p h2c -i json-h2c-uris.txt -m 32       -c 1024,4096
#   unary-grpc     h2load http://:8080/...GetSum -d grpc-sum.bin -m 100   -c 256,1024
#   unary-grpc-tls h2load https://:8443/...GetSum -d grpc-sum.bin -m 100  -c 256,1024
#   stream-grpc(-tls)  upstream: ghz StreamSum {a:1,b:2,count:5000}, 64 connections x 4
#                  streams; here h2load -c 64 -m 4 POSTing that request as a pre-encoded gRPC
#                  frame (ghz is not installed): each reply stream is read whole; counted in
#                  messages (calls x 5000) as upstream does
#   echo-ws        gcannon /ws --ws                               -c 512,4096,16384
# gcannon is HttpArena's io_uring loader (github MDA2AV/gcannon, liburing >= 2.4): $GCANNON,
# default target/peers/gcannon/src/gcannon, built by this script from the stored copies of
# gcannon and liburing 2.9 when those are present (see build_gcannon). Without it the gcannon
# shapes run on wrk with a Lua script rotating the same raw templates per request (gcannon
# rotates them per connection), the same {RAND}/{SEQ} substitution, and `Connection: close` on
# every -r'th request; pipelined sends 16 requests a write; echo-ws has no wrk fallback.
# Connection counts are HttpArena's, capped at (ulimit -n) - 1000 (ulimit -n raised to 20000).
#
# Usage: scripts/arena_bench.sh [--rounds N] [--duration S] [--warmup S] [--profiles a,b,...]
#            [--contenders arena,tokio-ct,tokio-mt,hyper,actix] [--conns all|low|N]
#            [--min-busy PCT] [--json FILE] [--quick] [--no-gcannon]
#   --rounds 3 --duration 5 --warmup 1 (s, unmeasured load on the fresh server) --conns all
#   --conns low: each profile's first (lowest) count; N: that count for every profile
#   --quick: 1 round, 2 s, no warm-up, --conns low (a smoke test of the script)
#   --no-gcannon: gcannon's shapes on wrk even when gcannon is there
# At one server core, TLS handshakes take seconds for thousands of connections (json-tls:
# 4096, RSA 2048): give such runs --duration 10 or more, or --conns low/N.
# Each contender runs the profiles its meta.json lists (arena and the tokio twins:
# examples/arena/meta.json; hyper, actix: peers/arena/*/meta.json). Prints a table of medians
# per profile x contender with the ratios to tokio-ct and to hyper (µs/request and
# requests/s), and with --json FILE writes every run and the medians.
# Run it on an otherwise idle machine; it needs the ports 8080 8081 8082 8443 free.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/arena_env.sh
source scripts/arena_env.sh

# ── Contenders: adjust the command lines here ───────────────────────────────
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
ARENA_BIN="${ARENA_BIN:-$TARGET_DIR/release/arena}"
TOKIO_BIN="${TOKIO_BIN:-$TARGET_DIR/release/arena-tokio}"
CMD_ARENA="$ARENA_BIN --cores 1"
CMD_TOKIO_CT="$TOKIO_BIN --current-thread"
CMD_TOKIO_MT="$TOKIO_BIN --cores 1"
# HttpArena's entries size themselves from the CPUs they may run on (num_cpus, affinity-aware):
# under taskset -c 0 hyper runs one current-thread runtime, actix one worker.
CMD_HYPER="$PEERS_TARGET/release/httparena-hyper"
CMD_ACTIX="$PEERS_TARGET/release/httparena-actix"
BUILD_ARENA="cargo build --release -p arena"
BUILD_TOKIO="cargo build --release -p arena --features tokio-peer"
SERVER_CPU=0
CLIENT_CPU=1
GCANNON_DIR="$PEERS_TARGET/gcannon"
GCANNON="${GCANNON:-$GCANNON_DIR/src/gcannon}"
GCANNON_SRC="${GCANNON_SRC:-/work/.mirror/MDA2AV+gcannon/repo}"
LIBURING_SRC="${LIBURING_SRC:-/work/.mirror/axboe+liburing/repo}"

declare -A CMD=([arena]="$CMD_ARENA" [tokio-ct]="$CMD_TOKIO_CT" [tokio-mt]="$CMD_TOKIO_MT"
                [hyper]="$CMD_HYPER" [actix]="$CMD_ACTIX")
declare -A META=([arena]=examples/arena/meta.json [tokio-ct]=examples/arena/meta.json
                 [tokio-mt]=examples/arena/meta.json [hyper]=peers/arena/hyper/meta.json
                 [actix]=peers/arena/actix/meta.json)

# ── HttpArena's profiles (scripts/lib/profiles.sh): pipeline|req_per_conn|connections|endpoint
declare -A PROFILES=(
    [baseline]="1|0|512,4096|"
    [pipelined]="16|0|512,4096|pipeline"
    [limited-conn]="1|10|512,4096|"
    [json]="1|0|4096|json"
    [json-comp]="1|0|512,4096,16384|json-compressed"
    [json-tls]="1|0|4096|json-tls"
    [upload]="1|0|32,256|upload"
    [api-4]="1|5|256|api-4"
    [api-16]="1|5|1024|api-16"
    [static]="1|200|1024,4096,6800|static"
    [async-db]="1|0|1024|async-db"
    [crud]="1|200|4096|crud"
    [baseline-h2]="1|0|256,1024|h2"
    [static-h2]="1|0|256,1024|static-h2"
    [baseline-h2c]="1|0|256,1024,4096|h2c"
    [json-h2c]="1|0|1024,4096|json-h2c"
    [unary-grpc]="1|0|256,1024|grpc"
    [unary-grpc-tls]="1|0|256,1024|grpc-tls"
    [stream-grpc]="1|0|64|grpc-stream"
    [stream-grpc-tls]="1|0|64|grpc-stream-tls"
    [echo-ws]="1|0|512,4096,16384|ws-echo"
)
PROFILE_ORDER=(baseline pipelined limited-conn json json-comp json-tls upload api-4 api-16
    static async-db crud baseline-h2 static-h2 baseline-h2c json-h2c
    unary-grpc unary-grpc-tls stream-grpc stream-grpc-tls echo-ws)
DB_PROFILES=" async-db crud api-4 api-16 "

ROUNDS=3
DURATION=5
WARMUP=1
PROFILE_FILTER=""
CONTENDERS="arena,tokio-ct,tokio-mt,hyper,actix"
CONNS_MODE=all
MIN_BUSY=90
JSON_OUT=""
NO_GCANNON=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --profiles) PROFILE_FILTER=$2; shift 2 ;;
        --contenders) CONTENDERS=$2; shift 2 ;;
        --conns) CONNS_MODE=$2; shift 2 ;;
        --min-busy) MIN_BUSY=$2; shift 2 ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --quick) ROUNDS=1; DURATION=2; WARMUP=0; CONNS_MODE=low; shift ;;
        --no-gcannon) NO_GCANNON=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "arena_bench: unknown argument $1" >&2; exit 2 ;;
    esac
done

say() { echo "arena_bench: $*"; }
die() { echo "arena_bench: $*" >&2; exit 1; }

[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (server on CPU $SERVER_CPU, loader on CPU $CLIENT_CPU)"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
CONN_CAP=$(( $(ulimit -n) - 1000 ))
CLK_TCK=$(getconf CLK_TCK)

WORK="$(mktemp -d)"
cleanup() {
    arena_env_cleanup
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ── Loaders ─────────────────────────────────────────────────────────────────

build_gcannon() {
    # gcannon's Makefile against liburing 2.9 (static), from the stored copies of both.
    # Only the default location is built (a GCANNON given by the caller is theirs).
    [ "$GCANNON" = "$GCANNON_DIR/src/gcannon" ] || return 1
    [ -d "$GCANNON_SRC" ] && [ -d "$LIBURING_SRC" ] || return 1
    local dir=$GCANNON_DIR
    say "building gcannon into $dir (liburing 2.9, static)"
    rm -rf "$dir/liburing" "$dir/src" "$dir/prefix"
    mkdir -p "$dir/liburing" "$dir/src" || return 1
    git -C "$LIBURING_SRC" archive liburing-2.9 | tar -x -C "$dir/liburing" || return 1
    ( cd "$dir/liburing" && ./configure --prefix="$dir/prefix" >/dev/null \
        && make -j"$(nproc)" -C src >/dev/null 2>&1 && make install -C src >/dev/null 2>&1 ) || return 1
    git -C "$GCANNON_SRC" archive HEAD | tar -x -C "$dir/src" || return 1
    ( cd "$dir/src" && make -j"$(nproc)" \
        CFLAGS="-O2 -Wall -march=native -Iinclude -DUSE_PICO -Iexternal/picohttpparser -I$dir/prefix/include" \
        LDFLAGS="$dir/prefix/lib/liburing.a -lpthread" >/dev/null 2>&1 ) || return 1
    [ -x "$GCANNON" ]
}

if [ "$NO_GCANNON" = 1 ]; then
    say "--no-gcannon: gcannon's profiles run on wrk (rotating the raw templates); echo-ws is skipped"
    GCANNON=""
elif [ ! -x "$GCANNON" ] && ! build_gcannon; then
    say "gcannon unavailable: its profiles run on wrk (rotating the raw templates); echo-ws is skipped"
    GCANNON=""
fi
for tool in wrk h2load curl; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install wrk nghttp2-client curl)"
done

REQ="$ARENA_REQUESTS"
# upload templates (upstream's requests/upload-*.raw: the header, then random bytes)
for spec in 500k:512000 2m:2097152 10m:10485760 20m:20971520; do
    printf 'POST /upload HTTP/1.1\r\nHost: localhost:8080\r\nContent-Length: %s\r\n\r\n' "${spec#*:}" >"$WORK/upload-${spec%%:*}.raw"
    head -c "${spec#*:}" /dev/urandom >>"$WORK/upload-${spec%%:*}.raw"
done
# StreamSum{a:1,b:2,count:5000} as a gRPC frame: 00, length 7, 08 01 10 02 18 88 27
printf '\x00\x00\x00\x00\x07\x08\x01\x10\x02\x18\x88\x27' >"$WORK/grpc-stream.bin"

# gcannon_templates ENDPOINT: the --raw list of gcannon_build_args.
gcannon_templates() {
    case "$1" in
        "") echo "$REQ/get.raw,$REQ/post_cl.raw,$REQ/post_chunked.raw" ;;
        upload) echo "$WORK/upload-500k.raw,$WORK/upload-2m.raw,$WORK/upload-10m.raw,$WORK/upload-20m.raw" ;;
        api-4|api-16) echo "$REQ/get.raw,$REQ/get.raw,$REQ/get.raw,$REQ/json-get.raw,$REQ/json-get.raw,$REQ/json-get.raw,$REQ/async-db-get.raw,$REQ/async-db-get.raw" ;;
        async-db) echo "$REQ/async-db-5.raw,$REQ/async-db-10.raw,$REQ/async-db-20.raw,$REQ/async-db-35.raw,$REQ/async-db-50.raw" ;;
        json) echo "$REQ/json-1.raw,$REQ/json-5.raw,$REQ/json-10.raw,$REQ/json-15.raw,$REQ/json-25.raw,$REQ/json-40.raw,$REQ/json-50.raw" ;;
        json-compressed) echo "$REQ/json-gzip-25.raw,$REQ/json-gzip-40.raw,$REQ/json-gzip-50.raw" ;;
        crud) find "$REQ" -maxdepth 1 \( -name 'crud-list-*.raw' -o -name 'crud-get-*.raw' -o -name 'crud-create-*.raw' -o -name 'crud-update-*.raw' \) | sort | paste -sd, ;;
    esac
}

# gcannon's -r for an endpoint (upstream hard-codes some, takes the profile's for others).
gcannon_rpc() {
    local endpoint=$1 req=$2
    case "$endpoint" in
        upload) echo 5 ;;
        async-db|json|json-compressed) echo 25 ;;
        ""|api-4|api-16|crud) echo "$req" ;;
        *) echo 0 ;;
    esac
}

# wrk_rotate_lua FILE TEMPLATES RPC PIPELINE: the wrk fallback for a gcannon shape.
wrk_rotate_lua() {
    local out=$1 templates=$2 rpc=$3 pipeline=$4 list="" f
    IFS=',' read -r -a files <<< "$templates"
    for f in "${files[@]}"; do list="$list\"$f\","; done
    cat >"$out" <<LUA
local files = { $list }
local rpc = $rpc
local depth = $pipeline
local reqs, closing, has_ph = {}, {}, {}
local n = 0
local seq = {}
local function close_it(t) return (t:gsub("\r\n", "\r\nConnection: close\r\n", 1)) end
for i, f in ipairs(files) do
  local h = assert(io.open(f, "rb")); reqs[i] = h:read("*a"); h:close()
  has_ph[i] = reqs[i]:find("{RAND:", 1, true) or reqs[i]:find("{SEQ:", 1, true)
  closing[i] = close_it(reqs[i])   -- made once: templates can be 20 MB
end
local function fill(t)
  t = t:gsub("{RAND:(%d+):(%d+)}", function(a, b)
    return string.format("%0" .. #b .. "d", math.random(tonumber(a), tonumber(b)))
  end, 1)
  t = t:gsub("{SEQ:(%d+)}", function(s)
    seq[s] = (seq[s] or tonumber(s) - 1) + 1
    return string.format("%0" .. #s .. "d", seq[s])
  end, 1)
  return t
end
request = function()
  local out = {}
  for k = 1, depth do
    n = n + 1
    local i = ((n - 1) % #reqs) + 1
    local last = rpc > 0 and n % rpc == 0
    local t
    if has_ph[i] then
      t = fill(reqs[i])
      if last then t = close_it(t) end
    else
      t = last and closing[i] or reqs[i]
    end
    out[k] = t
  end
  if depth == 1 then return out[1] end
  return table.concat(out)
end
LUA
}

# loader_cmd ENDPOINT CONNS PIPELINE REQ DURATION: prints the loader's argv, one a line, and
# sets LOADER (gcannon|wrk|h2load) and MSGS_PER_CALL.
loader_cmd() {
    local endpoint=$1 conns=$2 pipeline=$3 req=$4 dur=$5 rpc templates
    MSGS_PER_CALL=1
    case "$endpoint" in
        static)
            LOADER=wrk
            printf '%s\n' wrk -t 1 -c "$conns" -d "${dur}s" -s "$REQ/static-rotate.lua" "http://localhost:8080" ;;
        json-tls)
            LOADER=wrk
            printf '%s\n' wrk -t 1 -c "$conns" -d "${dur}s" -s "$REQ/json-tls-rotate.lua" "https://localhost:8081" ;;
        h2)
            LOADER=h2load
            printf '%s\n' h2load "https://localhost:8443/baseline2?a=1&b=1" -c "$conns" -m 100 -t 1 -D "$dur" ;;
        static-h2)
            LOADER=h2load
            printf '%s\n' h2load -i "$REQ/static-h2-uris.txt" -H "Accept-Encoding: br;q=1, gzip;q=0.8" -c "$conns" -m 32 -t 1 -D "$dur" ;;
        h2c)
            LOADER=h2load
            printf '%s\n' h2load "http://localhost:8082/baseline2?a=1&b=1" -p h2c -c "$conns" -m 100 -t 1 -D "$dur" ;;
        json-h2c)
            LOADER=h2load
            printf '%s\n' h2load -i "$REQ/json-h2c-uris.txt" -p h2c -c "$conns" -m 32 -t 1 -D "$dur" ;;
        grpc|grpc-tls)
            LOADER=h2load
            local url="http://localhost:8080"
            [ "$endpoint" = grpc-tls ] && url="https://localhost:8443"
            printf '%s\n' h2load "$url/benchmark.BenchmarkService/GetSum" -d "$REQ/grpc-sum.bin" \
                -H "content-type: application/grpc" -H "te: trailers" -c "$conns" -m 100 -t 1 -D "$dur" ;;
        grpc-stream|grpc-stream-tls)
            LOADER=h2load
            MSGS_PER_CALL=5000
            local url="http://localhost:8080"
            [ "$endpoint" = grpc-stream-tls ] && url="https://localhost:8443"
            printf '%s\n' h2load "$url/benchmark.BenchmarkService/StreamSum" -d "$WORK/grpc-stream.bin" \
                -H "content-type: application/grpc" -H "te: trailers" -c "$conns" -m 4 -t 1 -D "$dur" ;;
        ws-echo)
            [ -n "$GCANNON" ] || return 1
            LOADER=gcannon
            printf '%s\n' "$GCANNON" "http://localhost:8080/ws" --ws -c "$conns" -t 1 -d "${dur}s" -p "$pipeline" ;;
        pipeline)
            if [ -n "$GCANNON" ]; then
                LOADER=gcannon
                printf '%s\n' "$GCANNON" "http://localhost:8080/pipeline" -c "$conns" -t 1 -d "${dur}s" -p "$pipeline"
            else
                LOADER=wrk
                wrk_rotate_lua "$WORK/rotate.lua" "$REQ/pipeline.raw" 0 "$pipeline"
                printf '%s\n' wrk -t 1 -c "$conns" -d "${dur}s" -s "$WORK/rotate.lua" "http://localhost:8080"
            fi ;;
        *)
            rpc=$(gcannon_rpc "$endpoint" "$req")
            templates=$(gcannon_templates "$endpoint")
            if [ -n "$GCANNON" ]; then
                LOADER=gcannon
                printf '%s\n' "$GCANNON" "http://localhost:8080" --raw "$templates" -c "$conns" -t 1 -d "${dur}s" -p "$pipeline"
                [ "$rpc" -gt 0 ] && printf '%s\n' -r "$rpc"
            else
                LOADER=wrk
                wrk_rotate_lua "$WORK/rotate.lua" "$templates" "$rpc" "$pipeline"
                printf '%s\n' wrk -t 1 -c "$conns" -d "${dur}s" -s "$WORK/rotate.lua" "http://localhost:8080"
            fi ;;
    esac
    return 0
}

# parse_loader LOADER ENDPOINT OUTPUT_FILE: prints "ok errors seconds" (ok: 2xx responses, or
# WebSocket frames received, or gRPC messages; errors: other responses and failed requests).
parse_loader() {
    local loader=$1 endpoint=$2 file=$3 ok=0 err=0 secs=0 line
    case "$loader" in
        gcannon)
            secs=$(grep -oP '(?:requests|frames sent) in \K[\d.]+' "$file" | head -1)
            if [ "$endpoint" = ws-echo ]; then
                ok=$(grep -oP '\d+(?=\s+(?:responses|frames received))' "$file" | head -1)
            else
                ok=$(grep -oP '2xx=\K\d+' "$file" | head -1)
                line=$(grep -oP '3xx=\d+, 4xx=\d+, 5xx=\d+' "$file" | head -1)
                err=$(echo "$line" | grep -oP '\d+(?=,|$)' | awk '{s+=$1} END {print s+0}')
            fi ;;
        wrk)
            ok=$(grep -oP '\d+(?= requests in)' "$file" | head -1)
            secs=$(grep -oP 'requests in \K[\d.]+(?=s)' "$file" | head -1)
            local m
            m=$(grep -oP 'requests in \K[\d.]+(?=m)' "$file" | head -1)
            [ -n "$m" ] && secs=$(awk -v m="$m" 'BEGIN{print m*60}')
            err=$(grep -oP 'Non-2xx or 3xx responses: \K\d+' "$file" | head -1)
            err=${err:-0}
            ok=$(( ${ok:-0} - err ))
            local se
            se=$(grep -oP 'Socket errors: connect \d+, read \d+, write \d+, timeout \d+' "$file" | grep -oP '\d+' | awk '{s+=$1} END {print s+0}')
            err=$(( err + ${se:-0} )) ;;
        h2load)
            secs=$(grep -oP 'finished in \K[\d.]+(?=s)' "$file" | head -1)
            ok=$(grep -oP '\d+(?= 2xx)' "$file" | head -1)
            line=$(grep -oP 'status codes: .*' "$file" | head -1)
            err=$(echo "$line" | grep -oP '\d+(?= [345]xx)' | awk '{s+=$1} END {print s+0}')
            local fe
            fe=$(grep -oP 'requests: .*' "$file" | grep -oP '\d+(?= (?:failed|errored))' | awk '{s+=$1} END {print s+0}')
            err=$(( err + ${fe:-0} ))
            ok=$(( ${ok:-0} * MSGS_PER_CALL )) ;;
    esac
    echo "${ok:-0} ${err:-0} ${secs:-0}"
}

cpu_ticks() {
    # utime + stime of every thread of PID (fields 14 and 15 of /proc/PID/stat)
    sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'
}

# ── Contenders and profiles ────────────────────────────────────────────────

IFS=',' read -r -a WANT_CONTENDERS <<< "$CONTENDERS"
for c in "${WANT_CONTENDERS[@]}"; do
    [ -n "${CMD[$c]+x}" ] || die "unknown contender $c (arena tokio-ct tokio-mt hyper actix)"
done
if [ -n "$PROFILE_FILTER" ]; then
    IFS=',' read -r -a WANT_PROFILES <<< "$PROFILE_FILTER"
    for p in "${WANT_PROFILES[@]}"; do
        [ -n "${PROFILES[$p]+x}" ] || die "unknown profile $p"
    done
else
    WANT_PROFILES=("${PROFILE_ORDER[@]}")
fi

# ensure_contender NAME: the binary is there (built when missing) and so is its meta.json.
ensure_contender() {
    local c=$1 bin
    read -r bin _ <<< "${CMD[$c]}"
    if [ ! -x "$bin" ]; then
        case "$c" in
            arena) say "building arena: $BUILD_ARENA"; bash -c "$BUILD_ARENA" >"$WORK/build-$c.log" 2>&1 ;;
            tokio-ct|tokio-mt) say "building arena-tokio: $BUILD_TOKIO"; bash -c "$BUILD_TOKIO" >"$WORK/build-$c.log" 2>&1 ;;
            hyper|actix)
                say "building peers/arena/$c into $PEERS_TARGET"
                ( cd "peers/arena/$c" && CARGO_TARGET_DIR="$PEERS_TARGET" cargo build --release ) >"$WORK/build-$c.log" 2>&1 ;;
        esac
    fi
    if [ ! -x "$bin" ]; then
        say "skipping $c: no $bin$( [ -s "$WORK/build-$c.log" ] && echo " (build failed: $(tail -n 1 "$WORK/build-$c.log"))")"
        return 1
    fi
    [ -f "${META[$c]}" ] || { say "skipping $c: no ${META[$c]}"; return 1; }
}

declare -A TESTS
ACTIVE=()
for c in "${WANT_CONTENDERS[@]}"; do
    ensure_contender "$c" || continue
    TESTS[$c]=" $(arena_meta_tests "${META[$c]}" | tr '\n' ' ') "
    ACTIVE+=("$c")
done
[ "${#ACTIVE[@]}" -gt 0 ] || die "no contender to run"

need_db=""
need_data_link=""
for p in "${WANT_PROFILES[@]}"; do
    for c in "${ACTIVE[@]}"; do
        [[ "${TESTS[$c]}" == *" $p "* ]] || continue
        [[ "$DB_PROFILES" == *" $p "* ]] && need_db=db
        case "$c:$p" in hyper:static*|actix:static*) need_data_link=1 ;; esac
    done
done

arena_env_setup "$WORK" $need_db || die "environment setup failed"
DB_URL="${DATABASE_URL:-}"
DB_REDIS="${REDIS_URL:-}"
unset DATABASE_URL REDIS_URL
if [ -n "$need_db" ]; then
    # PostgreSQL (postmaster and the processes it has forked so far; backends inherit) and
    # Redis on the loader's CPU: CPU 0 is the server's.
    pm=$(head -1 "$PG_DIR/data/postmaster.pid")
    for pid in "$pm" $(pgrep -P "$pm") "$ARENA_REDIS_PID"; do
        taskset -a -p -c "$CLIENT_CPU" "$pid" >/dev/null 2>&1 || true
    done
    say "PostgreSQL $DB_URL, Redis $DB_REDIS (both on CPU $CLIENT_CPU)"
fi
[ -n "$need_data_link" ] && { arena_data_link || die "/data/static for the peers"; }
arena_ports_free || exit 1

# profile_conns PROFILE: the connection counts to run.
profile_conns() {
    local spec=${PROFILES[$1]} conns
    IFS='|' read -r _ _ conns _ <<< "$spec"
    case "$CONNS_MODE" in
        all) ;;
        low) conns=${conns%%,*} ;;
        *) conns=$CONNS_MODE ;;
    esac
    local c out=""
    for c in ${conns//,/ }; do
        [ "$c" -gt "$CONN_CAP" ] && c=$CONN_CAP
        out="$out $c"
    done
    echo "$out"
}

RUNS="$WORK/runs.tsv"
: >"$RUNS"

# run_one PROFILE CONNS CONTENDER ROUND
run_one() {
    local profile=$1 conns=$2 c=$3 round=$4 spec pipeline req endpoint
    spec=${PROFILES[$profile]}
    IFS='|' read -r pipeline req _ endpoint <<< "$spec"
    local -a envs=() cmd loader
    if [[ "$DB_PROFILES" == *" $profile "* ]]; then
        envs+=("DATABASE_URL=$DB_URL")
        [ "$profile" = crud ] && envs+=("REDIS_URL=$DB_REDIS")
    fi
    read -r -a cmd <<< "${CMD[$c]}"
    local log="$WORK/server-$c.log"
    arena_server_start "$c" "$SERVER_CPU" "$log" env "${envs[@]}" "${cmd[@]}"
    local pid=$ARENA_SERVER_PID
    if ! arena_wait_ready 30; then
        say "$c did not start for $profile: $(tail -n 3 "$log" | tr '\n' ' ')"
        arena_server_stop
        printf '%s\t%s\t%s\t%s\t0\t0\t0\t0\t0\t0\t0\t0\tserver did not start\n' "$profile" "$conns" "$c" "$round" >>"$RUNS"
        return
    fi
    # loader_cmd runs in this shell (not in a $(...)) so that LOADER and MSGS_PER_CALL stick.
    if ! loader_cmd "$endpoint" "$conns" "$pipeline" "$req" "$DURATION" >"$WORK/argv"; then
        arena_server_stop
        printf '%s\t%s\t%s\t%s\t0\t0\t0\t0\t0\t0\t0\t0\tno loader\n' "$profile" "$conns" "$c" "$round" >>"$RUNS"
        say "$profile: no loader (gcannon missing)"
        return
    fi
    mapfile -t loader <"$WORK/argv"
    if [ "$WARMUP" != 0 ]; then
        local -a warm
        loader_cmd "$endpoint" "$conns" "$pipeline" "$req" "$WARMUP" >"$WORK/argv-warm"
        mapfile -t warm <"$WORK/argv-warm"
        timeout $((WARMUP + 30)) taskset -c "$CLIENT_CPU" "${warm[@]}" >/dev/null 2>&1
    fi
    # CPU over the whole loader run (for µs/request), and over its steady middle (for busy %:
    # from RAMP s after the start to RAMP s before the end, leaving out connects and teardown).
    local out="$WORK/loader.out" t0 t1 c0 c1 ta tb ca cb lpid ramp mid
    ramp=$(awk -v d="$DURATION" 'BEGIN { print (d >= 4 ? 1 : d / 4) }')
    mid=$(awk -v d="$DURATION" -v r="$ramp" 'BEGIN { print d - 2 * r }')
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s.%N)
    timeout $((DURATION + 60)) taskset -c "$CLIENT_CPU" "${loader[@]}" >"$out" 2>&1 &
    lpid=$!
    sleep "$ramp"
    ca=$(cpu_ticks "$pid"); ta=$(date +%s.%N)
    sleep "$mid"
    cb=$(cpu_ticks "$pid"); tb=$(date +%s.%N)
    wait "$lpid"
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$pid")
    local alive=1
    kill -0 "$pid" 2>/dev/null || alive=0
    arena_server_stop
    local ok err secs
    read -r ok err secs <<< "$(parse_loader "$LOADER" "$endpoint" "$out")"
    if [ -z "$c0" ] || [ -z "$c1" ] || [ -z "$ca" ] || [ -z "$cb" ]; then c0=0; c1=0; ca=0; cb=0; fi
    python3 - "$profile" "$conns" "$c" "$round" "$ok" "$err" "$secs" "$c0" "$c1" "$CLK_TCK" "$t0" "$t1" \
        "$ca" "$cb" "$ta" "$tb" "$alive" "$MIN_BUSY" >>"$RUNS" <<'PY'
import sys
(profile, conns, c, rnd, ok, err, secs, c0, c1, tck, t0, t1,
 ca, cb, ta, tb, alive, min_busy) = sys.argv[1:]
ok, err, secs, tck = int(ok), int(err), float(secs or 0), int(tck)
cpu = (int(c1) - int(c0)) / tck
wall = float(t1) - float(t0)
window = float(tb) - float(ta)
rps = ok / secs if secs > 0 else 0.0
busy = 100.0 * (int(cb) - int(ca)) / tck / window if window > 0 else 0.0
us = cpu * 1e6 / ok if ok > 0 else 0.0
void = []
if alive == "0": void.append("server died")
if ok == 0: void.append("no successful responses")
elif err > 0.01 * (ok + err): void.append(f"{err} errors")
if busy < float(min_busy): void.append(f"server {busy:.0f}% busy")
print("\t".join([profile, conns, c, rnd, f"{rps:.1f}", str(ok), str(err), f"{secs:.3f}",
                 f"{cpu:.3f}", f"{wall:.3f}", f"{us:.3f}", f"{busy:.1f}", "; ".join(void) or "-"]))
PY
    local last
    last=$(tail -n 1 "$RUNS")
    IFS=$'\t' read -r _ _ _ _ rps _ _ _ cpu _ us busy why <<< "$last"
    printf '  %-16s %-6s %-9s round %s: %10s req/s  cpu %6ss  %8s µs/req  busy %5s%%  %s\n' \
        "$profile" "$conns" "$c" "$round" "$rps" "$cpu" "$us" "$busy" "$( [ "$why" = - ] && echo ok || echo "VOID ($why)")"
    if [ "$why" != - ] && [ -s "$out" ] && [[ "$why" == *"no successful"* || "$why" == *errors* ]]; then
        tail -n 6 "$out" | sed 's/^/      | /'
    fi
}

say "contenders: ${ACTIVE[*]}; profiles: ${WANT_PROFILES[*]}"
say "rounds $ROUNDS, ${DURATION}s a run (+${WARMUP}s warm-up), conns $CONNS_MODE (cap $CONN_CAP), server CPU $SERVER_CPU, loader CPU $CLIENT_CPU, loader ${GCANNON:+gcannon/}wrk/h2load"
[ -n "${RUNTIME_BACKEND:-}" ] && say "RUNTIME_BACKEND=$RUNTIME_BACKEND (passed to the servers)"
for p in "${WANT_PROFILES[@]}"; do
    players=()
    for c in "${ACTIVE[@]}"; do
        [[ "${TESTS[$c]}" == *" $p "* ]] && players+=("$c")
    done
    [ "${#players[@]}" -gt 0 ] || { say "$p: no contender lists it"; continue; }
    for conns in $(profile_conns "$p"); do
        for round in $(seq "$ROUNDS"); do
            for c in "${players[@]}"; do
                run_one "$p" "$conns" "$c" "$round"
            done
        done
    done
done

# ── Report ──────────────────────────────────────────────────────────────────

contenders_json=$(for c in "${ACTIVE[@]}"; do printf '%s\t%s\n' "$c" "${CMD[$c]}"; done)
CONTENDERS_TSV="$contenders_json" LOADER_H1="${GCANNON:+gcannon}" \
python3 - "$RUNS" "$JSON_OUT" "$MIN_BUSY" "$ROUNDS" "$DURATION" "$HTTPARENA_COMMIT" <<'PY'
import json, os, statistics, sys
runs_file, json_out, min_busy, rounds, duration, commit = sys.argv[1:]
contenders = dict(l.split("\t", 1) for l in os.environ.get("CONTENDERS_TSV", "").splitlines() if "\t" in l)
runs = []
for line in open(runs_file):
    f = line.rstrip("\n").split("\t")
    if len(f) < 13:
        continue
    runs.append(dict(profile=f[0], conns=int(f[1]), contender=f[2], round=int(f[3]), rps=float(f[4]),
                     ok=int(f[5]), errors=int(f[6]), seconds=float(f[7]), server_cpu_s=float(f[8]),
                     wall_s=float(f[9]), us_per_req=float(f[10]),
                     busy_pct=float(f[11]), void=(None if f[12] == "-" else f[12])))
cells = {}
for r in runs:
    cells.setdefault((r["profile"], r["conns"]), {}).setdefault(r["contender"], []).append(r)
med = []
for (p, n), by in cells.items():
    for c, rs in by.items():
        valid = [r for r in rs if r["void"] is None]
        use = valid or [r for r in rs if r["ok"] > 0]
        m = dict(profile=p, conns=n, contender=c, runs=len(rs), valid=len(valid),
                 rps=statistics.median([r["rps"] for r in use]) if use else 0.0,
                 us_per_req=statistics.median([r["us_per_req"] for r in use]) if use else 0.0,
                 busy_pct=statistics.median([r["busy_pct"] for r in use]) if use else 0.0,
                 from_void_runs=not valid)
        med.append(m)
index = {(m["profile"], m["conns"], m["contender"]): m for m in med}
def ratio(m, ref, key):
    r = index.get((m["profile"], m["conns"], ref))
    if not r or not r[key] or not m[key]:
        return None
    return m[key] / r[key]
for m in med:
    m["us_vs_tokio_ct"] = ratio(m, "tokio-ct", "us_per_req")
    m["us_vs_hyper"] = ratio(m, "hyper", "us_per_req")
    m["rps_vs_tokio_ct"] = ratio(m, "tokio-ct", "rps")
    m["rps_vs_hyper"] = ratio(m, "hyper", "rps")
order = ["arena", "tokio-ct", "tokio-mt", "hyper", "actix"]
seen = []
for r in runs:
    k = (r["profile"], r["conns"])
    if k not in seen:
        seen.append(k)
fmt = lambda x: "-" if x is None else f"{x:.2f}"
print()
print(f"Medians over {rounds} round(s) of {duration}s; µs/req = server CPU µs per request "
      f"(stream-grpc: per message); ratios: contender / reference (µs: lower is better, rps: higher is better); "
      f"* = every run void (busy < {min_busy}% or errors), median of those")
hdr = f"{'profile':<16} {'conns':>6} {'contender':<9} {'req/s':>11} {'µs/req':>8} {'busy%':>6} {'valid':>5}  {'µs/tokio-ct':>11} {'µs/hyper':>8} {'rps/tokio-ct':>12} {'rps/hyper':>9}"
print(hdr)
print("-" * len(hdr))
for k in seen:
    for c in sorted(cells[k], key=lambda c: order.index(c) if c in order else 99):
        m = index[(k[0], k[1], c)]
        star = "*" if m["from_void_runs"] else " "
        print(f"{k[0]:<16} {k[1]:>6} {c:<9} {m['rps']:>11.0f}{star}{m['us_per_req']:>8.2f} {m['busy_pct']:>6.0f} {m['valid']:>2}/{m['runs']:<2}  "
              f"{fmt(m['us_vs_tokio_ct']):>11} {fmt(m['us_vs_hyper']):>8} {fmt(m['rps_vs_tokio_ct']):>12} {fmt(m['rps_vs_hyper']):>9}")
void = [r for r in runs if r["void"]]
if void:
    print(f"\n{len(void)} void run(s):")
    for r in void:
        print(f"  {r['profile']} {r['conns']} {r['contender']} round {r['round']}: {r['void']}")
if json_out:
    with open(json_out, "w") as f:
        json.dump(dict(httparena_commit=commit, rounds=int(rounds), duration_s=float(duration),
                       min_busy_pct=float(min_busy), contenders=contenders,
                       h1_loader=os.environ.get("LOADER_H1") or "wrk (gcannon fallback)",
                       server_cpu=0, loader_cpu=1, runs=runs, medians=med), f, indent=1)
    print(f"\nwrote {json_out}")
PY
