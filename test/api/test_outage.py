"""Printed codes keep working while the database cannot be reached.

Each node keeps a snapshot of its codes and a spool of visits beside its state
(QRTrackSpoolDir): while PostgreSQL is stopped, scans answer 302 from the snapshot
and their visits are committed to the spool before the redirect; once it is back,
the spool is replayed into the database in order, each visit exactly once, so
counters and unique visitors come out as if nothing had happened. An unknown code
answers 503 meanwhile (the snapshot cannot prove it does not exist), the API 503, and
the error log says so a few times, not once per request."""
import json
import os
import re
import pwd
import signal
import stat
import subprocess
import threading
import time

import pytest
import requests

import conftest
from lib import pg as pglib
from lib import webhooks as wh
from lib.disk import Tmpfs, free_bytes
from conftest import Api, BACKEND, Server, started
from lib.env import HTTPD, PSQL
from lib.wait import wait_until
from lib.refuse import RefusingLock
from lib.slowaccept import SlowAccept
from lib.server import child_pids, qrtrack_status, snapshot_codes

STATUS = "LoadModule status_module %s/mod_status.so\n<Location /server-status>\n" \
         "    SetHandler server-status\n</Location>\n"
UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
     "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1 visitor-%d"

pgsql_only = pytest.mark.skipif(
    BACKEND != "pgsql", reason="stops and starts a PostgreSQL cluster of its own: runs in "
    "the PostgreSQL pass of `make api` (QRT_TEST_BACKEND=pgsql)")


class Scanner:
    """Threads scanning codes on nodes, one visitor per thread; each result is
    (node index, code, visitor, status or None, Location, the time it was sent, the
    time its answer came)."""

    def __init__(self, nodes, codes, threads=8, retry_reused=False):
        self.nodes, self.codes = nodes, codes
        # A request on a kept-alive connection that the server closed as it came (a
        # graceful restart's old child ends its idle connections) is sent again once on
        # a new one, as browsers do with a GET.
        self.retry_reused = retry_reused
        self.stop = threading.Event()
        self.results = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, i):
        n = 0
        with requests.Session() as s:
            while not self.stop.is_set():
                node = (i + n) % len(self.nodes)
                code = self.codes[(i * 7 + n) % len(self.codes)]
                n += 1
                sent = time.monotonic()
                got = (None, None)
                for attempt in range(2 if self.retry_reused else 1):
                    try:
                        r = s.get("%s/q/%s" % (self.nodes[node].base, code),
                                  headers={"User-Agent": UA % i}, allow_redirects=False,
                                  timeout=30)
                        got = (r.status_code, r.headers.get("Location"))
                        break
                    except requests.ConnectionError as e:
                        if "RemoteDisconnected" not in repr(e):
                            break
                        s.close()
                    except requests.RequestException:
                        break
                with self.lock:
                    self.results.append((node, code, i, got[0], got[1], sent,
                                         time.monotonic()))
                # Paces the load (a steady stream of scans, not a flood).
                self.stop.wait(0.01)

    def count(self):
        with self.lock:
            return len(self.results)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        return self.results


@pytest.fixture
def own_cluster():
    """A PostgreSQL cluster of the test's own, to stop and start (the session's
    cluster stays up for the other tests)."""
    with pglib.own_cluster() as own:
        yield own


def two_nodes(extra=""):
    conf = STATUS % conftest.apxs("LIBEXECDIR") + extra
    a = Server(extra=conf, loglevel="info")
    a.admin("init")
    a.account("acme")
    a.start()
    b = Server(extra=conf, shared_db=a, loglevel="info")
    b.start()
    tok = a.token("acme")
    return a, b, tok


def started_with_status(extra=""):
    """One started node with mod_status (and extra configuration) and the account acme."""
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR") + extra, loglevel="info")
    srv.admin("init")
    srv.account("acme")
    return srv.start()


def node_with_codes(n, extra=""):
    """started_with_status(extra), a token of acme and the codes of n trackers, once the
    node's snapshot has them: (node, token, codes); the node is cleaned up if that fails."""
    srv = started_with_status(extra)
    try:
        tok = srv.token("acme")
        codes = [t["code"] for t in make_trackers(srv, tok, n)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the node's snapshot of the codes")
    except BaseException:
        srv.cleanup()
        raise
    return srv, tok, codes


def two_nodes_with_codes(n):
    """two_nodes() and the codes of n trackers, once both nodes' snapshots have them:
    (a, b, token, codes); the nodes are cleaned up if that fails."""
    a, b, tok = two_nodes()
    try:
        codes = [t["code"] for t in make_trackers(a, tok, n)]
        for node in (a, b):
            wait_until(lambda: set(codes) <= snapshot_codes(node), timeout=15, interval=0.1,
                       what="the node's snapshot of the codes")
    except BaseException:
        b.cleanup()
        a.cleanup()
        raise
    return a, b, tok, codes


def make_trackers(node, tok, n):
    out = []
    with Api(node, tok) as s:
        for i in range(n):
            r = s.post("/tracker", json={"redirect_url": "https://example.com/t%d" % i})
            assert r.status_code == 200, r.text
            out.append(r.json())
    return out


def error_lines(srv):
    return [l for l in srv.error_log().splitlines() if "[error]" in l or "[warn]" in l
            or ":error]" in l or ":warn]" in l]


@pgsql_only
def test_two_nodes_redirect_through_a_database_outage_and_replay_every_visit_once(
        own_cluster):
    a = b = None
    try:
        a, b, tok = two_nodes()
        trackers = make_trackers(a, tok, 6)
        codes = [t["code"] for t in trackers]
        dest = {t["code"]: t["redirect_url"] for t in trackers}
        # Node b has never looked these codes up: its snapshot must have them.
        wait_until(lambda: set(codes) <= snapshot_codes(a) and set(codes) <= snapshot_codes(b),
                   timeout=15, interval=0.1, what="the nodes' snapshots of the codes")
        load = Scanner([a, b], codes)
        wait_until(lambda: load.count() > 50,
                   timeout=20, interval=0.1, what="scans before the outage")
        logs_before = [len(error_lines(a)), len(error_lines(b))]
        # API calls too, throughout the outage: each a 503, none a log line.
        api_stop = threading.Event()
        api_codes = []

        def api_load():
            with Api(a, tok) as s:
                while not api_stop.is_set():
                    api_codes.append(s.get("/tracker").status_code)
        api_thread = threading.Thread(target=api_load, daemon=True)
        own_cluster.halt()
        api_thread.start()
        halted = time.monotonic()
        wait_until(lambda: qrtrack_status(a)["QRTrackDatabaseReachable"] == "0"
                   and qrtrack_status(b)["QRTrackDatabaseReachable"] == "0", timeout=20, interval=0.1,
                   what="both nodes to see the database gone")
        with Api(b, tok) as s:
            started = time.monotonic()
            r = s.get("/tracker")
            assert r.status_code == 503, r.text
            assert r.headers["Retry-After"]
            assert r.json()["message"]
            assert time.monotonic() - started < 1.0
        # Codes that no snapshot has, scanned throughout the outage: each a 503 with
        # Retry-After (the database alone could say whether they exist).
        unknown_stop = threading.Event()
        unknown_codes = []

        def unknown_load():
            i = 0
            while not unknown_stop.is_set():
                for n in (a, b):
                    i += 1
                    r = requests.get("%s/q/NoSuchCode%d" % (n.base, i), allow_redirects=False,
                                     timeout=10)
                    unknown_codes.append((r.status_code, r.headers.get("Retry-After")))
                unknown_stop.wait(0.1)
        unknown_thread = threading.Thread(target=unknown_load, daemon=True)
        unknown_thread.start()
        assert qrtrack_status(a)["QRTrackDatabaseReachable"] == "0"
        # The outage lasts several seconds (spools grow, log lines are rationed, past the
        # 10 s of the rations of lines about single requests): a duration under test, not
        # a wait for a state.
        time.sleep(12.0)
        unknown_stop.set()
        unknown_thread.join()
        assert len(unknown_codes) > 50 and all(c == 503 and ra for c, ra in unknown_codes), \
            sorted(set(unknown_codes), key=str)
        assert int(qrtrack_status(a)["QRTrackSpoolVisits"]) + int(qrtrack_status(b)["QRTrackSpoolVisits"]) > 0
        api_stop.set()
        api_thread.join()
        assert len(api_codes) > 100 and set(api_codes) <= {503, 429}, set(api_codes)
        restarted = time.monotonic()
        own_cluster.start()
        # Scans go on across the recovery: until both nodes reach the database again
        # and some scans have been answered since.
        since = load.count()
        wait_until(lambda: qrtrack_status(a)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(b)["QRTrackDatabaseReachable"] == "1"
                   and load.count() > since + 50, timeout=45, interval=0.1,
                   what="both nodes back on the database, scanned meanwhile")
        results = load.finish()

        # Every scan was answered, each 302 to its code's destination, during the
        # outage too.
        assert all(r[3] == 302 for r in results), (
            [(r[0], r[3]) for r in results if r[3] != 302][:20], len(results),
            a.error_log()[-3000:], b.error_log()[-3000:])
        assert all(r[4] == dest[r[1]] for r in results)
        assert len(results) > 200, len(results)

        # Every one of them is in the database within seconds, once.
        def visits():
            try:
                return int(a.sql("SELECT COUNT(*) FROM visits").strip())
            except AssertionError:
                return 0
        wait_until(lambda: visits() >= len(results),
                   timeout=45, interval=0.1, what="the spooled visits in the database")
        got = {}
        with Api(a, tok) as s:
            for t in trackers:
                r = s.get("/tracker/analytics/%d" % t["tracker_id"])
                assert r.status_code == 200, r.text
                got[t["code"]] = r.json()
        for t in trackers:
            mine = [r for r in results if r[1] == t["code"]]
            g = got[t["code"]]
            assert g["totalScans"] == len(mine), (t["code"], g, len(mine))
            assert g["uniqueVisitors"] == len({r[2] for r in mine}), (t["code"], g)
        assert int(a.sql("SELECT COUNT(*) FROM visits").strip()) == len(results)
        wait_until(lambda: qrtrack_status(a)["QRTrackSpoolVisits"] == "0"
                   and qrtrack_status(b)["QRTrackSpoolVisits"] == "0",
                   timeout=10, interval=0.1, what="empty spools")
        assert int(qrtrack_status(a)["QRTrackSpoolReplayed"]) + \
            int(qrtrack_status(b)["QRTrackSpoolReplayed"]) > 0
        assert qrtrack_status(a)["QRTrackDatabaseReachable"] == "1"

        # The outage cost each node a few log lines, not one per request; the webhook
        # worker leaves the database to the keeper while it is away (no QRT01033 each
        # 10 s for as long as it lasts).
        for node, before in zip((a, b), logs_before):
            added = error_lines(node)[before:]
            assert len(added) < 40, "\n".join(added[:60])
            assert not [l for l in added if "QRT01033" in l], "\n".join(added[:60])
            # Unknown codes: once per QRT_LOG_QUIET (5 minutes) a child, not every 10 s.
            assert 1 <= len([l for l in added if "QRT00043" in l]) <= 2, "\n".join(added[:60])
        assert "QRT00104" in a.error_log() + b.error_log()
        assert "QRT00105" in a.error_log() + b.error_log()
        assert restarted - halted > 12
    finally:
        for srv in (b, a):
            if srv:
                srv.cleanup()


@pgsql_only
def test_after_a_database_restart_the_replay_opens_the_writers_connection_again(own_cluster):
    """The scan writer's connection, which the server ended at its shutdown (57P01), was
    used for the first replay once the database had been started again: the replay failed,
    the node said the database gone once more (QRT00104) and replayed seconds later. It is
    opened again instead, as one the server closed while idle. And with a webhook
    subscribed, the writer leaves the outbox's bound to after the outage (QRT01003 each
    10 s for as long as it lasted, seen on a node whose other child had left the
    database)."""
    srv, tok = started(extra=STATUS % conftest.apxs("LIBEXECDIR"), loglevel="info")
    try:
        with Api(srv, tok) as s:
            r = s.post("/webhook", json={"url": "https://hooks.example.com/in",
                                         "events": ["scan.created"]})
            assert r.status_code == 200, r.text
        codes = [t["code"] for t in make_trackers(srv, tok, 2)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the node's snapshot of the codes")
        load = Scanner([srv], codes)
        wait_until(lambda: load.count() > 20, timeout=20, interval=0.1,
                   what="scans before the outage")
        own_cluster.halt()
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "0",
                   timeout=20, interval=0.1, what="the node to see the database gone")
        before = len(error_lines(srv))
        # past the 10 s ration of the line, scans spooled all along
        time.sleep(12.0)
        added = error_lines(srv)[before:]
        own_cluster.start()
        results = load.finish()
        assert all(r[3] == 302 for r in results), sorted({r[3] for r in results}, key=str)
        bound_failed = [l for l in added if "QRT01003" in l]
        before = len(error_lines(srv))
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0", timeout=45,
                   interval=0.1, what="the node back on the database, its spool replayed")
        # The writer's connection, which the server ended at its shutdown (57P01), is
        # opened again for the replay: the database is not said gone once more.
        added = error_lines(srv)[before:]
        assert not bound_failed, "\n".join(bound_failed)
        assert not [l for l in added if "57P01" in l or "QRT00104" in l], "\n".join(added)
    finally:
        srv.cleanup()


