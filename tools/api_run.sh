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
# Each pass's output is printed once it ends. PYTHON is the interpreter.
set -u
py=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d /tmp/qrt-api-XXXXXX)
cg=
trap 'rm -rf "$out"' EXIT INT TERM

# Makes the idle cgroup (the CPU controller's, v1 or v2) and prints its directory.
idle_cgroup() {
    for top in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
        [ -f "$top/cgroup.procs" ] || continue
        if [ -f "$top/cgroup.controllers" ]; then
            grep -qw cpu "$top/cgroup.controllers" || continue
            grep -qw cpu "$top/cgroup.subtree_control" ||
                echo +cpu > "$top/cgroup.subtree_control" 2>/dev/null || continue
        fi
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

# Gives each shared pass a group of its own inside it, PostgreSQL's with half as much
# weight again as SQLite's (its tests take about 1.7 times the CPU, SQLite's the package
# build), so that both passes end about together rather than one running last on its own
# with its two workers' waits left idle, and prints the group of backend $1 (the idle
# group where none can be made).
pass_cgroup() {
    w=2
    [ "$1" = pgsql ] && w=3
    if [ -f "$cg/cgroup.controllers" ]; then
        grep -qw cpu "$cg/cgroup.subtree_control" ||
            echo +cpu > "$cg/cgroup.subtree_control" 2>/dev/null || { echo "$cg"; return; }
    fi
    if mkdir "$cg/$1" 2>/dev/null; then
        { [ -f "$cg/$1/cpu.weight" ] && echo $((50 * w)) > "$cg/$1/cpu.weight"; } ||
            { [ -f "$cg/$1/cpu.shares" ] && echo $((512 * w)) > "$cg/$1/cpu.shares"; } ||
            true
        echo "$cg/$1"
    else
        echo "$cg"
    fi
}

# Removes it, once the passes in it have ended (a detached rm of theirs may still run:
# it goes back to the top group).
remove_cgroup() {
    for d in "$cg/sqlite" "$cg/pgsql" "$cg"; do
        [ -d "$d" ] || continue
        for pid in $(cat "$d/cgroup.procs" 2>/dev/null); do
            echo "$pid" > "$(dirname "$cg")/cgroup.procs" 2>/dev/null
        done
        rmdir "$d" 2>/dev/null || echo "api_run.sh: $d left behind" >&2
    done
}

# A shared pass of backend $1 (in cgroup $2, if any); the seconds it ended at after the
# start go to $out/$1.end.
shared() {
    # (the pass's own shell joins the cgroup, then becomes pytest: $$ in a subshell would be
    # this script's)
    QRT_TEST_BACKEND=$1 sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 1
        shift; exec "$@"' sh "$2" "$py" -m pytest -q -p no:cacheprovider -n 2 \
        --dist loadfile -m "not serial" --durations=10 test/api > "$out/$1" 2>&1
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
            --durations=10 test/api || src=1
    done
    return $src
}

start=$(date +%s)
cg=$(idle_cgroup) || cg=
failed=0
(shared sqlite "${cg:+$(pass_cgroup sqlite)}") &
s=$!
(shared pgsql "${cg:+$(pass_cgroup pgsql)}") &
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
    remove_cgroup
elif [ "$failed" = 0 ]; then
    serial || failed=1
fi
exit "$failed"
