"""QRTrackVisitRetention (issue 13): visits older than N days leave the listings,
searches and CSV exports at once, and the server's purge erases what they say about
the visitor (address, user agent, referer, browser version, OS, device) from their
rows; every report, crosstab, KPI and analytics figure stays what it was, for any
window (partial days read from the visits included), the rebuild gives the same
aggregates, and a visitor of the purged period coming back is still one visitor.
Runs on both backends."""
import csv
import io
import os
import json
import time

import pytest

from conftest import Api, configtest, Server, started
from lib.counts import check_counts
from lib.retention import DAY, UA, iso, snapshot, visit  # noqa: F401
from lib.wait import wait_until

OLD_FIELDS = ("ip", "user_agent", "referer", "browser_version", "os", "device")


@pytest.fixture(scope="module")
def purged():
    """A server without retention records old and young visits, its figures are
    taken, then a server with QRTrackVisitRetention 30 on the same database."""
    first = Server(extra="QRTrackRateLimit 0\n")
    second = None
    try:
        first.admin("init")
        first.account("acme")
        tok = first.token("acme")
        first.start()
        now = int(time.time())
        with Api(first, tok) as a:
            t1 = a.post("/tracker", json={"redirect_url": "https://example.com/1",
                                          "tags": ["campaign:spring", "region:eu"]}).json()
            t2 = a.post("/tracker", json={"redirect_url": "https://example.com/2",
                                          "tags": ["campaign:autumn", "region:us"]}).json()
            tids = [t1["tracker_id"], t2["tracker_id"]]
            lines = []
            for k in range(12):         # old: 40 to 35 days ago, visitors a0..a5
                lines.append(visit(tids[k % 2], now - 40 * DAY + k * 11 * 3600, "a%d" % (k % 6),
                                   city=("Berlin", "Köln", "Paris")[k % 3],
                                   source=("scan", "click")[k % 4 == 3]))
            for k in range(6):          # young: 5 days ago, visitors a0, a1 and y0..y3
                lines.append(visit(tids[k % 2], now - 5 * DAY + k * 600,
                                   ("a0", "a1", "y0", "y1", "y2", "y3")[k],
                                   browser="Chrome"))
            path = first.dir + "/import.jsonl"
            with open(path, "w") as f:
                f.write("".join(json.dumps(l) + "\n" for l in lines))
            first.admin("visits", "import", path)
            before = snapshot(a, tids, now)
        first.stop()
        second = Server(extra="QRTrackRateLimit 0\nQRTrackVisitRetention 30\n",
                        shared_db=first)
        second.tokens.append(tok)
        second.start()
        yield second, tok, tids, now, before
    finally:
        for srv in (second, first):
            if srv:
                srv.cleanup()


def whole(srv, where):
    return int(srv.sql("SELECT COUNT(*) FROM visits WHERE %s AND (%s)" % (
        where, " OR ".join("%s IS NOT NULL" % c for c in OLD_FIELDS))).strip())


def wait_purged(srv, edge):
    wait_until(lambda: whole(srv, "visit_start < %d" % edge) == 0, timeout=20, interval=0.2,
               what=lambda: "the old visits purged: " + srv.error_log()[-2000:])


def test_old_visits_are_listed_nowhere(purged):
    srv, tok, tids, now, _ = purged
    with Api(srv, tok) as a:
        for tid in tids:
            r = a.get("/visits/tracker/%d" % tid)
            assert r.status_code == 200
            body = r.json()
            assert len(body["data"]) == 3 and body["meta"]["total"] == 3, body
            assert all(v["browser"] == "Chrome" for v in body["data"])
            # An explicit window into the purged period is empty.
            r = a.get("/visits/tracker/%d" % tid, params={
                "visit_start": iso(now - 50 * DAY), "visit_start_end": iso(now - 31 * DAY)})
            assert r.json()["data"] == [] and r.json()["meta"]["total"] == 0
            r = a.get("/visits/tracker/%d/download/csv" % tid)
            rows = list(csv.DictReader(io.StringIO(r.text)))
            assert len(rows) == 3 and {x["browser"] for x in rows} == {"Chrome"}
        # A visitor seen only in the purged period is found by no search.
        r = a.get("/visits/tracker/%d" % tids[0], params={"search": "retention-a2"})
        assert r.json()["data"] == []
        r = a.get("/visits/tracker/%d" % tids[0], params={"search": "retention-a0"})
        assert len(r.json()["data"]) == 1


def test_the_purge_erases_the_visitor_from_old_rows_only(purged):
    srv, tok, tids, now, _ = purged
    edge = now - 30 * DAY
    wait_purged(srv, edge)
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE visit_start < %d" % edge)) == 12
    # What the reports are made from stays on every row.
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE visit_start < %d AND visitor "
                       "IS NOT NULL AND city IS NOT NULL AND browser = 'Firefox' AND "
                       "country = 'DE'" % edge)) == 12
    # Young rows are whole.
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE visit_start >= %d AND ip IS NOT "
                       "NULL AND user_agent IS NOT NULL AND referer IS NOT NULL AND os IS "
                       "NOT NULL AND device IS NOT NULL AND browser_version IS NOT NULL"
                       % edge)) == 6
    # PostgreSQL's counts of visits per dictionary entry (schema 19) follow the erasure.
    check_counts(srv)