@pgsql_only
def test_restarts_while_the_database_is_away_keep_the_server_up_on_its_snapshot(own_cluster):
    """A graceful restart (logrotate's nightly one) or a restart while the database cannot
    be reached: the parent, which checked this build's schema before, goes on (QRT00133)
    instead of ending httpd with "Configuration Failed" (the server then stayed down after
    the database came back); the new children answer scans from the snapshot and spool
    their visits, and once the database is back every visit is in it, once, and the API
    writes and the new codes scan."""
    nodes = ()
    try:
        a, b, tok, codes = two_nodes_with_codes(3)
        nodes = (a, b)
        redirected = [0]

        def scan_all():
            for n in nodes:
                for c in codes:
                    r = requests.get("%s/q/%s" % (n.base, c), allow_redirects=False, timeout=30)
                    assert r.status_code == 302, (n.base, r.status_code, r.text)
                    redirected[0] += 1

        def restart(node, how):
            subprocess.run([HTTPD, "-f", node.conf, "-k", how], check=True)
            wait_until(lambda: node.error_log().count("QRT00133") == count[node.port] + 1,
                       timeout=30, what="QRT00133 after the %s" % how)
            count[node.port] += 1
            wait_until(lambda: requests.get(node.base + "/api/health", timeout=10)
                       .json()["scans"] == "spooling", timeout=30, interval=0.1,
                       ignore=(requests.RequestException, ValueError),
                       what="the restarted node to answer")
            assert node.proc.poll() is None, node.error_log()[-3000:]

        scan_all()
        own_cluster.halt()
        for n in nodes:
            wait_until(lambda: qrtrack_status(n)["QRTrackDatabaseReachable"] == "0",
                       timeout=20, interval=0.1, what="the node to see the database gone")
        scan_all()
        count = {a.port: 0, b.port: 0}
        restart(a, "graceful")
        restart(b, "restart")
        scan_all()
        for n in nodes:
            with Api(n, tok) as s:
                r = s.get("/tracker")
                assert r.status_code == 503 and r.headers["Retry-After"], r.text
        # A second restart, of a generation that itself went on without the database.
        restart(a, "graceful")
        scan_all()
        own_cluster.start()
        for n in nodes:
            wait_until(lambda: qrtrack_status(n)["QRTrackDatabaseReachable"] == "1"
                       and qrtrack_status(n)["QRTrackSpoolVisits"] == "0", timeout=45,
                       interval=0.1, what="the node back on the database, its spool replayed")
        assert int(a.sql("SELECT COUNT(*) FROM visits").strip()) == redirected[0]
        for n in nodes:
            with Api(n, tok) as s:
                r = s.post("/tracker", json={"redirect_url": "https://example.com/after"})
                assert r.status_code == 200, r.text
                new = r.json()["code"]
            r = requests.get("%s/q/%s" % (n.base, new), allow_redirects=False, timeout=30)
            assert r.status_code == 302 and r.headers["Location"] == "https://example.com/after"
        wait_until(lambda: int(a.sql("SELECT COUNT(*) FROM visits").strip()) == redirected[0] + 2,
                   timeout=20, what="the new codes' visits")
        for n in nodes:
            log = n.error_log()
            assert "Configuration Failed" not in log, log[-3000:]
            assert not n.crash_lines(), log[-3000:]
        assert a.error_log().count("QRT00133") == 2 and b.error_log().count("QRT00133") == 1
    finally:
        for n in nodes:
            n.cleanup()


@pgsql_only
def test_a_first_start_while_the_database_is_away_runs_on_the_nodes_files(own_cluster):
    """A start (a reboot, `systemctl start`) while PostgreSQL cannot be reached: the build
    that checked the schema last, as the node's private file says, starts as in an outage
    (before, httpd refused to start); another build's file is not enough."""
    srv, tok, codes = node_with_codes(3)
    try:
        memo = os.path.join(srv.dir, "qrtrack-start.memo")
        st = os.stat(memo)
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
        with open(memo) as f:
            text = f.read()
        srv.stop()
        own_cluster.halt()

        # Another build's file: httpd does not start, as before.
        with open(memo, "w") as f:
            f.write(text.split()[0] + " 0000000000000001 " + " ".join(text.split()[2:]) + "\n")
        with pytest.raises(AssertionError):
            srv.start()
        assert "QRT00003" in srv.error_log() and "QRT00133" not in srv.error_log()

        with open(memo, "w") as f:
            f.write(text)
        srv.start()
        assert "the server starts" in srv.error_log().split("QRT00133", 1)[1].split("\n")[0]
        # said once, though httpd reads its configuration twice as it starts
        assert srv.error_log().count("QRT00133") == 1, srv.error_log()[-3000:]
        wait_until(lambda: requests.get(srv.base + "/api/health", timeout=10)
                   .json()["scans"] == "spooling", timeout=30, interval=0.1,
                   ignore=(requests.RequestException, ValueError), what="the node on its spool")
        redirected = 0
        for c in codes * 3:
            r = requests.get("%s/q/%s" % (srv.base, c), allow_redirects=False, timeout=30)
            assert r.status_code == 302, (r.status_code, r.text)
            redirected += 1
        with Api(srv, tok) as s:
            r = s.get("/tracker")
            assert r.status_code == 503 and r.headers["Retry-After"], r.text
        own_cluster.start()
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0", timeout=45,
                   interval=0.1, what="the node back on the database, its spool replayed")
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == redirected
        with Api(srv, tok) as s:
            r = s.post("/tracker", json={"redirect_url": "https://example.com/after"})
            assert r.status_code == 200, r.text
        assert not srv.crash_lines(), srv.error_log()[-3000:]
    finally:
        if srv:
            srv.cleanup()


