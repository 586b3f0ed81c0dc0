"""The webhook delivery worker (CONTRACT section 7, "Webhooks"; issue 38): events of the
outbox, written here straight into the database (lib.webhooks), delivered to a receiver on
a loopback port (allowed by QRTrackWebhookAllow 127.0.0.1/32) with Standard Webhooks
headers and signature, retried on the schedule (about 5 s first) with the same
webhook-id, Retry-After followed, 410 disabling the webhook, in order per tracker,
refused on loopback without the allow directive, bounded by a 10 s timeout."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import requests

from conftest import BACKEND, Api, Server, apxs, start_server
from lib import webhooks as wh
from lib.memory import rss_kb
from lib.wait import sample, wait_until

STATUS = wh.STATUS_CONF % apxs("LIBEXECDIR")
ALLOW = "QRTrackWebhookAllow 127.0.0.1/32\n"


@pytest.fixture(scope="module")
def srv():
    s = start_server(extra=STATUS + ALLOW, accounts=[("acme", "professional")],
                     loglevel="info")
    yield s
    errors = [l for l in s.error_log().splitlines() if "QRT01033" in l or "QRT01034" in l]
    s.cleanup()
    assert not errors, "the webhook worker's database work failed:\n" + "\n".join(errors)


@pytest.fixture
def receiver():
    r = wh.Receiver()
    yield r
    r.stop()


def delivered(srv, wid, n=1):
    return wait_until(lambda: [e for e in wh.events(srv, wid).values() if e[0] == wh.DELIVERED]
                      if sum(e[0] == wh.DELIVERED for e in wh.events(srv, wid).values()) >= n
                      else None, timeout=30, what=lambda: "deliveries: %r\n%s" % (
                          wh.events(srv, wid), srv.error_log()[-2000:]))


def test_a_delivery_is_signed_and_carries_the_standard_headers(srv, receiver):
    # (counted before the event is there: its delivery may come before the next line)
    before = int(wh.status_lines(srv).get("QRTrackWebhookDelivered", "0"))
    wid, secret = wh.add_webhook(srv, receiver.url("/signed"))
    mid = wh.add_event(srv, wid, tracker_id=7)
    delivered(srv, wid)
    (t, path, h, body, _), = receiver.got("/signed")
    assert h["webhook-id"] == mid
    assert abs(int(h["webhook-timestamp"]) - time.time()) < 60
    assert h["webhook-signature"].startswith("v1,")
    assert wh.verify(secret, h, body)
    assert not wh.verify(wh.new_secret(), h, body)
    assert not wh.verify(secret, h, body + b" ")
    assert h["content-type"] == "application/json"
    assert h["user-agent"].startswith("mod_qrtrack/")
    assert "expect" not in h
    stored = srv.sql("SELECT body FROM webhook_events WHERE msg_id = '%s'" % mid).strip()
    assert body.decode() == stored
    (amid, n, status, error, at, nxt), = wh.attempts(srv, wid)
    assert (amid, n, status, error, nxt) == (mid, 1, 200, "", None)
    assert wh.webhook_row(srv, wid) == (0, None, "")
    lines = wait_until(lambda: (lambda s: s if int(s["QRTrackWebhookDelivered"]) > before
                                else None)(wh.status_lines(srv)), what="mod_status")
    assert "QRTrackWebhookBacklog" in lines and "QRTrackWebhookFailed" in lines


def test_end_to_end_through_the_api(srv, receiver):
    """A webhook made with POST /webhook (its secret shown once), a tracker made and
    changed, a scan and a click: the receiver gets tracker.created, tracker.updated,
    scan.created and click.created of that tracker, in that order, each signed with the
    secret the API gave, and GET /webhook/<id>/deliveries lists each attempt's 200."""
    tok = srv.token("acme")
    with Api(srv, tok) as api:
        r = api.post("/webhook", json={"url": receiver.url("/e2e"), "events": [
            "tracker.created", "tracker.updated", "scan.created", "click.created"]})
        assert r.status_code == 200, r.text
        hook = r.json()
        t = api.post("/tracker", json={"redirect_url": "https://example.com/e2e"}).json()
        assert api.patch("/tracker/%d" % t["tracker_id"],
                         json={"name": "renamed"}).status_code == 200
        for kind in ("q", "l"):
            r = requests.get("%s/%s/%s" % (srv.base, kind, t["code"]), allow_redirects=False,
                             timeout=30, headers={"User-Agent": "Mozilla/5.0 Firefox/120.0"})
            assert r.status_code == 302
        got = wait_until(lambda: receiver.got("/e2e") if len(receiver.got("/e2e")) >= 4
                         else None, timeout=30, what=lambda: srv.error_log()[-2000:])
        assert len(got) == 4
        types = []
        for _, _, h, body, _ in got:
            assert wh.verify(hook["secret"], h, body)
            event = json.loads(body)
            types.append(event["type"])
            tid = event["data"].get("tracker_id")
            assert tid == t["tracker_id"], event
        assert types == ["tracker.created", "tracker.updated", "scan.created", "click.created"]
        d = wait_until(lambda: (lambda j: j if len(j["data"]) >= 4 else None)(
            api.get("/webhook/%d/deliveries" % hook["id"]).json()), what="deliveries")
        assert [x["http_status"] for x in d["data"]] == [200] * 4, d


