"""Faults under load cost nothing acknowledged and end on their own: every 302 has its
visit, and the service comes back without a restart."""
import collections
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import BACKEND, Api, Server, apxs, start_server
from lib import webhooks as wh
from lib.disk import Tmpfs, free_bytes
from lib.load import Load
from lib.outside import OutsideLock
from lib.refuse import RefusingLock
from lib.server import qrtrack_status
from lib.wait import sample, wait_until

STATUS = "LoadModule status_module %s/mod_status.so\n<Location /server-status>\n" \
         "    SetHandler server-status\n</Location>\n"


def test_kill_9_of_the_committing_child_is_taken_over_in_well_under_a_second():
    srv = start_server(extra=STATUS % apxs("LIBEXECDIR"), accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/k"}).json()
        load = Load(srv, t["code"])
        load.wait_for(302, 30, n=20, what="scans before the kill")
        committer = wait_until(lambda: int(qrtrack_status(srv)["QRTrackCommitter"]),
                               timeout=30, what="a committing child")
        killed = time.monotonic()
        os.kill(committer, signal.SIGKILL)
        load.wait_for(302, 30, n=20, since=killed, what="scans answered after the kill")
        results = load.finish()
        # The first scan started after the kill that got its 302: how long it took.
        after = sorted(end for start, end, code in results if start >= killed and code == 302)
        assert after, "no scan answered 302 after the kill"
        assert after[0] - killed < 1.0, after[0] - killed
        # Nothing acknowledged is lost: every 302 has its visit (the dead child's last
        # batch, answered 503 or cut, may or may not have been committed).
        ok = sum(1 for _, _, code in results if code == 302)
        other = len(results) - ok
        recorded = int(srv.sql("SELECT COUNT(*) FROM visits").strip())
        assert ok <= recorded <= ok + other, (ok, other, recorded)
        assert set(code for _, _, code in results) <= {302, 503, None}
        log = srv.error_log()
        assert "QRT00056" in log and "(gone)" in log
    finally:
        srv.cleanup()


def test_a_database_locked_from_outside_keeps_scans_redirected_and_records_them_after():
    """Another program holds the database's write lock (an administrator's open
    transaction, VACUUM FULL, CREATE INDEX): scans wait at most QRTrackScanWait, then
    their visits go to the spool and they are redirected; later scans go straight to
    the spool without waiting for the lock, nor for the webhook worker's transactions
    (on SQLite they take the scan writers' mutex); the API keeps answering; once the
    lock goes, the spool is replayed and every redirected scan has its visit, once,
    and its webhook event, delivered."""
    rec = wh.Receiver()
    srv = start_server(extra="QRTrackScanWait 2\nQRTrackWebhookAllow 127.0.0.1/32\n",
                       accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/l"}).json()
            hook = a.post("/webhook", json={"url": rec.url("/lock"),
                                            "events": ["scan.created"]}).json()
            load = Load(srv, t["code"])
            load.wait_for(302, 30, n=10, what="scans before the lock")
            # Long enough for the first batch's wait and several replays meeting the lock.
            lock = OutsideLock(srv, 10)
            locked = lock.held
            # The API is asked while scans are spooled (the first batch has waited for
            # the lock and gone to the spool by then).
            load.wait_for(302, 9, n=20, since=locked + 2.5,
                          what="scans redirected while the lock is held")
            health = a.get("/health").json()
            started = time.monotonic()
            r = a.get("/tracker")
            api_time = time.monotonic() - started
            assert r.status_code == 200
            lock.wait()
            released = time.monotonic()
            load.wait_for(302, 30, n=20, since=released + 0.5,
                          what="scans after the lock")
            results = load.finish()
            wait_until(lambda: a.get("/health").json()["spooled"] == 0, timeout=30,
                       what="the spool replayed after the lock")
        assert health["scans"] == "spooling" and health["spooled"] > 0, health
        assert api_time < 2.0, api_time
        codes = [code for _, _, code in results]
        # On failure: per half second after the lock, the answers of the scans that
        # started then, and their longest wait.
        timeline = {}
        for start, end, code in results:
            b = timeline.setdefault(int((start - locked) * 2) / 2, [0, 0, 0.0])
            b[0 if code == 302 else 1] += 1
            b[2] = max(b[2], round(end - start, 2))
        explain = (sorted((k, v) for k, v in timeline.items() if -1 <= k <= 12),
                   srv.error_log()[-3000:])
        assert set(codes) == {302}, explain

        assert max(end - start for start, end, _ in results) < 2 + 1, explain
        # Once the first batch is in the spool, scans no longer wait for the lock.
        spooled = sorted(end - start for start, end, _ in results
                         if locked + 2.5 < start and end < released)
        assert len(spooled) >= 20 and spooled[len(spooled) // 2] < 0.5, explain
        # Exact: every redirected scan was recorded, once.
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == len(codes)
        with Api(srv, srv.token("acme")) as a:
            assert a.get("/tracker/show/%d" % t["tracker_id"]).json()["totalScans"] == len(codes)
        log = srv.error_log()
        assert "QRT00130" in log, log[-3000:]
        wait_until(lambda: sorted(set(e[0] for e in wh.events(srv, hook["id"]).values()))
                   == [wh.DELIVERED] and len(wh.events(srv, hook["id"])) == len(codes),
                   timeout=60, what=lambda: "every scan's event delivered (%d scans): %r"
                   % (len(codes), collections.Counter(
                       e[0] for e in wh.events(srv, hook["id"]).values())))
    finally:
        srv.cleanup()
        rec.stop()


def test_a_slow_clients_scan_queued_behind_a_batch_waiting_for_a_lock_is_spooled_in_time():
    """A scan's QRTrackScanWait runs from its request line. A client whose headers came
    late is queued with less time left than the batch before it, which waits for a lock
    held elsewhere: the writer gives the wait up in time for that scan too, and both
    are spooled and redirected, then recorded once the lock goes."""
    srv = start_server(extra="QRTrackScanWait 2\n", accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/s"}).json()
        url = "%s/q/%s" % (srv.base, t["code"])
        # (the code cached, the writer connected)
        assert requests.get(url, allow_redirects=False).status_code == 302
        lock = OutsideLock(srv, 6)
        slow = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        slow.sendall(("GET /q/%s HTTP/1.1\r\n" % t["code"]).encode())
        line_sent = time.monotonic()
        time.sleep(0.7)
        first = {}

        def scan():
            started = time.monotonic()
            first["code"] = requests.get(url, allow_redirects=False, timeout=30).status_code
            first["took"] = time.monotonic() - started

        # Its batch waits for the lock until just before its own deadline, 2 s away.
        thread = threading.Thread(target=scan)
        thread.start()
        time.sleep(0.3)
        # Queued now, 1 s after its request line: 1 s left, less than the batch's.
        slow.sendall(b"Host: example.com\r\nConnection: close\r\n\r\n")
        answer = slow.makefile("rb").readline()
        slow_took = time.monotonic() - line_sent
        slow.close()
        thread.join(30)
        assert answer.split()[1] == b"302", (answer, slow_took, srv.error_log()[-3000:])
        assert first["code"] == 302, (first, srv.error_log()[-3000:])
        assert slow_took < 2 + 0.5, slow_took
        lock.wait()
        with Api(srv, srv.token("acme")) as a:
            wait_until(lambda: a.get("/health").json()["spooled"] == 0, timeout=30,
                       what="the spool replayed after the lock")
            assert a.get("/tracker/show/%d" % t["tracker_id"]).json()["totalScans"] == 3
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 3
    finally:
        srv.cleanup()


def test_immediate_stops_under_scans_crash_nothing_and_lose_nothing_acknowledged():
    """apachectl stop (SIGTERM to the parent) while scans wait for their commit, ten
    times: no crash line, and every 302 sent has its visit."""
    for i in range(10):
        srv = start_server(accounts=[("acme", "professional")])
        try:
            with Api(srv, srv.token("acme")) as a:
                t = a.post("/tracker", json={"redirect_url": "https://example.com/t"}).json()
            load = Load(srv, t["code"], threads=12)
            # The stop comes while scans flow (their first 302 seen: a cold start on a
            # busy machine may take longer than a fixed pause), at ten different moments.
            load.wait_for(302, 15, what="a scan answered (round %d)" % i)
            # The stop's moment, a little later each round, is what varies.
            time.sleep(0.2 + 0.1 * i)
            srv.proc.send_signal(signal.SIGTERM)
            srv.proc.wait(timeout=30)
            results = load.finish()
            ok = sum(1 for _, _, code in results if code == 302)
            assert ok > 0
            recorded = int(srv.sql("SELECT COUNT(*) FROM visits").strip())
            assert ok <= recorded, (i, ok, recorded)
            assert not srv.crash_lines(), srv.error_log()
        finally:
            srv.cleanup()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_answers_503_and_service_returns_under_load_once_space_is_freed():
    """SQLite on a 16 MB tmpfs, filled by a file: scans answer 503 (unrecorded) while the
    disk is full; once the file goes, under the same continuing load, scans are recorded
    again and stay so (the WAL is kept small: it never refills the disk); the error log
    says so once per interval, not per batch."""
    if BACKEND != "sqlite":
        pytest.skip("a full disk under SQLite's own files (PostgreSQL's is the server's)")
    srv = Server()
    mnt = os.path.join(srv.dir, "disk")
    if not Tmpfs.mount(mnt, 16):
        shutil.rmtree(srv.dir, ignore_errors=True)
        pytest.skip("this machine does not allow mounting a tmpfs")
    try:
        os.chown(mnt, pwd.getpwnam("www-data").pw_uid, pwd.getpwnam("www-data").pw_gid)
        db = os.path.join(mnt, "qrtrack.db")
        with open(srv.conf) as f:
            conf = f.read().replace(srv.db, db)
        with open(srv.conf, "w") as f:
            f.write(conf + "LoadModule status_module %s/mod_status.so\n"
                    "<Location /server-status>\n    SetHandler server-status\n"
                    "</Location>\n" % apxs("LIBEXECDIR"))
        srv.db = db
        srv.admin("init")
        srv.account("acme", "professional")
        srv.start()
        tok = srv.token("acme")
        with Api(srv, tok) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/f"}).json()
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free_bytes(mnt) - 256 * 1024))
        load = Load(srv, t["code"], threads=8)
        load.wait_for(503, 30, what="a scan to meet the full disk")
        # The API's writes: 503 and Retry-After, not a 500. (A commit may still fit in the
        # blocks the WAL already has for a while after the disk has filled: the writes
        # are tried until one meets the full disk, and each answer is 200 or 503.)
        with Api(srv, tok) as a:
            def refused():
                r = a.post("/tracker", json={"redirect_url": "https://example.com/g",
                                             "name": "x" * 200,
                                             "tags": ["t%d" % i for i in range(20)]})
                assert r.status_code in (200, 503), r.text
                return [r] if r.status_code == 503 else None
            r = wait_until(refused, timeout=20, interval=0.2, what="the API's 503")[0]
        assert int(r.headers["Retry-After"]) >= 1
        # The disk stays full a moment longer under the load: a window, not a wait.
        time.sleep(1.0)
        full_end = time.monotonic()
        os.unlink(filler)
        freed = time.monotonic()
        def wal_size():
            try:
                return os.path.getsize(db + "-wal")
            except FileNotFoundError:
                return 0
        # The WAL's largest size over 10 s of the continuing load.
        wal_max = max(sample(wal_size, 10.0))
        results = load.finish()
        codes = [code for _, _, code in results]
        assert set(codes) <= {302, 503}, set(codes)
        during = [code for start, end, code in results if end < full_end]
        assert 503 in during, "the disk never filled"
        # Back under the same load: the last 5 s are (nearly) all recorded.
        late = [code for start, _, code in results if start > freed + 5.0]
        assert late and late.count(302) >= 0.95 * len(late), (late.count(302), len(late))
        print("full disk: %d scans, %d recorded, WAL at most %d bytes" % (len(codes), codes.count(302), wal_max))
        assert wal_max < 8 * 1024 * 1024, wal_max
        # Exact: every 302 recorded, no 503 recorded.
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == codes.count(302)
        log = srv.error_log()
        assert "QRT00040" in log
        # Once per 10 s per child (two children, ~15 s): not once per failed batch.
        assert log.count("QRT00040") <= 8, log.count("QRT00040")
        assert log.count("QRT00050") <= 8, log.count("QRT00050")
    finally:
        srv.cleanup()
        Tmpfs.umount(mnt)
        shutil.rmtree(srv.dir, ignore_errors=True)


def test_a_spooled_visit_the_database_refuses_is_set_aside_and_the_spool_goes_on():
    """Visits spooled while a lock was held elsewhere, one of which the database then
    refuses for good (a constraint on its tracker's rows): the others, before and behind
    it, are replayed; the refused one is set aside in the node's spool, said in the error
    log and counted by mod_status, and listed by `qrtrack-admin spool refused`; one kept
    past QRTrackVisitRetention is deleted; once the constraint is gone, `spool retry`
    puts the other back and the running server records it, once. Before, it was tried every second for ever and held every visit behind it."""
    srv = start_server(extra="QRTrackScanWait 2\nQRTrackVisitRetention 30\n"
                       + wh.STATUS_CONF % apxs("LIBEXECDIR"), accounts=[("acme", "professional")])
    spool = os.path.join(srv.dir, "qrtrack-spool.db")
    try:
        with Api(srv, srv.token("acme")) as a:
            good = a.post("/tracker", json={"redirect_url": "https://example.com/g"}).json()
            bad = a.post("/tracker", json={"redirect_url": "https://example.com/b"}).json()

            def scan(t):
                r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                                 headers={"User-Agent": "Mozilla/5.0 (iPhone)"}, timeout=30)
                assert r.status_code == 302, (r.status_code, r.text)

            def count(t):
                return int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                                   % t["tracker_id"]).strip())

            scan(good)
            scan(bad)
            lock = RefusingLock(srv, bad["tracker_id"])
            try:
                # The first waits for the lock, then goes to the spool; the rest behind it.
                for t in (good, good, bad, good, bad, good):
                    scan(t)
                assert qrtrack_status(srv)["QRTrackSpoolVisits"] == "6"
            finally:
                lock.release()
            wait_until(lambda: qrtrack_status(srv)["QRTrackSpoolVisits"] == "0", timeout=30,
                       interval=0.2, what="the spool replayed past the refused visit")
            assert count(good) == 5 and count(bad) == 1, (count(good), count(bad))
            assert qrtrack_status(srv)["QRTrackSpoolRefused"] == "2"
            assert a.get("/health").json()["scans"] == "ok"
            log = srv.error_log()
            # Rationed: a rule that refuses many visits does not flood the log.
            assert log.count("QRT00139") == 1, log[-3000:]
            assert "tracker %d" % bad["tracker_id"] in log
            out = [json.loads(l) for l in srv.admin("spool", "refused", spool).stdout.splitlines()]
            assert len(out) == 2 and out[0]["seq"] < out[1]["seq"], out
            for v in out:
                assert v["tracker_id"] == bad["tracker_id"] and v["source"] == "scan"
                assert v["user_agent"] == "Mozilla/5.0 (iPhone)" and v["bot"] is False
                assert "constraint" in v["error"] or "23514" in v["error"], v["error"]
            # One kept past QRTrackVisitRetention (it holds its visitor's details): deleted.
            subprocess.run(srv.as_user + ["sqlite3", "-cmd", ".timeout 10000", spool,
                                          "UPDATE refused SET at = at - 31 * 86400 WHERE seq = "
                                          "(SELECT MIN(seq) FROM refused)"], check=True)
            wait_until(lambda: qrtrack_status(srv)["QRTrackSpoolRefused"] == "1", timeout=30,
                       interval=0.2, what="the refused visit past the retention deleted")
            assert "QRT00143" in srv.error_log()
            assert [json.loads(l)["seq"] for l in
                    srv.admin("spool", "refused", spool).stdout.splitlines()] == [out[1]["seq"]]
            # Mended: put back, and recorded by the running server.
            srv.sql("DROP TRIGGER refuse_tracker" + (" ON visit_rows" if srv.backend == "pgsql"
                                                      else ""))
            assert srv.admin("spool", "retry", spool).stdout.startswith("1 visits back")
            wait_until(lambda: count(bad) == 2, timeout=30, interval=0.2,
                       what="the visit put back recorded")
            wait_until(lambda: qrtrack_status(srv)["QRTrackSpoolRefused"] == "0", timeout=15,
                       interval=0.2, what="no refused visit counted")
            assert srv.admin("spool", "refused", spool).stdout == ""
            assert count(good) == 5
            # A wrong command says so; a file that is not there is not made.
            assert srv.admin("spool", "list", spool, check=False).returncode == 2
            assert srv.admin("spool", "refused", check=False).returncode == 2
            p = srv.admin("spool", "refused", spool + ".none", check=False)
            assert p.returncode == 1 and "no spool at" in p.stderr, p.stderr
            assert not os.path.exists(spool + ".none")
            r = a.get("/tracker/show/%d" % bad["tracker_id"])
            assert r.status_code == 200 and r.json()["totalScans"] == 2, r.text
            assert not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()


