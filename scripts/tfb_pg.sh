# A private PostgreSQL cluster (sourced by tfb_check.sh, tfb_bench.sh and .ci/run, which keeps
# one up for net_postgres through both `cargo test --workspace` passes):
# PostgreSQL from /usr/lib/postgresql/*/bin or PATH (apt-get install postgresql if neither),
# a cluster in a temp dir, run as the `postgres` user when root, on 127.0.0.1:$PG_PORT (a free
# port, never 5432), with TechEmpower's hello_world database (scripts/tfb_db.sql) owned by
# benchmarkdbuser/benchmarkdbpass (password auth over TCP, trust on its own Unix socket).
#
# pg_setup DIR   creates and starts the cluster under DIR; sets PG_PORT, PG_SOCK, PG_URL
# pg_start/pg_stop   start or stop it (fast shutdown: clients are disconnected)
# pg_psql ARGS   psql on hello_world as benchmarkdbuser, over the Unix socket
# pg_cleanup     stops it if running (the caller removes DIR)

PG_BIN=""
PG_DIR=""

pg_find() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then PG_BIN=$d; return 0; fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        PG_BIN=$(dirname "$(command -v pg_ctl)"); return 0
    fi
    return 1
}

# pg_as_owner CMD ARGS...: runs CMD as the cluster's owner (postgres when root).
pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_setup() {
    PG_DIR=$1
    if ! pg_find; then
        echo "tfb: installing postgresql" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        pg_find || { echo "tfb: postgresql did not install" >&2; return 1; }
    fi
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown postgres "$PG_DIR"
    fi
    chmod 755 "$PG_DIR"
    mkdir -p "$PG_DIR/sock"
    [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR/sock"
    PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    PG_SOCK="$PG_DIR/sock"
    PG_URL="postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:$PG_PORT/hello_world"
    pg_as_owner "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -E UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 >"$PG_DIR/initdb.log" 2>&1 \
        || { cat "$PG_DIR/initdb.log" >&2; return 1; }
    pg_start || return 1
    local psql="$PG_BIN/psql"; [ -x "$psql" ] || psql=psql
    "$psql" -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE ROLE benchmarkdbuser LOGIN PASSWORD 'benchmarkdbpass'" \
        -c "CREATE DATABASE hello_world OWNER benchmarkdbuser ENCODING 'UTF8'" >/dev/null \
        || return 1
    pg_psql -q -f "$(dirname "${BASH_SOURCE[0]}")/tfb_db.sql" >/dev/null || return 1
}

pg_start() {
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_DIR/sock -c fsync=off -c synchronous_commit=off -c max_connections=200" \
        start >/dev/null || { cat "$PG_DIR/postgres.log" >&2; return 1; }
}

pg_stop() {
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 30 stop >/dev/null
}

pg_psql() {
    local psql="$PG_BIN/psql"; [ -x "$psql" ] || psql=psql
    "$psql" -X -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U benchmarkdbuser -d hello_world "$@"
}

pg_cleanup() {
    if [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
        pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
    fi
}