def test_a_server_with_delivery_off_keeps_the_outbox_for_one_with_it_on(receiver):
    """QRTrackWebhookDelivery Off: the events wait (no attempt) while that server runs;
    a server on the same database with delivery on sends them."""
    off = on = None
    try:
        off = Server(extra=STATUS + ALLOW + "QRTrackWebhookDelivery Off\n")
        off.admin("init")
        off.account("acme", "professional")
        off.start()
        wid, secret = wh.add_webhook(off, receiver.url("/off"))
        wh.add_event(off, wid, tracker_id=3)
        # (a span of time with no delivery is what is under test)
        assert not any(sample(lambda: receiver.got("/off"), 2.0))
        assert wh.attempts(off, wid) == []
        off.stop()
        on = Server(extra=STATUS + ALLOW, shared_db=off)
        on.start()
        delivered(on, wid)
        (_, _, h, body, _), = receiver.got("/off")
        assert wh.verify(secret, h, body)
    finally:
        for s in (on, off):
            if s:
                s.cleanup()


def test_a_failed_delivery_is_retried_with_the_same_webhook_id(srv):
    rec = wh.Receiver(lambda path, n: (500 if n == 0 else 200, {}, 0))
    try:
        wid, secret = wh.add_webhook(srv, rec.url("/retry"))
        mid = wh.add_event(srv, wid)
        delivered(srv, wid)
        first, second = rec.got("/retry")
        assert first[2]["webhook-id"] == second[2]["webhook-id"] == mid
        assert wh.verify(secret, first[2], first[3]) and wh.verify(secret, second[2], second[3])
        assert first[3] == second[3]
        # the schedule's first step: about 5 s (+-10 %, whole seconds)
        assert second[0] - first[0] >= 3.5, second[0] - first[0]
        a = wh.attempts(srv, wid)
        assert [(x[1], x[2]) for x in a] == [(1, 500), (2, 200)]
        assert a[0][5] is not None and 3 <= a[0][5] - a[0][4] <= 7
        assert wh.events(srv, wid)[mid] == (wh.DELIVERED, 2)
    finally:
        rec.stop()


