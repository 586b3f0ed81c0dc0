"""A wall clock set back while the server runs (an NTP step after a boot whose clock ran
ahead, an administrator's correction): what the module does on its own time goes on.
libfaketime sets the test server's wall clock (CLOCK_REALTIME; CLOCK_MONOTONIC is kept, as
a real step keeps it) back an hour. Before, every pause and "next at now + 1 s" of the
module's threads followed the wall clock: the snapshot that scans answer from during an
outage took no new code, and no webhook was delivered, for the hour."""
import email.utils
import os
import signal
import time

import pytest
import requests

import lib.webhooks as wh
from conftest import BACKEND, Api, Server, apxs
from lib.env import REPORTS
from lib.server import qrtrack_status, snapshot_codes
from lib.wait import wait_until

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

pytestmark = pytest.mark.skipif(
    REPORTS is not None, reason="make test-asan: libfaketime and AddressSanitizer's runtime, "
    "both preloaded, hang httpd as it starts (`apache2 -v` too); `make test` runs these")


def set_clock(path, offset):
    """The faked wall clock: offset seconds from the real one."""
    with open(path + ".new", "w") as f:
        f.write("%+d\n" % offset)
    os.chmod(path + ".new", 0o644)
    os.rename(path + ".new", path)


def server_clock(srv):
    """The server's wall clock, from its answer's Date header (seconds)."""
    r = requests.get(srv.base + "/api/health", timeout=10)
    return email.utils.parsedate_to_datetime(r.headers["Date"]).timestamp()


def test_a_wall_clock_set_back_an_hour_stops_nothing():
    receiver = wh.Receiver()
    srv = Server(extra=wh.STATUS_CONF % apxs("LIBEXECDIR") + "QRTrackWebhookAllow 127.0.0.1/32\n",
                 loglevel="info")
    clock = os.path.join(srv.dir, "clock")
    try:
        set_clock(clock, 0)
        srv.admin("init")
        srv.account("acme")
        srv.start(env={"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": clock,
                       "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
        with Api(srv, srv.token("acme")) as api:
            r = api.post("/webhook", json={"url": receiver.url("/c"),
                                           "events": ["tracker.created", "scan.created"]})
            assert r.status_code == 200, r.text
            first = api.post("/tracker", json={"redirect_url": "https://example.com/1"}).json()
            wait_until(lambda: first["code"] in snapshot_codes(srv), timeout=15,
                       what="the first code in the snapshot")
            wait_until(lambda: len(receiver.got("/c")) == 1, timeout=15,
                       what="the first tracker's event delivered")
            set_clock(clock, -3600)
            wait_until(lambda: server_clock(srv) < time.time() - 3000, timeout=15,
                       what="the server's clock an hour back")
            second = api.post("/tracker", json={"redirect_url": "https://example.com/2"}).json()
            # the keeper refreshes the snapshot every second; the webhook worker looks
            # for due events as often
            wait_until(lambda: second["code"] in snapshot_codes(srv), timeout=15,
                       what="the new code in the snapshot")
            r = requests.get("%s/q/%s" % (srv.base, second["code"]), allow_redirects=False,
                             timeout=30)
            assert r.status_code == 302, r.text
            wait_until(lambda: len(receiver.got("/c")) == 3, timeout=15,
                       what=lambda: "the new tracker's and its scan's events delivered: %d\n%s"
                       % (len(receiver.got("/c")), srv.error_log()[-2000:]))
        assert not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()
        receiver.stop()


def faked(srv):
    """srv started with its wall clock read from a file beside it: (the file)."""
    clock = os.path.join(srv.dir, "clock")
    set_clock(clock, 0)
    srv.start(env={"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": clock,
                   "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
    return clock


def set_back(srv, clock):
    set_clock(clock, -3600)
    wait_until(lambda: server_clock(srv) < time.time() - 3000, timeout=15,
               what="the server's clock an hour back")


def scan(srv, code, **kw):
    return requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30, **kw)


def test_a_committer_that_dies_after_the_clock_went_back_is_replaced():
    """The child whose writer commits every child's visits is killed (a crash, the OOM
    killer) after the clock went back: another child's writer takes over at once. Before,
    the queue timed the committer's silence on the wall clock, so for the hour every scan
    waited QRTrackScanWait and answered 503, its visit unrecorded."""
    srv = Server(extra=wh.STATUS_CONF % apxs("LIBEXECDIR") + "QRTrackScanWait 3\n")
    try:
        srv.admin("init")
        srv.account("acme")
        clock = faked(srv)
        with Api(srv, srv.token("acme")) as api:
            t = api.post("/tracker", json={"redirect_url": "https://example.com/1"}).json()
            code = t["code"]
            assert scan(srv, code).status_code == 302
            committer = int(qrtrack_status(srv)["QRTrackCommitter"])
            assert committer > 0
            set_back(srv, clock)
            os.kill(committer, signal.SIGKILL)
            answers = [scan(srv, code).status_code for _ in range(5)]
            assert answers == [302] * 5, (answers, srv.error_log()[-2000:])
            assert int(qrtrack_status(srv)["QRTrackCommitter"]) not in (0, committer)
            r = api.get("/tracker/show/%d" % t["tracker_id"])
            assert r.json()["totalScans"] == 6, r.text
    finally:
        srv.cleanup()


@pytest.mark.skipif(BACKEND != "pgsql", reason="two nodes share a PostgreSQL database: runs "
                    "in the PostgreSQL pass of `make api` (QRT_TEST_BACKEND=pgsql)")
def test_a_node_whose_clock_went_back_follows_the_other_nodes_changes():
    """Node b's clock goes back an hour; changes made through node a still reach b's scans
    as soon as they would otherwise: a new destination within the half second a child keeps a
    code, a new webhook within the seconds its writer keeps the webhooks. Before, both were
    kept for the hour: b redirected to the old destination and made no events."""
    receiver = wh.Receiver()
    conf = wh.STATUS_CONF % apxs("LIBEXECDIR") + "QRTrackWebhookAllow 127.0.0.1/32\n"
    a = Server(extra=conf)
    b = None
    try:
        a.admin("init")
        a.account("acme")
        a.start()
        b = Server(extra=conf, shared_db=a)
        clock = faked(b)
        with Api(a, a.token("acme")) as api:
            t = api.post("/tracker", json={"redirect_url": "https://example.com/old"}).json()
            # b's children keep the code (each is asked: they are two)
            for _ in range(8):
                assert scan(b, t["code"]).headers["Location"] == "https://example.com/old"
            set_back(b, clock)
            r = api.patch("/tracker/%d" % t["tracker_id"],
                          json={"redirect_url": "https://example.com/new"})
            assert r.status_code == 200, r.text
            wait_until(lambda: all(scan(b, t["code"]).headers["Location"]
                                   == "https://example.com/new" for _ in range(8)),
                       timeout=5, interval=0.2, what="node b to follow the new destination")
            r = api.post("/webhook", json={"url": receiver.url("/s"), "events": ["scan.created"]})
            assert r.status_code == 200, r.text
            # the writers look at the webhooks again every few seconds
            wait_until(lambda: scan(b, t["code"]).status_code == 302
                       and len(receiver.got("/s")) > 0, timeout=20, interval=1,
                       what="an event of a scan on node b")
        assert not b.crash_lines(), b.error_log()
    finally:
        if b:
            b.cleanup()
        a.cleanup()
        receiver.stop()