def test_a_change_of_the_schema_made_elsewhere_leaves_every_connection_answering():
    """An administrator changes the database's schema while the server runs (an index
    for a BI tool's query, a column of their own): the API, the scans and the
    reports go on answering on the connections that prepared their statements before.
    On SQLite apr_dbd's statements, prepared the legacy way, failed for good after such a
    change (500 on every request of those connections until they closed)."""
    srv = start_server(extra="QRTrackRateLimit 0\n", accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/s"}).json()

            def rounds():
                for _ in range(12):
                    r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                                     timeout=30)
                    assert r.status_code == 302, (r.status_code, r.text)
                    for path in ("/tracker/show/%d" % t["tracker_id"], "/tracker",
                                 "/visits/tracker/%d" % t["tracker_id"],
                             "/tracker/analytics/%d" % t["tracker_id"]):
                        r = a.get(path)
                        assert r.status_code == 200, (path, r.text, srv.error_log()[-2000:])

            rounds()
            srv.sql("CREATE INDEX admin_bi ON trackers (redirect_url)")
            rounds()
            srv.sql("ALTER TABLE trackers ADD COLUMN admin_note TEXT")
            rounds()
            srv.sql("DROP INDEX admin_bi")
            srv.sql("ALTER TABLE trackers DROP COLUMN admin_note")
            rounds()
            assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 48
            assert not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()