@pgsql_only
def test_a_start_without_the_database_checks_its_schema_when_it_answers(own_cluster):
    """A start while PostgreSQL cannot be reached goes on with what this build checked
    last (QRT00133); the database's schema may change meanwhile (a restored backup,
    another node's upgrade). When it answers again, its schema is checked before the node
    leaves its snapshot and spool: while it is not this build's, scans keep their 302s and
    their visits stay in the spool, and the error log says why (QRT00142); once it is,
    the spool is replayed, every visit once. Before, the node went back on the database
    unchecked."""
    srv, tok, codes = node_with_codes(2)
    try:
        srv.stop()
        # Another build's migration, as far as this one can tell: a version past its own.
        ours = int(srv.sql("SELECT MAX(version) FROM qrt_schema").strip())
        srv.sql("INSERT INTO qrt_schema (version) VALUES (%d)" % (ours + 1))
        own_cluster.halt()
        srv.start()
        assert "QRT00133" in srv.error_log()
        wait_until(lambda: requests.get(srv.base + "/api/health", timeout=10)
                   .json()["scans"] == "spooling", timeout=30, interval=0.1,
                   ignore=(requests.RequestException, ValueError), what="the node on its spool")
        for c in codes * 2:
            r = requests.get("%s/q/%s" % (srv.base, c), allow_redirects=False, timeout=30)
            assert r.status_code == 302, (r.status_code, r.text)
        own_cluster.start()
        wait_until(lambda: "QRT00142" in srv.error_log(), timeout=30, interval=0.2,
                   what="the schema's check said")
        # The keeper probes each second: several probes, and the node stays off it.
        time.sleep(3)
        assert qrtrack_status(srv)["QRTrackDatabaseReachable"] == "0"
        assert qrtrack_status(srv)["QRTrackSpoolVisits"] == "4"
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 0
        r = requests.get("%s/q/%s" % (srv.base, codes[0]), allow_redirects=False, timeout=30)
        assert r.status_code == 302, (r.status_code, r.text)
        line = [l for l in srv.error_log().splitlines() if "QRT00142" in l]
        assert len(line) == 1 and "version %d, this build's is %d" % (ours + 1, ours) \
            in line[0], line
        # Mended (the backup's schema is this build's again): back on the database.
        srv.sql("DELETE FROM qrt_schema WHERE version = %d" % (ours + 1))
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0", timeout=30,
                   interval=0.1, what="the node back on the database, its spool replayed")
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 5
        assert not srv.crash_lines(), srv.error_log()[-3000:]
    finally:
        if srv:
            srv.cleanup()


@pgsql_only
def test_a_restart_under_a_lock_held_elsewhere_does_not_wait_for_it():
    """A graceful restart while another program holds the trackers and visits locked
    (ALTER TABLE, VACUUM FULL, an open transaction): the parent's check of the database
    waits 1 s for the lock and goes on (QRT00136) instead of holding the restart, and so
    every new connection, for as long as the lock lasts; every scan is redirected and
    recorded once the lock goes."""
    srv = started_with_status()
    locker = None
    try:
        tok = srv.token("acme")
        codes = [t["code"] for t in make_trackers(srv, tok, 2)]
        for c in codes:
            assert requests.get("%s/q/%s" % (srv.base, c), allow_redirects=False,
                                timeout=30).status_code == 302
        pg = conftest.pg_cluster()
        locker = subprocess.Popen(
            [PSQL, "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user, "-d",
             srv.dbname, "-c", "BEGIN; LOCK TABLE visit_rows, trackers IN ACCESS EXCLUSIVE "
             "MODE; SELECT pg_sleep(7); COMMIT;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(lambda: pg.psql(srv.dbname, "SELECT COUNT(*) FROM pg_locks l JOIN pg_class c "
                                   "ON l.relation = c.oid WHERE c.relname = 'trackers' AND "
                                   "l.mode = 'AccessExclusiveLock' AND l.granted").strip() == "1",
                   timeout=30, what="the outside lock")
        locked = time.monotonic()
        configured = srv.error_log().count("QRT00065")
        subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True)
        wait_until(lambda: srv.error_log().count("QRT00065") > configured, timeout=30,
                   interval=0.05, what="the parent to read its configuration again")
        # Before: the parent's check waited for the lock, 7 s.
        assert time.monotonic() - locked < 5, srv.error_log()[-3000:]
        assert "QRT00136" in srv.error_log()
        assert locker.wait(timeout=30) == 0, locker.stderr.read()
        locker = None
        redirected = 0
        for c in codes * 2:
            r = requests.get("%s/q/%s" % (srv.base, c), allow_redirects=False, timeout=30)
            assert r.status_code == 302, (r.status_code, r.text)
            redirected += 1
        wait_until(lambda: int(srv.sql("SELECT COUNT(*) FROM visits").strip())
                   == redirected + len(codes), timeout=30, what="every scan's visit")
        assert "Configuration Failed" not in srv.error_log()
    finally:
        if locker:
            locker.kill()
            locker.wait()
        srv.cleanup()


@pgsql_only
def test_a_connection_that_prepared_nothing_yet_outlives_a_restart(own_cluster):
    """A child's pooled connection prepares its statements when a request first needs
    them, so one opened when the child started holds none. PostgreSQL restarts under
    it: the first API request on it finds it gone while preparing, re-opens it in
    place and answers 200, as a connection that had run statements does."""
    one = STATUS % conftest.apxs("LIBEXECDIR") + "StartServers 1\nServerLimit 1\n" \
        "MaxRequestWorkers 25\nDBDMin 1\nDBDKeep 1\nDBDMax 1\n"
    srv = Server(extra=one)
    try:
        srv.admin("init")
        srv.account("acme")
        tok = srv.token("acme")
        srv.start()
        # The child is up, its one API connection (DBDMin) opened and nothing run on
        # it; the scan writer and webhook worker have their own.
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1",
                   timeout=10, interval=0.1, what="the node on its database")
        own_cluster.halt()
        own_cluster.start()
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1",
                   timeout=20, interval=0.1, what="the node back on its database")
        with Api(srv, tok) as s:
            r = s.get("/account")
            assert r.status_code == 200, (r.text, srv.error_log()[-3000:])
            r = s.post("/tracker", json={"redirect_url": "https://example.com/after"})
            assert r.status_code == 200, r.text
    finally:
        srv.stop()
        srv.cleanup()


@pgsql_only
def test_smart_codes_keep_their_gates_through_an_outage(own_cluster):
    """A node's snapshot keeps each code's routing: while the database is down, a node
    that never looked the codes up still asks for the password, follows the rules, sends
    an expired code to its expired_url, and answers a capped code 503 (the cap is known
    only to the database) rather than risk passing it."""
    a = b = None
    ios = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
          "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
    try:
        a, b, tok = two_nodes()
        with Api(a, tok) as s:
            def make(**body):
                r = s.post("/tracker", json=dict(body, redirect_url="https://example.com/h"))
                assert r.status_code == 200, r.text
                return r.json()["code"]
            locked = make(password="outage pw")
            ruled = make(rules=[{"redirect_url": "https://example.com/ios", "os": ["iOS"]}])
            expired = make(valid_until="2020-01-01T00:00:00+0000",
                           expired_url="https://example.com/ended")
            capped = make(max_scans=1000)
        codes = {locked, ruled, expired, capped}
        wait_until(lambda: codes <= snapshot_codes(b), timeout=15,
                   what="node b's snapshot of the codes")
        own_cluster.halt()

        def get(code, ua=ios):
            return requests.get("%s/q/%s" % (b.base, code), headers={"User-Agent": ua},
                                allow_redirects=False, timeout=30)
        wait_until(lambda: get(ruled).headers.get("Location") == "https://example.com/ios",
                   timeout=15, what="a rule followed from the snapshot")
        r = get(locked)
        assert r.status_code == 200 and 'name="password"' in r.text
        r = requests.post("%s/q/%s" % (b.base, locked), data={"password": "outage pw"},
                          headers={"User-Agent": ios}, allow_redirects=False, timeout=30)
        assert r.status_code == 302 and r.headers["Location"] == "https://example.com/h"
        r = get(expired)
        assert r.status_code == 302 and r.headers["Location"] == "https://example.com/ended"
        r = get(capped)
        assert r.status_code == 503 and r.headers["Retry-After"]
        # a HEAD likewise: only the database knows whether it would be sent on
        r = requests.head("%s/q/%s" % (b.base, capped), headers={"User-Agent": ios},
                          allow_redirects=False, timeout=30)
        assert r.status_code == 503 and r.headers["Retry-After"], r.status_code
        wait_until(lambda: "QRT00801" in b.error_log(), what="the capped code's log line")
        own_cluster.start()
        wait_until(lambda: get(capped).status_code == 302, timeout=30,
                   what="the capped code once the database is back")
    finally:
        for srv in (b, a):
            if srv:
                srv.cleanup()


