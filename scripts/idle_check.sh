#!/usr/bin/env bash
# Memory per idle connection, judged: `bench idle-conns` (10,000 echo connections, each
# echoed 64 bytes once and then left idle) must show at most 1,100 bytes of server RSS per
# connection on io_uring and 1,250 on the epoll backend (targets 1 KiB and 1.2 KiB, with
# room for page granularity), the median of three rounds (RSS moves by some 50 B per
# connection from run to run with the heap's layout).
# Usage: scripts/idle_check.sh [path to the bench binary] (default target/release/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${1:-target/release/bench}"

check() {
  local backend="$1" limit="$2" json
  json="$(RUNTIME_BACKEND="$backend" "$bench" idle-conns --runs 3 --quiet --json -)"
  python3 - "$backend" "$limit" "$json" <<'PY'
import json, sys
backend, limit, doc = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
rows = {r["name"]: r for b in doc["benchmarks"] if b["name"] == "idle-conns" for r in b["rows"]}
ours = next((r for name, r in rows.items() if name.startswith("runtime")), None)
if ours is None:
    sys.exit(f"idle_check: no runtime row in bench idle-conns' output: {sorted(rows)}")
got, conns = ours["median"], int(ours["extra"]["conns"])
others = ", ".join(f"{n} {r['median']:.0f} B" for n, r in rows.items() if r is not ours)
print(f"idle_check ({backend}): {got:.0f} B per idle connection over {conns} connections "
      f"(limit {limit:.0f} B; {others})")
if conns < 1000:
    sys.exit(f"idle_check: only {conns} connections: raise the fd limit")
if got > limit:
    sys.exit(f"idle_check: {got:.0f} B per idle connection on {backend} is over {limit:.0f} B")
PY
}

check io_uring 1100
check epoll 1250
