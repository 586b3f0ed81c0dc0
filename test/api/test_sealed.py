"""Sealed report aggregates (issue 12, qrt_aggblob.h): once a day is settled, the
server's scan writers keep its report aggregates sealed in agg_blob, and every
report, crosstab, KPI and analytics figure read from the sealed values is the figure
read from the rows (over whole days, days with offsets, open windows, listed
trackers). Visits imported into sealed days make those days' sealed values go in the
same transaction, so no report reads a stale one, and the writers seal them again.
Runs on both backends."""
import json
import time

import pytest

from conftest import Api, BACKEND, pg_cluster, started
from lib.retention import DAY, snapshot, visit
from lib.wait import sample, wait_until
from lib.server import qrtrack_status

STATUS = "LoadModule status_module %s/mod_status.so\n<Location /server-status>\n" \
         "    SetHandler server-status\n</Location>\n"


def sealed_days(srv):
    """Days with sealed links, and every sealed unit."""
    days = srv.sql("SELECT bucket FROM agg_blob WHERE kind = 10 ORDER BY bucket").split()
    return [int(d) for d in days], int(srv.sql("SELECT COUNT(*) FROM agg_blob").strip())


def wait_sealed(srv, want_days):
    def sealed():
        days = sealed_days(srv)[0]
        return days if set(want_days) <= set(days) else None
    return wait_until(sealed, timeout=60, interval=0.5,
                      what=lambda: "days %s sealed: %s" % (want_days, srv.error_log()[-2000:]))