@pgsql_only
def test_spooled_visits_survive_a_kill_9_of_the_committing_child(own_cluster):
    a = None
    try:
        a, b, tok = two_nodes()
        b.cleanup()
        trackers = make_trackers(a, tok, 2)
        codes = [t["code"] for t in trackers]
        wait_until(lambda: set(codes) <= snapshot_codes(a),
                   timeout=15, interval=0.1, what="the snapshot of the codes")
        own_cluster.halt()
        load = Scanner([a], codes, threads=4)
        wait_until(lambda: int(qrtrack_status(a)["QRTrackSpoolVisits"]) > 20,
                   timeout=20, interval=0.1, what="spooled visits")
        committer = int(qrtrack_status(a)["QRTrackCommitter"])
        assert committer > 0
        os.kill(committer, signal.SIGKILL)
        # Scans go on after the kill, on the remaining and the new children.
        since = load.count()
        wait_until(lambda: load.count() > since + 40, timeout=30, interval=0.1,
                   what="scans after the kill")
        results = load.finish()
        ok = [r for r in results if r[3] == 302]
        # Only the scans the killed child was serving may have got no answer.
        assert len(ok) >= len(results) - 8, [r[3] for r in results if r[3] != 302]
        own_cluster.start()

        def replayed():
            return int(a.sql("SELECT COUNT(*) FROM visits").strip() or 0) >= len(ok) \
                and qrtrack_status(a)["QRTrackSpoolVisits"] == "0"
        wait_until(replayed, timeout=45, interval=0.1, what="the replay")
        # Every acknowledged visit is there; at most the unanswered ones besides.
        n = int(a.sql("SELECT COUNT(*) FROM visits").strip())
        assert len(ok) <= n <= len(results), (len(ok), n, len(results))
    finally:
        if a:
            a.cleanup()


def test_the_spool_and_snapshot_are_private_files_and_mod_status_shows_them():
    srv, tok = started(extra=STATUS % conftest.apxs("LIBEXECDIR"))
    try:
        t = make_trackers(srv, tok, 1)[0]
        wait_until(lambda: t["code"] in snapshot_codes(srv),
                   timeout=15, interval=0.1, what="the snapshot of the code")
        for name in ("qrtrack-spool.db", "qrtrack-snapshot.db"):
            st = os.stat(os.path.join(srv.dir, name))
            assert stat.S_IMODE(st.st_mode) == 0o640, (name, oct(st.st_mode))
        s = qrtrack_status(srv)
        assert s["QRTrackDatabaseReachable"] == "1"
        assert s["QRTrackSpoolVisits"] == "0"
        # A deleted tracker leaves the snapshot, a changed destination follows.
        u = make_trackers(srv, tok, 1)[0]
        wait_until(lambda: u["code"] in snapshot_codes(srv),
                   timeout=15, interval=0.1, what="the new code in the snapshot")
        with Api(srv, tok) as api:
            assert api.patch("/tracker/%d" % t["tracker_id"],
                             json={"redirect_url": "https://example.com/new"}
                             ).status_code == 200
            assert api.delete("/tracker/%d" % u["tracker_id"]).status_code == 204
        wait_until(lambda: u["code"] not in snapshot_codes(srv),
                   timeout=15, interval=0.1, what="the deletion")

        def url():
            p = subprocess.run(["sqlite3", os.path.join(srv.dir, "qrtrack-snapshot.db"),
                                "SELECT url FROM codes WHERE code = '%s'" % t["code"]],
                               capture_output=True, text=True)
            return p.stdout.strip() == "https://example.com/new"
        wait_until(url, timeout=15, interval=0.1, what="the new destination in the snapshot")
    finally:
        srv.cleanup()


def test_a_bulk_of_trackers_is_written_to_the_snapshot_a_few_times_not_every_second():
    """300 trackers created in one request share their updated_at. The keeper reads the
    changes of the last 10 s again at each look (late commits), but once a look began 10 s
    past the newest change it reads only newer ones: the snapshot's writes stop, where
    they went on at 300 a second for as long as nothing else changed. A change after that
    still reaches the snapshot."""
    srv, tok = started(extra=STATUS % conftest.apxs("LIBEXECDIR"))
    try:
        with Api(srv, tok) as api:
            r = api.post("/tracker/bulk", json={"trackers": [
                {"redirect_url": "https://example.com/b%d" % i} for i in range(300)]})
            assert r.status_code == 200, r.text
            made = time.time()
            codes = {d["tracker"]["code"] for d in r.json()["data"]}
        assert len(codes) == 300
        wait_until(lambda: codes <= snapshot_codes(srv), timeout=15, interval=0.2,
                   what="the bulk's codes in the snapshot")
        time.sleep(max(0.0, made + 13 - time.time()))
        before = int(qrtrack_status(srv)["QRTrackSnapshotWrites"])
        time.sleep(3)
        after = int(qrtrack_status(srv)["QRTrackSnapshotWrites"])
        assert after == before, (before, after)
        # 300 written once, again for each look of the margin (about 10): far below what
        # 13 s of writing them every second made
        assert before < 300 * 13, before
        t = sorted(codes)[0]
        with Api(srv, tok) as api:
            tid = [d for d in api.get("/tracker", params={"rows": 1000}).json()["data"]
                   if d["code"] == t][0]["tracker_id"]
            assert api.patch("/tracker/%d" % tid, json={"redirect_url": "https://example.com/n"}
                             ).status_code == 200

        def url():
            p = subprocess.run(["sqlite3", os.path.join(srv.dir, "qrtrack-snapshot.db"),
                                "SELECT url FROM codes WHERE code = '%s'" % t],
                               capture_output=True, text=True)
            return p.stdout.strip() == "https://example.com/n"
        wait_until(url, timeout=15, interval=0.1, what="the change in the snapshot")
    finally:
        srv.cleanup()


def test_spool_directives_are_checked():
    for extra in ("QRTrackSpoolLimit 5\n", "QRTrackSpoolLimit many\n"):
        rc, out = conftest.configtest(extra)
        assert rc != 0 and "QRTrackSpoolLimit" in out, out
    rc, out = conftest.configtest("QRTrackSpoolDir off\nQRTrackSpoolLimit 5000\n")
    assert rc == 0, out


def cluster_pids(cluster):
    """The cluster's postmaster and its children (the backends and helpers)."""
    top = cluster.postmaster_pid()
    pids = [top]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == top:
                        pids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return pids


@pgsql_only
def test_a_database_that_stops_answering_is_left_for_the_spool(own_cluster):
    """A database server that keeps its connections but answers nothing (its processes
    stopped: a frozen host, storage that hangs) is no different from one that is gone:
    each call of the server's threads has a deadline past which its connection is cut
    (qrt_dbwatch), scans of known codes are spooled and redirected, the API answers 503
    in bounded time, and once the server answers again every redirected visit is in it."""
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR")
                 + "QRTrackStatementTimeout 2\nQRTrackScanWait 2\n", loglevel="info")
    pids = []
    try:
        srv.admin("init")
        srv.account("acme")
        srv.start()
        tok = srv.token("acme")
        trackers = make_trackers(srv, tok, 4)
        codes = [t["code"] for t in trackers]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the node's snapshot of the codes")
        load = Scanner([srv], codes)
        wait_until(lambda: load.count() > 50, timeout=20, interval=0.1,
                   what="scans before the stall")
        pids = cluster_pids(own_cluster)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        stalled = time.monotonic()
        # An API request waits at most its statement's deadline (2 s + 5 s) and a new
        # connection's attempt (PGCONNECT_TIMEOUT, 5 s), then 503.
        with Api(srv, tok) as s:
            started = time.monotonic()
            r = s.get("/tracker")
            assert r.status_code == 503, r.text
            assert r.json()["message"]
            assert time.monotonic() - started < 20, time.monotonic() - started
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "0",
                   timeout=30, interval=0.1, what="the node to leave the database")
        left = time.monotonic()
        assert left - stalled < 25, left - stalled
        # Scans go on, from the spool, for a few seconds of the stall: every scan sent once
        # the calls that were waiting when the node left have met their deadlines (the
        # writer's, 2 s + 2.5 s, the longest) is redirected.
        settled = left + 5

        def spooled():
            with load.lock:
                return [r for r in load.results if r[5] >= settled]
        wait_until(lambda: len(spooled()) > 100 and time.monotonic() > settled + 3,
                   timeout=30, interval=0.1, what="scans while the database is stalled")
        assert all(r[3] == 302 for r in spooled()), \
            sorted({r[3] for r in spooled()}, key=str)
        assert int(qrtrack_status(srv)["QRTrackSpoolVisits"]) > 0
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        pids = []
        wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0",
                   timeout=45, interval=0.1, what="the node back on the database, its spool "
                   "replayed")
        results = load.finish()
        # Every scan got an answer (a 503 at most, while the first calls waited out
        # their deadlines), and every redirect's visit is in the database.
        assert all(r[3] in (302, 503) for r in results), sorted({r[3] for r in results}, key=str)
        assert_redirects_recorded(srv, results)
        assert "QRT00104" in srv.error_log() and "QRT00105" in srv.error_log()
        # The webhook worker left the database to the keeper while the node had left it.
        assert "QRT01033" not in srv.error_log(), srv.error_log()[-3000:]
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        srv.cleanup()


