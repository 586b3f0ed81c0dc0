#!/usr/bin/python3
"""make bench: runs every benchmark of bench/ on SQLite and on PostgreSQL, prints their
figures and a summary.

The runs, each in its own process: the scan writer's commit alone on SQLite
(bench_commit.c, built by make as build/bench_commit); the scan path on SQLite, then on
PostgreSQL, then on SQLite with 64 connections on 2 x 16 threads, then with every request
from another visitor on SQLite and on PostgreSQL; the visit listing on SQLite, then on PostgreSQL; a search bounded by the
searched tracker's own visits (bench_search.py) on SQLite, then on PostgreSQL; the import of
a peer's export (bench_import_peers.py) and a bulk create of 1,000 trackers (bench_bulk.py),
each on SQLite, then on PostgreSQL; the reports on SQLite (10,000,000 visits), then on
PostgreSQL (1,000,000 visits); the reports of a 10,000-tracker account (bench_portfolio.py)
on SQLite, then on PostgreSQL; the QR images and a ZIP of 1,000 of them
(bench_images.py) and images with styles (bench_styles.py) on SQLite. PostgreSQL is a throwaway
cluster of Debian's
PostgreSQL 15 started by the run itself (test/api/conftest.py) with its durable
defaults (QRT_PG_DURABLE=1: fsync, synchronous_commit and full_page_writes on).

A script exits 0 when its targets are met, 2 when only a speed or memory target is
missed (printed, not a failure), anything else when the run failed or a scan was lost.
Exit status: 1 when a run failed or lost a scan, else 0.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SQLITE = {"QRT_TEST_BACKEND": "sqlite"}
PGSQL = {"QRT_TEST_BACKEND": "pgsql", "QRT_PG_DURABLE": "1"}
# BENCH_VISITS is the environment's own for every run; unset, each script takes its
# default (10,000,000 reports visits on SQLite, 1,000,000 on PostgreSQL).
RUNS = [
    ("commit, SQLite", "bench_commit.py", SQLITE),
    ("scan, SQLite", "bench_scan.py", dict(SQLITE, BENCH_WEBHOOK="1")),
    ("scan, PostgreSQL", "bench_scan.py", dict(PGSQL, BENCH_WEBHOOK="1")),
    ("scan, SQLite, 64 connections on 2 x 16 threads", "bench_scan.py",
     dict(SQLITE, BENCH_CONNECTIONS="64", BENCH_THREADS="16")),
    ("scan, SQLite, every request from another visitor", "bench_scan.py",
     dict(SQLITE, BENCH_VARIED="1")),
    ("scan, PostgreSQL, every request from another visitor", "bench_scan.py",
     dict(PGSQL, BENCH_VARIED="1")),
    ("visits, SQLite", "bench_visits.py", SQLITE),
    ("visits, PostgreSQL", "bench_visits.py", PGSQL),
    ("search, SQLite", "bench_search.py", SQLITE),
    ("search, PostgreSQL", "bench_search.py", PGSQL),
    ("import peers, SQLite", "bench_import_peers.py", SQLITE),
    ("import peers, PostgreSQL", "bench_import_peers.py", PGSQL),
    ("bulk, SQLite", "bench_bulk.py", SQLITE),
    ("bulk, PostgreSQL", "bench_bulk.py", PGSQL),
    ("reports, SQLite", "bench_reports.py", SQLITE),
    ("reports, PostgreSQL", "bench_reports.py", PGSQL),
    ("portfolio, SQLite", "bench_portfolio.py", SQLITE),
    ("portfolio, PostgreSQL", "bench_portfolio.py", PGSQL),
    ("styles, SQLite", "bench_styles.py", SQLITE),
    ("images, SQLite", "bench_images.py", SQLITE),
    ("webhooks, SQLite", "bench_webhooks.py", SQLITE),
    ("webhooks, PostgreSQL", "bench_webhooks.py", PGSQL),
]


def load():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def main():
    results = []
    for label, name, env in RUNS:
        path = os.path.join(HERE, name)
        if not os.path.exists(path):
            continue
        print("== %s (%s; load average %s)" % (label, name, load()), flush=True)
        started = time.time()
        rc = subprocess.call([sys.executable, path], env=dict(os.environ, **env))
        results.append((label, rc, time.time() - started))
        print(flush=True)
    print("== summary")
    failed = False
    for label, rc, took in results:
        if rc == 0:
            state = "ok"
        elif rc == 2:
            state = "ok, a target missed (see above)"
        else:
            state = "FAILED (exit status %d)" % rc
            failed = True
        print("  %-20s %-36s %5.0f s" % (label, state, took))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
