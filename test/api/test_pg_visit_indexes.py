"""Fewer, narrower indexes on PostgreSQL's visit_rows (SQLite only takes the number):
visits_visitor_id carries the tracker and visits_visitor_tracker is gone (a visitor's
previous visit on a tracker is found along its visits newest first); visits_ua,
visits_place, visits_ref and visits_ip key the tracker and the entry only. A database of
the schema before (the wider set) upgrades to exactly the new set with every answer
unchanged (listings, searches with and without a window, analytics, reports), the
migration runs again over its own result, and visits written after it count their
visitors as a rebuild of the aggregates from the visits does."""

import pytest
import requests

from conftest import Api, BACKEND, started
from lib.counts import check_counts
from lib.migrations import index_keys, migrated, migration_version, rewind
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit

NEW = {
    "visits_visitor_id": "(visitor, visit_start, id) INCLUDE (tracker_id) WHERE (bot = 0)",
    "visits_ua": "(tracker_id, ua_id)",
    "visits_place": "(tracker_id, place_id)",
    "visits_ref": "(tracker_id, ref_id) WHERE (ref_id IS NOT NULL)",
    "visits_ip": "(tracker_id, ip_id) WHERE (ip_id IS NOT NULL)",
}

# the set of the schema before, as migrations 020 and 052 made it
OLD = ("DROP INDEX visits_visitor_id, visits_ua, visits_place, visits_ref, visits_ip; "
       "CREATE INDEX visits_visitor_id ON visit_rows (visitor, visit_start, id) WHERE bot = 0; "
       "CREATE INDEX visits_visitor_tracker ON visit_rows (visitor, tracker_id, visit_start, id) "
       "WHERE bot = 0; "
       "CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id, visit_start, id); "
       "CREATE INDEX visits_place ON visit_rows (tracker_id, place_id, visit_start, id); "
       "CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id, visit_start, id) "
       "WHERE ref_id IS NOT NULL; "
       "CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id, visit_start, id) "
       "WHERE ip_id IS NOT NULL;")

SEARCHES = ("iPhone", "Firefox", "Paris", "example.org", "198.51.100", "idx-b")

# The schema version of this change (its migration file's number).
VERSION = migration_version("pg_visit_indexes")


def indexes(srv):
    return index_keys(srv, ("visit_rows",))


def answers(a, tids):
    out = []
    window = {"visit_start": ts(T0 + 5 * 3600), "visit_start_end": ts(T0 + 30 * 3600)}
    for tid in tids:
        out.append(listing(a, tid, rows=100))
        out.append(listing(a, tid, rows=5, page=2))
        for word in SEARCHES:
            out.append(listing(a, tid, search=word, rows=10))
            out.append(listing(a, tid, search=word, rows=3, page=2))
            out.append(listing(a, tid, search=word, rows=10, **window))
            out.append(listing(a, tid, search=word, rows=10, since_id=1))
        r = a.get("/tracker/analytics/%d" % tid)
        assert r.status_code == 200, r.text
        out.append(r.json())
    for kind in ("name", "browser", "country", "city", "date"):
        r = a.get("/report/", params={"report": kind})
        assert r.status_code == 200, r.text
        out.append(r.json())
    r = a.get("/report/", params={"report": "name", "trackers[]": list(tids)})
    assert r.status_code == 200, r.text
    out.append(r.json())
    return out


def rebuilt(srv, a, tids):
    """The answers after the aggregates are rebuilt from the visits."""
    srv.stop()
    srv.admin("aggregates", "rebuild")
    srv.start()
    return answers(a, tids)


