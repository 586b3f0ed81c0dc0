"""Schema 61 (PostgreSQL; SQLite only takes the number): the GIN index visits_keys, keyed by
qrt_visit_keys (a visit's tracker with its user agent, place and referer entry, and its
address entry alone), replaces the B-trees visits_ua, visits_place, visits_ref and
visits_by_ip. A search's counts and picks find a tracker's matched visits through it, and
test the columns too (entries beyond 2^31 may share a key with another tracker's); the
retention's sweep of addresses asks it whether a visit still names one. A database of
schema 60 upgrades to exactly the new set with every answer unchanged, and the migration
runs again over its own result."""

import pytest
import requests

from conftest import Api, BACKEND, started
from lib.counts import check_counts
from lib.migrations import index_keys, migration_version, upgrade_twice
from lib.wait import wait_until
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit

VERSION = migration_version("pg_visit_keys")

# the indexes of schema 60, as migrations 053 and 022 made them
OLD = ("DROP INDEX visits_keys; "
       "DROP FUNCTION qrt_visit_keys(BIGINT, BIGINT, BIGINT, BIGINT, BIGINT); "
       "DROP FUNCTION qrt_visit_keys_of(BIGINT, INTEGER, BIGINT[]); "
       "CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id); "
       "CREATE INDEX visits_place ON visit_rows (tracker_id, place_id); "
       "CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id) WHERE ref_id IS NOT NULL; "
       "CREATE INDEX visits_by_ip ON visit_rows (ip_id) WHERE ip_id IS NOT NULL;")

SEARCHES = ("iPhone", "Firefox", "Paris", "example.org", "198.51.100", "keys-b", "nothing")


def skip_unless_pgsql():
    if BACKEND != "pgsql":
        pytest.skip("PostgreSQL's indexes of visit_rows (SQLite's are its own)")


def answers(a, tids):
    out = []
    window = {"visit_start": ts(T0 + 5 * 3600), "visit_start_end": ts(T0 + 30 * 3600)}
    for tid in tids:
        for word in SEARCHES:
            out.append(listing(a, tid, search=word, rows=10))
            out.append(listing(a, tid, search=word, rows=3, page=2))
            out.append(listing(a, tid, search=word, rows=10, **window))
    return out


def test_a_postgresql_upgrade_makes_visits_keys_and_keeps_every_answer():
    skip_unless_pgsql()
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t1, t2 = new_tracker(a), new_tracker(a)
            tids = (t1["tracker_id"], t2["tracker_id"])
            r = requests.get("%s/q/%s" % (srv.base, t1["code"]), allow_redirects=False,
                             timeout=30, headers={"User-Agent": "keys-a",
                                                  "Referer": "https://example.org/x"})
            assert r.status_code == 302, r.text
            import_visits(srv, [visit(tids[k % 2], T0 + k * 3600,
                                      user_agent="keys-%s iPhone" % "abc"[k % 3],
                                      browser=("Chrome", "Firefox")[k % 2],
                                      city=("Berlin", "Paris", "Rome")[k % 3],
                                      ip="198.51.100.%d" % (k % 4),
                                      referer=(None, "https://example.org/%d" % k)[k % 2])
                                for k in range(48)])
            now = index_keys(srv, ("visit_rows",))
            assert now["visits_keys"] == (
                "gin (qrt_visit_keys((tracker_id)::bigint, ua_id, place_id, ref_id, ip_id))"), now
            assert not {"visits_ua", "visits_place", "visits_ref", "visits_by_ip"} & set(now)
            assert "visits_ip" in now, now
            before = answers(a, tids)
            assert any(x["meta"]["total"] for x in before)

            def check():
                assert index_keys(srv, ("visit_rows",)) == now
                assert answers(a, tids) == before
                check_counts(srv)

            def check_old():
                assert "visits_ua" in index_keys(srv, ("visit_rows",))

            upgrade_twice(srv, VERSION, OLD, check, check_old)
    finally:
        srv.cleanup()


def test_searches_pick_through_visits_keys_and_test_the_columns():
    """Entry x + 2^31 on tracker t ^ 1 has the key of entry x on tracker t: a search of t
    finds that visit through the index too, and the columns' test leaves it out."""
    skip_unless_pgsql()
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            made = [new_tracker(a) for _ in range(3)]
            ids = [t["tracker_id"] for t in made]
            big = next(t for t in ids if t % 2 == 0 and t + 1 in ids)
            other = big ^ 1
            # 20,000 visits on big, 7 of them with a rare user agent, city and referer
            rare = set(range(0, 20000, 3331))
            import_visits(srv, [visit(big, T0 - 20000 * 60 + k * 60,
                                      user_agent="rare-agent" if k in rare else "common %d" % (k % 50),
                                      city="Rareville" if k in rare else "City %d" % (k % 20),
                                      referer="https://rare.example/" if k in rare else None,
                                      ip="198.51.100.%d" % (k % 200))
                                for k in range(20000)])
            srv.sql("ANALYZE visit_rows")
            x = int(srv.sql("SELECT id FROM visit_uas WHERE user_agent = 'rare-agent'").strip())
            place = int(srv.sql("SELECT MIN(place_id) FROM visit_rows WHERE tracker_id = %d"
                                % big).strip())
            # the other tracker's visits name entry x + 2^31 (another string)
            srv.sql("INSERT INTO visit_uas (id, k, user_agent) VALUES (%d, 'keys-collide', "
                    "'collide-agent'); INSERT INTO visit_rows (tracker_id, visit_start, click, "
                    "bot, visitor, ua_id, place_id) SELECT %d, %d + n, 0, 0, 77, %d, %d FROM "
                    "generate_series(1, 5) AS n" % (x + 2 ** 31, other, T0 - 3000, x + 2 ** 31,
                                                    place))
            window = {"visit_start": ts(T0 - 20000 * 60), "visit_start_end": ts(T0 - 60)}

            def scans():
                return int(srv.sql("SELECT idx_scan FROM pg_stat_user_indexes WHERE "
                                   "indexrelname = 'visits_keys'").strip())

            before = scans()
            n = len(rare)
            for word in ("rare-agent", "rareville", "rare.example", "rare"):
                got = listing(a, big, search=word, rows=100, **window)
                assert got["meta"]["total"] == n, (word, got["meta"])
                assert len(got["data"]) == n, (word, got["data"])
                assert {v["tracker_id"] for v in got["data"]} == {big}, got["data"]
            got = listing(a, other, search="collide", rows=100)
            assert got["meta"]["total"] == 5 and len(got["data"]) == 5, got
            assert {v["user_agent"] for v in got["data"]} == {"collide-agent"}
            # (a backend sends its statistics when idle, at most once a second)
            wait_until(lambda: scans() > before, timeout=10, interval=0.2,
                       what="the searches' scans of visits_keys")
    finally:
        srv.cleanup()
