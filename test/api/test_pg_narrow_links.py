"""PostgreSQL (schema 60; SQLite only takes the number): agg_link and agg_gaps made again
with narrower rows (8-byte times and entry ids first, then 4-byte account, tracker and visit
count, then the smallints). A database of the schema before (8-byte columns, padded) upgrades
with every row and every answer unchanged (reports over sealed and unsealed days, windows
that cut days, listed trackers, the dashboard), the migration runs again over its own result,
and visits written after it, then sealed, count as a rebuild of the aggregates counts them."""
import time

import pytest

from conftest import Api, BACKEND, started
from lib.migrations import column_types, index_keys, migration_version, upgrade_twice
from lib.visits import import_visits, ts, visit

pytestmark = pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's schema")

VERSION = migration_version("pg_narrow_links")

DAY = 86400

LINK = ("account_id", "visit_time", "previous_time", "flags", "tracker_id",
        "browser_country_city_id", "visit_count", "unsealed")
GAPS = ("kind", "account_id", "visit_time", "previous_time", "tracker_id", "value_id",
        "visit_count", "unsealed")


def wide(table, columns, key, index):
    """SQL that makes table again as the schema before had it: every column 8 bytes but
    the smallints, in key order."""
    kinds = dict((c, "SMALLINT") for c in ("flags", "kind", "unsealed"))
    cols = ", ".join("%s %s NOT NULL%s" % (c, kinds.get(c, "BIGINT"),
                                          " DEFAULT 1" if c == "unsealed" else "")
                     for c in columns)
    return ("CREATE TABLE {t}59 ({cols}); INSERT INTO {t}59 SELECT {names} FROM {t}; "
            "DROP TABLE {t}; ALTER TABLE {t}59 RENAME TO {t}; "
            "ALTER TABLE {t} ADD CONSTRAINT {key}; CREATE INDEX {index}; "
            .format(t=table, cols=cols, names=", ".join(columns), key=key, index=index))


OLD = (wide("agg_link", LINK, "agg_link12_pkey PRIMARY KEY (account_id, visit_time, "
            "previous_time, flags, tracker_id, browser_country_city_id)",
            "agg_link_p ON agg_link (account_id, previous_time, visit_count)")
       + wide("agg_gaps", GAPS, "agg_gaps_pkey PRIMARY KEY (kind, account_id, visit_time, "
              "previous_time, tracker_id, value_id)",
              "agg_gaps_p ON agg_gaps (kind, account_id, previous_time, visit_count)"))


def types(srv):
    return column_types(srv, ("agg_link", "agg_gaps"))


def keys(srv):
    return index_keys(srv, ("agg_link", "agg_gaps"))


NEW_KEYS = {
    "agg_link12_pkey": "(account_id, visit_time, previous_time, flags, tracker_id, "
                       "browser_country_city_id)",
    "agg_link_p": "(account_id, previous_time)",
    "agg_gaps_pkey": "(kind, account_id, visit_time, previous_time, tracker_id, value_id)",
    "agg_gaps_p": "(kind, account_id, previous_time)",
}


def rows(srv):
    return [srv.sql("SELECT %s FROM agg_link ORDER BY 1, 2, 3, 4, 5, 6" % ", ".join(LINK)),
            srv.sql("SELECT %s FROM agg_gaps ORDER BY 1, 2, 3, 4, 5, 6" % ", ".join(GAPS))]


def answers(a, tids, now):
    out = []
    windows = ({}, {"visit_start": ts(now - 30 * DAY), "visit_start_end": ts(now)},
               {"visit_start": ts(now - 9 * DAY - 5000), "visit_start_end": ts(now - 7000)},
               {"visit_start": ts(now - 20 * 3600), "visit_start_end": ts(now + 60)})
    for w in windows:
        for kind in ("name", "browser", "country", "city", "date", "tag"):
            for extra in ({}, {"trackers[]": list(tids[:2])}):
                r = a.get("/report/", params=dict(w, report=kind, **extra))
                assert r.status_code == 200, (w, kind, r.text)
                out.append(r.json())
    r = a.get("/dashboard/scansAnalytics")
    assert r.status_code == 200, r.text
    out.append(r.json())
    return out


def test_narrow_links_and_gaps_keep_every_row_and_answer():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            tids = []
            for k in range(3):
                r = a.post("/tracker", json={"redirect_url": "https://example.com/%d" % k,
                                             "tags": ["t%d" % (k % 2), "all"]})
                assert r.status_code == 200, r.text
                tids.append(r.json()["tracker_id"])
            now = int(time.time()) - 3600
            # 12 visitors coming back over 20 days, to other trackers, browsers and cities:
            # links and gaps of every kind, on sealed days and today
            import_visits(srv, [visit(tids[k % 3], now - 20 * DAY + k * 7211,
                                      user_agent="nl-%d" % (k % 12),
                                      ip="198.51.100.%d" % (k % 12),
                                      browser=("Firefox", "Chrome")[k // 12 % 2],
                                      city=("Berlin", "Paris", "Lagos")[k // 7 % 3],
                                      country=("DE", "FR", "NG")[k // 7 % 3],
                                      source=("scan", "click")[k % 5 == 0])
                                for k in range(240)])
            srv.admin("aggregates", "seal")
            kept = rows(srv)
            # the reads by previous time test the visit's time from the table: no count in
            # agg_link_p and agg_gaps_p
            assert keys(srv) == NEW_KEYS
            assert all(len(x.splitlines()) > 20 for x in kept), kept
            assert set(types(srv).values()) == {"int8", "int4", "int2"}
            assert types(srv)["agg_link.visit_count"] == types(srv)["agg_gaps.account_id"] \
                == "int4"
            before = answers(a, tids, now)
            # the schema before, then the upgrade (and again over its own result): the same
            # rows and answers

            def check_old():
                assert set(types(srv).values()) == {"int8", "int2"}
                assert keys(srv)["agg_link_p"] == "(account_id, previous_time, visit_count)"
                assert rows(srv) == kept

            def check():
                assert types(srv)["agg_link.visit_count"] == "int4"
                assert keys(srv) == NEW_KEYS
                assert rows(srv) == kept
                assert answers(a, tids, now) == before
            upgrade_twice(srv, VERSION, OLD, check, check_old)
            # visits after it (old ones among them: sealed days opened again), sealed: as a
            # rebuild of the aggregates from the visits counts them
            import_visits(srv, [visit(tids[k % 2], now - 5 * DAY + k * 3001,
                                      user_agent="nl-%d" % (k % 15), ip="198.51.100.%d" % (k % 15),
                                      city=("Berlin", "Rome")[k % 2])
                                for k in range(40)], pipe=True)
            srv.admin("aggregates", "seal")
            after = answers(a, tids, now)
            assert after != before
            written = rows(srv)
            srv.stop()
            srv.admin("aggregates", "rebuild")
            srv.start()
            assert rows(srv) == written
            assert answers(a, tids, now) == after
    finally:
        srv.cleanup()