def test_a_postgresql_upgrade_makes_the_new_visit_indexes_and_keeps_every_answer():
    if BACKEND != "pgsql":
        pytest.skip("PostgreSQL's indexes of visit_rows (SQLite's are its own)")
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t1, t2, t3 = new_tracker(a), new_tracker(a), new_tracker(a)
            tids = (t1["tracker_id"], t2["tracker_id"], t3["tracker_id"])
            for agent in ("idx-a", "idx-b"):
                r = requests.get("%s/q/%s" % (srv.base, t1["code"]), allow_redirects=False,
                                 timeout=30, headers={"User-Agent": agent,
                                                      "Referer": "https://example.org/x"})
                assert r.status_code == 302, r.text
            # a few visitors (address and user agent) coming back to the trackers in turn
            import_visits(srv, [visit(tids[k % 3 if k % 5 else 0], T0 + k * 3600,
                                      user_agent="idx-%d iPhone" % (k % 3),
                                      browser=("Chrome", "Firefox")[k % 2],
                                      city=("Berlin", "Paris", "Rome")[k % 3],
                                      ip="198.51.100.%d" % (k % 4),
                                      referer=(None, "https://example.org/%d" % k)[k % 2],
                                      source=("scan", "click")[k % 3 == 0],
                                      bot=k % 11 == 10)
                                for k in range(60)])
            now = indexes(srv)
            for name, keys in NEW.items():
                assert now.get(name) == keys, (name, now)
            assert "visits_visitor_tracker" not in now, now
            assert {"visit_rows_pkey", "visits_tracker_time", "visits_dest"} <= set(now), now
            assert "visits_tracker_id" not in now, now       # schema 57
            # schema 63: the dictionaries count their references
            assert not {"visits_by_ip", "visits_by_dest"} & set(now), now
            before = answers(a, tids)
            assert before == rebuilt(srv, a, tids)
            # the schema before: its wider set, then the upgrade
            rewind(srv, VERSION, OLD)
            assert "visits_visitor_tracker" in indexes(srv)
            srv.start()
            assert migrated(srv, VERSION)
            assert indexes(srv) == now
            assert answers(a, tids) == before
            check_counts(srv)
            # again over its own result (a migration that stopped half way is run again)
            rewind(srv, VERSION)
            srv.start()
            assert indexes(srv) == now
            assert answers(a, tids) == before
            # the seek of a visitor's previous visit on a tracker takes visits_visitor_id
            plan = srv.sql(
                "SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN SELECT "
                "v.visit_start FROM visit_rows v WHERE v.visitor = 7 AND v.tracker_id = %d "
                "AND v.bot = 0 AND v.id < 1000 ORDER BY v.visit_start DESC, v.id DESC LIMIT 1"
                % tids[0])
            assert "visits_visitor_id" in plan, plan
            # writers after it: the same visitors again (first visits on a tracker and
            # returns) and a scan; the answers then as a rebuild from the visits makes them
            import_visits(srv, [visit(tids[(k + 1) % 3], T0 + 86400 + k * 600,
                                      user_agent="idx-%d iPhone" % (k % 4),
                                      ip="198.51.100.%d" % (k % 5),
                                      city=("Berlin", "Lyon")[k % 2])
                                for k in range(30)])
            r = requests.get("%s/q/%s" % (srv.base, t3["code"]), allow_redirects=False,
                             timeout=30, headers={"User-Agent": "idx-a"})
            assert r.status_code == 302, r.text
            check_counts(srv)
            after = answers(a, tids)
            assert after != before
            assert after == rebuilt(srv, a, tids)
            # the view written by hand (its visit reaches the aggregates at a rebuild)
            srv.sql("INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, "
                    "browser, browser_version, os, device, referer, user_agent, bot, visitor, "
                    "destination) VALUES (%d, %d, 'scan', '192.0.2.9', 'FR', 'Lyon', 'Safari', "
                    "'17', 'iOS', 'mobile', NULL, 'by-hand', 0, '00000000000000ff', NULL)"
                    % (tids[1], T0 + 86400 * 4))
            check_counts(srv)
            seen = listing(a, tids[1], search="by-hand", rows=10)
            assert seen["meta"]["total"] == 1, seen
            every = listing(a, tids[0], rows=100)["data"]
            seen = listing(a, tids[0], search="198.51.100", rows=100)
            assert seen["data"] == [v for v in every if "198.51.100" in (v["ip"] or "")], seen
            assert seen["meta"]["total"] == len(seen["data"]) > 0, seen
    finally:
        srv.cleanup()
