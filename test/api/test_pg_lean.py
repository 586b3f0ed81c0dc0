"""A tracker's visitors read from its visits (schema 16 on SQLite, 47 on PostgreSQL):
whether a visit is its visitor's first on a tracker (uniqueVisitors) comes from the
visitor's earlier visits, through scans and imports, in order and out of order. A
PostgreSQL database of the schema before (tracker_visitors filled, agg_cnt in its old
column order and keys) upgrades with its counters and reports unchanged."""

import pytest
import requests

from conftest import Api, BACKEND, started
from lib.migrations import migrated, migration_version, rewind
from lib.visits import T0, import_visits, new_tracker, visit

# The schema version of this change (its migration file's number).
VERSION = migration_version("pg_lean")


def scan(srv, code, agent):
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30,
                     headers={"User-Agent": agent})
    assert r.status_code == 302, r.text


def uniques(srv, a, tid):
    """uniqueVisitors as the API says it, checked against the visits themselves."""
    r = a.get("/tracker/analytics/%d" % tid)
    assert r.status_code == 200, r.text
    n = r.json()["uniqueVisitors"]
    assert n == int(srv.sql("SELECT COUNT(DISTINCT visitor) FROM visit_rows WHERE "
                            "tracker_id = %d AND bot = 0" % tid).strip())
    return n


# agg_cnt as the schema before made it
OLD_AGG_CNT = """
CREATE TABLE agg_cnt_old (kind SMALLINT NOT NULL, account_id BIGINT NOT NULL,
    level SMALLINT NOT NULL, bucket BIGINT NOT NULL, tracker_id BIGINT NOT NULL,
    value VARCHAR(255) NOT NULL, scans BIGINT NOT NULL, clicks BIGINT NOT NULL,
    first_visits BIGINT NOT NULL, followed_visits BIGINT NOT NULL,
    PRIMARY KEY (kind, account_id, level, bucket, tracker_id, value));
INSERT INTO agg_cnt_old SELECT kind, account_id, level, bucket, tracker_id, value, scans,
    clicks, first_visits, followed_visits FROM agg_cnt;
DROP TABLE agg_cnt;
ALTER TABLE agg_cnt_old RENAME TO agg_cnt;
ALTER INDEX agg_cnt_old_pkey RENAME TO agg_cnt_pkey;
CREATE INDEX agg_cnt_grp ON agg_cnt (kind, account_id, tracker_id, level, bucket);
"""

REPORTS = [("/report/", {"report": kind}) for kind in
           ("name", "type", "date", "browser", "country", "city", "tag")] + \
          [("/report/", {"report": "browser", "visit_start": "2026-11-26T12:00:00+0000",
                         "visit_start_end": "2026-11-28T00:00:00+0000"})]


def answers(a):
    out = []
    for path, params in REPORTS:
        r = a.get(path, params=params)
        assert r.status_code == 200, (path, params, r.text)
        out.append(r.json())
    return out



def test_first_visits_of_a_visitor_count_once_per_tracker():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t1, t2 = new_tracker(a), new_tracker(a)
            for agent in ("lean-a", "lean-a", "lean-b"):
                scan(srv, t1["code"], agent)
            scan(srv, t2["code"], "lean-a")
            assert (uniques(srv, a, t1["tracker_id"]), uniques(srv, a, t2["tracker_id"])) == (2, 1)
            # one batch: a known visitor before its first visit (out of order), a new one
            # twice, a bot, and the known one on the other tracker
            import_visits(srv, [
                visit(t1["tracker_id"], T0 - 86400, user_agent="lean-a", ip="198.51.100.0"),
                visit(t1["tracker_id"], T0, user_agent="lean-c"),
                visit(t1["tracker_id"], T0 + 60, user_agent="lean-c"),
                visit(t1["tracker_id"], T0 + 120, user_agent="lean-bot", bot=True),
                visit(t2["tracker_id"], T0 + 180, user_agent="lean-c")])
            assert (uniques(srv, a, t1["tracker_id"]), uniques(srv, a, t2["tracker_id"])) == (4, 2)
            # the same visits again: nobody new
            import_visits(srv, [visit(t1["tracker_id"], T0 + 240, user_agent="lean-c"),
                                visit(t2["tracker_id"], T0 + 300, user_agent="lean-c")])
            assert (uniques(srv, a, t1["tracker_id"]), uniques(srv, a, t2["tracker_id"])) == (4, 2)
            assert int(srv.sql("SELECT COUNT(*) FROM tracker_visitors").strip()) == 0
    finally:
        srv.cleanup()


def test_a_postgresql_upgrade_empties_tracker_visitors():
    if BACKEND != "pgsql":
        pytest.skip("PostgreSQL's tracker_visitors (SQLite's is empty since schema 16)")
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t1, t2 = new_tracker(a), new_tracker(a)
            for agent in ("up-a", "up-b", "up-a"):
                scan(srv, t1["code"], agent)
            import_visits(srv, [visit((t1, t2)[k % 2]["tracker_id"], T0 + k * 3600,
                                      user_agent="up-%d" % (k % 3),
                                      browser=("Chrome", "Firefox")[k % 2],
                                      city=("Berlin", "Paris", "Rome")[k % 3])
                                for k in range(40)])
            before = answers(a)
            # the database as the schema before kept it
            rewind(srv, VERSION, OLD_AGG_CNT + "INSERT INTO tracker_visitors (tracker_id, "
                   "visitor, first_visit) SELECT DISTINCT tracker_id, visitor, 0 FROM "
                   "visit_rows WHERE bot = 0;")
            srv.start()
            assert migrated(srv, VERSION)
            assert int(srv.sql("SELECT COUNT(*) FROM tracker_visitors").strip()) == 0
            assert srv.sql("SELECT pg_get_indexdef('agg_cnt_pkey'::regclass)").strip().endswith(
                "(account_id, kind, level, bucket, tracker_id, value)")
            assert answers(a) == before
            assert uniques(srv, a, t1["tracker_id"]) == 5
            for agent in ("up-b", "up-c"):
                scan(srv, t1["code"], agent)
            assert uniques(srv, a, t1["tracker_id"]) == 6
            assert answers(a) != before
    finally:
        srv.cleanup()