def test_retry_after_longer_than_the_schedule_is_followed(srv):
    """Retry-After counts from the answer (RFC 9110), not from the attempt's start: an
    answer that took 2 s to come asks for the next attempt 9 s after it (the schedule's
    5 s are shorter). The schedule was counted from the start: 9 s after it, 7 s after the
    answer (and the answer's second came late on a busy machine: the retry came early)."""
    rec = wh.Receiver(lambda path, n: (503, {"Retry-After": "9"}, 2) if n == 0 else (200, {}, 0))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/later"))
        wh.add_event(srv, wid)
        delivered(srv, wid)
        first, second = rec.got("/later")
        # (times in whole seconds: the answer's second + 9, at least 10 s after the request)
        assert second[0] - first[0] >= 10, second[0] - first[0]
        a = wh.attempts(srv, wid)
        assert a[0][2] == 503 and a[0][5] >= int(first[0]) + 2 + 9, (a[0], first[0])
        assert a[0][5] - a[0][4] >= 11, a[0]
    finally:
        rec.stop()


def test_410_disables_the_webhook(srv):
    rec = wh.Receiver(lambda path, n: (410, {}, 0))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/gone"))
        mid = wh.add_event(srv, wid, tracker_id=1)
        wait_until(lambda: wh.webhook_row(srv, wid)[1], timeout=30, what="disabled_at")
        failures, at, why = wh.webhook_row(srv, wid)
        assert "410" in why
        assert wh.events(srv, wid)[mid] == (wh.FAILED, 1)
        # no delivery to a disabled webhook: a new event stays pending
        later = wh.add_event(srv, wid, tracker_id=2)
        sample(lambda: None, seconds=1.5)   # several of the worker's polls
        assert wh.events(srv, wid)[later] == (wh.PENDING, 0)
        assert len(rec.got("/gone")) == 1
    finally:
        rec.stop()


def test_a_trackers_events_arrive_in_order(srv):
    # the first event of tracker 1 fails once: the tracker's later events wait for it,
    # another tracker's are delivered meanwhile
    def respond(path, n):
        return (500, {}, 0) if path == "/order" and n == 0 else (200, {}, 0)

    rec = wh.Receiver(respond)
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/order"))
        a = wh.add_events(srv, wid, [1, 1, 1])
        wid2, _ = wh.add_webhook(srv, rec.url("/other"))
        b = wh.add_events(srv, wid2, [2, 2])
        delivered(srv, wid, 3)
        delivered(srv, wid2, 2)
        got = [r[2]["webhook-id"] for r in rec.got("/order")]
        assert got == [a[0], a[0], a[1], a[2]], got
        other = rec.got("/other")
        assert [r[2]["webhook-id"] for r in other] == b
        retried = rec.got("/order")[1][0]
        assert other[0][0] < retried        # not held up by the other tracker's retry
    finally:
        rec.stop()


def test_a_busy_trackers_events_are_taken_in_runs_and_sent_in_order(srv):
    """A tracker's waiting events are taken together (a run) and sent one after another,
    each once the one before it was delivered: while the first is held by its receiver,
    the run's later events are leased too, and none of them is sent before it."""
    first = threading.Event()

    def respond(path, n):
        if n == 0:
            first.wait(20)
        return (200, {}, 0)

    rec = wh.Receiver(respond)
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/busy"))
        mids = wh.add_events(srv, wid, [11] * 150)
        wait_until(lambda: rec.got("/busy"), timeout=30, what="the first delivery")

        def leased():
            n = int(srv.sql("SELECT COUNT(*) FROM webhook_events WHERE webhook_id = %d AND "
                            "claimed_until IS NOT NULL" % wid).strip())
            return n if n > 1 else None
        assert wait_until(leased, timeout=10, what="the run's leases") >= 32
        sample(lambda: None, seconds=0.5)
        assert len(rec.got("/busy")) == 1
        first.set()
        delivered(srv, wid, 150)
        assert [r[2]["webhook-id"] for r in rec.got("/busy")] == mids
        assert all(x[1] == 1 for x in wh.attempts(srv, wid))
    finally:
        first.set()
        rec.stop()