def test_every_figure_stays_and_a_returning_visitor_counts_once(purged):
    srv, tok, tids, now, before = purged
    wait_purged(srv, now - 30 * DAY)
    with Api(srv, tok) as a:
        assert snapshot(a, tids, now) == before
        # a2 visited only in the purged period; back now, through a scan.
        t1 = a.get("/tracker/show/%d" % tids[0]).json()
    import requests
    r = requests.get("%s/q/%s" % (srv.base, t1["code"]), allow_redirects=False,
                     headers={"User-Agent": UA % "a2"}, timeout=30)
    assert r.status_code == 302
    with Api(srv, tok) as a:
        rows = a.get("/report/", params={"report": "name"}).json()["data"]
        # Visitors a0..a5 and y0..y3: ten, a2's return counted once.
        assert sum(x["visits"] for x in rows) == 19
        r = a.get("/report/", params={"report": "date"}).json()["data"]
        assert sum(x["visits"] for x in r) == 19
        kpi = a.get("/dashboard/scansAnalytics").json()
        after = snapshot(a, tids, now)
    srv.admin("aggregates", "rebuild")
    with Api(srv, tok) as a:
        # The rebuild reads the purged rows and finds the same figures.
        assert snapshot(a, tids, now) == after
        whole_range = {"visit_start": iso(now - 60 * DAY), "visit_start_end": iso(now + 60)}
        rows = a.get("/report/", params=dict(whole_range, report="city")).json()["data"]
        assert sum(x["unique_visitors"] for x in rows) >= 10
        name = a.get("/report/", params=dict(whole_range, report="type")).json()["data"]
        assert [x["unique_visitors"] for x in name] == [10], name
        assert a.get("/dashboard/scansAnalytics").json() == kpi


def test_configtest_names_the_directive():
    assert configtest("QRTrackVisitRetention 0\n")[0] == 0
    assert configtest("QRTrackVisitRetention 36500\n")[0] == 0
    for bad in ("abc", "-1", "36501", "7d"):
        rc, out = configtest("QRTrackVisitRetention %s\n" % bad)
        assert rc != 0 and "QRTrackVisitRetention" in out and "days" in out, out


def test_admin_purges_in_one_pass():
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            tid = a.post("/tracker", json={"redirect_url": "https://example.com/"}).json()[
                "tracker_id"]
        now = int(time.time())
        path = srv.dir + "/import.jsonl"
        with open(path, "w") as f:
            for k in range(2500):
                f.write(json.dumps(visit(tid, now - (20 if k % 2 else 3) * DAY + k,
                                         "p%d" % (k % 50))) + "\n")
        srv.admin("visits", "import", path)
        for bad in ("0", "x", "36501", ""):
            p = srv.admin("visits", "purge", bad, check=False)
            assert p.returncode != 0 and "DAYS" in p.stderr, p.stderr
        assert srv.admin("visits", "purge", "10").stdout.strip() == "1250"
        assert whole(srv, "visit_start < %d" % (now - 10 * DAY)) == 0
        assert whole(srv, "visit_start >= %d" % (now - 10 * DAY)) == 1250
        assert srv.admin("visits", "purge", "10").stdout.strip() == "0"
    finally:
        srv.cleanup()


# ---- the purge erases the strings themselves (issue 33) ---------------------------

ALICE = "https://example.com/?user=alice"
KEEP = "https://example.com/keep"


def db_bytes(srv):
    """SQLite: the bytes of the database file and of its WAL."""
    out = b""
    for suffix in ("", "-wal"):
        try:
            with open(srv.db + suffix, "rb") as f:
                out += f.read()
        except FileNotFoundError:
            pass
    return out


def strings_left(srv, agent):
    """Dictionary rows that hold the agent or Alice's referer."""
    return int(srv.sql("SELECT (SELECT COUNT(*) FROM visit_uas WHERE user_agent = '%s') + "
                       "(SELECT COUNT(*) FROM visit_referers WHERE referer = '%s')"
                       % (agent, ALICE)).strip())


def dangling(srv):
    """Visit rows whose user agent, referer or address id has no dictionary row."""
    return int(srv.sql(
        "SELECT COUNT(*) FROM visit_rows v WHERE NOT EXISTS (SELECT 1 FROM visit_uas u "
        "WHERE u.id = v.ua_id) OR (v.ref_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
        "visit_referers r WHERE r.id = v.ref_id)) OR (v.ip_id IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM visit_ips i WHERE i.id = v.ip_id))").strip())


def scan(srv, code, agent, referer):
    import requests
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30,
                     headers={"User-Agent": agent, "Referer": referer})
    assert r.status_code == 302, r.text


