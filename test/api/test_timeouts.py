"""QRTrackStatementTimeout: an API statement that meets a lock held elsewhere, or
runs long, ends within the timeout and the request answers 503 with Retry-After and
a JSON body; once the lock goes the same requests answer 200. A database that
refuses connections for lack of slots is named as such in the error log, with the
pool formula, at most every 10 s a child."""
import base64
import concurrent.futures
import re
import signal
import socket
import subprocess
import time

import pytest
import requests

from conftest import BACKEND, Api, PgCluster, Server, configtest, pg_cluster, start_server
from lib.env import PSQL, sqlite_only
from lib.png import logo_png
from lib.visits import T0, import_visits, new_tracker, visit
from lib.wait import wait_until

UA = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
      "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1")
TIMEOUT = 2
# The timeout, plus what a loaded 2-core machine adds to a request.
MARGIN = 3.0


def pgsql_only(why):
    return pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL only: " + why)


def with_visits(srv, api):
    """A tracker tagged for the crosstab, with a few scans and clicks."""
    t = api.post("/tracker", json={"redirect_url": "https://example.com/t",
                                   "tags": ["a:1", "b:2"]}).json()
    for path in ("q", "q", "l"):
        r = requests.get("%s/%s/%s" % (srv.base, path, t["code"]),
                         headers={"User-Agent": UA}, allow_redirects=False, timeout=30)
        assert r.status_code == 302
    return t


def endpoints(t):
    return [("/report", {"report": "name"}),
            ("/report", {"report": "date"}),
            ("/report/tag-crosstab", {"row": "a", "col": "b"}),
            ("/dashboard/scansAnalytics", {}),
            ("/visits/tracker/%d" % t["tracker_id"], {})]


def assert_timed_out(api, path, params):
    started = time.monotonic()
    r = api.get(path, params=params)
    took = time.monotonic() - started
    assert r.status_code == 503, (path, r.status_code, r.text)
    assert took < TIMEOUT + MARGIN, (path, took)
    assert r.headers.get("Retry-After") == "5", (path, r.headers)
    assert r.headers["Content-Type"].startswith("application/json")
    assert "in time" in r.json()["message"], r.json()
    return took


