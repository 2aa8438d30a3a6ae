#!/usr/bin/env bash
# TechEmpower's six tests on this runtime, against a real PostgreSQL (issue 29): a private
# cluster (scripts/tfb_pg.sh: 127.0.0.1, a free port, the hello_world database of
# scripts/tfb_db.sql), corering_net::postgres' tests against it, then the tfb server checked
# by scripts/tfb_verify.py (headers, bodies, clamping, fortunes byte-exact, updates
# persisted, pipelining), then the database stopped mid-run (/db answers 500 within seconds,
# the server lives) and started again (/db recovers), and a SIGTERM (exit 0).
# Runs as root (the cluster as the `postgres` user) or as a user who can run initdb.
# Needs python3; installs postgresql with apt-get if missing.
# Usage: scripts/tfb_check.sh   (honours CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tfb_pg.sh

fail() { echo "tfb_check: FAIL: $*" >&2; exit 1; }
say() { echo "tfb_check: $*"; }

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
    pg_cleanup
    rm -rf "$WORK"
}
trap cleanup EXIT

say "building"
cargo build --release -p tfb
cargo test --release -p corering-net --features postgres --test net_postgres --no-run 2>/dev/null
BIN="${CARGO_TARGET_DIR:-target}/release"

pg_setup "$WORK" || fail "the PostgreSQL cluster did not start"
say "PostgreSQL ($PG_BIN) on 127.0.0.1:$PG_PORT, socket $PG_SOCK"

say "corering_net::postgres tests against it"
CORERING_PG_URL="$PG_URL" \
CORERING_PG_UNIX_URL="host=$PG_SOCK port=$PG_PORT user=benchmarkdbuser dbname=hello_world" \
    cargo test --release -p corering-net --features postgres --test net_postgres \
    || fail "net_postgres"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN/tfb" --port "$PORT" --cores 2 --pool 2 --db "$PG_URL" >"$WORK/tfb.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/tfb.log"; fail "tfb exited at start"; }
    sleep 0.05
done
say "tfb on 127.0.0.1:$PORT"

PSQL=("${PG_BIN}/psql" -X -h "$PG_SOCK" -p "$PG_PORT" -U benchmarkdbuser -d hello_world)
[ -x "${PSQL[0]}" ] || PSQL[0]=psql
python3 scripts/tfb_verify.py check "$PORT" "${PSQL[@]}" || { cat "$WORK/tfb.log"; fail "rules"; }

status() { python3 scripts/tfb_verify.py status "$PORT" "$1"; }

say "bad input: the database stops mid-run"
pg_stop || fail "pg_ctl stop"
for path in /db /queries?queries=5 /fortunes /updates?queries=5 /db; do
    s=$(status "$path") || fail "$path: no answer with the database down: $s"
    [ "$s" = 500 ] || fail "$path with the database down: $s, not 500"
done
s=$(status /plaintext); [ "$s" = 200 ] || fail "/plaintext with the database down: $s"
kill -0 "$SERVER_PID" 2>/dev/null || fail "tfb died with the database down"
say "ok: 500s within 5 s each, /plaintext still 200"

pg_start || fail "pg_ctl start"
recovered=""
for i in $(seq 100); do
    s=$(status /db) || true
    if [ "$s" = 200 ]; then recovered=$i; break; fi
    sleep 0.1
done
[ -n "$recovered" ] || fail "/db did not recover within 100 tries after the database came back"
for path in /db /db /queries?queries=20 /fortunes /updates?queries=20; do
    s=$(status "$path"); [ "$s" = 200 ] || fail "$path after recovery: $s"
done
say "ok: recovered after $recovered tr(ies); every route 200"
python3 scripts/tfb_verify.py check "$PORT" "${PSQL[@]}" >/dev/null || fail "rules after recovery"
say "ok: every rule again after recovery"

kill -TERM "$SERVER_PID"
rc=""
for _ in $(seq 100); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        wait "$SERVER_PID" && rc=0 || rc=$?
        break
    fi
    sleep 0.1
done
[ -n "$rc" ] || fail "tfb still running 10 s after SIGTERM"
[ "$rc" = 0 ] || { cat "$WORK/tfb.log"; fail "tfb exited $rc after SIGTERM"; }
SERVER_PID=""
grep -q "tfb: stopping" "$WORK/tfb.log" || fail "no graceful stop in the log"
if grep -q "panicked" "$WORK/tfb.log"; then cat "$WORK/tfb.log"; fail "a panic in the log"; fi
say "ok: SIGTERM, exit 0"
say "PASS"
