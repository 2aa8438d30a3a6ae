#!/bin/bash
# Server CPU per HTTP request of one example binary under wrk: the server pinned to CPU 0,
# `wrk -t1 -c64` on CPU 1 (2 s warm-up, then 5 s measured); CPU time from /proc/PID/stat.
# Run it alternately for two binaries (A B A B A B) and compare the medians.
# usage: scripts/ab_http.sh BIN PORT   (BIN: target/release/http or target/release/axum)
BIN=$1; PORT=$2
taskset -c 0 $BIN --port $PORT --cores 1 > /dev/null 2>&1 &
PID=$!
sleep 1
taskset -c 1 wrk -t1 -c64 -d2s http://127.0.0.1:$PORT/ > /dev/null 2>&1
T0=$(awk '{print $14+$15}' /proc/$PID/stat)
OUT=$(taskset -c 1 wrk -t1 -c64 -d5s http://127.0.0.1:$PORT/ 2>&1)
T1=$(awk '{print $14+$15}' /proc/$PID/stat)
kill -INT $PID; wait $PID 2>/dev/null
REQ=$(echo "$OUT" | awk '/requests in/{print $1}')
RPS=$(echo "$OUT" | awk '/Requests\/sec/{print $2}')
TCK=$(getconf CLK_TCK)
echo "$(basename $(dirname $(dirname $BIN))) rps=$RPS us/req=$(echo "($T1-$T0)*1000000/$TCK/$REQ" | bc -l | cut -c1-5)"
