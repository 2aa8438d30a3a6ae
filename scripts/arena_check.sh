#!/usr/bin/env bash
# HttpArena's validation (scripts/validate.sh and scripts/validate-ws.py of github
# MDA2AV/HttpArena, MIT, commit 28606bafd5526c28b8438f630d7dca73b2869e28) run against a local
# process instead of a container: the same requests, the same expected answers, the same
# randomised anti-cheat inputs and fragmented requests, per profile as validate.sh selects
# them from the entry's meta.json. What differs from upstream:
#   - the server is a local process started with HttpArena's environment (DATASET_PATH,
#     STATIC_DIR, TLS_CERT, TLS_KEY, and for async-db/crud/api-4/api-16 DATABASE_URL,
#     DATABASE_MAX_CONN, REDIS_URL) pointing at the project's copies (examples/arena/data,
#     examples/arena/certs), on HttpArena's ports 8080 (HTTP/1.1 and gRPC h2c), 8081 (HTTP/1.1
#     over TLS), 8082 (h2c prior knowledge) and 8443 (TLS: h2, gRPC); the environment
#     (RUNTIME_BACKEND=epoll included) passes through to it;
#   - PostgreSQL and Redis are private processes (scripts/arena_env.sh), not sidecars;
#   - gRPC (unary-grpc, unary-grpc-tls, stream-grpc, stream-grpc-tls): validate.sh has no
#     checks; these use a real client (Python grpcio, stubs generated at run time from
#     HttpArena's requests/benchmark.proto, the copy in examples/arena/proto): GetSum over h2c on 8080 and over TLS on 8443, the
#     benchmark's pre-encoded frame by curl and by h2load, and the three StreamSum checks of
#     HttpArena's stream validation page (count 10, count 5000 with every reply checked, count 0:
#     no reply, or the single reply a+b of the implementation page's clamp to >= 1);
#   - echo-ws: validate-ws.py's checks (its raw-socket client, ported as is), plus one check
#     with the Python websockets client;
#   - one local check at the end: the server is still running.
# Gateway and production-stack profiles (docker compose stacks) are not ported.
#
# Usage: scripts/arena_check.sh [--bin PATH] [--meta FILE] [--args "SERVER ARGS"]
#   --bin   the server (default target/release/arena, built with
#           `cargo build --release -p arena` when missing)
#   --meta  the HttpArena meta.json whose "tests" are checked (default examples/arena/meta.json)
#   --args  extra arguments for the server (default none)
# Against HttpArena's own entries (peers/arena, built into target/peers):
#   scripts/arena_check.sh --bin target/peers/release/httparena-hyper --meta peers/arena/hyper/meta.json
#   scripts/arena_check.sh --bin target/peers/release/httparena-actix --meta peers/arena/actix/meta.json
# The tokio twin: scripts/arena_check.sh --bin target/release/arena-tokio --args --current-thread
# HttpArena's entries read /data/static (hard-coded upstream): when /data does not exist, it is
# made a symlink to examples/arena/data for the run (so two such runs at once share it, and the
# first to end removes it). Needs curl (with HTTP/2), h2load, python3
# (grpcio, grpcio-tools and websockets are pip-installed when missing), PostgreSQL and
# redis-server (apt-installed when missing). Exits 1 when a check fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/arena_env.sh
source scripts/arena_env.sh

BIN=""
META="examples/arena/meta.json"
SERVER_ARGS=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --meta) META=$2; shift 2 ;;
        --args) SERVER_ARGS=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "arena_check: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$BIN" ]; then
    BIN="${CARGO_TARGET_DIR:-target}/release/arena"
    if [ ! -x "$BIN" ]; then
        echo "[build] cargo build --release -p arena"
        cargo build --release -p arena || { echo "FAIL: cargo build --release -p arena"; exit 1; }
    fi
fi
[ -x "$BIN" ] || { echo "FAIL: no executable $BIN"; exit 1; }
[ -f "$META" ] || { echo "FAIL: meta.json not found: $META"; exit 1; }

PORT=8080
H2PORT=8443
H1TLS_PORT=8081
H2C_PORT=8082
PASS=0
FAIL=0
FAILED=()

WORK="$(mktemp -d)"
WATCHDOG_PID=""
cleanup() {
    [ -n "$WATCHDOG_PID" ] && kill "$WATCHDOG_PID" 2>/dev/null
    arena_env_cleanup
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# validate.sh's overall timeout (VALIDATE_TIMEOUT there).
CHECK_TIMEOUT=${ARENA_CHECK_TIMEOUT:-300}
(
    sleep "$CHECK_TIMEOUT" >/dev/null 2>&1 &
    sleep_pid=$!
    trap 'kill "$sleep_pid" 2>/dev/null; exit 0' TERM
    wait "$sleep_pid"
    echo ""
    echo "FAIL: Validation timed out after ${CHECK_TIMEOUT}s"
    kill -TERM $$ 2>/dev/null
) &
WATCHDOG_PID=$!

TESTS=$(arena_meta_tests "$META" | tr '\n' ' ')
echo "=== Validating: $BIN ($META) ==="
echo "[info] HttpArena $HTTPARENA_COMMIT checks; subscribed tests: $TESTS"

has_test() {
    [[ " $TESTS " == *" $1 "* ]]
}

need_db=""
if has_test "async-db" || has_test "crud" || has_test "api-4" || has_test "api-16"; then
    need_db=db
fi
arena_env_setup "$WORK" $need_db || { echo "FAIL: environment setup"; exit 1; }
[ -n "$need_db" ] && echo "[postgres] $DATABASE_URL (seed $ARENA_DATA/pgdb-seed.sql); [redis] $REDIS_URL"
DATA_DIR="$ARENA_DATA"

case "$(basename "$BIN")" in
    httparena-*)
        if has_test "static" || has_test "static-h2"; then
            arena_data_link || { echo "FAIL: /data/static for $BIN"; exit 1; }
        fi ;;
esac

arena_ports_free || exit 1
read -r -a server_args <<< "$SERVER_ARGS"
arena_server_start server "" "$WORK/server.log" "$BIN" "${server_args[@]}"
echo "[wait] Waiting for server (pid $ARENA_SERVER_PID)..."
if ! arena_wait_ready 30; then
    echo "FAIL: Server did not start within 30s"
    tail -n 30 "$WORK/server.log"
    exit 1
fi
echo "[ready] Server is up"

# ───── Helpers (validate.sh's, with the failing label kept for the summary) ─────

DOCS_BASE="https://www.http-arena.com/docs/test-profiles"

fail_with_link() {
    local msg="$1"
    local docs_url="$2"
    echo "  FAIL $msg"
    if [ -n "$docs_url" ]; then
        echo "        → $docs_url"
    fi
    FAIL=$((FAIL + 1))
    FAILED+=("$msg")
}

pass() {
    echo "  PASS $1"
    PASS=$((PASS + 1))
}

dump_debug() {
    local trace="$1"
    local response="$2"
    if [ -n "$trace" ] && [ -s "$trace" ]; then
        echo "        ─── wire trace ───"
        head -c 4000 "$trace" | sed 's/^/        /'
    fi
    if [ -n "$response" ]; then
        echo "        ─── response ───"
        printf '%s\n' "$response" | head -c 4000 | sed 's/^/        /'
    fi
    [ -n "$trace" ] && rm -f "$trace"
}

check() {
    local label="$1"
    local expected_body="$2"
    local docs_url="$3"
    shift 3
    local response trace
    trace=$(mktemp -p "$WORK")
    response=$(curl -s --max-time 30 -D- --trace-ascii "$trace" "$@" || true)
    local body
    body=$(echo "$response" | tail -1)

    if [ "$body" = "$expected_body" ]; then
        pass "[$label]"
        rm -f "$trace"
    else
        fail_with_link "[$label]: expected body '$expected_body', got '$body'" "$docs_url"
        dump_debug "$trace" "$response"
    fi
}

