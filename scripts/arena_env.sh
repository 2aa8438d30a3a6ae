# shellcheck shell=bash
# The HttpArena environment for a server run outside Docker (sourced by scripts/arena_check.sh
# and scripts/arena_bench.sh). HttpArena (MIT, github MDA2AV/HttpArena, commit
# 28606bafd5526c28b8438f630d7dca73b2869e28) runs each entry in a container with
# /data/dataset.json, /data/static and /certs mounted, a postgres:18 sidecar seeded from
# data/pgdb-seed.sql (role bench/bench, database benchmark) and, for crud, a redis sidecar.
# Here the same pieces are private processes of the calling script:
#
#   PostgreSQL  scripts/tfb_pg.sh's cluster (127.0.0.1, a free port, never 5432) plus a role
#               bench/bench and a database `benchmark` loaded from examples/arena/data/pgdb-seed.sql
#               (made by peers/arena/generate-pgdb.py, HttpArena's generator, when missing).
#   Redis       redis-server (apt package redis-server, installed when missing) on a free
#               127.0.0.1 port, no persistence, like HttpArena's sidecar.
#
# Functions:
#   arena_env_setup DIR [db]   DIR: an empty scratch directory. Exports DATASET_PATH,
#                              STATIC_DIR, TLS_CERT, TLS_KEY, DATABASE_MAX_CONN; with `db` also
#                              starts PostgreSQL and Redis and exports DATABASE_URL, REDIS_URL.
#   arena_env_cleanup          stops what arena_env_setup started (call it from an EXIT trap).
#   arena_data_link            HttpArena's hyper and actix entries read /data/static itself
#                              (hard-coded). When /data does not exist, makes /data a symlink to
#                              examples/arena/data for the run (removed by arena_env_cleanup).
#   arena_ports_free           fails when one of HttpArena's ports (8080 8081 8082 8443) is taken.
#   arena_free_port            prints a free 127.0.0.1 TCP port.
#   arena_meta_tests FILE      prints the `tests` of an HttpArena meta.json, one a line.
#   arena_server_start NAME CPUS LOG CMD...   starts CMD (taskset -c CPUS when CPUS is not
#                              empty) in the background; sets ARENA_SERVER_PID.
#   arena_server_stop          TERM, then KILL after 3 s, the server started above.
#   arena_wait_ready SECONDS   waits until the server answers on 8080 (HTTP/1.1), 8443 (h2) or
#                              8082 (h2c).
#
# Overridable: ARENA_DATA (examples/arena/data), ARENA_CERTS (examples/arena/certs),
# PEERS_TARGET (target/peers), DATABASE_MAX_CONN (150: tfb_pg.sh's cluster allows 200
# connections, HttpArena's 256 with max_connections=256).

ARENA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034  # used by the scripts that source this one
HTTPARENA_COMMIT=28606bafd5526c28b8438f630d7dca73b2869e28
ARENA_DATA="${ARENA_DATA:-$ARENA_ROOT/examples/arena/data}"
ARENA_CERTS="${ARENA_CERTS:-$ARENA_ROOT/examples/arena/certs}"
ARENA_PEERS="$ARENA_ROOT/peers/arena"
ARENA_REQUESTS="${ARENA_REQUESTS:-$ARENA_PEERS/requests}"
PEERS_TARGET="${PEERS_TARGET:-$ARENA_ROOT/target/peers}"
ARENA_PORTS=(8080 8081 8082 8443)

# shellcheck source=scripts/tfb_pg.sh
source "$ARENA_ROOT/scripts/tfb_pg.sh"

ARENA_REDIS_PID=""
ARENA_SERVER_PID=""
ARENA_DATA_LINK=""
ARENA_ENV_DIR=""

arena_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

arena_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

arena_ports_free() {
    local p busy=""
    for p in "${ARENA_PORTS[@]}"; do
        arena_port_open "$p" && busy="$busy $p"
    done
    if [ -n "$busy" ]; then
        echo "arena: port(s)$busy already in use; HttpArena's ports must be free" >&2
        return 1
    fi
}

arena_meta_tests() {
    python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["tests"]))' "$1"
}

arena_seed() {
    local seed="$ARENA_DATA/pgdb-seed.sql"
    if [ ! -s "$seed" ]; then
        echo "arena: generating $seed (HttpArena's scripts/generate-pgdb.py)" >&2
        python3 "$ARENA_PEERS/generate-pgdb.py" "$ARENA_DATA/dataset.json" "$seed" >&2 || return 1
    fi
    echo "$seed"
}

