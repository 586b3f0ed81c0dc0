#!/usr/bin/python3
"""make bench, the commit path alone: runs build/bench_commit (bench/bench_commit.c),
which times the scan writer's store call on a fresh SQLite database for batches of 1,
15 and 100 visits, without httpd around it, each also with a webhook subscribed to
scan.created (its events written in the same transaction). No target.
QRT_TEST_BACKEND=pgsql times it on an empty database of a throwaway PostgreSQL cluster
(durable defaults, as benchlib makes them): each batch size with the writer's
pipelined transaction and with apr_dbd's, side by side.
Environment: BENCH_COMMITS (commits of the smaller batches, default 2,000); BENCH_KEEP=1
leaves the databases in place (their paths printed) to read their pages per table;
BENCH_SIZE=n one batch size; BENCH_WEBHOOK=0 or 1 only without or with the webhook."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("QRT_TEST_BUILD", os.path.join(HERE, "..", "build"))


def main():
    path = os.path.join(BUILD, "bench_commit")
    if not os.path.exists(path):
        print("commit bench: %s is missing (make %s)" % (path, "build/bench_commit"),
              file=sys.stderr)
        return 1
    if os.environ.get("QRT_TEST_BACKEND", "sqlite") == "pgsql":
        from benchlib import pg_cluster
        _, params = pg_cluster().new_database()
        return subprocess.call([path], env=dict(os.environ, BENCH_PG_PARAMS=params))
    return subprocess.call([path])


if __name__ == "__main__":
    sys.exit(main())
