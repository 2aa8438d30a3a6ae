#!/usr/bin/env bash
# The feature-unification trap, checked: no package a user builds on this runtime (the
# libraries and every example's default build) turns on a tokio feature that needs tokio's
# runtime (rt, rt-multi-thread, net, time, signal, process, fs, io-std). Such a feature lets
# `tokio::spawn`, `tokio::time` or `tokio::net` compile and then panic at run time with
# "there is no reactor running". Dev-dependencies and the off-by-default `tokio-peer`
# features (the benchmarks' tokio peers) are not part of those builds, so not checked.
# `arena` (the HttpArena entry) is not in the list: redis-rs's async client, which it uses for
# crud's cache, compiles only with a runtime feature (`tokio-comp`: tokio's rt, net, time).
# arena never calls into them: it opens the Redis socket itself, runs the connection's
# driver as a task of this runtime and turns off redis-rs's response timeout (its one use of
# tokio's timer); its tests and scripts/arena_check.sh run every route that touches Redis.
# Usage: scripts/no_tokio_runtime.sh   (exit 1 and the offending features on failure)
set -euo pipefail
cd "$(dirname "$0")/.."

bad='^(rt|rt-multi-thread|net|time|signal|process|fs|io-std)$'
pkgs="corering-runtime corering-net corering-fs examples grpc-example tfb chat"
status=0
# cargo tree -i ignores a -p that names no package (it prints the whole workspace's tree), so
# each package is first looked up: one renamed or gone fails here.
members=$(cargo metadata -q --no-deps --format-version 1 \
    | python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
for pkg in $pkgs; do
    if ! grep -qx -- "$pkg" <<<"$members"; then
        echo "no_tokio_runtime: no package $pkg in the workspace (renamed?): nothing checked" >&2
        status=1
    fi
done
for pkg in $pkgs; do
    # Every feature set a user of the package could pick among the libraries' own.
    for features in "" "--all-features"; do
        if [ -n "$features" ] && [[ "$pkg" != corering-* ]]; then continue; fi
        # A cargo tree that fails (a broken manifest, no index) checks nothing: it fails the
        # script, with its error, instead of reading as "no tokio feature". The one failure
        # that is an answer: tokio in no build of the package ("package ID specification
        # `tokio` did not match any packages").
        # shellcheck disable=SC2086
        if ! tree=$(cargo tree -q -e normal,build,features -i tokio -p "$pkg" $features 2>&1); then
            if ! grep -q 'specification `tokio` did not match any packages' <<<"$tree"; then
                echo "no_tokio_runtime: cargo tree failed for $pkg ${features:-(default features)}:" >&2
                echo "$tree" >&2
                status=1
                continue
            fi
            tree=""
        fi
        found=$(echo "$tree" | grep -oE 'tokio feature "[a-z-]+"' | sed -E 's/.*"(.*)"/\1/' \
            | sort -u | grep -E "$bad" || true)
        if [ -n "$found" ]; then
            echo "no_tokio_runtime: $pkg ${features:-(default features)} turns on tokio's: $(echo $found)" >&2
            status=1
        else
            echo "no_tokio_runtime: $pkg ${features:-(default features)}: no tokio runtime feature"
        fi
    done
done
exit $status