SHORT_WAITS = "QRTrackStatementTimeout 2\nQRTrackScanWait 2\n"


class Frozen:
    """The processes of a cluster stopped (SIGSTOP) from the block's start until thaw(),
    and resumed at its end whatever happened; stalled and thawed: their times."""

    def __init__(self, cluster):
        self.pids = cluster_pids(cluster)

    def __enter__(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass        # (a backend that ended since it was listed)
        self.stalled = time.monotonic()
        return self

    def thaw(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.pids = []
        self.thawed = time.monotonic()

    def __exit__(self, *exc):
        self.thaw()


def left_database(srv):
    """When the node had left the database (waited for)."""
    wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "0",
               timeout=30, interval=0.1, what="the node to leave the database")
    return time.monotonic()


def back_and_replayed(srv):
    wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
               and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0",
               timeout=45, interval=0.1, what="the node back, its spool replayed")


def scanning(srv, codes, **kw):
    """A Scanner of the node's codes (4 threads), once it has made 50 scans."""
    load = Scanner([srv], codes, threads=4, **kw)
    wait_until(lambda: load.count() > 50, timeout=20, interval=0.1,
               what="scans before the stall")
    return load


def stalled_for(srv, cluster, seconds):
    """The cluster frozen for seconds, then the node back and its spool replayed: the
    times of the stall, of the node leaving the database, and of the thaw."""
    with Frozen(cluster) as frozen:
        left = left_database(srv)
        time.sleep(max(0, frozen.stalled + seconds - time.monotonic()))
    back_and_replayed(srv)
    return frozen.stalled, left, frozen.thawed


def assert_redirects_recorded(srv, results):
    """Every redirected scan's visit is in the database (a 503's may be too: its commit
    may have reached the server before it stopped)."""
    redirected = sum(1 for r in results if r[3] == 302)

    def visits():
        return int(srv.sql("SELECT COUNT(*) FROM visits").strip())
    wait_until(lambda: visits() >= redirected, timeout=30, interval=0.1,
               what="every redirected visit in the database")
    assert visits() <= len(results)


@pgsql_only
def test_while_the_database_is_frozen_scans_and_health_checks_are_answered_in_time(
        own_cluster):
    """Scans of known codes whose cached entry has aged (0.5 s on PostgreSQL) look the
    code up again. When the server stops answering, the lookup that meets the silence is
    cut at QRTrackScanWait and the child's next lookups leave the database alone for a
    few seconds: its scans are answered from the cache and the snapshot. They used to
    reconnect in place and try twice more, each through a 5 s connection attempt, and
    scans waited 17 to 30 s; a health check waited for the whole stall."""
    srv, tok, codes = node_with_codes(4, SHORT_WAITS)
    health = []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            sent = time.monotonic()
            try:
                code = requests.get(srv.base + "/api/health", timeout=60).status_code
            except requests.RequestException:
                code = None
            health.append((sent, time.monotonic() - sent, code))
            stop.wait(0.5)
    try:
        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        load = scanning(srv, codes)
        stalled, left, resumed = stalled_for(srv, own_cluster, 12)
        results = load.finish()
        stop.set()
        prober.join()
        # The node leaves the database once a call is cut (the probe's, the writer's),
        # not after lookups that waited out connection attempts.
        assert left - stalled < 8, left - stalled
        # Each scan is answered within its QRTrackScanWait and one connection attempt
        # (PGCONNECT_TIMEOUT, 5 s) at most: 302, or 503 while its commit could not be
        # known; every one sent once the node had left is redirected.
        during = [r for r in results if stalled - 1 <= r[5] < resumed]
        assert during and all(r[3] in (302, 503) for r in during), \
            sorted({r[3] for r in during}, key=str)
        slow = [(round(r[5] - stalled, 1), round(r[6] - r[5], 1), r[3]) for r in during
                if r[6] - r[5] > 2 + 5 + 1]
        assert not slow, slow
        after = [r for r in during if r[5] >= left + 1]
        assert len(after) > 100 and all(r[3] == 302 for r in after), \
            sorted({r[3] for r in after}, key=str)
        # A health check says 503 within the same bound, not at the stall's end.
        checks = [h for h in health if stalled - 1 <= h[0] < resumed]
        assert checks and all(h[1] < 2 + 5 + 1 for h in checks), checks
        assert all(h[2] == 503 for h in checks if h[0] >= stalled + 2 + 5 + 1), checks
        assert_redirects_recorded(srv, results)
    finally:
        stop.set()
        srv.cleanup()


@pgsql_only
def test_with_the_default_waits_a_frozen_database_is_left_within_seconds(own_cluster):
    """With the default QRTrackScanWait (10 s) the scan writer's commit is cut at 12.5 s,
    and until then every scan waited, most of them 10 s for a 503. A call that has waited
    a second makes the child probe the server on a connection of its own; no answer within
    2 s, and the child's waiting calls are cut and the node leaves the database (QRT00146):
    the scans that waited are spooled and redirected."""
    srv, tok, codes = node_with_codes(4)
    try:
        load = scanning(srv, codes)
        stalled, left, resumed = stalled_for(srv, own_cluster, 10)
        results = load.finish()
        # A second, then the probe's 2 s (and a tick): not the writer's 12.5 s.
        assert left - stalled < 6, left - stalled
        assert "QRT00146" in srv.error_log(), srv.error_log()[-3000:]
        during = [r for r in results if stalled <= r[5] < resumed]
        slow = [(round(r[5] - stalled, 1), round(r[6] - r[5], 1), r[3]) for r in during
                if r[6] - r[5] > 6]
        assert not slow, slow
        assert all(r[3] in (302, 503) for r in during), sorted({r[3] for r in during}, key=str)
        after = [r for r in during if r[5] >= left]
        assert len(after) > 100 and all(r[3] == 302 for r in after), \
            sorted({r[3] for r in after}, key=str)
        assert_redirects_recorded(srv, results)
    finally:
        srv.cleanup()


@pgsql_only
def test_a_graceful_restart_while_the_database_is_frozen_keeps_scans_answered(own_cluster):
    """logrotate's graceful restart while the database server is frozen: no child accepts
    while the parent checks the database, and each new child's mod_dbd opened DBDMin
    connections before it accepted. Each waited PGCONNECT_TIMEOUT (5 s), and scans went
    unanswered for 10 s. The parent of a build that checked the database before now waits
    2 s (libpq's least connect_timeout), and a child started without the database opens
    mod_dbd's connections when they are first needed."""
    srv, tok, codes = node_with_codes(4, SHORT_WAITS)
    try:
        load = scanning(srv, codes, retry_reused=True)
        with Frozen(own_cluster) as frozen:
            left_database(srv)
            time.sleep(1)
            restarted = time.monotonic()
            subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True)
            wait_until(lambda: "QRT00133" in srv.error_log(), timeout=30, interval=0.1,
                       what="QRT00133 after the graceful restart")
            time.sleep(4)
        resumed = frozen.thawed
        back_and_replayed(srv)
        results = load.finish()
        # Every scan sent around the restart is redirected from the spool, within the
        # parent's 2 s check and a child's start.
        around = [r for r in results if restarted - 0.5 <= r[5] < resumed]
        assert len(around) > 50, len(around)
        assert all(r[3] == 302 for r in around), sorted({r[3] for r in around}, key=str)
        slow = [(round(r[5] - restarted, 1), round(r[6] - r[5], 1)) for r in around
                if r[6] - r[5] > 4]
        assert not slow, slow
        assert_redirects_recorded(srv, results)
        assert srv.proc.poll() is None and not srv.crash_lines(), srv.error_log()[-3000:]
    finally:
        srv.cleanup()


def checked_then_restarted(srv, cluster):
    """Health checks (new connections: each child's lookup connection opened), then the
    cluster restarted, which ends them, and the node on the database again."""
    for _ in range(8):
        with requests.Session() as s:
            assert s.get(srv.base + "/api/health", timeout=30).status_code == 200
    cluster.halt()
    cluster.start()
    wait_until(lambda: qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1",
               timeout=30, interval=0.1, what="the node on the database")


@pgsql_only
def test_health_checks_after_a_database_restart_answer_200_at_once(own_cluster):
    """A health check runs on its child's lookup connection, which a restart of PostgreSQL
    has ended (57P01): the first check in each child after the restart answered 503, and
    a balancer took the node out for it. It is tried once more on a new connection."""
    srv = started_with_status()
    try:
        checked_then_restarted(srv, own_cluster)
        got = []
        for _ in range(8):
            with requests.Session() as s:
                r = s.get(srv.base + "/api/health", timeout=30)
                got.append((r.status_code, r.json().get("message")))
        assert got == [(200, None)] * 8, got
    finally:
        srv.cleanup()