def test_a_run_stops_at_an_event_not_delivered(srv):
    """The second event of a run fails once: the events after it are given back untried
    (no attempt), then sent after its retry, in order."""
    rec = wh.Receiver(lambda path, n: (500, {}, 0) if n == 1 else (200, {}, 0))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/stops"))
        mids = wh.add_events(srv, wid, [12] * 5)
        delivered(srv, wid, 5)
        got = [r[2]["webhook-id"] for r in rec.got("/stops")]
        assert got == [mids[0], mids[1], mids[1]] + mids[2:], got
        a = wh.attempts(srv, wid)
        assert [(x[0], x[1], x[2]) for x in a] == [(mids[0], 1, 200), (mids[1], 1, 500),
                                                   (mids[1], 2, 200)] + \
            [(m, 1, 200) for m in mids[2:]]
    finally:
        rec.stop()


def test_loopback_is_refused_without_the_allow_directive(receiver):
    s = start_server(extra=STATUS, accounts=[("acme", "professional")])
    try:
        wid, _ = wh.add_webhook(s, receiver.url("/private"))
        mid = wh.add_event(s, wid)
        a = wait_until(lambda: wh.attempts(s, wid), timeout=30, what="an attempt")
        assert a[0][0] == mid and a[0][2] is None
        assert a[0][3].startswith("refused: 127.0.0.1 is not a public address"), a[0][3]
        assert a[0][5] is not None                      # retried on the schedule
        assert receiver.got() == []
        assert wh.events(s, wid)[mid] == (wh.PENDING, 1)
    finally:
        s.cleanup()


def test_a_hanging_receiver_times_out_and_scans_keep_their_latency(srv):
    rec = wh.Receiver(lambda path, n: (200, {}, 30 if n == 0 else 0))
    try:
        # (subscribed to what the scans below do not make: the one event is added by hand)
        wid, _ = wh.add_webhook(srv, rec.url("/hang"), events=("tracker.expired",))
        mid = wh.add_event(srv, wid)
        wait_until(lambda: rec.got("/hang"), timeout=30, what="the delivery")
        tok = srv.token("acme")
        with Api(srv, tok) as api:
            r = api.post("/tracker", json={"redirect_url": "https://example.com/hang"})
            assert r.status_code == 200, r.text
            code = r.json()["code"]
        slow = []
        for _ in range(20):
            t0 = time.monotonic()
            r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=10)
            assert r.status_code == 302
            slow.append(time.monotonic() - t0)
        assert max(slow) < 2.0, slow
        a = wait_until(lambda: [x for x in wh.attempts(srv, wid) if x[0] == mid], timeout=30,
                       interval=0.2, what="the attempt")
        seen, started = time.time(), rec.got("/hang")[0][0]
        assert a[0][0] == mid and a[0][3].startswith("timeout"), a
        # given up after the 10 s timeout, not after the receiver's 30 s
        assert 8 <= seen - started <= 20, seen - started
        assert a[0][4] <= started + 1      # the attempt's time is its start
    finally:
        rec.stop()


def _delivering_child(srv, port):
    """The pid of the child with a connection to the receiver's port (ss -tnp)."""
    out = subprocess.run(["ss", "-Htnp", "dst", "127.0.0.1:%d" % port],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "pid=" in line:
            return int(line.split("pid=")[1].split(",")[0])
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="ss shows other users' sockets to root only")
def test_kill_9_of_the_delivering_child_loses_no_event(srv):
    # slow answers keep deliveries in flight when the child dies
    rec = wh.Receiver(lambda path, n: (200, {}, 0.2))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/kill"))
        ids = wh.add_events(srv, wid, list(range(1, 401)))
        wait_until(lambda: len(rec.got()) >= 20, timeout=30, what="deliveries under way")
        pid = wait_until(lambda: _delivering_child(srv, rec.port), timeout=10,
                         what="the delivering child")
        leased = int(srv.sql("SELECT COUNT(*) FROM webhook_events WHERE webhook_id = %d AND "
                             "state = 0 AND claimed_until IS NOT NULL" % wid).strip())
        os.kill(pid, signal.SIGKILL)
        # The dead worker's leased events are taken again by the child that takes over,
        # at once, not when their 30 s leases end: all are delivered well before that.
        wait_until(lambda: all(e[0] == wh.DELIVERED for e in wh.events(srv, wid).values()),
                   timeout=20, interval=0.5, what=lambda: "every event delivered: %d left"
                   " (%d were leased at the kill)"
                   % (sum(e[0] != wh.DELIVERED for e in wh.events(srv, wid).values()), leased))
        assert leased > 0 and "QRT01038" in srv.error_log()
        got = {r[2]["webhook-id"] for r in rec.got()}
        assert got >= set(ids)
    finally:
        rec.stop()


