#!/usr/bin/env bash
# The WebSocket chat (examples/chat, issue 29 item 5) against Python's `websockets` clients
# from PyPI: 1,000 concurrent clients on a 2-core server, each sends K messages and must
# receive every client's (1000*K each); raw-socket clients sending malformed frames get
# close 1002 / 1007 while the others go on; SIGTERM closes every client with 1001 and the
# server exits 0. Runs as root on a fresh clone; installs `websockets` with pip if missing.
# Usage: scripts/chat_check.sh   (honours CARGO_TARGET_DIR; CHAT_CLIENTS, CHAT_MESSAGES
# override the 1000 clients and K=3)
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS="${CHAT_CLIENTS:-1000}"
MESSAGES="${CHAT_MESSAGES:-3}"

fail() { echo "chat_check: FAIL: $*" >&2; exit 1; }

command -v python3 >/dev/null || fail "python3 is missing"
if ! python3 -c 'import websockets.asyncio.client' 2>/dev/null; then
    python3 -m pip install -q websockets || fail "pip install websockets"
fi

# 1,000 clients and 1,000 server sockets in this session, plus the runtime's own.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((2 * CLIENTS + 200)) ] \
    || fail "ulimit -n is $(ulimit -n); $((2 * CLIENTS + 200)) needed"

cargo build --release -p chat
BIN="${CARGO_TARGET_DIR:-target}/release/chat"
WORK="$(mktemp -d)"
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" --addr "127.0.0.1:$PORT" --cores 2 --grace 10 >"$WORK/chat.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/chat.log"; fail "chat exited at start"; }
    sleep 0.05
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || fail "chat did not listen within 5 s"

# The clients send SIGTERM themselves (after the message rounds), then check the 1001s.
rc=0
timeout 600 python3 scripts/chat_clients.py --addr "127.0.0.1:$PORT" --pid "$SERVER" \
    --clients "$CLIENTS" --messages "$MESSAGES" --timeout 180 || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/chat.log"; fail "the clients failed (status $rc)"; }

# The server must exit 0 soon after the SIGTERM.
for _ in $(seq 100); do
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$SERVER" 2>/dev/null && { cat "$WORK/chat.log"; fail "chat still running 10 s after SIGTERM"; }
rc=0
wait "$SERVER" || rc=$?
SERVER=""
[ "$rc" -eq 0 ] || { cat "$WORK/chat.log"; fail "chat exited $rc on SIGTERM"; }
grep -q "every socket closed" "$WORK/chat.log" || { cat "$WORK/chat.log"; fail "chat did not close every socket"; }
echo "ok: chat exits 0 on SIGTERM after closing every socket"
echo "chat_check: all passed ($CLIENTS clients, $MESSAGES messages each)"