@pgsql_only
def test_a_lookup_connection_opened_while_the_database_is_frozen_gives_up_in_time(own_cluster):
    """A health check runs on its child's lookup connection, as a scan's lookup does; a
    restart of PostgreSQL ended it, so the check opens a new one, which a frozen server
    does not take. That attempt waited PGCONNECT_TIMEOUT (5 s): past QRTrackScanWait for
    the check, and, when a graceful restart came meanwhile, that long for the old child to
    end and, where ServerLimit leaves no room beside the old children, for the new ones to
    start (every scan unanswered). It waits libpq's least, 2 s."""
    srv = started_with_status(SHORT_WAITS)
    try:
        checked_then_restarted(srv, own_cluster)
        took = []
        with Frozen(own_cluster):
            for _ in range(4):
                with requests.Session() as s:
                    t = time.monotonic()
                    r = s.get(srv.base + "/api/health", timeout=30)
                    took.append((r.status_code, round(time.monotonic() - t, 1)))
        assert all(code == 503 for code, _ in took), took
        assert max(secs for _, secs in took) < 3.5, took
        wait_until(lambda: requests.get(srv.base + "/api/health", timeout=30).status_code
                   == 200, timeout=30, interval=0.2, what="the node back")
        assert srv.proc.poll() is None and not srv.crash_lines(), srv.error_log()[-3000:]
    finally:
        srv.cleanup()


def start_behind(srv, relay, cluster, timeout=20):
    """Starts srv (not started yet), with the account acme, on cluster's database reached
    through relay (lib.slowaccept); timeout: as Server.start's."""
    with open(srv.conf) as f:
        conf = f.read()
    with open(srv.conf, "w") as f:
        f.write(conf.replace(srv.db, relay.params(srv.db, cluster.port)))
    srv.admin("init")
    srv.account("acme")
    srv.start(timeout=timeout)


@pgsql_only
def test_a_database_slow_to_take_connections_is_not_left(own_cluster):
    """A server that takes each new connection 3 s late (its host's CPU saturated: each
    backend forked late) is slow, not gone. The node opens the connections it has not
    opened yet (each child's lookup connection at its first scan, a keeper's when no
    other child's answers) and stays on the database: the API answers, and a code made a
    moment before is redirected and its visit recorded. The keeper took the node off the
    database when its connection attempt passed QRT_DB_CONNECT_QUICK_S (2 s), and the API
    answered 503 while mod_dbd's connections, which wait PGCONNECT_TIMEOUT (5 s), worked;
    a child's lookup connection gave up after 2 s too, and a code not in the snapshot yet
    was answered 503."""
    relay = SlowAccept(own_cluster.port)
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR"), loglevel="info")
    try:
        start_behind(srv, relay, own_cluster)
        tok = srv.token("acme")
        make_trackers(srv, tok, 2)
        relay.slow(3)
        results = []
        with Api(srv, tok) as a:
            # (12 s or more: several of each child's keeper turns and first scans)
            for _ in range(24):
                r = a.post("/tracker", json={"redirect_url": "https://example.com/slow"})
                scan = (requests.get("%s/q/%s" % (srv.base, r.json()["code"]),
                                     allow_redirects=False, timeout=30).status_code
                        if r.status_code == 200 else None)
                results.append((r.status_code, scan,
                                qrtrack_status(srv)["QRTrackDatabaseReachable"]))
                time.sleep(0.5)
        assert all(res == (200, 302, "1") for res in results), results
        assert "QRT00104" not in srv.error_log(), srv.error_log()[-3000:]
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == len(results)
    finally:
        srv.cleanup()
        relay.stop()


@pgsql_only
def test_a_database_that_ends_every_connection_then_takes_new_ones_late_is_not_left(
        own_cluster):
    """A server that ends every connection (a restart, a proxy that closed them) and then
    takes each new one 3 s late (its host's CPU saturated) still answers: the probe, its
    kept connection ended, could not open a new one within 2 s and took the server for
    silent, and the node left the database for the ten seconds its keeper took to connect
    again (the API answered 503). The probe now leaves that to the calls' own deadlines
    until it has a connection again (opened as the keeper's is), and the writer
    reconnects."""
    relay = SlowAccept(own_cluster.port)
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR"), loglevel="info")
    try:
        start_behind(srv, relay, own_cluster)
        tok = srv.token("acme")
        codes = [t["code"] for t in make_trackers(srv, tok, 2)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the node's snapshot of the codes")
        relay.end_all()
        relay.slow(3)
        results = []
        # (12 s or more: each thread's new connection through the relay, the probe's
        # among them)
        for i in range(24):
            scan = requests.get("%s/q/%s" % (srv.base, codes[i % 2]), allow_redirects=False,
                                timeout=30).status_code
            results.append((scan, qrtrack_status(srv)["QRTrackDatabaseReachable"]))
            time.sleep(0.5)
        assert all(res == (302, "1") for res in results), (results, srv.error_log()[-3000:])
        assert "QRT00104" not in srv.error_log(), srv.error_log()[-3000:]
        wait_until(lambda: int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == len(results),
                   timeout=30, what="every scan's visit in the database")
    finally:
        srv.cleanup()
        relay.stop()


def health_checks(srv, n):
    """n health checks, half a second apart: (status code, status, seconds) each."""
    out = []
    for _ in range(n):
        started = time.monotonic()
        r = requests.get(srv.base + "/api/health", timeout=30)
        out.append((r.status_code, r.json()["status"], round(time.monotonic() - started, 1)))
        time.sleep(0.5)
    return out


@pgsql_only
def test_health_checks_on_a_database_slow_to_take_connections_answer_200(own_cluster):
    """A server that takes each new connection 3 s late answers on the connections it
    has: a health check whose child has no lookup connection yet (its opening within 2 s
    times out) sees that the node's keeper had an answer a moment ago, asks on one of
    mod_dbd's connections and answers 200, every time, rather than 503 "the database
    does not answer" (a balancer would take a working node out). A silent server gives
    the keeper no answer: 503 at once (the frozen test above). Four children: the keepers
    take turns, and one whose child had opened no connection before the slowdown gave up
    its opening after 2 s and left the round unanswered, so checks answered 503 then.
    (MaxSpareThreads: httpd's idle maintenance would stop two of the four children.)"""
    relay = SlowAccept(own_cluster.port)
    srv = Server(extra="StartServers 4\nServerLimit 4\nMaxRequestWorkers 100\n"
                       "MaxSpareThreads 100\n", loglevel="info")
    try:
        start_behind(srv, relay, own_cluster)
        codes = {t["code"] for t in make_trackers(srv, srv.token("acme"), 2)}
        # (the keeper has its connection: it brought the snapshot up to date)
        wait_until(lambda: codes <= snapshot_codes(srv), timeout=30,
                   what="the new codes in the snapshot")
        relay.slow(3)
        # (12 s or more: each child's first checks, and the checks after the pause that
        # follows a lookup connection not taken in time)
        results = health_checks(srv, 16)
        assert all(code == 200 and status == "ok" for code, status, _ in results), \
            (results, srv.error_log()[-3000:])
        assert "QRT00104" not in srv.error_log(), srv.error_log()[-3000:]
    finally:
        srv.cleanup()
        relay.stop()


def keepers_connected(srv):
    """The pids of the processes whose keeper logged that it opened its connection."""
    return {int(m) for m in re.findall(r"\[pid (\d+)[^\]]*\].*QRT00149", srv.error_log())}


def httpd_children(srv):
    return set(child_pids(srv.proc.pid, httpd_only=True))


@pgsql_only
def test_health_checks_answer_200_when_a_child_ends_on_a_database_slow_to_take_connections(
        own_cluster):
    """Each child's keeper keeps a connection of its own, opened outside the rounds while
    another child's answers. The rounds were left to the one keeper that had a connection:
    when its child ended (idle maintenance, MaxConnectionsPerChild, a crash) on a server
    that takes each new connection 3 s late, the node had no keeper answer until another
    one opened a connection (two 2 s attempts, then a 5 s one), and health checks
    answered 503 for those seconds. Here each of the two children is killed in turn, its
    replacement's keeper connected before the next: every check answers 200."""
    relay = SlowAccept(own_cluster.port)
    srv = Server(extra="MinSpareThreads 50\nMaxSpareThreads 100\n", loglevel="info")
    try:
        start_behind(srv, relay, own_cluster)
        first = httpd_children(srv)
        wait_until(lambda: first <= keepers_connected(srv), timeout=15,
                   what=lambda: "each child's keeper connected: %r of %r\n%s" % (
                       keepers_connected(srv), first, srv.error_log()[-3000:]))
        relay.slow(3)
        results = []
        for victim in sorted(first):
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: victim not in httpd_children(srv)
                       and len(httpd_children(srv)) == 2, timeout=15,
                       what="the killed child replaced")
            results += [(victim,) + check for check in health_checks(srv, 8)]
            # (the replacement's keeper connects through the slow relay: two 2 s
            # attempts, then a 5 s one)
            wait_until(lambda: httpd_children(srv) <= keepers_connected(srv), timeout=45,
                       what=lambda: "the new child's keeper connected\n%s"
                       % srv.error_log()[-3000:])
        assert all(code == 200 and status == "ok" for _, code, status, _ in results), \
            (results, srv.error_log()[-3000:])
        assert "QRT00104" not in srv.error_log(), srv.error_log()[-3000:]
    finally:
        srv.cleanup()
        relay.stop()


def keeper_in_its_turn(srv):
    """The pid of a child whose keeper thread waits on the database (a turn's connection
    attempt, not its pause between turns, a futex wait), or None."""
    for pid in httpd_children(srv):
        try:
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                    if f.read().strip() != "qrtrack-keeper":
                        continue
                with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                    call = f.read().split()[0]
                if call not in ("202", "running"):      # (202: futex, on x86-64)
                    return pid
        except OSError:
            pass
    return None


