#!/bin/sh
# bench/reference_build.sh REV: builds commit REV's module and admin tool for
# bench_scan.py's BENCH_REFERENCE, and prints the build directory to give it:
#
#   BENCH_REFERENCE=$(sh bench/reference_build.sh 7b9060c) /usr/bin/python3 bench/bench_scan.py
#
# The sources come from `git archive` into build/ref-REV (no worktree to clean up;
# `make clean` removes them); a second call reuses the build.
set -e
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short "${1:?usage: $0 REV}^{commit}")
dir=build/ref-$rev
if [ ! -f "$dir/build/mod_qrtrack.so" ] || [ ! -f "$dir/build/qrtrack-admin" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    git archive "$rev" | tar -x -C "$dir"
    make -C "$dir" build/mod_qrtrack.so build/qrtrack-admin >"$dir/make.log" 2>&1 \
        || { tail -20 "$dir/make.log" >&2; exit 1; }
fi
echo "$(pwd)/$dir/build"
