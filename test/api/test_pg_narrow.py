"""Narrower rows (PostgreSQL; SQLite only takes the number): visit_rows and
visit_dict_counts (dropped by schema 63 since) hold 4-byte tracker ids (their dictionary
ids stay 8 bytes: the dictionaries' sequences could outgrow 4), agg_cnt 4-byte accounts,
buckets and trackers. A database of the schema before
(8-byte ids) upgrades with every answer unchanged, its counts still what the visits say,
and the migration runs again over its own result as well; visits written after it go
through every path (scans, imports, the view written by hand)."""
import os

import pytest
import requests

from conftest import Api, BACKEND, started
from lib.counts import check_counts
from lib.migrations import column_types, migrated, migration_version, rewind
from lib.visits import T0, import_visits, listing, new_tracker, visit

NARROW = {"visit_rows": ("tracker_id", "ua_id", "place_id", "ref_id", "ip_id", "dest_id"),
          "visit_dict_counts": ("tracker_id", "id"),
          "agg_cnt": ("account_id", "bucket", "tracker_id")}

# the visits view goes with the types of its columns (the migration makes it again)
WIDE = "DROP VIEW visits; " + " ".join(
    "ALTER TABLE %s %s;" % (table, ", ".join("ALTER COLUMN %s TYPE BIGINT" % c for c in cols))
    for table, cols in NARROW.items())

SEARCHES = ("iPhone", "Firefox", "Paris", "example.org", "198.51.100")

# The schema version of this change (its migration file's number).
VERSION = migration_version("pg_narrow")


def types(srv):
    return column_types(srv, ("visit_rows", "visit_dict_counts", "agg_cnt"))


def indexes(srv):
    return set(srv.sql("SELECT indexname FROM pg_indexes WHERE tablename = 'visit_rows'")
               .split())


def answers(a, tids):
    out = []
    for tid in tids:
        out.append(listing(a, tid, rows=100))
        for word in SEARCHES:
            out.append(listing(a, tid, search=word, rows=10))
        r = a.get("/tracker/analytics/%d" % tid)
        assert r.status_code == 200, r.text
        out.append(r.json())
    for kind in ("name", "browser", "country", "city", "date"):
        r = a.get("/report/", params={"report": kind})
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def test_a_postgresql_upgrade_narrows_the_ids_and_keeps_every_answer():
    if BACKEND != "pgsql":
        pytest.skip("PostgreSQL's visit rows (SQLite's ids are integers of any size)")
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t1, t2 = new_tracker(a), new_tracker(a)
            for agent in ("narrow-a", "narrow-b"):
                r = requests.get("%s/q/%s" % (srv.base, t1["code"]), allow_redirects=False,
                                 timeout=30, headers={"User-Agent": agent,
                                                      "Referer": "https://example.org/x"})
                assert r.status_code == 302, r.text
            import_visits(srv, [visit((t1, t2)[k % 2]["tracker_id"], T0 + k * 3600,
                                      user_agent="narrow-%d iPhone" % (k % 3),
                                      browser=("Chrome", "Firefox")[k % 2],
                                      city=("Berlin", "Paris", "Rome")[k % 3],
                                      ip="198.51.100.%d" % (k % 4),
                                      referer=(None, "https://example.org/%d" % k)[k % 2],
                                      source=("scan", "click")[k % 3 == 0])
                                for k in range(40)])
            tids = (t1["tracker_id"], t2["tracker_id"])
            before = answers(a, tids)
            narrow, indexed = types(srv), indexes(srv)
            # every index of visit_rows made again, those of earlier migrations included
            assert {"visit_rows_pkey", "visits_tracker_time", "visits_ua",
                    "visits_dest"} <= indexed, indexed
            assert set(narrow.values()) == {"int8", "int4", "int2", "varchar"}
            assert narrow["visit_rows.tracker_id"] == narrow["agg_cnt.bucket"] == "int4"
            assert narrow["visit_rows.ua_id"] == "int8"
            assert "visit_dict_counts.id" not in narrow
            rewind(srv, VERSION, WIDE)
            assert types(srv)["visit_rows.ua_id"] == types(srv)["agg_cnt.bucket"] == "int8"
            assert types(srv)["visit_dict_counts.tracker_id"] == "int8"
            srv.start()
            assert migrated(srv, VERSION)
            assert types(srv) == narrow and indexes(srv) == indexed
            assert answers(a, tids) == before
            check_counts(srv)
            # again over its own result (a migration that stopped half way is run again)
            rewind(srv, VERSION)
            srv.start()
            assert types(srv) == narrow
            assert answers(a, tids) == before
            # every writer after it: a scan, an import, the view by hand (and its delete)
            r = requests.get("%s/q/%s" % (srv.base, t2["code"]), allow_redirects=False,
                             timeout=30, headers={"User-Agent": "narrow-after"})
            assert r.status_code == 302, r.text
            import_visits(srv, [visit(t2["tracker_id"], T0 + 86400 * 3,
                                      user_agent="narrow-late", referer="https://example.org/l")])
            srv.sql("INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, "
                    "browser, browser_version, os, device, referer, user_agent, bot, visitor, "
                    "destination) VALUES (%d, %d, 'scan', '192.0.2.9', 'FR', 'Lyon', 'Safari', "
                    "'17', 'iOS', 'mobile', NULL, 'by-hand', 0, '00000000000000ff', NULL); "
                    "DELETE FROM visits WHERE user_agent = 'narrow-0 iPhone' AND tracker_id = %d;"
                    % (t1["tracker_id"], T0 + 86400 * 4, t1["tracker_id"]))
            check_counts(srv)
            seen = listing(a, t1["tracker_id"], search="by-hand", rows=10)
            assert seen["meta"]["total"] == 1, seen
            assert listing(a, t1["tracker_id"], search="narrow-0", rows=10)["meta"]["total"] == 0
    finally:
        srv.cleanup()


# ids past a 4-byte integer (and the largest 8-byte one): unknown, never a database error
HUGE = (2 ** 31 - 1, 2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 63 - 1)


def test_ids_past_four_bytes_are_unknown_not_errors(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    for big in HUGE:
        for path in ("/visits/tracker/%d", "/visits/tracker/%d/download/csv",
                     "/tracker/analytics/%d"):
            r = api.get(path % big)
            assert r.status_code == 404, (path, big, r.status_code, r.text)
        for path, extra in [("/report/", {"report": "name"}),
                            ("/report/", {"report": "browser"}),
                            ("/report/tag-crosstab", {"row": "a", "col": "b"}),
                            ("/dashboard/scansAnalytics", {})]:
            r = api.get(path, params=dict(extra, **{"trackers[]": [tid, big]}))
            assert r.status_code == 403, (path, big, r.status_code, r.text)
            assert r.json()["message"]
        r = api.get("/visits/tracker/%d" % tid, params={"since_id": big})
        assert r.status_code == 200, (big, r.text)
        assert r.json()["data"] == []
        path = os.path.join(server.dir, "huge-%d.jsonl" % big)
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", '
                    '"source": "scan"}\n' % big)
        os.chmod(path, 0o644)
        try:
            p = server.admin("visits", "import", path, check=False)
        finally:
            os.unlink(path)
        assert p.returncode != 0 and "line 1: bad tracker_id" in p.stderr, (big, p.stderr)
    assert listing(api, tid)["meta"]["total"] == 0