@pgsql_only
@pytest.mark.skipif(os.geteuid() != 0, reason="reading another user's threads' calls needs root")
def test_a_child_killed_in_its_keepers_turn_does_not_stop_the_keepers(own_cluster):
    """The keepers' rounds go to one child at a time. A child killed while its keeper had
    the turn (a crash, the OOM killer) left the turn held for ever: a node that had left
    a frozen database never probed it again, and stayed off it, its snapshot unchanged,
    until a restart. The turn of a child that is gone is taken by another."""
    srv, tok, codes = node_with_codes(2, SHORT_WAITS)
    try:
        with Frozen(own_cluster):
            left_database(srv)
            # (the keeper's probe of the frozen server: a connection attempt of 2 or 5 s)
            wait_until(lambda: keeper_in_its_turn(srv), timeout=30, interval=0.05,
                       what="a keeper in its turn")
            for pid in httpd_children(srv):
                os.kill(pid, signal.SIGKILL)
        back_and_replayed(srv)
        made = make_trackers(srv, tok, 1)[0]["code"]
        wait_until(lambda: made in snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the new code in the snapshot")
    finally:
        srv.cleanup()


@pgsql_only
def test_webhooks_are_delivered_from_a_database_slow_to_take_connections(own_cluster):
    """A server that takes each new connection 3 s late from the node's start: the webhook
    worker tries its connection within 2 s, then, after two attempts the server did not
    take in time, within PGCONNECT_TIMEOUT (5 s), and delivers the events. Every attempt
    gave up after 2 s, a second apart, and no event was ever sent."""
    relay = SlowAccept(own_cluster.port)
    relay.slow(3)
    rec = wh.Receiver()
    srv = Server(extra="QRTrackWebhookAllow 127.0.0.1/32\n", loglevel="info")
    try:
        start_behind(srv, relay, own_cluster, timeout=60)
        wid, secret = wh.add_webhook(srv, rec.url("/slow"))
        mids = wh.add_events(srv, wid, [7, 8])
        wait_until(lambda: len(rec.got("/slow")) == 2 and all(
                   e[0] == wh.DELIVERED for e in wh.events(srv, wid).values()),
                   timeout=45, what=lambda: "the deliveries: %r %r\n%s" % (
                       rec.got("/slow"), wh.events(srv, wid), srv.error_log()[-3000:]))
        got = rec.got("/slow")
        assert sorted(r[2]["webhook-id"] for r in got) == sorted(mids)
        assert all(wh.verify(secret, r[2], r[3]) for r in got)
    finally:
        srv.cleanup()
        relay.stop()
        rec.stop()


# A COMMIT that takes 7 s past its start, once for each row of qrt_test_slow (a deferred
# trigger on the visits' rows that outlasts statement_timeout, whose cancel it lets pass):
# the server records the batch after the scan writer has given up waiting for its answer.
SLOW_COMMIT = """
CREATE TABLE qrt_test_slow (x int);
CREATE FUNCTION qrt_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    DELETE FROM qrt_test_slow WHERE x = 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    WHILE clock_timestamp() < t0 + interval '7 seconds' LOOP
        BEGIN
            PERFORM pg_sleep(0.1);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;
    END LOOP;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER qrt_test_slow AFTER INSERT ON visit_rows
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION qrt_test_slow();
"""


@pgsql_only
def test_a_commit_whose_answer_was_lost_is_not_recorded_again_from_the_spool():
    """A batch's commit that reached the database but whose answer never came back (the
    connection cut at its deadline: a server frozen, an answer lost on the way) was
    spooled, and its replay recorded the visits a second time once the database answered
    again. The commit writes the node's live token with the visits; visits spooled from it
    carry the token, and their replay leaves them out when the database has it."""
    srv, tok = started(extra=STATUS % conftest.apxs("LIBEXECDIR")
                       + "QRTrackStatementTimeout 2\nQRTrackScanWait 2\n", loglevel="info")
    try:
        t = make_trackers(srv, tok, 1)[0]
        srv.sql(SLOW_COMMIT)

        def scan(ua):
            return requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                                headers={"User-Agent": ua}, timeout=30)

        def recorded(ua):
            return int(srv.sql("SELECT COUNT(*) FROM visits WHERE user_agent = '%s'"
                               % ua).strip())
        assert scan(UA % 1).status_code == 302
        assert recorded(UA % 1) == 1
        srv.sql("INSERT INTO qrt_test_slow VALUES (1)")
        sent = time.monotonic()
        r = scan(UA % 2)
        # the writer gave up on the commit at its deadline (QRTrackScanWait + 2.5 s; once
        # the COMMIT is sent, the scans wait for its outcome) and spooled the visit
        assert r.status_code == 302, r.text
        assert time.monotonic() - sent > 3, time.monotonic() - sent
        assert "QRT00040" in srv.error_log()
        # the slow commit ends (its trigger took the row away), the spool is replayed
        wait_until(lambda: srv.sql("SELECT COUNT(*) FROM qrt_test_slow").strip() == "0"
                   and qrtrack_status(srv)["QRTrackDatabaseReachable"] == "1"
                   and qrtrack_status(srv)["QRTrackSpoolVisits"] == "0",
                   timeout=60, interval=0.2, what="the slow commit's end and the replay")
        assert recorded(UA % 2) == 1
        assert scan(UA % 3).status_code == 302
        assert recorded(UA % 3) == 1
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 3
    finally:
        srv.cleanup()


def set_read_only(cluster, on):
    """The whole cluster read-only or not for every session (default_transaction_read_only,
    as a hot standby or an administrator's switch refuses writes), connections kept."""
    cluster.psql("postgres", "ALTER SYSTEM SET default_transaction_read_only = %s"
                 % ("on" if on else "off"), user="postgres")
    cluster.psql("postgres", "SELECT pg_reload_conf()", user="postgres")


@pgsql_only
def test_a_database_that_refuses_writes_keeps_scans_redirected_and_the_api_readable(
        own_cluster):
    """A database that answers reads but refuses writes (a hot standby a failover's address
    points at, default_transaction_read_only) while its connections stay, under two nodes:
    scans go on being redirected on both, their visits kept in each node's spool; the API
    reads, and its writes answer 503 with Retry-After (not 500); /api/health says scans are
    spooled; once the database takes writes again every redirected visit of both nodes is
    in it, once; the error log says it once, and the failures that repeat while it lasts
    rarely."""
    nodes = ()
    try:
        a, b, tok, codes = two_nodes_with_codes(4)
        nodes = (a, b)
        load = Scanner(list(nodes), codes)
        wait_until(lambda: load.count() > 50, timeout=20, interval=0.1,
                   what="scans before the switch")
        set_read_only(own_cluster, True)
        switched = time.monotonic()
        for n in nodes:
            wait_until(lambda: int(qrtrack_status(n)["QRTrackSpoolVisits"]) > 0, timeout=20,
                       interval=0.1, what="visits in the node's spool")
        # Scans while the database refuses writes, long enough for the replays that fail
        # every second to meet a throttle of 10 s twice.
        time.sleep(22)
        for n in nodes:
            with Api(n, tok) as s:
                r = s.get("/tracker")
                assert r.status_code == 200, r.text
                assert {t["code"] for t in r.json()["data"]} == set(codes)
                r = s.post("/tracker", json={"redirect_url": "https://example.com/new"})
                assert r.status_code == 503, r.text
                assert "read-only" in r.json()["message"], r.text
                assert int(r.headers["Retry-After"]) >= 1
                r = s.get("/health")
                assert r.status_code == 200, r.text
                assert r.json()["scans"] == "spooling" and r.json()["spooled"] > 0, r.text
            assert qrtrack_status(n)["QRTrackDatabaseReachable"] == "1"
        refused = time.monotonic()
        set_read_only(own_cluster, False)
        for n in nodes:
            wait_until(lambda: qrtrack_status(n)["QRTrackSpoolVisits"] == "0",
                       timeout=30, interval=0.1, what="the node's spool replayed")
        results = load.finish()
        # Every scan sent while the database refused writes was redirected (the
        # reload reaches the sessions within a moment of the switch).
        during = [r[3] for r in results if switched + 1 < r[5] < refused]
        assert len(during) > 50 and set(during) == {302}, sorted(set(during), key=str)
        assert {r[0] for r in results if switched + 1 < r[5] < refused} == {0, 1}
        assert all(r[3] == 302 for r in results), sorted({r[3] for r in results}, key=str)
        assert int(a.sql("SELECT COUNT(*) FROM visits").strip()) == len(results)
        for n in nodes:
            with Api(n, tok) as s:
                assert s.get("/health").json()["scans"] == "ok"
                r = s.post("/tracker", json={"redirect_url": "https://example.com/new"})
                assert r.status_code == 200, r.text
            log = n.error_log()
            assert "QRT00127" in log and "25006" in log, log[-3000:]
            # Said once a child; the replays' failures and the webhook worker's, which
            # repeat every second while it lasts, once per QRT_LOG_QUIET (5 minutes) a
            # child.
            assert log.count("QRT00127") <= 2, log.count("QRT00127")
            assert log.count("QRT00040") <= 3, log.count("QRT00040")
            assert log.count("QRT01034") <= 2, log.count("QRT01034")
            assert not n.crash_lines(), n.error_log()
    finally:
        set_read_only(own_cluster, False)
        for n in nodes:
            n.cleanup()


