#!/usr/bin/python3
"""make bench, bulk: POST /tracker/bulk of 1,000 trackers (CONTRACT section 7, target
< 1 s), as JSON and as CSV, each with tags, half of them with a code of their own, one
under an Idempotency-Key and its replay.

BENCH_ROUNDS (default 5) requests of each kind on one server; the median and the worst
are printed in ms. QRT_TEST_BACKEND=pgsql runs on a throwaway PostgreSQL cluster.
Exit status 2 when the target is missed, 1 when the run fails.
"""
import os
import statistics
import sys
import time
import uuid

from benchlib import BACKEND, PlainApi
from conftest import start_server

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
ROWS = 1000
TARGET_MS = 1000


def rows(run):
    out = []
    for i in range(ROWS):
        row = {"redirect_url": "https://example.com/%s/%d" % (run, i),
               "name": "Bulk %d" % i, "tags": ["campaign:bench", "row:%d" % (i % 50)]}
        if i % 2:
            row["code"] = "b%s-%d" % (run, i)
        out.append(row)
    return out


def as_csv(trackers):
    lines = ["redirect_url,name,code,tags"]
    for t in trackers:
        lines.append("%s,%s,%s,%s" % (t["redirect_url"], t["name"], t.get("code", ""),
                                       ";".join(t["tags"])))
    return ("\r\n".join(lines) + "\r\n").encode()


def timed(api, **kw):
    t0 = time.monotonic()
    r = api.post("/tracker/bulk", **kw)
    ms = (time.monotonic() - t0) * 1000
    if r.status_code != 200 or r.json()["meta"]["failed"] != 0:
        print("bulk failed: %d %s" % (r.status_code, r.text[:300]))
        sys.exit(1)
    return ms, r


def main():
    srv = start_server(accounts=[("bench", "enterprise")],
                       extra="QRTrackAccountRateLimit bench 0\n")
    try:
        api = PlainApi(srv, srv.token("bench"))
        got = {"json": [], "csv": [], "keyed": [], "replay": []}
        for n in range(ROUNDS):
            run = uuid.uuid4().hex[:8]
            got["json"].append(timed(api, json={"trackers": rows(run + "j")})[0])
            got["csv"].append(timed(api, data=as_csv(rows(run + "c")),
                                    headers={"Content-Type": "text/csv"})[0])
            key = {"Idempotency-Key": "bench-" + run}
            body = {"trackers": rows(run + "k")}
            got["keyed"].append(timed(api, json=body, headers=key)[0])
            ms, r = timed(api, json=body, headers=key)
            if r.headers.get("Idempotent-Replayed") != "true":
                print("the replay was not replayed")
                return 1
            got["replay"].append(ms)
        missed = False
        print("bulk of %d trackers on %s, %d rounds (ms):" % (ROWS, BACKEND, ROUNDS))
        for kind, ms in got.items():
            med = statistics.median(ms)
            print("  %-7s median %7.1f  worst %7.1f" % (kind, med, max(ms)))
            missed = missed or (kind != "replay" and med >= TARGET_MS)
        if missed:
            print("target missed: a bulk of %d must answer in < %d ms" % (ROWS, TARGET_MS))
            return 2
        return 0
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