check_status() {
    local label="$1"
    local expected_status="$2"
    local docs_url="$3"
    shift 3
    local http_code trace body_file
    trace=$(mktemp -p "$WORK")
    body_file=$(mktemp -p "$WORK")
    http_code=$(curl -s --max-time 30 -o "$body_file" -D "$body_file.hdr" -w '%{http_code}' --trace-ascii "$trace" "$@" || true)

    if [ "$http_code" = "$expected_status" ]; then
        pass "[$label] (HTTP $http_code)"
        rm -f "$trace" "$body_file" "$body_file.hdr"
    else
        fail_with_link "[$label]: expected HTTP $expected_status, got HTTP $http_code" "$docs_url"
        local response=""
        [ -s "$body_file.hdr" ] && response=$(cat "$body_file.hdr")
        [ -s "$body_file" ] && response="${response}$(cat "$body_file")"
        dump_debug "$trace" "$response"
        rm -f "$body_file" "$body_file.hdr"
    fi
}

check_fragmented() {
    # validate.sh's: the request in several TCP writes 30 ms apart (TCP_NODELAY), then the
    # body of the response (chunked or Content-Length) read until the server closes.
    local label="$1"
    local expected_body="$2"
    local docs_url="$3"
    shift 3
    local body trace
    trace=$(mktemp -p "$WORK")
    body=$(PORT="$PORT" TRACE="$trace" python3 -c '
import os, socket, sys, time
port = int(os.environ["PORT"])
trace_path = os.environ.get("TRACE", "")
frags = sys.argv[1:]
sent = b""
buf = b""
wire_error = ""
s = None
try:
    s = socket.create_connection(("localhost", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle coalescing
    for i, f in enumerate(frags):
        data = f.encode("latin-1")
        s.sendall(data)
        sent += data
        if i < len(frags) - 1:
            time.sleep(0.03)
    while True:
        chunk = s.recv(4096)
        if not chunk: break
        buf += chunk
except socket.timeout:
    wire_error = "socket.timeout (server never closed; client blocked in recv)"
except Exception as e:
    wire_error = type(e).__name__ + ": " + str(e)
finally:
    if s is not None:
        try: s.close()
        except Exception: pass
    if trace_path:
        try:
            with open(trace_path, "w") as tf:
                tf.write("=> Send (" + str(len(sent)) + " bytes across " + str(len(frags)) + " fragment(s))\n")
                tf.write(sent.decode("latin-1", errors="replace"))
                tf.write("\n<= Recv (" + str(len(buf)) + " bytes)\n")
                tf.write(buf.decode("latin-1", errors="replace"))
                if wire_error:
                    tf.write("\n<!> " + wire_error + "\n")
                else:
                    tf.write("\n")
        except Exception:
            pass
resp = buf.decode("latin-1", errors="replace")
try:
    head, raw = resp.split("\r\n\r\n", 1)
except ValueError:
    sys.stdout.write("")
    sys.exit(0)
hdrs = {}
for line in head.split("\r\n")[1:]:
    if ":" in line:
        k, v = line.split(":", 1)
        hdrs[k.strip().lower()] = v.strip()
if hdrs.get("transfer-encoding", "").lower() == "chunked":
    parts, rest = [], raw
    while rest:
        nl = rest.find("\r\n")
        if nl < 0: break
        try:
            size = int(rest[:nl].split(";", 1)[0], 16)
        except ValueError:
            break
        rest = rest[nl+2:]
        if size == 0: break
        parts.append(rest[:size])
        rest = rest[size+2:]
    body = "".join(parts)
elif "content-length" in hdrs:
    try:
        body = raw[:int(hdrs["content-length"])]
    except ValueError:
        body = raw
else:
    body = raw
sys.stdout.write(body.strip())
' "$@" 2>/dev/null || echo "")

    if [ "$body" = "$expected_body" ]; then
        pass "[$label]"
        rm -f "$trace"
    else
        fail_with_link "[$label]: expected body '$expected_body', got '$body'" "$docs_url"
        dump_debug "$trace" ""
    fi
}

check_header() {
    local label="$1"
    local header_name="$2"
    local expected_value="$3"
    local docs_url="$4"
    shift 4
    local headers trace
    trace=$(mktemp -p "$WORK")
    headers=$(curl -s --max-time 30 -D- -o /dev/null --trace-ascii "$trace" "$@" || true)
    local value
    value=$(echo "$headers" | grep -i "^${header_name}:" | sed 's/^[^:]*: *//' | tr -d '\r' || true)

    # text/javascript and application/javascript are equivalent (RFC 9239)
    local norm_value norm_expected
    norm_value=${value//text\/javascript/application\/javascript}
    norm_expected=${expected_value//text\/javascript/application\/javascript}
    if [ "$value" = "$expected_value" ] || [[ "$value" == "$expected_value;"* ]] || [ "$norm_value" = "$norm_expected" ] || [[ "$norm_value" == "$norm_expected;"* ]]; then
        pass "[$label] ($header_name: $value)"
        rm -f "$trace"
    else
        fail_with_link "[$label]: expected $header_name '$expected_value', got '$value'" "$docs_url"
        dump_debug "$trace" "$headers"
    fi
}

wait_h2() {
    echo "[wait] Waiting for HTTPS port..."
    local i
    for i in $(seq 1 15); do
        if curl -sk --max-time 30 --http2 -o /dev/null "https://localhost:$H2PORT/baseline2?a=1&b=1" 2>/dev/null; then
            return 0
        fi
        if [ "$i" -eq 15 ]; then
            fail_with_link "[wait_h2]: HTTPS port $H2PORT not responding" ""
            return 1
        fi
        sleep 1
    done
}

# json_verify M: validate.sh's body check for /json/{count}?m=M: prints "count has_total correct".
json_verify() {
    python3 -c "
import sys, json
m = $1
d = json.load(sys.stdin)
count = d.get('count', 0)
items = d.get('items', [])
has_total = all('total' in item for item in items) if items else False
correct_totals = True
for item in items:
    expected = item['price'] * item['quantity'] * m
    if item.get('total', 0) != expected:
        correct_totals = False
        break
print(f'{count} {has_total} {correct_totals}')
" 2>/dev/null || echo "0 False False"
}

STATIC_FILES=(reset.css layout.css theme.css components.css utilities.css analytics.js helpers.js app.js vendor.js router.js header.html footer.html regular.woff2 bold.woff2 logo.svg icon-sprite.svg hero.webp thumb1.webp thumb2.webp manifest.json)

# ───── Baseline (GET/POST /baseline11) ─────

if has_test "baseline" || has_test "limited-conn" || has_test "api-4" || has_test "api-16"; then
    BASELINE_DOCS="$DOCS_BASE/h1/isolated/baseline/validation"
    echo "[test] baseline endpoints"
    check "GET /baseline11?a=13&b=42" "55" "$BASELINE_DOCS" \
        "http://localhost:$PORT/baseline11?a=13&b=42"

    check "POST /baseline11?a=13&b=42 body=20" "75" "$BASELINE_DOCS" \
        -X POST -H "Content-Type: text/plain" -d "20" \
        "http://localhost:$PORT/baseline11?a=13&b=42"

    check "POST /baseline11?a=13&b=42 chunked body=20" "75" "$BASELINE_DOCS" \
        -X POST -H "Content-Type: text/plain" -H "Transfer-Encoding: chunked" -d "20" \
        "http://localhost:$PORT/baseline11?a=13&b=42"

    check_header "GET /baseline11 Content-Type" "Content-Type" "text/plain" "$BASELINE_DOCS" \
        "http://localhost:$PORT/baseline11?a=13&b=42"
    check_header "POST /baseline11 Content-Type" "Content-Type" "text/plain" "$BASELINE_DOCS" \
        -X POST -H "Content-Type: text/plain" -d "20" \
        "http://localhost:$PORT/baseline11?a=13&b=42"

    echo "[test] baseline anti-cheat (randomized inputs)"
    A1=$((RANDOM % 900 + 100))
    B1=$((RANDOM % 900 + 100))
    check "GET /baseline11?a=$A1&b=$B1 (random)" "$((A1 + B1))" "$BASELINE_DOCS" \
        "http://localhost:$PORT/baseline11?a=$A1&b=$B1"

    BODY1=$((RANDOM % 900 + 100))
    BODY2=$((RANDOM % 900 + 100))
    while [ "$BODY1" -eq "$BODY2" ]; do BODY2=$((RANDOM % 900 + 100)); done
    check "POST body=$BODY1 (cache check 1)" "$((13 + 42 + BODY1))" "$BASELINE_DOCS" \
        -X POST -H "Content-Type: text/plain" -d "$BODY1" \
        "http://localhost:$PORT/baseline11?a=13&b=42"
    check "POST body=$BODY2 (cache check 2)" "$((13 + 42 + BODY2))" "$BASELINE_DOCS" \
        -X POST -H "Content-Type: text/plain" -d "$BODY2" \
        "http://localhost:$PORT/baseline11?a=13&b=42"

    echo "[test] baseline TCP fragmentation"
    check_fragmented "GET /baseline11 — split request line" "55" "$BASELINE_DOCS" \
        "GET /baseli" \
        $'ne11?a=13&b=42 HTTP/1.1\r\n' \
        $'Host: localhost\r\nConnection: close\r\n\r\n'

    check_fragmented "GET /baseline11 — split before headers" "55" "$BASELINE_DOCS" \
        $'GET /baseline11?a=13&b=42 HTTP/1.1\r\n' \
        $'Host: localhost\r\n' \
        $'User-Agent: arena-frag/1.0\r\n' \
        $'Connection: close\r\n\r\n'

    check_fragmented "POST /baseline11 — split headers/body" "75" "$BASELINE_DOCS" \
        $'POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n' \
        "20"

    check_fragmented "POST /baseline11 — split body bytes" "75" "$BASELINE_DOCS" \
        $'POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n' \
        "2" \
        "0"
fi

# ───── Pipelined (GET /pipeline) ─────

if has_test "pipelined"; then
    PIPELINED_DOCS="$DOCS_BASE/h1/isolated/pipelined/validation"
    echo "[test] pipelined endpoint"
    check "GET /pipeline" "ok" "$PIPELINED_DOCS" \
        "http://localhost:$PORT/pipeline"
    check_header "GET /pipeline Content-Type" "Content-Type" "text/plain" "$PIPELINED_DOCS" \
        "http://localhost:$PORT/pipeline"
fi

# ───── JSON Processing (GET /json) ─────

if has_test "json" || has_test "api-4" || has_test "api-16"; then
    JSON_DOCS="$DOCS_BASE/h1/isolated/json-processing/validation"
    echo "[test] json endpoint"
    json_fail=false
    for jp in "12:3" "22:7" "31:2" "50:5"; do
        jcount="${jp%%:*}"
        jm="${jp##*:}"
        json_result=$(curl -s --max-time 30 "http://localhost:$PORT/json/$jcount?m=$jm" | json_verify "$jm")
        read -r json_count json_total json_correct <<< "$json_result"
        if [ "$json_count" != "$jcount" ] || [ "$json_total" != "True" ] || [ "$json_correct" != "True" ]; then
            fail_with_link "[GET /json/$jcount?m=$jm]: count=$json_count, has_total=$json_total, correct_totals=$json_correct" "$JSON_DOCS"
            json_fail=true
        fi
    done
    [ "$json_fail" = "false" ] && pass "[GET /json/{count}?m=X] (4 counts with multipliers verified)"

    check_header "GET /json Content-Type" "Content-Type" "application/json" "$JSON_DOCS" \
        "http://localhost:$PORT/json/50?m=1"
fi

# ───── JSON Compressed ─────

if has_test "json-comp"; then
    JSONCOMP_DOCS="$DOCS_BASE/h1/isolated/json-processing/validation"
    echo "[test] json-comp endpoint"
    jc_headers=$(curl -s --max-time 30 -D- -o /dev/null -H "Accept-Encoding: gzip, br" "http://localhost:$PORT/json/50?m=1" || true)
    jc_encoding=$(echo "$jc_headers" | grep -i "^content-encoding:" | sed 's/^[^:]*: *//' | tr -d '\r' | awk '{print tolower($1)}' || true)
    if [ "$jc_encoding" = "gzip" ] || [ "$jc_encoding" = "br" ]; then
        pass "[json-comp Content-Encoding: $jc_encoding]"
    else
        fail_with_link "[json-comp]: expected Content-Encoding gzip or br, got '$jc_encoding'" "$JSONCOMP_DOCS"
    fi

    jc_fail=false
    for jcp in "25:3" "40:7" "50:2"; do
        jccount="${jcp%%:*}"
        jcm="${jcp##*:}"
        jc_result=$(curl -s --max-time 30 --compressed -H "Accept-Encoding: gzip, br" "http://localhost:$PORT/json/$jccount?m=$jcm" | json_verify "$jcm")
        read -r jc_count jc_total jc_correct <<< "$jc_result"
        if [ "$jc_count" != "$jccount" ] || [ "$jc_total" != "True" ] || [ "$jc_correct" != "True" ]; then
            fail_with_link "[json-comp /json/$jccount?m=$jcm]: count=$jc_count, has_total=$jc_total, correct=$jc_correct" "$JSONCOMP_DOCS"
            jc_fail=true
        fi
    done
    [ "$jc_fail" = "false" ] && pass "[json-comp response] (3 counts with multipliers, compressed)"

    jc_no_enc=$(curl -s --max-time 30 -D- -o /dev/null "http://localhost:$PORT/json/50?m=1" | grep -i "^content-encoding:" | tr -d '\r' || true)
    if [ -z "$jc_no_enc" ]; then
        pass "[json-comp per-request] (no Content-Encoding without Accept-Encoding)"
    else
        fail_with_link "[json-comp per-request]: got $jc_no_enc without Accept-Encoding" "$JSONCOMP_DOCS"
    fi
fi

# ───── JSON TLS (HTTP/1.1 + TLS on :8081) ─────

if has_test "json-tls"; then
    JSONTLS_DOCS="$DOCS_BASE/h1/isolated/json-tls/validation"
    echo "[test] json-tls endpoint"
    jt_proto=$(curl -sk --max-time 30 --http1.1 -o /dev/null -w '%{http_version}' "https://localhost:$H1TLS_PORT/json/1?m=1" 2>/dev/null || echo "0")
    if [ "$jt_proto" = "1.1" ]; then
        pass "[json-tls protocol negotiation] (HTTP/$jt_proto over TLS)"
    else
        fail_with_link "[json-tls protocol negotiation]: expected 1.1, got HTTP/$jt_proto" "$JSONTLS_DOCS"
    fi

    jt_fail=false
    for jtp in "7:2" "23:11" "50:1"; do
        jtcount="${jtp%%:*}"
        jtm="${jtp##*:}"
        jt_result=$(curl -sk --max-time 30 "https://localhost:$H1TLS_PORT/json/$jtcount?m=$jtm" | json_verify "$jtm")
        read -r jt_count jt_total jt_correct <<< "$jt_result"
        if [ "$jt_count" != "$jtcount" ] || [ "$jt_total" != "True" ] || [ "$jt_correct" != "True" ]; then
            fail_with_link "[json-tls /json/$jtcount?m=$jtm]: count=$jt_count, has_total=$jt_total, correct=$jt_correct" "$JSONTLS_DOCS"
            jt_fail=true
        fi
    done
    [ "$jt_fail" = "false" ] && pass "[json-tls response] (3 (count, m) pairs over TLS)"

    jt_ct=$(curl -sk --max-time 30 -D- -o /dev/null "https://localhost:$H1TLS_PORT/json/1?m=1" | grep -i "^content-type:" | tr -d '\r' || true)
    if echo "$jt_ct" | grep -qi 'application/json'; then
        pass "[json-tls Content-Type: application/json]"
    else
        fail_with_link "[json-tls Content-Type]: expected application/json, got '$jt_ct'" "$JSONTLS_DOCS"
    fi
fi

# ───── Upload (POST /upload) ─────

if has_test "upload"; then
    UPLOAD_DOCS="$DOCS_BASE/h1/isolated/upload/validation"
    echo "[test] upload endpoint"
    UPLOAD_BODY="Hello, HttpArena!"
    check "POST /upload small body" "${#UPLOAD_BODY}" "$UPLOAD_DOCS" \
        -X POST -H "Content-Type: application/octet-stream" --data-binary "$UPLOAD_BODY" \
        "http://localhost:$PORT/upload"

    RANDOM_BODY=$(head -c 64 /dev/urandom | base64 | head -c 48)
    EXPECTED_RANDOM_LEN=${#RANDOM_BODY}
    ACTUAL_LEN=$(curl -s --max-time 30 -X POST -H "Content-Type: application/octet-stream" --data-binary "$RANDOM_BODY" "http://localhost:$PORT/upload" || true)
    if [ "$ACTUAL_LEN" = "$EXPECTED_RANDOM_LEN" ]; then
        pass "[POST /upload random body] (bytes: $ACTUAL_LEN)"
    else
        fail_with_link "[POST /upload random body]: expected '$EXPECTED_RANDOM_LEN', got '$ACTUAL_LEN'" "$UPLOAD_DOCS"
    fi

    upload_fail=false
    for upload_spec in "500K:512000" "2M:2097152" "10M:10485760" "20M:20971520"; do
        upload_label="${upload_spec%%:*}"
        upload_size="${upload_spec##*:}"
        upload_bs=$((upload_size / 1024))
        ACTUAL_LARGE=$( { dd if=/dev/urandom bs=1024 count=$upload_bs 2>/dev/null | curl -s --max-time 60 -X POST -H "Content-Type: application/octet-stream" --data-binary @- "http://localhost:$PORT/upload"; } || true )
        if [ "$ACTUAL_LARGE" != "$upload_size" ]; then
            fail_with_link "[POST /upload $upload_label]: expected '$upload_size', got '$ACTUAL_LARGE'" "$UPLOAD_DOCS"
            upload_fail=true
        fi
    done
    [ "$upload_fail" = "false" ] && pass "[POST /upload] (4 sizes verified: 500K, 2M, 10M, 20M)"
fi

# ───── Baseline H2 (GET /baseline2 over HTTP/2 + TLS) ─────

if has_test "baseline-h2"; then
    H2_DOCS="$DOCS_BASE/h2/baseline-h2/validation"
    echo "[test] baseline-h2 endpoint"
    if wait_h2; then
        h2_proto=$(curl -sk --max-time 30 --http2 -o /dev/null -w '%{http_version}' "https://localhost:$H2PORT/baseline2?a=1&b=1" || echo "0")
        if [ "$h2_proto" = "2" ]; then
            pass "[HTTP/2 protocol negotiation] (HTTP/$h2_proto)"
        else
            fail_with_link "[HTTP/2 protocol negotiation]: server responded with HTTP/$h2_proto" "$H2_DOCS"
        fi

        check "GET /baseline2?a=13&b=42 over HTTP/2" "55" "$H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/baseline2?a=13&b=42"

        A3=$((RANDOM % 900 + 100))
        B3=$((RANDOM % 900 + 100))
        check "GET /baseline2?a=$A3&b=$B3 over HTTP/2 (random)" "$((A3 + B3))" "$H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/baseline2?a=$A3&b=$B3"

        check_header "GET /baseline2 Content-Type" "Content-Type" "text/plain" "$H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/baseline2?a=1&b=1"
    fi
fi

# ───── Baseline H2c (GET /baseline2 over HTTP/2 cleartext, prior knowledge) ─────

if has_test "baseline-h2c"; then
    H2C_DOCS="$DOCS_BASE/h2/baseline-h2c/validation"
    echo "[test] baseline-h2c endpoint"
    for _ in $(seq 1 10); do
        if curl -s --http2-prior-knowledge --max-time 2 -o /dev/null \
             "http://localhost:$H2C_PORT/baseline2?a=1&b=1" 2>/dev/null; then
            break
        fi
        sleep 1
    done

    h2c_proto=$(curl -s --max-time 30 --http2-prior-knowledge \
        -o /dev/null -w '%{http_version}' \
        "http://localhost:$H2C_PORT/baseline2?a=1&b=1" 2>/dev/null || echo "0")
    if [ "$h2c_proto" = "2" ]; then
        pass "[HTTP/2 cleartext (prior-knowledge)] (HTTP/$h2c_proto)"
    else
        fail_with_link "[HTTP/2 cleartext (prior-knowledge)]: server responded with HTTP/$h2c_proto, expected HTTP/2" "$H2C_DOCS"
    fi

    h1_code=$(curl -s --max-time 5 --http1.1 \
        -o /dev/null -w '%{http_code}' \
        "http://localhost:$H2C_PORT/baseline2?a=1&b=1" 2>/dev/null || echo "000")
    if [ "$h1_code" != "200" ]; then
        pass "[h2c-only: port $H2C_PORT rejects plain HTTP/1.1] (got $h1_code)"
    else
        fail_with_link "[h2c-only]: port $H2C_PORT also answered HTTP/1.1 with 200" "$H2C_DOCS"
    fi

    check "GET /baseline2?a=13&b=42 over h2c" "55" "$H2C_DOCS" \
        -s --http2-prior-knowledge "http://localhost:$H2C_PORT/baseline2?a=13&b=42"

    A4=$((RANDOM % 900 + 100))
    B4=$((RANDOM % 900 + 100))
    check "GET /baseline2?a=$A4&b=$B4 over h2c (random)" "$((A4 + B4))" "$H2C_DOCS" \
        -s --http2-prior-knowledge "http://localhost:$H2C_PORT/baseline2?a=$A4&b=$B4"

    check_header "GET /baseline2 Content-Type (h2c)" "Content-Type" "text/plain" "$H2C_DOCS" \
        -s --http2-prior-knowledge "http://localhost:$H2C_PORT/baseline2?a=1&b=1"
fi

# ───── JSON H2c (GET /json/{count}?m=M over HTTP/2 cleartext) ─────

if has_test "json-h2c"; then
    JSON_H2C_DOCS="$DOCS_BASE/h2/json-h2c/validation"
    echo "[test] json-h2c endpoint"
    h2c_json_proto=$(curl -s --max-time 30 --http2-prior-knowledge \
        -o /dev/null -w '%{http_version}' \
        "http://localhost:$H2C_PORT/json/1?m=1" 2>/dev/null || echo "0")
    if [ "$h2c_json_proto" = "2" ]; then
        pass "[/json HTTP/2 cleartext] (HTTP/$h2c_json_proto)"
    else
        fail_with_link "[/json HTTP/2 cleartext]: server responded with HTTP/$h2c_json_proto on /json" "$JSON_H2C_DOCS"
    fi

    check_header "GET /json Content-Type (h2c)" "Content-Type" "application/json" "$JSON_H2C_DOCS" \
        -s --http2-prior-knowledge "http://localhost:$H2C_PORT/json/1?m=1"

    json_h2c_fail=false
    for jp in "12:3" "22:7" "31:2" "50:5"; do
        jcount="${jp%%:*}"
        jm="${jp##*:}"
        parsed=$(curl -s --max-time 30 --http2-prior-knowledge \
            "http://localhost:$H2C_PORT/json/$jcount?m=$jm" 2>/dev/null | python3 -c "
import sys, json
d = json.load(sys.stdin)
print(f\"{d.get('count', -1)} {len(d.get('items', []))}\")
" 2>/dev/null || echo "-1 -1")
        read -r pc pn <<< "$parsed"
        if [ "$pc" != "$jcount" ] || [ "$pn" != "$jcount" ]; then
            fail_with_link "[GET /json/$jcount?m=$jm (h2c)]: count=$pc, items=$pn, expected $jcount" "$JSON_H2C_DOCS"
            json_h2c_fail=true
        fi
    done
    [ "$json_h2c_fail" = "false" ] && pass "[GET /json/{count}?m=X over h2c] (4 counts verified)"
fi

# ───── Static Files H1 ─────

if has_test "static"; then
    STATIC_DOCS="$DOCS_BASE/h1/isolated/static/validation"
    echo "[test] static endpoint"
    check_header "GET /static/reset.css Content-Type" "Content-Type" "text/css" "$STATIC_DOCS" \
        -s "http://localhost:$PORT/static/reset.css"
    check_header "GET /static/app.js Content-Type" "Content-Type" "application/javascript" "$STATIC_DOCS" \
        -s "http://localhost:$PORT/static/app.js"
    check_header "GET /static/manifest.json Content-Type" "Content-Type" "application/json" "$STATIC_DOCS" \
        -s "http://localhost:$PORT/static/manifest.json"

    static_fail=false
    for sf in "${STATIC_FILES[@]}"; do
        expected_size=$(wc -c < "$DATA_DIR/static/$sf" 2>/dev/null || echo "0")
        actual_size=$(curl -s --max-time 30 -o /dev/null -w '%{size_download}' "http://localhost:$PORT/static/$sf" || echo "0")
        if ! [ "$actual_size" -eq "$expected_size" ] 2>/dev/null; then
            fail_with_link "[static/$sf size]: expected $expected_size bytes, got $actual_size" "$STATIC_DOCS"
            static_fail=true
        fi
    done
    [ "$static_fail" = "false" ] && pass "[static file sizes] (20 files verified)"

    static_comp_fail=false
    static_comp_count=0
    static_comp_skip=0
    for sf in "${STATIC_FILES[@]}"; do
        expected_size=$(wc -c < "$DATA_DIR/static/$sf" 2>/dev/null || echo "0")
        _hdr_tmp=$(mktemp -p "$WORK")
        _body_tmp=$(mktemp -p "$WORK")
        curl -s --max-time 30 --compressed -D "$_hdr_tmp" -o "$_body_tmp" "http://localhost:$PORT/static/$sf" || true
        comp_enc=$(grep -i "^content-encoding:" "$_hdr_tmp" | sed 's/^[^:]*: *//' | tr -d '\r' | awk '{print tolower($1)}' || true)
        decompressed=$(wc -c < "$_body_tmp")
        rm -f "$_hdr_tmp" "$_body_tmp"
        if [ -n "$comp_enc" ]; then
            if [ "$decompressed" -eq "$expected_size" ] 2>/dev/null; then
                static_comp_count=$((static_comp_count + 1))
            else
                fail_with_link "[static/$sf compression]: Content-Encoding: $comp_enc but decompressed size $decompressed != expected $expected_size" "$STATIC_DOCS"
                static_comp_fail=true
            fi
        else
            static_comp_skip=$((static_comp_skip + 1))
        fi
    done
    if [ "$static_comp_fail" = "false" ]; then
        if [ "$static_comp_count" -gt 0 ]; then
            pass "[static compression] ($static_comp_count files compressed, $static_comp_skip skipped)"
        else
            echo "  SKIP [static compression] (server does not compress static files)"
        fi
    fi

    check_status "GET /static/nonexistent.txt" "404" "$STATIC_DOCS" \
        -s "http://localhost:$PORT/static/nonexistent.txt"
fi

# ───── Static Files H2 ─────

if has_test "static-h2"; then
    STATIC_H2_DOCS="$DOCS_BASE/h2/static-h2/validation"
    echo "[test] static-h2 endpoint"
    if wait_h2; then
        check_header "GET /static/reset.css Content-Type" "Content-Type" "text/css" "$STATIC_H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/static/reset.css"
        check_header "GET /static/app.js Content-Type" "Content-Type" "application/javascript" "$STATIC_H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/static/app.js"
        check_header "GET /static/manifest.json Content-Type" "Content-Type" "application/json" "$STATIC_H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/static/manifest.json"

        static_size=$(curl -sk --max-time 30 --http2 -o /dev/null -w '%{size_download}' "https://localhost:$H2PORT/static/reset.css" || echo "0")
        if [ "$static_size" -gt 0 ] 2>/dev/null; then
            pass "[static-h2 response size] ($static_size bytes)"
        else
            fail_with_link "[static-h2 response size]: empty response" "$STATIC_H2_DOCS"
        fi

        check_status "GET /static/nonexistent.txt" "404" "$STATIC_H2_DOCS" \
            -sk --http2 "https://localhost:$H2PORT/static/nonexistent.txt"
    fi
fi

# ───── Async Database (GET /async-db) ─────

if has_test "async-db" || has_test "crud" || has_test "api-4" || has_test "api-16"; then
    ASYNCDB_DOCS="$DOCS_BASE/h1/isolated/async-database/validation"
    echo "[test] async-db endpoint"
    asyncdb_fail=false
    for dbp in "min=5&max=80&limit=7" "min=20&max=150&limit=18" "min=100&max=400&limit=33" "min=10&max=50&limit=50"; do
        dblimit=${dbp##*limit=}
        pgdb_result=$(curl -s --max-time 30 "http://localhost:$PORT/async-db?$dbp" | python3 -c "
import sys, json
d = json.load(sys.stdin)
count = d.get('count', 0)
items = d.get('items', [])
has_rating = all('rating' in item and 'score' in item['rating'] for item in items) if items else False
has_tags = all(isinstance(item.get('tags'), list) for item in items) if items else False
has_active_bool = all(isinstance(item.get('active'), bool) for item in items) if items else False
print(f'{count} {has_rating} {has_tags} {has_active_bool}')
" 2>/dev/null || echo "0 False False False")
        read -r pgdb_count pgdb_rating pgdb_tags pgdb_active <<< "$pgdb_result"
        if [ "$pgdb_count" != "$dblimit" ] || [ "$pgdb_rating" != "True" ] || [ "$pgdb_tags" != "True" ] || [ "$pgdb_active" != "True" ]; then
            fail_with_link "[GET /async-db?limit=$dblimit]: count=$pgdb_count, rating=$pgdb_rating, tags=$pgdb_tags, active=$pgdb_active" "$ASYNCDB_DOCS"
            asyncdb_fail=true
        fi
    done
    [ "$asyncdb_fail" = "false" ] && pass "[GET /async-db?limit=N] (4 limits verified, correct structure)"

    check_header "GET /async-db Content-Type" "Content-Type" "application/json" "$ASYNCDB_DOCS" \
        "http://localhost:$PORT/async-db?min=10&max=50&limit=50"

    pgdb_empty=$(curl -s --max-time 30 "http://localhost:$PORT/async-db?min=9999&max=9999&limit=50" | python3 -c "import sys,json; print(json.load(sys.stdin).get('count','-1'))" 2>/dev/null || echo "-1")
    if [ "$pgdb_empty" = "0" ]; then
        pass "[GET /async-db empty range] (count=0)"
    else
        fail_with_link "[GET /async-db empty range]: expected count=0, got $pgdb_empty" "$ASYNCDB_DOCS"
    fi
fi

# ───── CRUD (list + read + create + update /crud/items) ─────

x_cache() {
    curl -s --max-time 30 -D- -o /dev/null "$1" | grep -i "^x-cache:" | tr -d '\r' | awk '{print $2}'
}
json_id() {
    python3 -c "import sys,json; print(json.load(sys.stdin).get('id','-1'))" 2>/dev/null || echo "-1"
}

if has_test "crud"; then
    CRUD_DOCS="$DOCS_BASE/h1/isolated/crud/validation"
    echo "[test] crud endpoints"

    crud_list_result=$(curl -s --max-time 30 "http://localhost:$PORT/crud/items?category=electronics&page=1&limit=5" | python3 -c "
import sys, json
d = json.load(sys.stdin)
items = d.get('items', [])
total = d.get('total', 0)
page = d.get('page', 0)
has_rating = all('rating' in i for i in items) if items else False
print(f'{len(items)} {total} {page} {has_rating}')
" 2>/dev/null || echo "0 0 0 False")
    read -r crud_list_count crud_list_total crud_list_page crud_list_rating <<< "$crud_list_result"
    if [ "$crud_list_count" = "5" ] && [ "$crud_list_total" -gt 0 ] 2>/dev/null && [ "$crud_list_page" = "1" ] && [ "$crud_list_rating" = "True" ]; then
        pass "[GET /crud/items?category=electronics] ($crud_list_count items, total=$crud_list_total, page=$crud_list_page)"
    else
        fail_with_link "[GET /crud/items list]: count=$crud_list_count, total=$crud_list_total, page=$crud_list_page, rating=$crud_list_rating" "$CRUD_DOCS"
    fi

    crud_get_id=$(curl -s --max-time 30 "http://localhost:$PORT/crud/items/1" | json_id)
    if [ "$crud_get_id" = "1" ]; then
        pass "[GET /crud/items/1] (returned id=1)"
    else
        fail_with_link "[GET /crud/items/1]: expected id=1, got $crud_get_id" "$CRUD_DOCS"
    fi

    crud_cache1=$(x_cache "http://localhost:$PORT/crud/items/42")
    crud_cache2=$(x_cache "http://localhost:$PORT/crud/items/42")
    if [ "$crud_cache1" = "MISS" ] && [ "$crud_cache2" = "HIT" ]; then
        pass "[crud cache-aside] (first=MISS, second=HIT)"
    else
        fail_with_link "[crud cache-aside]: expected MISS then HIT, got '$crud_cache1' then '$crud_cache2'" "$CRUD_DOCS"
    fi

    check_status "GET /crud/items/999999 (not found)" "404" "$CRUD_DOCS" \
        -s --max-time 30 "http://localhost:$PORT/crud/items/999999"

    crud_post_status=$(curl -s --max-time 30 -o "$WORK/crud-post.json" -w '%{http_code}' \
        -X POST -H "Content-Type: application/json" \
        -d '{"id":200001,"name":"ValidateItem","category":"test","price":42,"quantity":7}' \
        "http://localhost:$PORT/crud/items" || echo "0")
    if [ "$crud_post_status" = "201" ]; then
        pass "[POST /crud/items] (201 Created)"
    else
        fail_with_link "[POST /crud/items]: expected 201, got $crud_post_status" "$CRUD_DOCS"
    fi

    crud_verify_id=$(curl -s --max-time 30 "http://localhost:$PORT/crud/items/200001" | json_id)
    if [ "$crud_verify_id" = "200001" ]; then
        pass "[GET /crud/items/200001] (read back created item)"
    else
        fail_with_link "[GET /crud/items/200001]: expected id=200001, got $crud_verify_id" "$CRUD_DOCS"
    fi

    curl -s --max-time 30 -o /dev/null "http://localhost:$PORT/crud/items/200001"  # warm cache
    crud_put_status=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' \
        -X PUT -H "Content-Type: application/json" \
        -d '{"name":"UpdatedItem","category":"test","price":99,"quantity":1}' \
        "http://localhost:$PORT/crud/items/200001" || echo "0")
    crud_after_put=$(x_cache "http://localhost:$PORT/crud/items/200001")
    if [ "$crud_put_status" = "200" ] && [ "$crud_after_put" = "MISS" ]; then
        pass "[PUT /crud/items/200001] (200 OK, cache invalidated)"
    else
        fail_with_link "[PUT /crud/items/200001]: status=$crud_put_status, cache_after=$crud_after_put" "$CRUD_DOCS"
    fi
fi

# ───── gRPC (no checks in validate.sh: a real client, grpcio) ─────

python_deps() {
    # python_deps MODULE PIP_PACKAGE...: pip-installs the packages when MODULE does not import.
    local mod=$1
    shift
    python3 -c "import $mod" 2>/dev/null && return 0
    echo "[deps] pip install $*"
    python3 -m pip install -q "$@" >/dev/null 2>&1
    python3 -c "import $mod" 2>/dev/null
}

# fold_results OUTPUT DOCS: folds a client's "N passed, M failed" into the totals (as validate.sh
# does for validate-ws.py) and lists its FAIL lines in the summary.
fold_results() {
    local output=$1 docs=$2 p f line
    echo "$output"
    p=$(echo "$output" | grep -oP '(\d+) passed' | tail -1 | grep -oP '\d+')
    f=$(echo "$output" | grep -oP '(\d+) failed' | tail -1 | grep -oP '\d+')
    if [ -z "$p" ] && [ -z "$f" ]; then
        f=1
        FAILED+=("[$docs]: the client did not finish")
    fi
    PASS=$((PASS + ${p:-0}))
    FAIL=$((FAIL + ${f:-0}))
    while IFS= read -r line; do
        FAILED+=("${line#  FAIL }")
    done < <(echo "$output" | grep '^  FAIL ' || true)
    if [ "${f:-0}" -gt 0 ]; then
        echo "        → $docs"
    fi
}

if has_test "unary-grpc" || has_test "unary-grpc-tls" || has_test "stream-grpc" || has_test "stream-grpc-tls"; then
    if python_deps grpc_tools grpcio grpcio-tools; then
        mkdir -p "$WORK/grpc"
        python3 -m grpc_tools.protoc -I"$ARENA_ROOT/examples/arena/proto" --python_out="$WORK/grpc" \
            --grpc_python_out="$WORK/grpc" "$ARENA_ROOT/examples/arena/proto/benchmark.proto" \
            || fail_with_link "[grpc stubs]: grpc_tools.protoc failed on benchmark.proto" ""
        cat > "$WORK/grpc/grpc_check.py" <<'PY'
import os, random, sys
import grpc
import benchmark_pb2 as pb
import benchmark_pb2_grpc as pbg

mode, target, cert = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "")
PASS = FAIL = 0
def result(label, ok, detail=""):
    global PASS, FAIL
    if ok:
        PASS += 1
        print(f"  PASS [{label}]{' (' + detail + ')' if detail else ''}")
    else:
        FAIL += 1
        print(f"  FAIL [{label}]{': ' + detail if detail else ''}")

if cert:
    creds = grpc.ssl_channel_credentials(root_certificates=open(cert, "rb").read())
    chan = grpc.secure_channel(target, creds)
    how = "TLS " + target
else:
    chan = grpc.insecure_channel(target)
    how = "h2c " + target
try:
    grpc.channel_ready_future(chan).result(timeout=10)
except grpc.FutureTimeoutError:
    result(f"gRPC channel ({how})", False, "not ready within 10 s")
    print(f"\n=== gRPC Results: {PASS} passed, {FAIL} failed ===")
    sys.exit(1)
stub = pbg.BenchmarkServiceStub(chan)

def call(label, fn):
    try:
        return fn()
    except grpc.RpcError as e:
        result(label, False, f"{e.code()} {e.details()}")
    except Exception as e:
        result(label, False, f"{type(e).__name__}: {e}")
    return None

if mode == "unary":
    r = call(f"GetSum a=1 b=2 ({how})", lambda: stub.GetSum(pb.SumRequest(a=1, b=2), timeout=10))
    if r is not None:
        result(f"GetSum a=1 b=2 ({how})", r.result == 3, f"result={r.result}")
    a, b = random.randint(100, 999), random.randint(100, 999)
    r = call(f"GetSum a={a} b={b} (random, {how})", lambda: stub.GetSum(pb.SumRequest(a=a, b=b), timeout=10))
    if r is not None:
        result(f"GetSum a={a} b={b} (random, {how})", r.result == a + b, f"result={r.result}, expected {a + b}")
else:
    def stream(label, a, b, count):
        def run():
            call_ = stub.StreamSum(pb.StreamRequest(a=a, b=b, count=count), timeout=30)
            got = [m.result for m in call_]
            return got, call_.code()
        out = call(label, run)
        if out is None:
            return
        got, code = out
        want = [a + b + i for i in range(count)]
        if code != grpc.StatusCode.OK:
            result(label, False, f"status {code}")
        elif len(got) != count:
            result(label, False, f"{len(got)} replies, expected {count}")
        elif got != want:
            i = next(i for i in range(count) if got[i] != want[i])
            result(label, False, f"reply {i} is {got[i]}, expected {want[i]}")
        else:
            detail = f"{count} replies, each a+b+i" + (f", last {got[-1]}" if got else "")
            result(label, True, detail)
    stream(f"StreamSum a=13 b=42 count=10 ({how})", 13, 42, 10)
    stream(f"StreamSum a=13 b=42 count=5000 ({how})", 13, 42, 5000)
    # HttpArena's stream validation page wants no reply for count 0; its implementation page
    # (and its aspnet-grpc reference) clamps count to >= 1. Either passes; any other count fails.
    label = f"StreamSum a=13 b=42 count=0 (anti-cheat, {how})"
    def zero():
        call_ = stub.StreamSum(pb.StreamRequest(a=13, b=42, count=0), timeout=30)
        return [m.result for m in call_], call_.code()
    out = call(label, zero)
    if out is not None:
        got, code = out
        if code != grpc.StatusCode.OK:
            result(label, False, f"status {code}")
        elif got == []:
            result(label, True, "OK, no reply (validation page)")
        elif got == [55]:
            result(label, True, "OK, one reply 55: count clamped to 1 (implementation page)")
        else:
            result(label, False, f"{len(got)} replies {got[:3]}..., expected none (or one, 55)")
    a, b = random.randint(100, 999), random.randint(100, 999)
    stream(f"StreamSum a={a} b={b} count=100 (random, {how})", a, b, 100)
print(f"\n=== gRPC Results: {PASS} passed, {FAIL} failed ===")
sys.exit(1 if FAIL else 0)
PY
    else
        fail_with_link "[grpc client]: python3 grpcio/grpcio-tools not available (pip install grpcio grpcio-tools)" ""
    fi
fi

# grpc_raw_checks SCHEME PORT DOCS: the benchmark's own request, HttpArena's pre-encoded
# requests/grpc-sum.bin (SumRequest{a=1,b=2}), by curl (the exact reply bytes of the unary
# implementation page, content-type, grpc-status 0) and by h2load as the benchmark sends it.
grpc_raw_checks() {
    local scheme=$1 port=$2 docs=$3 url curl_proto hdr body hex st ct out
    url="$scheme://localhost:$port/benchmark.BenchmarkService/GetSum"
    if [ "$scheme" = https ]; then curl_proto=(-k --http2); else curl_proto=(--http2-prior-knowledge); fi
    hdr="$WORK/grpc-raw.hdr"; body="$WORK/grpc-raw.body"
    curl -s --max-time 10 "${curl_proto[@]}" -X POST -H 'content-type: application/grpc' -H 'te: trailers' \
        --data-binary @"$ARENA_REQUESTS/grpc-sum.bin" -D "$hdr" -o "$body" "$url" >/dev/null 2>&1 || true
    hex=$(od -An -tx1 "$body" 2>/dev/null | tr -d ' \n')
    st=$(grep -i '^grpc-status:' "$hdr" 2>/dev/null | tail -1 | sed 's/^[^:]*: *//' | tr -d '\r')
    ct=$(grep -i '^content-type:' "$hdr" 2>/dev/null | head -1 | sed 's/^[^:]*: *//' | tr -d '\r')
    if [ "$hex" = "00000000020803" ] && [ "$st" = "0" ] && [[ "$ct" == application/grpc* ]]; then
        pass "[GetSum raw frame over $scheme:$port] (reply 00 00000002 0803, grpc-status 0, $ct)"
    else
        fail_with_link "[GetSum raw frame over $scheme:$port]: reply '$hex' (want 00000000020803), grpc-status '$st', content-type '$ct'" "$docs"
    fi
    out=$(h2load -n 200 -c 2 -m 10 -t 1 -d "$ARENA_REQUESTS/grpc-sum.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' "$url" 2>&1 || true)
    if echo "$out" | grep -q '200 succeeded' && echo "$out" | grep -qE 'status codes: 200 2xx'; then
        pass "[h2load GetSum over $scheme:$port] (200 requests, 200 2xx)"
    else
        fail_with_link "[h2load GetSum over $scheme:$port]: $(echo "$out" | grep -E 'requests:|status codes:' | tr '\n' ' ')" "$docs"
    fi
}

run_grpc() {
    local mode=$1 target=$2 cert=$3 docs=$4 out
    [ -f "$WORK/grpc/grpc_check.py" ] || return 0
    out=$(cd "$WORK/grpc" && timeout 60 python3 grpc_check.py "$mode" "$target" "$cert" 2>&1)
    fold_results "$out" "$docs"
}

if has_test "unary-grpc"; then
    echo "[test] unary-grpc (h2c on :$PORT)"
    GRPC_DOCS="$DOCS_BASE/grpc/unary/validation"
    run_grpc unary "localhost:$PORT" "" "$GRPC_DOCS"
    grpc_raw_checks http "$PORT" "$GRPC_DOCS"
fi
if has_test "unary-grpc-tls"; then
    echo "[test] unary-grpc-tls (TLS on :$H2PORT)"
    GRPC_DOCS="$DOCS_BASE/grpc/unary/validation"
    run_grpc unary "localhost:$H2PORT" "$TLS_CERT" "$GRPC_DOCS"
    grpc_raw_checks https "$H2PORT" "$GRPC_DOCS"
fi
if has_test "stream-grpc"; then
    echo "[test] stream-grpc (h2c on :$PORT)"
    run_grpc stream "localhost:$PORT" "" "$DOCS_BASE/grpc/stream/validation"
fi
if has_test "stream-grpc-tls"; then
    echo "[test] stream-grpc-tls (TLS on :$H2PORT)"
    run_grpc stream "localhost:$H2PORT" "$TLS_CERT" "$DOCS_BASE/grpc/stream/validation"
fi

# ───── WebSocket Echo (ws://localhost:8080/ws) ─────

if has_test "echo-ws"; then
    WS_DOCS="$DOCS_BASE/ws/echo/validation"
    echo "[test] echo-ws endpoint"
    # validate-ws.py, as upstream has it (a raw-socket client, no dependency).
    cat > "$WORK/validate-ws.py" <<'PY'
import hashlib, base64, os, socket, struct, sys, time
HOST = sys.argv[1] if len(sys.argv) > 1 else "localhost"
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 8080
PATH = sys.argv[3] if len(sys.argv) > 3 else "/ws"
PASS = 0
FAIL = 0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

def result(label, ok, detail=""):
    global PASS, FAIL
    if ok:
        PASS += 1
        print(f"  PASS [{label}]{' (' + detail + ')' if detail else ''}")
    else:
        FAIL += 1
        print(f"  FAIL [{label}]{': ' + detail if detail else ''}")

def make_ws_key():
    return base64.b64encode(os.urandom(16)).decode()

def expected_accept(key):
    magic = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    return base64.b64encode(hashlib.sha1(magic.encode()).digest()).decode()

def send_frame(sock, opcode, payload, mask=True):
    fin_opcode = 0x80 | opcode
    data = payload if isinstance(payload, bytes) else payload.encode()
    length = len(data)
    header = bytes([fin_opcode])
    mask_bit = 0x80 if mask else 0x00
    if length < 126:
        header += bytes([mask_bit | length])
    elif length < 65536:
        header += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        header += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if mask:
        mask_key = os.urandom(4)
        header += mask_key
        masked = bytes(b ^ mask_key[i % 4] for i, b in enumerate(data))
        sock.sendall(header + masked)
    else:
        sock.sendall(header + data)

def recv_frame(sock, timeout=5.0):
    sock.settimeout(timeout)
    try:
        head = _recv_exact(sock, 2)
        opcode = head[0] & 0x0F
        masked = bool(head[1] & 0x80)
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", _recv_exact(sock, 2))[0]
        elif length == 127:
            length = struct.unpack("!Q", _recv_exact(sock, 8))[0]
        if masked:
            mask_key = _recv_exact(sock, 4)
            raw = _recv_exact(sock, length)
            payload = bytes(b ^ mask_key[i % 4] for i, b in enumerate(raw))
        else:
            payload = _recv_exact(sock, length)
        return opcode, payload
    except socket.timeout:
        return None, None

def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("Connection closed unexpectedly")
        buf += chunk
    return buf

def test_upgrade():
    sock = socket.create_connection((HOST, PORT), timeout=5)
    key = make_ws_key()
    req = (f"GET {PATH} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
    sock.sendall(req.encode())
    sock.settimeout(5)
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            break
        response += chunk
    headers = response.decode("utf-8", errors="replace").split("\r\n")
    status_ok = "101" in headers[0]
    result("upgrade status 101", status_ok, headers[0].strip())
    accept_value = ""
    for h in headers:
        if h.lower().startswith("sec-websocket-accept:"):
            accept_value = h.split(":", 1)[1].strip()
    expected = expected_accept(key)
    result("Sec-WebSocket-Accept", accept_value == expected,
           f"expected {expected}, got {accept_value}" if accept_value != expected else "correct")
    if not status_ok:
        sock.close()
        return None
    return sock

def test_text_echo(sock):
    msg = f"HttpArena-validate-{os.urandom(8).hex()}"
    send_frame(sock, OP_TEXT, msg)
    opcode, payload = recv_frame(sock)
    echoed = payload.decode() if payload else ""
    result("text echo", opcode == OP_TEXT and echoed == msg,
           f"sent '{msg}', got '{echoed}'" if echoed != msg else f"echoed {len(msg)} chars")

def test_binary_echo(sock):
    data = os.urandom(256)
    send_frame(sock, OP_BINARY, data)
    opcode, payload = recv_frame(sock)
    result("binary echo", opcode == OP_BINARY and payload == data,
           f"sent {len(data)} bytes, got {len(payload) if payload else 0} bytes")

def test_multiple_messages(sock):
    messages = [f"msg-{i}-{os.urandom(4).hex()}" for i in range(5)]
    for msg in messages:
        send_frame(sock, OP_TEXT, msg)
    for i, expected in enumerate(messages):
        opcode, payload = recv_frame(sock, timeout=3)
        echoed = payload.decode() if payload else ""
        if opcode != OP_TEXT or echoed != expected:
            result(f"multi-message {i+1}/5", False, f"expected '{expected}', got '{echoed}'")
            return
    result("multi-message echo (5 msgs)", True, "all 5 echoed correctly")

def close_connection(sock):
    send_frame(sock, OP_CLOSE, struct.pack("!H", 1000) + b"validate done")
    try:
        recv_frame(sock, timeout=3)
    except ConnectionError:
        pass
    sock.close()

def test_reject_bad_upgrade():
    sock = socket.create_connection((HOST, PORT), timeout=5)
    req = f"GET {PATH} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nConnection: keep-alive\r\n\r\n"
    sock.sendall(req.encode())
    sock.settimeout(3)
    try:
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = sock.recv(4096)
            if not chunk:
                break
            response += chunk
        status_line = response.decode("utf-8", errors="replace").split("\r\n")[0]
        code = int(status_line.split()[1]) if len(status_line.split()) >= 2 else 0
        result("reject non-upgrade GET /ws", 400 <= code < 500, f"HTTP {code}")
    except Exception as e:
        result("reject non-upgrade GET /ws", True, f"connection closed ({e})")
    finally:
        sock.close()

print(f"[test] WebSocket echo validation (ws://{HOST}:{PORT}{PATH})")
sock = test_upgrade()
if sock is None:
    print(f"\n=== WS Results: {PASS} passed, {FAIL} failed ===")
    sys.exit(1)
test_text_echo(sock)
test_binary_echo(sock)
test_multiple_messages(sock)
close_connection(sock)
time.sleep(0.1)
test_reject_bad_upgrade()
print("[test] post-validation health check")
sock2 = socket.create_connection((HOST, PORT), timeout=5)
key2 = make_ws_key()
req2 = (f"GET {PATH} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key2}\r\nSec-WebSocket-Version: 13\r\n\r\n")
sock2.sendall(req2.encode())
sock2.settimeout(5)
response2 = b""
while b"\r\n\r\n" not in response2:
    chunk = sock2.recv(4096)
    if not chunk:
        break
    response2 += chunk
health_ok = b"101" in response2
if health_ok:
    send_frame(sock2, OP_TEXT, "health")
    op, pl = recv_frame(sock2)
    health_ok = (op == OP_TEXT and pl == b"health")
    send_frame(sock2, OP_CLOSE, struct.pack("!H", 1000))
    try:
        recv_frame(sock2, timeout=2)
    except ConnectionError:
        pass
sock2.close()
result("server alive after tests", health_ok)
print(f"\n=== WS Results: {PASS} passed, {FAIL} failed ===")
sys.exit(1 if FAIL > 0 else 0)
PY
    WS_OUTPUT=$(timeout 60 python3 "$WORK/validate-ws.py" localhost "$PORT" /ws 2>&1) || true
    fold_results "$WS_OUTPUT" "$WS_DOCS"

    # One more, not upstream's: the Python websockets client (a library's framing and
    # handshake): 20 "hello" text echoes (the benchmark's message), a 70000-byte binary echo
    # (64-bit length), a ping answered by a pong, a clean close with code 1000.
    if python_deps websockets websockets; then
        WS2_OUTPUT=$(timeout 30 python3 - "$PORT" <<'PY' 2>&1
import asyncio, os, sys
import websockets
port = int(sys.argv[1])
async def main():
    ok, detail = True, ""
    try:
        async with websockets.connect(f"ws://localhost:{port}/ws", max_size=None, compression=None) as ws:
            for i in range(20):
                await ws.send("hello")
                got = await asyncio.wait_for(ws.recv(), 5)
                if got != "hello":
                    ok, detail = False, f"echo {i}: {got!r}"
                    break
            if ok:
                blob = os.urandom(70000)
                await ws.send(blob)
                got = await asyncio.wait_for(ws.recv(), 5)
                if got != blob:
                    ok, detail = False, f"70000-byte binary echo: got {len(got)} bytes"
            if ok:
                pong = await ws.ping()
                await asyncio.wait_for(pong, 5)
            await ws.close(1000)
            if ok and ws.close_code != 1000:
                ok, detail = False, f"close code {ws.close_code}"
    except Exception as e:
        ok, detail = False, f"{type(e).__name__}: {e}"
    if ok:
        print("  PASS [websockets client: 20 text echoes, 70000-byte binary echo, ping/pong, close 1000]")
        print("\n=== WS Results: 1 passed, 0 failed ===")
    else:
        print(f"  FAIL [websockets client]: {detail}")
        print("\n=== WS Results: 0 passed, 1 failed ===")
asyncio.run(main())
PY
        ) || true
        fold_results "$WS2_OUTPUT" "$WS_DOCS"
    else
        fail_with_link "[websockets client]: python3 websockets not available (pip install websockets)" "$WS_DOCS"
    fi
fi

# ───── Local: the server survived all of it ─────

if kill -0 "$ARENA_SERVER_PID" 2>/dev/null; then
    pass "[server still running after the checks]"
else
    fail_with_link "[server still running after the checks]: it exited" ""
    tail -n 30 "$WORK/server.log"
fi

# ───── Summary ─────

echo ""
if [ "$FAIL" -gt 0 ]; then
    echo "Failed checks:"
    printf '  %s\n' "${FAILED[@]}"
    echo "Server log (last 20 lines):"
    tail -n 20 "$WORK/server.log" | sed 's/^/  /'
fi
echo "=== Results: $PASS passed, $FAIL failed ==="
[ "$FAIL" -eq 0 ] || exit 1