def all_at_once(fn, calls):
    """fn(call) for every call, each on a thread of its own: requests that each wait out
    the timeout on their own take one timeout together, not one each. The results."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(fn, calls))


def assert_answers_again(api, t):
    for path, params in endpoints(t):
        wait_until(lambda: api.get(path, params=params).status_code == 200, timeout=15,
                   what="%s to answer 200 after the lock" % path)


class PgLock:
    """A psql session that holds ACCESS EXCLUSIVE locks on tables until release():
    its transaction stays open as long as its standard input does."""

    def __init__(self, srv, tables):
        pg = pg_cluster()
        self.proc = subprocess.Popen(
            [PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(pg.port), "-U", pg.user, "-d", srv.dbname],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.proc.stdin.write("BEGIN;\nLOCK TABLE %s IN ACCESS EXCLUSIVE MODE;\n"
                              % ", ".join(tables))
        self.proc.stdin.flush()
        query = ("SELECT COUNT(*) FROM pg_locks l JOIN pg_class c ON l.relation = c.oid "
                 "WHERE l.mode = 'AccessExclusiveLock' AND l.granted "
                 "AND l.database = (SELECT oid FROM pg_database "
                 "WHERE datname = current_database()) AND c.relname IN (%s)"
                 % ", ".join("'%s'" % t for t in tables))
        wait_until(lambda: self.proc.poll() is None
                   and int(pg.psql(srv.dbname, query).strip()) == len(tables),
                   timeout=30, what="the locks to be granted")

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("COMMIT;\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pgsql_only("PostgreSQL's statement_timeout and lock_timeout; SQLite's own lock "
            "is tested below")
def test_reports_and_visits_under_a_table_lock_answer_503_within_the_timeout():
    srv = start_server(extra="QRTrackStatementTimeout %d\n" % TIMEOUT,
                       accounts=[("acme", "professional")])
    lock = None
    try:
        with Api(srv, srv.token("acme")) as api:
            t = with_visits(srv, api)
            # Each child's pooled connections opened and prepared before the lock.
            for _ in range(4):
                for path, params in endpoints(t):
                    assert api.get(path, params=params).status_code == 200, path
            # What the reports and the visits read: the aggregates, the visits and
            # their dictionaries; not the accounts, tokens and trackers.
            tables = [l for l in pg_cluster().psql(
                srv.dbname, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND (tablename LIKE 'agg%' OR tablename LIKE 'visit%' "
                "OR tablename LIKE 'tracker_visitors%') ORDER BY 1").split()]
            assert "visit_rows" in tables and "agg_blob" in tables, tables
            lock = PgLock(srv, tables)

            def timed_out(call):
                with Api(srv, api.token) as own:
                    return assert_timed_out(own, *call)
            all_at_once(timed_out, endpoints(t))
            lock.release()
            lock = None
            assert_answers_again(api, t)
        log = srv.error_log()
        assert "QRT00090" in log and "QRTrackStatementTimeout %d s" % TIMEOUT in log, \
            log[-3000:]
        # at most a line every 10 s a child (two children), whatever the requests
        assert len(re.findall("QRT00090", log)) <= 4, log[-3000:]
        assert "QRT00020" not in log, log[-3000:]
    finally:
        if lock:
            lock.release()
        srv.cleanup()


@pgsql_only("a PostgreSQL session setting")
def test_the_timeout_is_set_once_a_connection_on_postgresql():
    """Not a round trip a request: the server's statements, logged by PostgreSQL,
    set statement_timeout once for each pooled connection (DBDMax 1, two children)."""
    pg = pg_cluster()
    srv = Server(extra="QRTrackStatementTimeout 7\nDBDMin 1\nDBDKeep 1\nDBDMax 1\n")
    try:
        pg.psql("postgres", "ALTER DATABASE %s SET log_statement = 'all'" % srv.dbname,
                user="postgres")
        srv.admin("init")
        srv.account("acme")
        srv.start()
        with Api(srv, srv.token("acme")) as api:
            for _ in range(20):
                assert api.get("/tracker").status_code == 200
        sets = pg.logtext().count("SET statement_timeout = 7000; SET lock_timeout = 7000")
        assert 1 <= sets <= 2, sets
        assert "QRT00093" not in srv.error_log()
    finally:
        srv.cleanup()


def lock_from_outside(srv):
    """sqlite3 holding the database's write lock (BEGIN IMMEDIATE) until it is told to
    COMMIT; run as the server's User, so that no file of the database changes owner."""
    locker = subprocess.Popen(srv.as_user + ["sqlite3", srv.db], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    locker.stdin.write(".timeout 10000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n")
    locker.stdin.flush()
    assert locker.stdout.readline().strip() == "locked", locker.stderr.read()
    return locker


@sqlite_only("apr_dbd_sqlite3's mutex of the whole process")
def test_writes_of_one_child_queued_behind_a_lock_all_go_on_once_it_goes():
    """Many API writes of one child wait for SQLite's lock, held from another program
    (tracker creates, and a style whose logo apr_dbd binds).
    Once it goes, each gets it in turn and all answer 200 within a few seconds. A
    write whose wait for the lock were made inside apr_dbd_sqlite3, which holds one
    mutex of the whole process while a statement waits, would keep the writer that
    has the lock from running its next statement until the wait's timeout (here a
    minute): the requests would hang that long."""
    srv = start_server(extra="QRTrackStatementTimeout 60\nStartServers 1\nServerLimit 1\n"
                             "MaxRequestWorkers 25\n", accounts=[("acme", "professional")])
    locker = None
    try:
        token = srv.token("acme")
        locker = lock_from_outside(srv)

        def create(i):
            started = time.monotonic()
            with Api(srv, token) as api:
                r = api.post("/tracker", json={"redirect_url": "https://example.com/%d" % (i % 4)},
                             headers={"Idempotency-Key": "queued-%d" % (i % 4)}, timeout=40)
            return r.status_code, time.monotonic() - started

        def style():
            # (its logo is a blob: the one kind of value SQLite's native path leaves to
            # apr_dbd; its own transaction waits for the lock outside apr_dbd's mutex)
            started = time.monotonic()
            with Api(srv, token) as api:
                r = api.post("/style", json={"name": "queued", "logo":
                                             base64.b64encode(logo_png()).decode()},
                             timeout=40)
            return r.status_code - 1, time.monotonic() - started   # 201 -> 200

        with concurrent.futures.ThreadPoolExecutor(13) as pool:
            futures = [pool.submit(style)] + [pool.submit(create, i) for i in range(12)]
            time.sleep(1.5)
            locker.stdin.write("COMMIT;\n.quit\n")
            locker.stdin.close()
            locker.wait(timeout=30)
            locker = None
            got = [f.result() for f in futures]
        assert all(code == 200 for code, _ in got), got
        assert max(took for _, took in got) < 1.5 + 2 * MARGIN, got
        assert int(srv.sql("SELECT COUNT(*) FROM styles WHERE logo IS NOT NULL")) == 1
        # One tracker for each key: the requests that shared one got its answer.
        assert int(srv.sql("SELECT COUNT(*) FROM trackers")) == 4
    finally:
        if locker and locker.poll() is None:
            locker.kill()
            locker.wait()
        srv.cleanup()


@sqlite_only("SQLite's write lock; PostgreSQL's table locks are tested above")
def test_writes_on_a_sqlite_database_locked_from_outside_answer_503_within_the_timeout():
    """A writer holding SQLite's lock from another program: the API's writes wait
    QRTrackStatementTimeout (and apr_dbd's own 16 retries, 100 ms apart, at most),
    then answer 503; its reads go on (WAL: readers never wait for the writer); once
    the lock goes, writes succeed again."""
    srv = start_server(extra="QRTrackStatementTimeout %d\n" % TIMEOUT,
                       accounts=[("acme", "professional")])
    locker = None
    try:
        with Api(srv, srv.token("acme")) as api:
            t = with_visits(srv, api)
            locker = lock_from_outside(srv)
            writes = [("post", "/tracker", {"json": {"redirect_url": "https://example.com/w"}}),
                      ("patch", "/tracker/%d" % t["tracker_id"], {"json": {"name": "w"}}),
                      ("delete", "/tracker/%d" % t["tracker_id"], {})]

            def timed_out(write):
                method, path, kw = write
                with Api(srv, api.token) as own:
                    started = time.monotonic()
                    r = getattr(own, method)(path, **kw)
                    took = time.monotonic() - started
                assert r.status_code == 503, (method, path, r.status_code, r.text)
                assert TIMEOUT - 0.1 < took < TIMEOUT + 1.6 + MARGIN, (method, path, took)
                assert r.headers.get("Retry-After") == "5"
                assert "in time" in r.json()["message"], r.json()
            all_at_once(timed_out, writes)
            for path, params in endpoints(t):
                started = time.monotonic()
                assert api.get(path, params=params).status_code == 200, path
                assert time.monotonic() - started < MARGIN, path
            locker.stdin.write("COMMIT;\n.quit\n")
            locker.stdin.close()
            locker.wait(timeout=30)
            locker = None
            assert api.patch("/tracker/%d" % t["tracker_id"],
                             json={"name": "w"}).status_code == 200
            assert_answers_again(api, t)
        log = srv.error_log()
        assert "QRT00090" in log and "database is locked" in log, log[-3000:]
    finally:
        if locker and locker.poll() is None:
            locker.kill()
            locker.wait()
        srv.cleanup()


def test_the_directive_is_checked():
    rc, out = configtest("QRTrackStatementTimeout 3601\n")
    assert rc != 0 and "QRTrackStatementTimeout" in out and "0 to 3600" in out, out
    rc, out = configtest("QRTrackStatementTimeout 0\n")
    assert rc == 0, out


class SmallCluster:
    """A PostgreSQL cluster of its own with few connection slots, and sleeping psql
    sessions that take the slots left (stopped by PID)."""

    def __init__(self, max_connections):
        self.pg = PgCluster()
        self.pg.psql("postgres", "ALTER SYSTEM SET max_connections = %d" % max_connections,
                     user="postgres")
        self.pg.halt()
        self.pg.start()
        self.sleepers = []

    def fill(self, dbname):
        """Opens sessions until PostgreSQL refuses two in a row, half a second apart
        (a session that just ended may still hold its slot for a moment); the
        message. A session still there after a second is taken as running (asking
        PostgreSQL would take a slot itself)."""
        refusals = 0
        for _ in range(50):
            p = subprocess.Popen([PSQL, "-X", "-q", "-h", "127.0.0.1",
                                  "-p", str(self.pg.port), "-U", self.pg.user, "-d", dbname,
                                  "-c", "SELECT pg_sleep(600)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                p.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self.sleepers.append(p)
                refusals = 0
                continue
            refusals += 1
            if refusals == 2:
                return p.stderr.read()
            # The second refusal must come a while after the first: that spacing is the check.
            time.sleep(0.5)
        raise AssertionError("PostgreSQL never refused a session")

    def stop(self):
        for p in self.sleepers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
        self.pg.stop()


@pgsql_only("PostgreSQL's max_connections")
def test_no_connection_slot_left_is_named_in_the_log_with_the_pool_formula():
    # (room for each child's threads' connections, its probe's among them, and the first
    # request's; fill() then takes the rest)
    small = SmallCluster(10)
    srv = None
    try:
        name, params = small.pg.new_database()
        # (the library keeps the connection that made the database: it would hold one of
        # the few slots the server's threads and the first request need)
        small.pg.forget()
        # A server of the session's kind, pointed at the small cluster; a new
        # connection for every request (DBDPersist Off) so that each meets the limit.
        srv = Server(extra="DBDPersist Off\n", backend="pgsql")
        with open(srv.conf) as f:
            conf = f.read().replace(srv.db, params)
        with open(srv.conf, "w") as f:
            f.write(conf)
        srv.db, srv.dbname = params, name
        srv.admin("init")
        srv.account("acme")
        token = srv.token("acme")
        srv.start()
        with Api(srv, token) as api:
            assert api.get("/account").status_code == 200
            refused = small.fill(name)
            assert "remaining connection slots are reserved" in refused \
                or "too many clients" in refused, refused
            for _ in range(30):
                r = api.get("/account")
                assert r.status_code == 503, r.text
                assert r.headers.get("Retry-After") == "5"
                assert r.json()["message"] == "Database unavailable."
        log = srv.error_log()
        # the API's line, or the writer's when it met the refusal first (the API then
        # answers 503 without asking mod_dbd): either names the formula
        lines = [l for l in log.splitlines()
                 if "QRT00091" in l or ("QRT00104" in l and "max_connections" in l)]
        assert lines, log[-3000:]
        assert "max_connections" in lines[0] and "superuser_reserved_connections" in lines[0] \
            and "DBDMax" in lines[0], lines[0]
        assert "DBDParams and the file's owner" not in log
        # 30 requests, two children: a line every 10 s a child at most
        assert len(lines) <= 4, lines
    finally:
        if srv:
            srv.cleanup()
        small.stop()


def test_exports_that_hold_every_pooled_connection_leave_scans_and_health_checks_alone():
    """Clients that start CSV exports and read nothing keep them streaming, each on one
    of its child's mod_dbd connections, for as long as they like: with all of them
    held, a scan of a code the child has not looked up yet and GET /api/health are
    answered at once all the same (the child's own lookup connection)."""
    srv = start_server(extra="DBDMax 3\nQRTrackRateLimit 0\n",
                       accounts=[("acme", "professional")])
    socks = []
    try:
        tok = srv.token("acme")
        with Api(srv, tok) as a:
            big = new_tracker(a)
            fresh = [new_tracker(a)["code"] for _ in range(6)]
        # Exports of some 40 MB each: more than the sockets' buffers hold.
        long_ref = "https://ref.example/" + "r" * 300
        import_visits(srv, [visit(big["tracker_id"], T0 + i, referer=long_ref + str(i))
                            for i in range(100000)])
        request = ("GET /api/visits/tracker/%d/download/csv HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % (big["tracker_id"], tok)).encode()
        for _ in range(16):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(request)
            socks.append(s)
        # The pools are held: an API request that needs a connection waits.
        def held():
            try:
                requests.get(srv.api_base + "/account", timeout=1.5,
                             headers={"Authorization": "Bearer " + tok})
            except requests.Timeout:
                return True
            return False
        wait_until(held, timeout=30, what="the pools held by the exports")
        for code in fresh:
            started = time.monotonic()
            r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30)
            took = time.monotonic() - started
            assert r.status_code == 302 and took < 1.0, (r.status_code, took)
            started = time.monotonic()
            r = requests.get(srv.api_base + "/health", timeout=30)
            took = time.monotonic() - started
            assert r.status_code == 200 and r.json()["database"] == "ok" and took < 1.0, \
                (r.text, took)
        assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id <> %d"
                           % big["tracker_id"]).strip()) == len(fresh)
    finally:
        for s in socks:
            s.close()
        srv.cleanup()