@pytest.mark.skipif(BACKEND != "pgsql", reason="two nodes share a PostgreSQL outbox")
def test_two_nodes_deliver_each_event_once():
    rec = wh.Receiver()
    a = b = None
    try:
        a = Server(extra=ALLOW)
        a.admin("init")
        a.account("acme")
        a.start()
        b = Server(extra=ALLOW, shared_db=a)
        b.start()
        wid, _ = wh.add_webhook(a, rec.url("/nodes"))
        ids = wh.add_events(a, wid, [i % 50 for i in range(600)])
        wait_until(lambda: all(e[0] == wh.DELIVERED for e in wh.events(a, wid).values()),
                   timeout=60, interval=0.2, what="every event delivered")
        got = [r[2]["webhook-id"] for r in rec.got()]
        assert sorted(got) == sorted(ids)       # each once
    finally:
        for s in (b, a):
            if s:
                s.cleanup()
        rec.stop()


def test_a_graceful_restart_hands_delivery_to_the_new_children(srv):
    # the first answer hangs: the old child's worker is delivering when told to stop
    rec = wh.Receiver(lambda path, n: (200, {}, 5 if n == 0 else 0))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/restart"))
        first = wh.add_event(srv, wid, tracker_id=1)
        wait_until(lambda: rec.got("/restart"), timeout=30, what="the first delivery")
        subprocess.run([srv.proc.args[0], "-f", srv.conf, "-k", "graceful"], check=True,
                       capture_output=True)
        second = wh.add_event(srv, wid, tracker_id=2)
        # the broken-off event is given back (or its answer recorded) and delivered again
        wait_until(lambda: all(e[0] == wh.DELIVERED for e in wh.events(srv, wid).values()),
                   timeout=60, interval=0.2, what=lambda: "both delivered: %r\n%s" % (
                       wh.events(srv, wid), srv.error_log()[-2000:]))
        got = {r[2]["webhook-id"] for r in rec.got("/restart")}
        assert got == {first, second}
        assert srv.proc.poll() is None and not srv.crash_lines()
    finally:
        rec.stop()


def test_a_hanging_receiver_keeps_the_childrens_memory_flat(srv):
    rec = wh.Receiver(lambda path, n: (200, {}, 30))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/flat"))
        sizes = []
        for k in range(3):
            wh.add_events(srv, wid, range(1000 * k, 1000 * k + 100))
            wait_until(lambda: len(wh.attempts(srv, wid)) >= 100 * (k + 1), timeout=60,
                       interval=0.5, what="a round of timed-out attempts")
            sizes.append(rss_kb(srv))
        assert all(a[3] and a[3].startswith("timeout") for a in wh.attempts(srv, wid))
        assert sizes[2] - sizes[0] < 8 * 1024, sizes
    finally:
        rec.stop()


