"""PostgreSQL (schema 59; SQLite only takes the number): the index of a tracker's visits in
time order keys the tracker, time and id only (visits_tracker_time), in place of
visits_tracker_visitor, which also carried the visitor, bot, click, user agent and place.
Listings page through it without the table; reports read the rest of a day not sealed
yet from the table. A database of the schema before upgrades with every answer unchanged
(listings and their pages, polls, searches, exports, analytics, reports over sealed days,
today and windows that cut days), the migration runs again over its own result, and visits
written after it count as a rebuild of the aggregates from the visits does."""
import time

import pytest
import requests

from conftest import Api, BACKEND, started
from lib.counts import check_counts
from lib.migrations import index_keys, migration_version, upgrade_twice
from lib.visits import export, import_visits, listing, new_tracker, ts, visit

pytestmark = pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's schema")

VERSION = migration_version("pg_tracker_time")

WIDE = "(tracker_id, visit_start, id, visitor, bot, click, ua_id, place_id)"
NARROW = "(tracker_id, visit_start, id)"

# the schema before: the covering index, as migration 052 made it
OLD = ("DROP INDEX visits_tracker_time; "
       "CREATE INDEX visits_tracker_visitor ON visit_rows %s;" % WIDE)

DAY = 86400


def indexes(srv):
    return index_keys(srv, ("visit_rows",))


def report(a, **params):
    r = a.get("/report/", params=params)
    assert r.status_code == 200, (params, r.text)
    return r.json()


def answers(a, tids, now):
    out = []
    for tid in tids:
        out.append(listing(a, tid, rows=100))
        for page in (2, 5, 9):
            out.append(listing(a, tid, rows=4, page=page))
        out.append(listing(a, tid, rows=3, page=2, since_id=5))
        out.append(listing(a, tid, rows=50, visit_start=ts(now - 3 * DAY),
                          visit_start_end=ts(now)))
        for word in ("Firefox", "Paris", "tt-2"):
            out.append(listing(a, tid, search=word, rows=4, page=2))
        out.append(export(a, tid))
        r = a.get("/tracker/analytics/%d" % tid)
        assert r.status_code == 200, r.text
        out.append(r.json())
    windows = ({}, {"visit_start": ts(now - 30 * DAY), "visit_start_end": ts(now)},
               {"visit_start": ts(now - 2 * DAY - 5000), "visit_start_end": ts(now - 7000)},
               {"visit_start": ts(now - 6 * 3600), "visit_start_end": ts(now + 60)})
    for w in windows:
        for kind in ("name", "browser", "city", "date"):
            out.append(report(a, report=kind, **w))
            out.append(report(a, report=kind, **dict(w, **{"trackers[]": list(tids[:2])})))
    return out


def test_the_tracker_index_keys_time_and_id_and_the_migration_keeps_every_answer():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            trackers = [new_tracker(a) for _ in range(3)]
            tids = [t["tracker_id"] for t in trackers]
            now = int(time.time())
            # 40 days of visits up to an hour ago (sealed days and today), visitors that
            # return, clicks, bots, several agents and places; equal times on purpose
            import_visits(srv, [visit(tids[k % 3], now - 40 * DAY + k * (DAY // 3) // 2 * 2,
                                      user_agent="tt-%d Firefox/1%d" % (k % 5, k % 7),
                                      browser=("Firefox", "Chrome", "Safari")[k % 3],
                                      city=("Berlin", "Paris", "Rome", "Lagos")[k % 4],
                                      ip="198.51.100.%d" % (k % 6),
                                      source=("scan", "click")[k % 4 == 0],
                                      bot=k % 13 == 12)
                                for k in range(236)])
            # and scans now: today's visits, through the writer
            for k in range(6):
                r = requests.get("%s/q/%s" % (srv.base, trackers[k % 2]["code"]),
                                 allow_redirects=False, timeout=30,
                                 headers={"User-Agent": "tt-scan-%d Firefox/120.0" % (k % 3)})
                assert r.status_code == 302, r.text
            now = int(time.time())
            names = indexes(srv)
            assert names.get("visits_tracker_time") == NARROW, names
            assert "visits_tracker_visitor" not in names, names
            # a listing's page is found along the index alone: the visits before it are
            # not read from the table (the planner may read a table this small whole once
            # autovacuum has analysed it: the plan asked for is the one without that)
            plan = srv.sql("SET enable_seqscan = off; SET enable_bitmapscan = off; "
                           "SET enable_sort = off; "
                           "EXPLAIN SELECT v.id FROM visit_rows v WHERE v.tracker_id = %d "
                           "AND v.visit_start >= 0 AND v.visit_start <= %d AND +v.id > 0 "
                           "ORDER BY v.visit_start DESC, v.id DESC LIMIT 4 OFFSET 20"
                           % (tids[0], now))
            assert "Index Only Scan Backward using visits_tracker_time" in plan, plan
            before = answers(a, tids, now)
            assert sum(len(b["data"]) for b in before[:1]) > 60
            # the schema before, then the upgrade (and again over its own result): the same
            # answers

            def check_old():
                assert indexes(srv)["visits_tracker_visitor"] == WIDE

            def check():
                assert indexes(srv) == names
                assert answers(a, tids, now) == before
            upgrade_twice(srv, VERSION, OLD, check, check_old)
            # visits written after it, old and new, count as a rebuild counts them
            import_visits(srv, [visit(tids[k % 3], now - 3 * DAY + k * 3600,
                                      user_agent="tt-%d Firefox/1%d" % (k % 5, k % 7),
                                      city=("Berlin", "Paris")[k % 2])
                                for k in range(30)], pipe=True)
            check_counts(srv)
            after = answers(a, tids, now)
            assert after != before
            srv.stop()
            srv.admin("aggregates", "rebuild")
            srv.start()
            assert answers(a, tids, now) == after
    finally:
        srv.cleanup()
