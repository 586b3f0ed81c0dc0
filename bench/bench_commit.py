#!/usr/bin/python3
"""make bench, the commit path alone: runs build/bench_commit (bench/bench_commit.c),
which times the scan writer's store call on a fresh SQLite database for batches of 1,
15 and 100 visits, without httpd around it. No target; QRT_TEST_BACKEND=pgsql has
nothing to run (the PostgreSQL commit path is measured by bench_scan.py).
Environment: BENCH_COMMITS (commits of the smaller batches, default 2,000); BENCH_KEEP=1
leaves the databases in place (their paths printed) to read their pages per table."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("QRT_TEST_BUILD", os.path.join(HERE, "..", "build"))


def main():
    if os.environ.get("QRT_TEST_BACKEND", "sqlite") != "sqlite":
        print("commit bench: SQLite only")
        return 0
    path = os.path.join(BUILD, "bench_commit")
    if not os.path.exists(path):
        print("commit bench: %s is missing (make %s)" % (path, "build/bench_commit"),
              file=sys.stderr)
        return 1
    return subprocess.call([path])


if __name__ == "__main__":
    sys.exit(main())