def test_a_hanging_receiver_does_not_hold_up_other_webhooks(srv):
    def respond(path, n):
        return (200, {}, 30 if path == "/stuck" else 0)

    rec = wh.Receiver(respond)
    try:
        stuck, _ = wh.add_webhook(srv, rec.url("/stuck"))
        wh.add_events(srv, stuck, [1, 2, 3])
        wait_until(lambda: len(rec.got("/stuck")) == 3, timeout=30, what="the hanging deliveries")
        ok, _ = wh.add_webhook(srv, rec.url("/fine"))
        t0 = time.time()
        wh.add_event(srv, ok)
        wait_until(lambda: rec.got("/fine"), timeout=30, what="the other webhook's delivery")
        # well before the hanging ones' 10 s timeout
        assert rec.got("/fine")[0][0] - t0 < 5
        assert not wh.attempts(srv, stuck)
    finally:
        rec.stop()


def test_a_visits_event_is_rendered_at_delivery_as_the_api_shows_it(srv, receiver):
    """A scan's and a click's outbox rows hold their visits' ids and no body (schema 37);
    the worker renders each body when it takes the event: the visit as GET /visits shows
    it and the tracker's code, stamped with the event's time, signed, webhook-id the row's."""
    srv.account("render")       # (acme may be at its limit of webhooks by now)
    tok = srv.token("render")
    with Api(srv, tok) as api:
        hook = api.post("/webhook", json={"url": receiver.url("/render"), "events": [
            "scan.created", "click.created"]}).json()
        t = api.post("/tracker", json={"redirect_url": "https://example.com/render"}).json()
        for kind in ("q", "l"):
            r = requests.get("%s/%s/%s" % (srv.base, kind, t["code"]), allow_redirects=False,
                             timeout=30, headers={"User-Agent": "Mozilla/5.0 (X11; Linux "
                                                  "x86_64) Firefox/120.0",
                                                  "Referer": "https://ref.example/p?q=1"})
            assert r.status_code == 302
        rows = srv.sql("SELECT msg_id, visit_id, LENGTH(body), created_at FROM webhook_events "
                       "WHERE webhook_id = %d ORDER BY id" % hook["id"]).split()
        rows = [r.split("|") for r in rows]
        assert len(rows) == 2 and all(r[1] and r[2] == "0" for r in rows), rows
        got = wait_until(lambda: receiver.got("/render") if len(receiver.got("/render")) >= 2
                         else None, timeout=30, what=lambda: srv.error_log()[-2000:])
        visits = {v["id"]: v for v in api.get("/visits/tracker/%d" % t["tracker_id"]
                                               ).json()["data"]}
        for (msg_id, visit_id, _, created_at), (_, _, h, body, _) in zip(rows, got):
            assert h["webhook-id"] == msg_id
            assert wh.verify(hook["secret"], h, body)
            event = json.loads(body)
            assert set(event) == {"type", "timestamp", "data"}
            assert event["timestamp"] == time.strftime("%Y-%m-%dT%H:%M:%S+0000",
                                                       time.gmtime(int(created_at)))
            data = dict(event["data"])
            assert data.pop("code") == t["code"]
            assert data == visits[int(visit_id)]
            assert event["type"] == data["source"] + ".created"
        assert [json.loads(g[3])["type"] for g in got] == ["scan.created", "click.created"]


def test_a_visits_event_names_its_visit_by_key_and_renders_the_same_without_its_time(srv):
    """A scan's outbox row holds its visit's time as well (schema 44), read with one seek;
    a row written before (no time) renders the same body from the visit's id."""
    rec = wh.Receiver(lambda path, n: (500, {}, 0) if n == 0 else (200, {}, 0))
    try:
        srv.account("bykey")
        with Api(srv, srv.token("bykey")) as api:
            hook = api.post("/webhook", json={"url": rec.url("/bykey"),
                                              "events": ["scan.created"]}).json()
            t = api.post("/tracker", json={"redirect_url": "https://example.com/k"}).json()
            r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                             timeout=30)
            assert r.status_code == 302
            wait_until(lambda: rec.got("/bykey"), timeout=30, what="the first attempt")
            row = srv.sql("SELECT e.visit_start, v.visit_start FROM webhook_events e JOIN "
                          "visits v ON v.id = e.visit_id WHERE e.webhook_id = %d"
                          % hook["id"]).split("|")
            assert row[0].strip() and row[0].strip() == row[1].strip(), row
            srv.sql("UPDATE webhook_events SET visit_start = NULL WHERE webhook_id = %d"
                    % hook["id"])
            got = wait_until(lambda: rec.got("/bykey") if len(rec.got("/bykey")) >= 2
                             else None, timeout=30, what="the retry")
            assert got[0][3] == got[1][3]
            assert json.loads(got[1][3])["data"]["id"] == int(
                srv.sql("SELECT visit_id FROM webhook_events WHERE webhook_id = %d"
                        % hook["id"]).strip())
    finally:
        rec.stop()


