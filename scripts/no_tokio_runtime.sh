#!/usr/bin/env bash
# The feature-unification trap, checked: no package a user builds on this runtime (the
# libraries and every example's default build) turns on a tokio feature that needs tokio's
# runtime (rt, rt-multi-thread, net, time, signal, process, fs, io-std). Such a feature lets
# `tokio::spawn`, `tokio::time` or `tokio::net` compile and then panic at run time with
# "there is no reactor running". Dev-dependencies and the off-by-default `tokio-peer`
# features (the benchmarks' tokio peers) are not part of those builds, so not checked.
# Usage: scripts/no_tokio_runtime.sh   (exit 1 and the offending features on failure)
set -euo pipefail
cd "$(dirname "$0")/.."

bad='^(rt|rt-multi-thread|net|time|signal|process|fs|io-std)$'
status=0
for pkg in corering-runtime corering-net corering-fs examples grpc-example tfb chat; do
    # Every feature set a user of the package could pick among the libraries' own.
    for features in "" "--all-features"; do
        if [ -n "$features" ] && [[ "$pkg" != corering-* ]]; then continue; fi
        # shellcheck disable=SC2086
        found=$(cargo tree -q -e normal,build,features -i tokio -p "$pkg" $features 2>/dev/null \
            | grep -oE 'tokio feature "[a-z-]+"' | sed -E 's/.*"(.*)"/\1/' | sort -u \
            | grep -E "$bad" || true)
        if [ -n "$found" ]; then
            echo "no_tokio_runtime: $pkg ${features:-(default features)} turns on tokio's: $(echo $found)" >&2
            status=1
        else
            echo "no_tokio_runtime: $pkg ${features:-(default features)}: no tokio runtime feature"
        fi
    done
done
exit $status
