"""Scans under each of httpd's MPMs: event (the default), worker and prefork. With more
scans at once than the server has request threads, every scan gets its 302, has its
visit recorded once, and is logged with its status and time."""
import os
import re
import threading

import pytest
import requests

from conftest import Api, start_server
from lib.qr import IPHONE
from lib.wait import wait_until

# Few request threads, so that the scans at once outnumber them.
THREADS = {
    "event": "ThreadsPerChild 4\nMaxRequestWorkers 8\nMaxSpareThreads 8\n",
    "worker": "ThreadsPerChild 4\nMaxRequestWorkers 8\nMaxSpareThreads 8\n",
    "prefork": "",          # lib.server.mpm_conf: two children of one request each
}
CLIENTS = 24
SCANS_EACH = 5


def scan_all(url, clients, each):
    """clients threads scanning url each times at once, a connection per scan (the event
    MPM closes idle keep-alive connections while all its threads are busy): the statuses
    and Locations seen."""
    results, lock = [], threading.Lock()
    start = threading.Barrier(clients)

    def run():
        start.wait()
        for _ in range(each):
            try:
                r = requests.get(url, allow_redirects=False, timeout=60,
                                 headers={"User-Agent": IPHONE, "Connection": "close"})
                got = (r.status_code, r.headers.get("Location"))
            except requests.RequestException as e:
                got = (None, repr(e))
            with lock:
                results.append(got)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


@pytest.mark.parametrize("mpm", ["event", "worker", "prefork"])
def test_more_scans_at_once_than_threads_are_all_answered_recorded_and_logged(mpm):
    srv = start_server(extra=THREADS[mpm], accounts=[("acme", "professional")], mpm=mpm)
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/mpm"}).json()
        results = scan_all(srv.base + "/q/" + t["code"], CLIENTS, SCANS_EACH)
        assert len(results) == CLIENTS * SCANS_EACH
        assert set(results) == {(302, "https://example.com/mpm")}, \
            [r for r in results if r != (302, "https://example.com/mpm")][:5]
        recorded = int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                               % t["tracker_id"]).strip())
        assert recorded == CLIENTS * SCANS_EACH
        # The access log: each scan once, as a 302 with its time in microseconds. httpd
        # writes a request's line after its response has gone out: the last scans' lines
        # may come a moment after their clients have their answers.
        def logged():
            with open(os.path.join(srv.dir, "logs", "access.log")) as f:
                return [l for l in f if '"GET /q/%s"' % t["code"] in l]
        wait_until(lambda: len(logged()) >= CLIENTS * SCANS_EACH, timeout=10,
                   what=lambda: "every scan in the access log (%d)" % len(logged()))
        lines = logged()
        assert len(lines) == CLIENTS * SCANS_EACH
        assert all(re.search(r'" 302 \S+ \d+$', l.rstrip("\n")) for l in lines), lines[:3]
        # Still serving: the API answers after the load.
        with Api(srv, srv.token("acme")) as a:
            assert a.get("/tracker/show/%d" % t["tracker_id"]).status_code == 200
    finally:
        srv.cleanup()       # fails on a crash line
