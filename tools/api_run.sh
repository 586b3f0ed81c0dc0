#!/bin/sh
# make api: the API tests of both backends. The tests that may share the machine run first,
# the SQLite and the PostgreSQL pass at the same time, two test files at a time each
# (pytest-xdist; each pass's output is printed once it ends); then each backend's tests
# marked serial, one at a time, with nothing else running. PYTHON is the interpreter.
set -u
py=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d /tmp/qrt-api-XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
shared() {
    QRT_TEST_BACKEND=$1 "$py" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
        -m "not serial" --durations=10 test/api > "$out/$1" 2>&1
    echo $? > "$out/$1.rc"
}
shared sqlite &
s=$!
shared pgsql &
p=$!
failed=0
for b in sqlite pgsql; do
    if [ "$b" = sqlite ]; then wait "$s"; else wait "$p"; fi
    echo "== QRT_TEST_BACKEND=$b: the tests that may share the machine"
    cat "$out/$b"
    [ "$(cat "$out/$b.rc")" = 0 ] || failed=1
done
[ "$failed" = 0 ] || exit 1
for b in sqlite pgsql; do
    echo "== QRT_TEST_BACKEND=$b: the serial tests"
    QRT_TEST_BACKEND=$b "$py" -m pytest -q -m serial --durations=10 test/api || exit 1
done