def test_an_event_whose_visit_is_gone_is_dropped_not_sent(receiver):
    """A visit deleted before its event is delivered (the retention's purge, an account
    erased): the event is dropped (state 3, listed as dropped), nothing is sent for it,
    and the tracker's next event is delivered."""
    off = on = None
    try:
        off = Server(extra=STATUS + ALLOW + "QRTrackWebhookDelivery Off\n")
        off.admin("init")
        off.account("acme", "professional")
        off.start()
        with Api(off, off.token("acme")) as api:
            hook = api.post("/webhook", json={"url": receiver.url("/gone"),
                                              "events": ["scan.created"]}).json()
            t = api.post("/tracker", json={"redirect_url": "https://example.com/g"}).json()
            for _ in range(2):
                assert requests.get("%s/q/%s" % (off.base, t["code"]), allow_redirects=False,
                                    timeout=30).status_code == 302
            first, second = [int(v) for v in off.sql(
                "SELECT visit_id FROM webhook_events WHERE webhook_id = %d ORDER BY id"
                % hook["id"]).split()]
        off.stop()
        off.sql("DELETE FROM visit_rows WHERE id = %d" % first)
        on = Server(extra=STATUS + ALLOW, shared_db=off)
        on.start()
        events = wait_until(lambda: (lambda e: e if sorted(s for s, _ in e.values()) ==
                                     [wh.DELIVERED, 3] else None)(wh.events(on, hook["id"])),
                            timeout=30, what=lambda: wh.events(on, hook["id"]))
        (_, _, h, body, _), = receiver.got("/gone")
        assert json.loads(body)["data"]["id"] == second
        assert wh.verify(hook["secret"], h, body)
        assert len(wh.attempts(on, hook["id"])) == 1
        with Api(on, on.token("acme")) as api:
            d = api.get("/webhook/%d/deliveries" % hook["id"]).json()
        assert d["state"]["dropped"] == 1 and d["state"]["pending"] == 0
    finally:
        for s in (on, off):
            if s:
                s.cleanup()


def test_disabling_a_webhook_drops_its_pending_events(srv):
    """A webhook the worker disables (410 here) keeps no pending events: those waiting
    are dropped and counted as its dropped, not left pending for ever."""
    rec = wh.Receiver(lambda path, n: (410, {}, 0))
    try:
        wid, _ = wh.add_webhook(srv, rec.url("/disable-drops"))
        first, *rest = wh.add_events(srv, wid, [1, 1, 1])
        wait_until(lambda: wh.webhook_row(srv, wid)[1], timeout=30, what="disabled_at")
        ev = wh.events(srv, wid)
        assert ev[first] == (wh.FAILED, 1)
        assert [ev[m][0] for m in rest] == [3, 3], ev
        assert srv.sql("SELECT COUNT(*) FROM webhook_events WHERE webhook_id = %d AND "
                       "state = 3 AND body = ''" % wid).strip() == "2"
        assert len(rec.got("/disable-drops")) == 1
    finally:
        rec.stop()