def age(srv, agent, days):
    """The agent's visits, as if made `days` days earlier."""
    srv.sql("UPDATE visit_rows SET visit_start = visit_start - %d WHERE ua_id IN (SELECT id "
            "FROM visit_uas WHERE user_agent = '%s')" % (days * DAY, agent))


def tracker_code(srv, tok):
    with Api(srv, tok) as a:
        tid = a.post("/tracker", json={"redirect_url": "https://example.com/"}).json()[
            "tracker_id"]
        return a.get("/tracker/show/%d" % tid).json()["code"]


def assert_erased(srv, agent, keep_agent):
    assert strings_left(srv, agent) == 0
    assert dangling(srv) == 0
    # The young visit keeps its strings, the old one its browser name.
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE user_agent = '%s' AND referer = "
                       "'%s'" % (keep_agent, KEEP)).strip()) == 1
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE user_agent IS NULL AND referer IS "
                       "NULL AND ip IS NULL AND browser = 'Firefox'").strip()) == 1
    check_counts(srv)


def test_the_admin_purge_erases_the_strings_and_writers_forget_their_ids():
    """A scan with a unique user agent and a referer naming its visitor; made old;
    `visits purge` on the running server: no dictionary row holds them, nor (SQLite)
    the database file and its WAL. A scan with the same user agent after it gets it
    whole (a writer that kept the deleted row's id forgot it)."""
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        code = tracker_code(srv, tok)
        agent = UA % ("erase-%d-%d" % (os.getpid(), time.time_ns()))
        keep_agent = UA % "keep"
        scan(srv, code, agent, ALICE)
        scan(srv, code, keep_agent, KEEP)
        assert strings_left(srv, agent) == 2
        if srv.backend == "sqlite":
            assert agent.encode() in db_bytes(srv)
        age(srv, agent, 40)
        assert srv.admin("visits", "purge", "30").stdout.strip() == "1"
        assert_erased(srv, agent, keep_agent)
        if srv.backend == "sqlite":
            data = db_bytes(srv)
            assert agent.encode() not in data and b"user=alice" not in data
        # The writers may have kept the agent's id: a new visit has it whole.
        scan(srv, code, agent, ALICE)
        assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE user_agent = '%s' AND "
                           "referer = '%s'" % (agent, ALICE)).strip()) == 1
        assert dangling(srv) == 0
        check_counts(srv)
    finally:
        srv.cleanup()


def test_the_background_purge_erases_the_strings():
    """The same through QRTrackVisitRetention: the server's own pass deletes them,
    and (SQLite) they leave the database file and its WAL."""
    first = Server(extra="QRTrackRateLimit 0\n")
    second = None
    try:
        first.admin("init")
        first.account("acme")
        tok = first.token("acme")
        first.start()
        code = tracker_code(first, tok)
        agent = UA % ("erase-%d-%d" % (os.getpid(), time.time_ns()))
        keep_agent = UA % "keep"
        scan(first, code, agent, ALICE)
        scan(first, code, keep_agent, KEEP)
        first.stop()
        age(first, agent, 40)
        assert strings_left(first, agent) == 2
        second = Server(extra="QRTrackRateLimit 0\nQRTrackVisitRetention 30\n",
                        shared_db=first)
        second.start()
        def gone():
            if strings_left(second, agent) != 0:
                return False
            if second.backend == "sqlite":
                data = db_bytes(second)
                return agent.encode() not in data and b"user=alice" not in data
            return True
        wait_until(gone, timeout=30, interval=0.2,
                   what=lambda: "the strings erased: " + second.error_log()[-2000:])
        assert_erased(second, agent, keep_agent)
    finally:
        for srv in (second, first):
            if srv:
                srv.cleanup()


def test_a_writer_holding_a_purged_id_runs_its_batch_again():
    """One child, so its scan writer commits every scan and keeps the ids of the
    strings it wrote. A purge deletes the agent's and the referer's rows in between.
    The next scan with them takes the kept ids; the writer finds the dictionaries'
    generation moved under the batch and writes it again, with new rows. On
    PostgreSQL the generation is read in the round trip that inserts the batch, after
    the ids were taken: the commit is run again, and says why."""
    srv, tok = started(extra="QRTrackRateLimit 0\nStartServers 1\nServerLimit 1\n"
                             "MaxRequestWorkers 25\n", loglevel="info")
    try:
        code = tracker_code(srv, tok)
        agent = UA % ("again-%d-%d" % (os.getpid(), time.time_ns()))
        keep_agent = UA % "keep"
        scan(srv, code, agent, ALICE)
        scan(srv, code, keep_agent, KEEP)
        age(srv, agent, 40)
        assert srv.admin("visits", "purge", "30").stdout.strip() == "1"
        assert strings_left(srv, agent) == 0
        scan(srv, code, agent, ALICE)
        assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE user_agent = '%s' AND "
                           "referer = '%s'" % (agent, ALICE)).strip()) == 1
        assert dangling(srv) == 0
        if srv.backend == "pgsql":
            assert "the dictionaries changed while the batch was written" in srv.error_log()
        check_counts(srv)
    finally:
        srv.cleanup()
