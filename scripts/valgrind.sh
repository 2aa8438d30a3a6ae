#!/usr/bin/env bash
# Runs the op-lifecycle tests that drop futures while the kernel owns their memory, and the
# executor's task tests, under valgrind memcheck: any use-after-free or invalid access in
# userspace fails the run. (Valgrind cannot see the kernel's own writes through io_uring, so
# tests that compare bytes the kernel wrote are left out: it would call them uninitialised.
# Kernel writes into freed memory are what the op lifecycle's tests and DESIGN's rule cover.)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
  echo "valgrind missing: apt-get install -y valgrind" >&2
  exit 1
fi

bins=$(cargo test -p corering-runtime --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])')

run() {
  local name=$1; shift
  local exe
  exe=$(echo "$bins" | awk -v n="$name" '$1 == n { print $2 }')
  echo "== valgrind $name $*"
  valgrind --error-exitcode=1 --leak-check=no --quiet "$exe" --test-threads=1 -q "$@"
}

run op_lifecycle read_dropped_then_pipe_written completed_then_dropped op_completes bad_fd op_escaping
run rt_shutdown
# Tests that wake the ring from a second thread are left out: valgrind runs one thread at
# a time and does not release it while another blocks in io_uring_enter, so they hang there.
run rt_basic --skip million_nops --skip wake_ --skip many_remote_wakes
run time_timers --skip a_hundred_thousand --skip a_blocked_task
echo "valgrind: no errors"
