"""`qrtrack-admin compact`: the room that the tables growing with the visits leave in their
indexes' pages given back. PostgreSQL builds their indexes again, concurrently: scans are
recorded while it runs, every answer stays the same, the index of a tracker's visits in
time order (whose pages split in halves as each tracker's visits are added inside it)
shrinks, and an index that an interrupted compaction left behind (invalid, still written
by every insert) is dropped, while the administrator's own indexes stay; one compaction
runs at a time. SQLite has no compaction while servers run: the command says so and
changes nothing."""
import threading
import time

import pytest
import requests

from conftest import Api, BACKEND, pg_cluster, started
from lib.visits import export, import_visits, listing, new_tracker, visit
from lib.wait import wait_until

DAY = 86400


def answers(a, tids):
    """What the API says of these trackers: listings, a deep page, a search, the export,
    analytics, and reports over them."""
    out = []
    for tid in tids:
        out.append(listing(a, tid, rows=100))
        out.append(listing(a, tid, rows=7, page=40))
        out.append(listing(a, tid, search="Paris", rows=5, page=3))
        out.append(export(a, tid))
        r = a.get("/tracker/analytics/%d" % tid)
        assert r.status_code == 200, r.text
        out.append(r.json())
    for kind in ("name", "browser", "city", "date"):
        r = a.get("/report/", params={"report": kind, "trackers[]": tids})
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def index_bytes(srv, name):
    return int(srv.sql("SELECT pg_relation_size('%s')" % name).strip())


def invalid_indexes(srv):
    return sorted(srv.sql("SELECT c.relname FROM pg_index i JOIN pg_class c ON "
                          "c.oid = i.indexrelid WHERE NOT i.indisvalid").split())


@pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's compaction")
def test_compact_packs_the_visits_indexes_online_and_keeps_every_answer():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            trackers = [new_tracker(a) for _ in range(8)]
            tids = [t["tracker_id"] for t in trackers]
            now = int(time.time())
            # 16,000 visits of 8 trackers in turn, in time order, over 20 days: each
            # tracker's visit is added inside visits_tracker_time, behind the others'
            import_visits(srv, [visit(tids[k % 8], now - 20 * DAY + k * 100,
                                      city=("Berlin", "Paris", "Rome")[k % 3],
                                      browser=("Firefox", "Chrome")[k % 2],
                                      ip="198.51.100.%d" % (k % 200))
                                for k in range(16000)])
            # (the scans below go to the first tracker: the others' answers stay)
            before = answers(a, tids[1:])
            tracker_time = index_bytes(srv, "visits_tracker_time")
            # an index left by a compaction interrupted during its build: invalid (a unique
            # index over repeated values fails, as an interrupted build would leave it)
            with pytest.raises(AssertionError):
                srv.sql("CREATE UNIQUE INDEX CONCURRENTLY visit_rows_pkey_ccnew "
                        "ON visit_rows (tracker_id)")
            # and an administrator's own invalid index, which is none of the compaction's
            with pytest.raises(AssertionError):
                srv.sql("CREATE UNIQUE INDEX CONCURRENTLY admin_own_idx "
                        "ON visit_rows (tracker_id)")
            assert invalid_indexes(srv) == ["admin_own_idx", "visit_rows_pkey_ccnew"]

            # scans go on while it runs, each answered and recorded; one each 20 ms, so that
            # their rows (and the aggregates' row versions they leave) stay well below what
            # the compaction gives back however long it takes on a loaded machine
            codes, stop = [], threading.Event()

            def scan():
                with requests.Session() as s:
                    while not stop.is_set():
                        r = s.get(srv.base + "/q/" + trackers[0]["code"],
                                  allow_redirects=False)
                        codes.append(r.status_code)
                        stop.wait(0.02)
            thread = threading.Thread(target=scan)
            thread.start()
            try:
                p = srv.admin("compact")
            finally:
                stop.set()
                thread.join()
            lines = p.stdout.splitlines()
            assert lines[0].startswith("compacting indexes left by an interrupted "
                                       "compaction ..."), p.stdout
            for table in ("visit_rows", "agg_link", "agg_gaps", "agg_cnt", "agg_day"):
                assert any(line.startswith("compacting %s ... " % table)
                           and line.endswith(" s") for line in lines), p.stdout
            mb = lines[-1].split()
            assert mb[0] == "database:" and float(mb[4]) < float(mb[1]), p.stdout
            assert codes and set(codes) == {302}, codes

            assert invalid_indexes(srv) == ["admin_own_idx"]
            assert index_bytes(srv, "visits_tracker_time") < tracker_time * 0.8
            # every answer as before; the first tracker has its visits and the scans'
            assert answers(a, tids[1:]) == before
            recorded = int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                                   % tids[0]).strip())
            assert recorded == 16000 // 8 + len(codes)
            # a second run finds nothing left behind and keeps the answers again
            srv.admin("compact")
            assert answers(a, tids[1:]) == before
            assert invalid_indexes(srv) == ["admin_own_idx"]
    finally:
        srv.cleanup()


@pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's compaction")
def test_one_compaction_at_a_time():
    """A second compaction while one runs would take the first's index, invalid while it
    is built, for a leftover: it fails at once, saying why, and drops nothing."""
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            tid = new_tracker(a)["tracker_id"]
            import_visits(srv, [visit(tid, int(time.time()) - 1000 + k) for k in range(50)])
        # the running compaction's lock, held by a session of its own; and its index
        # being built, invalid meanwhile
        with pytest.raises(AssertionError):
            srv.sql("CREATE UNIQUE INDEX CONCURRENTLY visit_rows_pkey_ccnew "
                    "ON visit_rows (tracker_id)")
        with pg_cluster().holding(srv.dbname, "SELECT pg_advisory_lock(1903326307);\n"):
            wait_until(lambda: srv.sql("SELECT COUNT(*) FROM pg_locks WHERE locktype = "
                                       "'advisory' AND objid = 1903326307 AND "
                                       "granted").strip() == "1",
                       timeout=30, what="the holder's lock")
            started_at = time.time()
            p = srv.admin("compact", check=False)
            assert p.returncode == 1, (p.stdout, p.stderr)
            assert "another compaction of this database is running" in p.stderr
            assert time.time() - started_at < 10
            assert invalid_indexes(srv) == ["visit_rows_pkey_ccnew"]
        # once it has ended, the next run drops the leftover
        srv.admin("compact")
        assert invalid_indexes(srv) == []
    finally:
        srv.cleanup()


AGG_INDEXES = ("agg_link12_pkey", "agg_link_p", "agg_gaps_pkey", "agg_gaps_p")


def filenodes(srv, names):
    return {n: srv.sql("SELECT pg_relation_filenode('%s')" % n).strip() for n in names}


@pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's compaction")
def test_a_rebuild_builds_the_aggregates_indexes_again():
    """`aggregates rebuild` writes the link and gap rows a share of the visitors at a time,
    each share's rows all over their indexes (whose pages split in halves): on PostgreSQL
    it then builds those indexes again, concurrently, as compact does. Each is a new build
    (a new file) with every answer the same, and the rebuild says nothing more."""
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            tids = [new_tracker(a)["tracker_id"] for _ in range(3)]
            now = int(time.time())
            import_visits(srv, [visit(tids[k % 3], now - 20 * DAY + k * 600,
                                      ip="198.51.100.%d" % (k % 40)) for k in range(600)])
            before = answers(a, tids)
            nodes = filenodes(srv, AGG_INDEXES)
            p = srv.admin("aggregates", "rebuild")
            assert p.stderr == "", p.stderr
            after = filenodes(srv, AGG_INDEXES)
            assert all(after[n] != nodes[n] for n in AGG_INDEXES), (nodes, after)
            assert invalid_indexes(srv) == []
            assert answers(a, tids) == before
    finally:
        srv.cleanup()


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's answer")
def test_compact_on_sqlite_says_it_has_none_and_changes_nothing():
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            tid = new_tracker(a)["tracker_id"]
            import_visits(srv, [visit(tid, int(time.time()) - 1000 + k) for k in range(50)])
            before = listing(a, tid, rows=100)
            p = srv.admin("compact", check=False)
            assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
            assert p.stdout == ""
            assert "SQLite has none while servers run" in p.stderr
            assert "sqlite3 FILE VACUUM" in p.stderr
            assert listing(a, tid, rows=100) == before
    finally:
        srv.cleanup()