@pgsql_only
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_database_whose_disk_is_full_keeps_scans_redirected_until_it_has_room(own_cluster):
    """The visits' table on a tablespace whose disk fills (SQLSTATE 53100; the server's
    other files, its WAL included, have room): scans go on being redirected, their visits
    kept in the node's spool, and the API's other writes work; once the disk has room
    again the spool is replayed and every redirected visit is in the database, once."""
    mnt = os.path.join(own_cluster.dir, "small")
    if not Tmpfs.mount(mnt, 8):
        pytest.skip("this machine does not allow mounting a tmpfs")
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR"), loglevel="info")
    try:
        pw = pwd.getpwnam("postgres")
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        srv.admin("init")
        srv.account("acme")
        own_cluster.psql("postgres", "CREATE TABLESPACE small LOCATION '%s'" % mnt,
                         user="postgres")
        own_cluster.psql(srv.dbname, "ALTER TABLE visit_rows SET TABLESPACE small",
                         user="postgres")
        srv.start()
        tok = srv.token("acme")
        codes = [t["code"] for t in make_trackers(srv, tok, 4)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the node's snapshot of the codes")
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free_bytes(mnt) - 128 * 1024))
        load = Scanner([srv], codes)
        wait_until(lambda: int(qrtrack_status(srv)["QRTrackSpoolVisits"]) > 0, timeout=30,
                   interval=0.1, what="the disk to fill and visits to be spooled")
        full = time.monotonic()
        time.sleep(3)
        with Api(srv, tok) as s:
            r = s.post("/tracker", json={"redirect_url": "https://example.com/new"})
            assert r.status_code == 200, r.text
            assert s.get("/health").json()["scans"] == "spooling"
        freed = time.monotonic()
        os.unlink(filler)
        wait_until(lambda: qrtrack_status(srv)["QRTrackSpoolVisits"] == "0",
                   timeout=30, interval=0.1, what="the spool replayed")
        results = load.finish()
        during = [r[3] for r in results if full < r[5] < freed]
        assert len(during) > 50 and set(during) == {302}, sorted(set(during), key=str)
        assert all(r[3] == 302 for r in results), sorted({r[3] for r in results}, key=str)
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == len(results)
        log = srv.error_log()
        assert "QRT00127" in log and "53100" in log, log[-3000:]
        assert not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()
        Tmpfs.umount(mnt)


@pgsql_only
def test_connections_the_server_ends_while_idle_are_opened_again_without_an_outage(
        own_cluster):
    """A server that ends sessions idle past its idle_session_timeout (SQLSTATE 57P05, as
    administrators set to reap idle connections; a balancer that drops idle connections
    looks the same) is no outage: each scan after an idle spell is recorded and
    redirected (the writer commits on a new connection), API requests answer as usual,
    nothing is spooled, and the error log says nothing of it."""
    own_cluster.psql("postgres", "ALTER SYSTEM SET idle_session_timeout = '1500ms'",
                     user="postgres")
    own_cluster.psql("postgres", "SELECT pg_reload_conf()", user="postgres")
    srv = Server(extra=STATUS % conftest.apxs("LIBEXECDIR"), loglevel="info")
    try:
        srv.admin("init")
        srv.account("acme")
        srv.start()
        tok = srv.token("acme")
        codes = [t["code"] for t in make_trackers(srv, tok, 2)]
        scans = 0
        for spell in range(4):
            time.sleep(2.5)         # every connection idle past the timeout
            with Api(srv, tok) as s:
                for i in range(3):
                    r = s.get("/tracker")
                    assert r.status_code == 200, (spell, r.status_code, r.text)
                r = s.post("/tracker", json={"redirect_url": "https://example.com/%d" % spell})
                assert r.status_code == 200, (spell, r.status_code, r.text)
            for i in range(4):
                r = requests.get("%s/q/%s" % (srv.base, codes[i % 2]), allow_redirects=False,
                                 headers={"User-Agent": UA % i}, timeout=30)
                assert r.status_code == 302, (spell, i, r.status_code, r.text)
                scans += 1
        status = qrtrack_status(srv)
        assert status["QRTrackSpoolVisitsTotal"] == "0", status
        assert status["QRTrackDatabaseReachable"] == "1", status
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == scans
        log = srv.error_log()
        for line in ("QRT00104", "QRT00040", "QRT00093", "QRT00020"):
            assert line not in log, log[-3000:]
        assert "57P05" in log       # (the writer's new connection, at level info)
        assert not error_lines(srv), error_lines(srv)
    finally:
        srv.cleanup()


def test_damaged_spool_and_snapshot_files_are_set_aside_and_made_anew():
    """A node's spool or snapshot damaged by a disk's or a copy's fault (not an SQLite file
    at all; a file whose pages are garbage) does not keep httpd from starting: each is moved
    aside (kept, for a look or sqlite3's .recover), made anew, private as before, the
    snapshot filled again from the database; scans go on; the error log names both."""
    srv, tok = started(extra=STATUS % conftest.apxs("LIBEXECDIR"))
    try:
        codes = [t["code"] for t in make_trackers(srv, tok, 2)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the snapshot of the codes")
        srv.stop()
        spool = os.path.join(srv.dir, "qrtrack-spool.db")
        snap = os.path.join(srv.dir, "qrtrack-snapshot.db")
        with open(spool, "r+b") as f:
            f.write(b"not a database! " * 64)
        with open(snap, "r+b") as f:
            f.seek(100)         # the header kept, the schema's page garbage
            f.write(b"\xa5" * 3996)
        srv.start()
        for i in range(4):
            r = requests.get("%s/q/%s" % (srv.base, codes[i % 2]), allow_redirects=False,
                             timeout=30)
            assert r.status_code == 302, r.text
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the new snapshot filled again")
        log = srv.error_log()
        assert log.count("QRT00129") >= 2, log[-3000:]
        assert "the spool is damaged" in log and "the snapshot is damaged" in log, log[-3000:]
        for path, head in ((spool, b"not a database! "), (snap, b"SQLite format 3\0")):
            aside = [n for n in os.listdir(srv.dir)
                     if n.startswith(os.path.basename(path) + ".damaged-")
                     and not n.endswith(("-wal", "-shm"))]
            assert len(aside) == 1, os.listdir(srv.dir)
            with open(os.path.join(srv.dir, aside[0]), "rb") as f:
                assert f.read(16) == head
            st = os.stat(path)
            assert stat.S_IMODE(st.st_mode) == 0o640, (path, oct(st.st_mode))
        with Api(srv, tok) as s:
            assert s.get("/health").json()["scans"] == "ok"
        assert not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()


@pgsql_only
def test_each_node_sets_aside_the_visits_the_database_refuses_and_replays_the_rest():
    """Two nodes spool while a lock is held elsewhere, and the database then refuses one
    tracker's visits for good: each node replays its other visits, before and behind
    the refused ones, sets its own refused visits aside in its own spool, and puts them
    back with `qrtrack-admin spool retry` once the cause is mended; every visit is
    recorded once."""
    a, b, tok = two_nodes("QRTrackScanWait 2\n")
    try:
        with Api(a, tok) as s:
            good = s.post("/tracker", json={"redirect_url": "https://example.com/g"}).json()
            bad = s.post("/tracker", json={"redirect_url": "https://example.com/b"}).json()

        def count(t):
            return int(a.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                             % t["tracker_id"]).strip())

        def scan(node, t):
            r = requests.get("%s/q/%s" % (node.base, t["code"]), allow_redirects=False,
                             timeout=30)
            assert r.status_code == 302, (r.status_code, r.text)

        for node in (a, b):
            for t in (good, bad):
                scan(node, t)
        lock = RefusingLock(a, bad["tracker_id"])
        try:
            for node in (a, b):
                for t in (good, bad, good):
                    scan(node, t)
            for node in (a, b):
                assert qrtrack_status(node)["QRTrackSpoolVisits"] == "3"
        finally:
            lock.release()
        for node in (a, b):
            wait_until(lambda: qrtrack_status(node)["QRTrackSpoolVisits"] == "0", timeout=30,
                       interval=0.2, what="the node's spool replayed past its refused visit")
            assert qrtrack_status(node)["QRTrackSpoolRefused"] == "1"
        assert count(good) == 6 and count(bad) == 2, (count(good), count(bad))
        a.sql("DROP TRIGGER refuse_tracker ON visit_rows")
        for node in (a, b):
            spool = os.path.join(node.dir, "qrtrack-spool.db")
            out = [json.loads(l) for l in node.admin("spool", "refused", spool).stdout
                                                                       .splitlines()]
            assert [v["tracker_id"] for v in out] == [bad["tracker_id"]], out
            assert node.admin("spool", "retry", spool).stdout.startswith("1 visits back")
        wait_until(lambda: count(bad) == 4, timeout=30, interval=0.2,
                   what="both nodes' visits put back recorded")
        assert count(good) == 6
        for node in (a, b):
            assert not node.crash_lines(), node.error_log()
    finally:
        for srv in (b, a):
            srv.cleanup()