arena_redis_start() {
    if ! command -v redis-server >/dev/null; then
        echo "arena: installing redis-server" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
        command -v redis-server >/dev/null || { echo "arena: redis-server did not install" >&2; return 1; }
    fi
    local port
    port=$(arena_free_port)
    mkdir -p "$ARENA_ENV_DIR/redis"
    redis-server --port "$port" --bind 127.0.0.1 --protected-mode no --save "" --appendonly no \
        --daemonize no --dir "$ARENA_ENV_DIR/redis" --maxmemory 512mb \
        --maxmemory-policy allkeys-lru >"$ARENA_ENV_DIR/redis.log" 2>&1 &
    ARENA_REDIS_PID=$!
    local _
    for _ in $(seq 100); do
        if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
            export REDIS_URL="redis://127.0.0.1:$port"
            return 0
        fi
        kill -0 "$ARENA_REDIS_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$ARENA_ENV_DIR/redis.log" >&2
    echo "arena: redis-server did not start" >&2
    return 1
}

arena_pg_start() {
    local seed psql
    seed=$(arena_seed) || return 1
    # The cluster runs as `postgres` when root: it must reach DIR/pg through DIR.
    chmod 755 "$ARENA_ENV_DIR"
    mkdir -p "$ARENA_ENV_DIR/pg"
    pg_setup "$ARENA_ENV_DIR/pg" || { echo "arena: the PostgreSQL cluster did not start" >&2; return 1; }
    psql="$PG_BIN/psql"; [ -x "$psql" ] || psql=psql
    "$psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE ROLE bench LOGIN PASSWORD 'bench'" \
        -c "CREATE DATABASE benchmark OWNER bench ENCODING 'UTF8'" >/dev/null || return 1
    "$psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U bench -d benchmark \
        -f "$seed" >/dev/null || { echo "arena: loading $seed failed" >&2; return 1; }
    "$psql" -X -q -h "$PG_SOCK" -p "$PG_PORT" -U bench -d benchmark -c "ANALYZE items" >/dev/null
    export DATABASE_URL="postgres://bench:bench@127.0.0.1:$PG_PORT/benchmark"
}

arena_env_setup() {
    ARENA_ENV_DIR=$1
    local with_db=${2:-}
    [ -f "$ARENA_DATA/dataset.json" ] || { echo "arena: no $ARENA_DATA/dataset.json" >&2; return 1; }
    [ -d "$ARENA_DATA/static" ] || { echo "arena: no $ARENA_DATA/static" >&2; return 1; }
    [ -f "$ARENA_CERTS/server.crt" ] || { echo "arena: no $ARENA_CERTS/server.crt" >&2; return 1; }
    export DATASET_PATH="$ARENA_DATA/dataset.json"
    export STATIC_DIR="$ARENA_DATA/static"
    export TLS_CERT="$ARENA_CERTS/server.crt"
    export TLS_KEY="$ARENA_CERTS/server.key"
    export DATABASE_MAX_CONN="${DATABASE_MAX_CONN:-150}"
    if [ "$with_db" = db ]; then
        arena_pg_start || return 1
        arena_redis_start || return 1
    fi
}

arena_data_link() {
    if [ -e /data ] || [ -L /data ]; then
        if [ -d /data/static ]; then return 0; fi
        echo "arena: /data exists without /data/static; the peer will not find its static files" >&2
        return 1
    fi
    ln -s "$ARENA_DATA" /data || return 1
    ARENA_DATA_LINK=/data
}

arena_server_start() {
    local name=$1 cpus=$2 log=$3
    shift 3
    if [ -n "$cpus" ]; then
        taskset -c "$cpus" "$@" >"$log" 2>&1 &
    else
        "$@" >"$log" 2>&1 &
    fi
    ARENA_SERVER_PID=$!
    : "$name"
}

arena_server_stop() {
    local pid=$ARENA_SERVER_PID _
    ARENA_SERVER_PID=""
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

arena_wait_ready() {
    local secs=${1:-30} i
    for i in $(seq $((secs * 10))); do
        if [ -n "$ARENA_SERVER_PID" ] && ! kill -0 "$ARENA_SERVER_PID" 2>/dev/null; then
            return 1
        fi
        if curl -s --max-time 1 -o /dev/null "http://localhost:8080/baseline11?a=1&b=1" 2>/dev/null \
            || curl -sk --http2 --max-time 1 -o /dev/null "https://localhost:8443/baseline2?a=1&b=1" 2>/dev/null \
            || curl -s --http2-prior-knowledge --max-time 1 -o /dev/null "http://localhost:8082/baseline2?a=1&b=1" 2>/dev/null; then
            return 0
        fi
        [ "$i" -lt $((secs * 10)) ] && sleep 0.1
    done
    return 1
}

arena_env_cleanup() {
    arena_server_stop
    if [ -n "$ARENA_REDIS_PID" ]; then
        kill "$ARENA_REDIS_PID" 2>/dev/null || true
        wait "$ARENA_REDIS_PID" 2>/dev/null || true
        ARENA_REDIS_PID=""
    fi
    pg_cleanup
    if [ -n "$ARENA_DATA_LINK" ] && [ -L "$ARENA_DATA_LINK" ] \
        && [ "$(readlink "$ARENA_DATA_LINK")" = "$ARENA_DATA" ]; then
        rm -f "$ARENA_DATA_LINK"
    fi
    ARENA_DATA_LINK=""
}
