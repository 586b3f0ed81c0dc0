"""PostgreSQL (schema 57): visits_tracker_id goes. A tracker's newest id is
trackers.last_visit_id and a poll (since_id) reads the tracker's window from the floor of
the ids above since_id (visit_floor), as SQLite has done since schema 14. Scans, imports of
old visits and SQL written through the view "visits" keep both; a database of the schema
before upgrades with every poll, listing and ETag answering as before, and the migration
runs again over its own result."""
import pytest
import requests

from conftest import Api, BACKEND, started
from lib.migrations import migrated, migration_version, rewind
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit

pytestmark = pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's schema")

VERSION = migration_version("pg_visit_floor")

# the schema before: the index, no floor, no newest id on the trackers
OLD = ("DROP TABLE visit_floor; ALTER TABLE trackers DROP COLUMN last_visit_id; "
       "CREATE INDEX visits_tracker_id ON visit_rows (tracker_id, id);")


def ids(a, tid, **params):
    out, page = [], 1
    while True:
        body = listing(a, tid, rows=100, page=page, **params)
        out += [v["id"] for v in body["data"]]
        if page >= body["meta"]["last_page"]:
            return out
        page += 1


def polls(a, tids, marks):
    """Each tracker's visits above each mark: ids, counts, a window, a search."""
    out = []
    for tid in tids:
        for m in marks:
            out.append(ids(a, tid, since_id=m))
            out.append(listing(a, tid, since_id=m, rows=2, page=2)["meta"])
            out.append(ids(a, tid, since_id=m, visit_start_end=ts(T0 + 86400)))
            out.append(ids(a, tid, since_id=m, search="firefox"))
    return out


def scan(srv, code, agent):
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30,
                     headers={"User-Agent": agent})
    assert r.status_code == 302, r.text


def newest(srv, tid):
    return int(srv.sql("SELECT last_visit_id FROM trackers WHERE id = %d" % tid))


def floors(srv):
    return srv.sql("SELECT bucket, min_start FROM visit_floor ORDER BY bucket").split()


def test_polls_read_from_the_floor_of_the_ids_and_the_migration_keeps_their_answers():
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            t1, t2 = new_tracker(a), new_tracker(a)
            tids = (t1["tracker_id"], t2["tracker_id"])
            for k in range(3):
                scan(srv, t1["code"], "floor-%d Firefox/120.0" % k)
            # old visits after newer ones: a higher id with an earlier time (through a
            # pipe: a file's visits are written in time order)
            import_visits(srv, [visit(tids[k % 2], T0 + (40 - k) * 3600,
                                      user_agent="floor-%d %s" % (k, ("Firefox/1",
                                                                      "iPhone")[k % 2]),
                                      browser=("Firefox", "Safari")[k % 2])
                                for k in range(40)], pipe=True)
            every = sorted(set(ids(a, tids[0]) + ids(a, tids[1])))
            assert len(every) == 43
            # each tracker's newest id, and the floor of every bucket, as the visits say
            for tid in tids:
                assert newest(srv, tid) == int(srv.sql(
                    "SELECT MAX(id) FROM visit_rows WHERE tracker_id = %d" % tid))
            assert floors(srv) == srv.sql(
                "SELECT id >> 12, MIN(visit_start) FROM visit_rows GROUP BY 1 ORDER BY 1").split()
            marks = [0, every[0], every[2], every[10], every[-2], every[-1], every[-1] + 5000]
            before = polls(a, tids, marks)
            # a poll above an old visit's id finds it, though its time is older
            assert ids(a, tids[1], since_id=every[-2]) == [every[-1]]
            assert ids(a, tids[0], since_id=every[-1]) == []
            # a poll reads the window along visits_tracker_time, from the floor (not the
            # whole table, which the planner may choose for one this small once analysed)
            plan = srv.sql("SET enable_seqscan = off; "
                           "EXPLAIN SELECT id FROM visit_rows WHERE tracker_id = %d AND "
                           "visit_start >= %d AND visit_start <= %d AND +id > %d"
                           % (tids[0], T0, T0 + 86400, every[3]))
            assert "visits_tracker_time" in plan, plan
            # a visit written through the view raises its tracker's newest id and lowers
            # its bucket's floor, and the listing's ETag changes with it
            url = "/visits/tracker/%d" % tids[1]
            etag = a.get(url, params={"since_id": every[-1]}).headers["ETag"]
            srv.sql("INSERT INTO visits (tracker_id, visit_start, source, user_agent, bot, "
                    "visitor) VALUES (%d, %d, 'scan', 'by-view', 0, '0123456789abcdef')"
                    % (tids[1], T0 - 86400))
            made = int(srv.sql("SELECT MAX(id) FROM visit_rows"))
            assert newest(srv, tids[1]) == made
            assert int(srv.sql("SELECT min_start FROM visit_floor WHERE bucket = %d"
                               % (made >> 12))) <= T0 - 86400
            r = a.get(url, params={"since_id": every[-1]}, headers={"If-None-Match": etag})
            assert r.status_code == 200 and [v["id"] for v in r.json()["data"]] == [made], r.text
            before = polls(a, tids, marks)
            # the schema before, then the upgrade: the same answers
            rewind(srv, VERSION, OLD)
            srv.start()
            assert migrated(srv, VERSION)
            names = srv.sql("SELECT indexname FROM pg_indexes WHERE tablename = "
                            "'visit_rows'").split()
            assert "visits_tracker_id" not in names and "visits_tracker_time" in names
            assert newest(srv, tids[1]) == made
            after = floors(srv)
            assert after == srv.sql("SELECT id >> 12, MIN(visit_start) FROM visit_rows "
                                    "GROUP BY 1 ORDER BY 1").split()
            assert polls(a, tids, marks) == before
            # again over its own result
            rewind(srv, VERSION)
            srv.start()
            assert floors(srv) == after and newest(srv, tids[1]) == made
            assert polls(a, tids, marks) == before
            # scans after the upgrade keep both
            scan(srv, t1["code"], "after Firefox/121.0")
            last = max(ids(a, tids[0]))
            assert newest(srv, tids[0]) == last
            assert ids(a, tids[0], since_id=every[-1]) == [last]
    finally:
        srv.cleanup()
