#!/bin/sh
# Runs the unit test binaries given, UNIT_JOBS (default 2) at a time, each from test/unit,
# then prints each one's output in the order given; fails when any of them failed.
set -u
jobs=${UNIT_JOBS:-2}
out=$(mktemp -d /tmp/qrt-unit-XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
i=0
for t in "$@"; do
    i=$((i + 1))
    printf '%s %s\n' "$i" "$t"
done | xargs -P "$jobs" -n 2 sh -c \
    'case "$2" in /*) t=$2 ;; *) t=../../$2 ;; esac
      cd test/unit && "$t" > "$0/$1.out" 2>&1; echo $? > "$0/$1.rc"' "$out"
failed=0
i=0
for t in "$@"; do
    i=$((i + 1))
    echo "== $t"
    cat "$out/$i.out"
    if [ "$(cat "$out/$i.rc" 2>/dev/null)" != 0 ]; then
        echo "FAILED: $t"
        failed=$((failed + 1))
    fi
done
[ "$failed" -eq 0 ] || { echo "$failed unit test binaries failed"; exit 1; }