def write(srv, lines):
    path = srv.dir + "/import-%d.jsonl" % time.time_ns()
    with open(path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    srv.admin("visits", "import", path)


@pytest.fixture(scope="module")
def sealed():
    from conftest import apxs
    srv, tok = started(extra="QRTrackRateLimit 0\n" + STATUS % apxs("LIBEXECDIR"))
    try:
        now = int(time.time())
        with Api(srv, tok) as a:
            tids = [a.post("/tracker", json={"redirect_url": "https://example.com/%d" % k,
                                             "tags": tags}).json()["tracker_id"]
                    for k, tags in enumerate((["campaign:spring", "region:eu"],
                                              ["campaign:autumn", "region:us"],
                                              ["campaign:spring", "region:us", "vip"]))]
        lines = []
        for k in range(90):             # 45 to 3 days ago, visitors v0..v13 coming back
            lines.append(visit(tids[k % 3], now - 45 * DAY + k * 11 * 3600 + k * 37,
                               "v%d" % (k * 7 % 14),
                               city=("Berlin", "Köln", "Paris", "Pune")[k % 4],
                               browser=("Firefox", "Chrome")[k % 5 == 0],
                               source=("scan", "click")[k % 4 == 3]))
        write(srv, lines)
        yield srv, tok, tids, now, lines
    finally:
        srv.cleanup()


def test_the_writers_seal_settled_days(sealed):
    srv, tok, tids, now, lines = sealed
    want = sorted({(now - 45 * DAY + k * 11 * 3600 + k * 37) // DAY for k in range(90)})
    days = wait_sealed(srv, want)
    assert set(days) == set(want)       # settled days only: nothing for today
    assert int(qrtrack_status(srv)["QRTrackAggregatesSealed"]) >= len(want)


def test_sealed_figures_are_the_rows_figures(sealed):
    srv, tok, tids, now, lines = sealed
    wait_sealed(srv, [(now - 40 * DAY) // DAY])
    with Api(srv, tok) as a:
        from_sealed = snapshot(a, tids, now)
        srv.sql("DELETE FROM agg_blob")     # behind the store's back: nothing reseals
        from_rows = snapshot(a, tids, now)
    assert from_sealed == from_rows
    srv.admin("aggregates", "seal")         # finds the days without sealed values
    # Non-trivial: the visitors came back across days.
    total = from_rows["0 type None"][0]
    assert total["visits"] == 90 and 1 < total["unique_visitors"] < 90, total


def test_imported_visits_make_their_days_stale_at_once(sealed):
    srv, tok, tids, now, lines = sealed
    first = (now - 44 * DAY) // DAY
    wait_sealed(srv, [first])
    srv.stop()
    try:
        # Out of time order, into sealed days: returning and new visitors.
        more = [visit(tids[k % 3], now - 44 * DAY + k * 5 * 3600, "v%d" % (k % 20),
                      city="Lyon") for k in range(12)]
        write(srv, more)
        touched = {(now - 44 * DAY + k * 5 * 3600) // DAY for k in range(12)}
        days, _ = sealed_days(srv)
        # Days whose visits changed lost their sealed values in the import's
        # transaction (later days too: a returning visitor's links moved).
        assert not touched & set(days), (touched, days)
    finally:
        srv.start()
    with Api(srv, tok) as a:
        mixed = snapshot(a, tids, now)
        wait_sealed(srv, sorted(touched))
        resealed = snapshot(a, tids, now)
        srv.sql("DELETE FROM agg_blob")
        from_rows = snapshot(a, tids, now)
    assert mixed == from_rows
    assert resealed == from_rows
    assert from_rows["0 type None"][0]["visits"] == 102


def test_admin_seals_every_settled_day_at_once(sealed):
    srv, tok, tids, now, lines = sealed
    srv.stop()
    try:
        srv.sql("DELETE FROM agg_blob")
        out = srv.admin("aggregates", "seal")
        assert out.returncode == 0
        days, units = sealed_days(srv)
        visited = {(now - 45 * DAY + k * 11 * 3600 + k * 37) // DAY for k in range(90)}
        visited |= {(now - 44 * DAY + k * 5 * 3600) // DAY for k in range(12)}
        assert set(days) == visited
        # Per day: counters of six kinds, links, visits, quarter-hours, links by day;
        # then the 16- and 256-day buckets' counters.
        assert units >= 10 * len(visited)
    finally:
        srv.start()
    with Api(srv, tok) as a:
        sealed_figures = snapshot(a, tids, now)
        srv.sql("DELETE FROM agg_blob")
        assert snapshot(a, tids, now) == sealed_figures
    bad = srv.admin("aggregates", "sael", check=False)
    assert bad.returncode == 2


WRITE_LOCK = 0x71727472       # qrt_store_write_lock's key
SEAL_IDLE_CHECK = 10            # the writers' first look, seconds after they start


@pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's write lock")
def test_idle_sealing_leaves_another_writers_lock_alone():
    """While another writer holds the store's write lock (an import's batch, another
    node's commit), an idle server's writers do not queue behind it to seal settled
    days (holding their child's writer meanwhile, and then taking turns with the
    import): they look, leave the days for later, and seal them once it is free."""
    srv, tok = started()
    try:
        now = int(time.time())
        with Api(srv, tok) as a:
            tid = a.post("/tracker", json={"redirect_url": "https://example.com/"}
                         ).json()["tracker_id"]
        # imported with the server stopped, then the lock taken before it starts: its
        # writers' first look (SEAL_IDLE_CHECK seconds after they start) finds it held
        srv.stop()
        write(srv, [visit(tid, now - 9 * DAY + k * 7 * 3600, "v%d" % (k % 5))
                    for k in range(20)])
        want = sorted({(now - 9 * DAY + k * 7 * 3600) // DAY for k in range(20)})
        with pg_cluster().holding(srv.dbname, "BEGIN;\nSELECT pg_advisory_xact_lock(%d);\n"
                                  % WRITE_LOCK):
            wait_until(lambda: srv.sql("SELECT COUNT(*) FROM pg_locks WHERE locktype = "
                                       "'advisory' AND objid = %d AND granted"
                                       % WRITE_LOCK).strip() == "1",
                       timeout=30, what="the holder's lock")
            rollbacks = int(srv.sql("SELECT xact_rollback FROM pg_stat_database WHERE "
                                    "datname = current_database()"))
            srv.start()

            def look():
                return (srv.sql("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' "
                                "AND NOT granted").strip(),
                        int(srv.sql("SELECT xact_rollback FROM pg_stat_database WHERE "
                                    "datname = current_database()")))
            # past the writers' first look (SEAL_IDLE_CHECK seconds after they started,
            # before the server answered) and a few of the looks after it: none waits,
            # and each that found the lock taken rolled its transaction back
            seen = sample(look, seconds=SEAL_IDLE_CHECK + 5, interval=0.2)
            assert [w for w, _ in seen if w != "0"] == [], "a writer waits: %r" % seen
            assert seen[-1][1] > rollbacks, "the writers never looked"
            assert sealed_days(srv) == ([], 0)
        # free again: the days are sealed a second or so later
        wait_sealed(srv, want)
    finally:
        srv.cleanup()


def test_values_sealed_before_their_seal_are_read_and_hashed(sealed):
    """Schema 48: a report takes the sealed values it has read before from its child's
    memory, under their seal (a hash of their text). Values sealed before it (seal
    NULL) are read from the table, and `aggregates seal` (as the writers' idle time)
    gives them the seal sealing them again would: the figures never change."""
    srv, tok, tids, now, lines = sealed
    srv.admin("aggregates", "seal")     # (the test before left none)
    wait_sealed(srv, [(now - 40 * DAY) // DAY])
    key = "SELECT account_id, level, bucket, kind, seal FROM agg_blob ORDER BY 1, 2, 3, 4"
    with Api(srv, tok) as a:
        first = snapshot(a, tids, now)
        assert snapshot(a, tids, now) == first      # (from memory)
    srv.stop()
    try:
        sealed_now = srv.sql(key)
        assert all(row.split("|")[4] for row in sealed_now.splitlines()), sealed_now[:300]
        srv.sql("UPDATE agg_blob SET seal = NULL")
    finally:
        srv.start()
    with Api(srv, tok) as a:
        assert snapshot(a, tids, now) == first      # read from the table, unhashed
    srv.stop()
    try:
        srv.admin("aggregates", "seal")
        assert srv.sql(key) == sealed_now
        # A change of a value's text by hand (its seal kept) clears its seal.
        day = srv.sql("SELECT MIN(bucket) FROM agg_blob WHERE kind = 10").strip()
        srv.sql("UPDATE agg_blob SET data = data || 'x' WHERE kind = 10 AND bucket = %s" % day)
        assert srv.sql("SELECT COUNT(*) FROM agg_blob WHERE kind = 10 AND bucket = %s "
                       "AND seal IS NULL" % day).strip() == "1"
        srv.sql("DELETE FROM agg_blob WHERE level = 1 AND bucket = %s" % day)
        srv.admin("aggregates", "seal")
        assert srv.sql(key) == sealed_now
    finally:
        srv.start()
    with Api(srv, tok) as a:
        assert snapshot(a, tids, now) == first


def test_reports_are_the_same_with_the_cache_of_sealed_values_off(sealed):
    """QRTrackReportCache: a server keeping sealed values in memory (read twice, the second
    time from memory) and one over the same database keeping none answer the same; a value
    that is not a size in megabytes fails configtest."""
    from conftest import start_server
    from lib.server import configtest
    srv, tok, tids, now, lines = sealed
    srv.admin("aggregates", "seal")     # (a test before may have deleted them by hand)
    wait_sealed(srv, [(now - 40 * DAY) // DAY])
    off = start_server(extra="QRTrackReportCache 0\n", shared_db=srv)
    try:
        with Api(srv, tok) as a:
            cold, warm = snapshot(a, tids, now), snapshot(a, tids, now)
        with Api(off, tok) as a:
            unkept = snapshot(a, tids, now)
    finally:
        off.stop()
        off.cleanup()
    assert cold == warm == unkept
    status, out = configtest("QRTrackReportCache lots\n")
    assert status != 0 and "QRTrackReportCache" in out, out
