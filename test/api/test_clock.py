"""A wall clock set back while the server runs (an NTP step after a boot whose clock ran
ahead, an administrator's correction): what the module does on its own time goes on.
libfaketime sets the test server's wall clock (CLOCK_REALTIME; CLOCK_MONOTONIC is kept, as
a real step keeps it) back an hour. Before, every pause and "next at now + 1 s" of the
module's threads followed the wall clock: the snapshot that scans answer from during an
outage took no new code, and no webhook was delivered, for the hour."""
import email.utils
import os
import time

import requests

import lib.webhooks as wh
from conftest import Api, Server, apxs
from lib.server import snapshot_codes
from lib.wait import wait_until

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


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
