#!/bin/sh
# make api: the API tests of both backends.
# - The tests marked serial (those that assert a time or memory bound under load, and the
#   browser's) run one at a time, SQLite's then PostgreSQL's.
# - The others, the shared tests, run as the SQLite and the PostgreSQL pass at the same time,
#   two test files at a time each (pytest-xdist).
# The serial tests leave about half of the CPU idle. Where a cgroup can be made whose
# processes get only the CPU that no other process wants (cpu.idle: root, a kernel of 5.15 or
# later), the shared passes run in it beside the serial tests, and take all of the CPU once
# those end; elsewhere they run first, then the serial tests with nothing else running.
# Their PostgreSQL clusters run in a sibling group of a small CPU share (not idle): a
# cluster starved outright answered nothing for seconds, and the nodes took it for one
# that stopped answering (their probe gives a server 2 s), which no server of the
# machine's own is.
# Each pass's output is printed once it ends. PYTHON is the interpreter.
set -u
py=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d /tmp/qrt-api-XXXXXX)
cg=
trap 'rm -rf "$out"' EXIT
# (interrupted, the run ends: a trap that only cleaned up let it go on to the next pass)
trap 'exit 130' INT
trap 'exit 143' TERM

# Makes the idle cgroup (the CPU controller's, v1 or v2) and prints its directory.
idle_cgroup() {
    for top in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
        [ -f "$top/cgroup.procs" ] || continue
        if [ -f "$top/cgroup.controllers" ]; then
            grep -qw cpu "$top/cgroup.controllers" || continue
            grep -qw cpu "$top/cgroup.subtree_control" ||
                echo +cpu > "$top/cgroup.subtree_control" 2>/dev/null || continue
        fi
        # (a run killed before its end leaves its group behind, empty: removed once its
        # process is gone, or when a later run got the same process id)
        for old in "$top"/qrtrack-api-*; do
            [ -d "$old" ] || continue
            pid=${old##*-}
            if [ "$pid" = $$ ] || ! kill -0 "$pid" 2>/dev/null; then
                rmdir "$old" 2>/dev/null
            fi
        done
        d=$top/qrtrack-api-$$
        mkdir "$d" 2>/dev/null || continue
        if echo 1 > "$d/cpu.idle" 2>/dev/null; then
            echo "$d"
            return 0
        fi
        rmdir "$d"
    done
    return 1
}

# Makes the PostgreSQL clusters' group beside the idle one ($1), with a CPU share of
# about 6 % of a busy core's (cgroup v1 cpu.shares 64 of 1024; v2 cpu.weight 6 of 100),
# and prints its directory.
pg_cgroup() {
    d=$(dirname "$1")/qrtrack-api-pg-$$
    mkdir "$d" 2>/dev/null || return 1
    if echo 64 > "$d/cpu.shares" 2>/dev/null || echo 6 > "$d/cpu.weight" 2>/dev/null; then
        echo "$d"
        return 0
    fi
    rmdir "$d"
    return 1
}

# Removes group $1, once the passes in it have ended (a detached rm of theirs may still
# run: it goes back to the top group).
remove_cgroup() {
    for pid in $(cat "$1/cgroup.procs" 2>/dev/null); do
        echo "$pid" > "$(dirname "$1")/cgroup.procs" 2>/dev/null
    done
    rmdir "$1" 2>/dev/null || echo "api_run.sh: $1 left behind" >&2
}

# A shared pass of backend $1 (in the idle cgroup, if any); the seconds it ended at after
# the start go to $out/$1.end.
shared() {
    # (the pass's own shell joins the cgroup, then becomes pytest: $$ in a subshell would be
    # this script's)
    QRT_TEST_BACKEND=$1 QRT_TEST_PG_CGROUP=$pgcg \
        sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 1
        shift; exec "$@"' sh "$cg" "$py" -m pytest -q -p no:cacheprovider -n 2 \
        --dist loadfile -m "not serial" --durations=25 test/api > "$out/$1" 2>&1
    rc=$?
    echo $(($(date +%s) - start)) > "$out/$1.end"
    return $rc
}

# Both backends' serial tests, PostgreSQL's also when SQLite's failed (a run tells all).
serial() {
    src=0
    for b in sqlite pgsql; do
        echo "== QRT_TEST_BACKEND=$b: the serial tests"
        QRT_TEST_BACKEND=$b "$py" -m pytest -q -p no:cacheprovider -m serial \
            --durations=25 test/api || src=1
    done
    return $src
}

start=$(date +%s)
cg=$(idle_cgroup) || cg=
pgcg=
[ -z "$cg" ] || pgcg=$(pg_cgroup "$cg") || pgcg=
failed=0
(shared sqlite) &
s=$!
(shared pgsql) &
p=$!
if [ -n "$cg" ]; then
    serial || failed=1
    echo "== the serial tests ended $(($(date +%s) - start)) s after the start"
fi
for b in sqlite pgsql; do
    if [ "$b" = sqlite ]; then wait "$s"; else wait "$p"; fi
    rc=$?
    echo "== QRT_TEST_BACKEND=$b: the tests that may share the machine" \
        "(ended $(cat "$out/$b.end" 2>/dev/null) s after the start)"
    cat "$out/$b"
    [ "$rc" = 0 ] || failed=1
done
if [ -n "$cg" ]; then
    remove_cgroup "$cg"
    [ -z "$pgcg" ] || remove_cgroup "$pgcg"
elif [ "$failed" = 0 ]; then
    serial || failed=1
fi
exit "$failed"