def test_deliveries_go_on_while_scans_keep_the_server_busy(srv, receiver):
    """Scans from 16 keep-alive clients for 4 s with a scan.created webhook: deliveries
    give way to the scans (docs/api.md) but are not starved meanwhile, and every visit's
    event is delivered once the scans stop."""
    with Api(srv, srv.token("acme")) as api:
        r = api.post("/tracker", json={"redirect_url": "https://example.com/busy"})
        assert r.status_code == 200, r.text
        t = r.json()
    wid, _ = wh.add_webhook(srv, receiver.url("/busy"), events=("scan.created",))
    stop, scanned, errors = time.monotonic() + 4, [0], []

    def scan():
        with requests.Session() as s:
            while time.monotonic() < stop:
                try:
                    r = s.get(t["scan_url"], allow_redirects=False, timeout=10)
                except requests.RequestException as e:
                    errors.append(repr(e))
                    return
                if r.status_code != 302:
                    errors.append(r.status_code)
                    return
                scanned[0] += 1

    threads = [threading.Thread(target=scan) for _ in range(16)]
    for th in threads:
        th.start()
    time.sleep(2)
    during = len(receiver.got("/busy"))
    for th in threads:
        th.join()
    assert not errors, errors[:5]
    assert during > 0, "no delivery while the scans ran"
    visits = int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                         % t["tracker_id"]).strip())
    assert visits >= scanned[0] > 0
    wait_until(lambda: len({r[2]["webhook-id"] for r in receiver.got("/busy")}) >= visits,
               timeout=60, interval=0.5, what=lambda: "%d visits' events delivered of %d"
               % (len(receiver.got("/busy")), visits))


def test_a_webhook_disabled_under_scans_keeps_no_waiting_event(srv):
    """A receiver answering 410 while scans keep writing scan.created events: once the
    webhook is disabled, its waiting events are dropped and no scan writes one for it any
    more (a writer whose cache of webhooks is older than the disable would write events
    left waiting for ever), so pending falls to 0 and stays 0."""
    rec = wh.Receiver(lambda path, n: (410, {}, 0))
    srv.account("gonebusy", "professional")     # (acme has other tests' webhooks)
    try:
        with Api(srv, srv.token("gonebusy")) as api:
            r = api.post("/tracker", json={"redirect_url": "https://example.com/gone-busy"})
            assert r.status_code == 200, r.text
            t = r.json()
            r = api.post("/webhook", json={"url": rec.url("/gone-busy"),
                                           "events": ["scan.created"]})
            assert r.status_code == 200, r.text
            hook = r.json()
            time.sleep(0.7)     # every scan writer knows the webhook
            stop, errors = threading.Event(), []

            def scan():
                with requests.Session() as s:
                    while not stop.is_set():
                        r = s.get(t["scan_url"], allow_redirects=False, timeout=10)
                        if r.status_code != 302:
                            errors.append(r.status_code)
                            return

            threads = [threading.Thread(target=scan) for _ in range(4)]
            for th in threads:
                th.start()
            try:
                wait_until(lambda: api.get("/webhook/%d" % hook["id"]).json()["disabled_at"],
                           timeout=30, what="disabled_at")
                time.sleep(1)   # scans go on past the disable
            finally:
                stop.set()
                for th in threads:
                    th.join()
            assert not errors, errors[:5]
            wait_until(lambda: api.get("/webhook/%d" % hook["id"]).json()["pending"] == 0,
                       timeout=5, interval=0.2, what=lambda: "pending: %r" % api.get(
                           "/webhook/%d" % hook["id"]).json())
            sample(lambda: None, seconds=2)
            shown = api.get("/webhook/%d" % hook["id"]).json()
            assert shown["pending"] == 0 and shown["dropped"] > 0, shown
            assert srv.sql("SELECT COUNT(*) FROM webhook_events WHERE webhook_id = %d AND "
                           "state = 0" % hook["id"]).strip() == "0"
            assert api.delete("/webhook/%d" % hook["id"]).status_code == 204
    finally:
        rec.stop()
