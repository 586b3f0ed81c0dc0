"""A webhook changed in place: PATCH /webhook/<id> (its url and events, disabled and enabled
again) and POST /webhook/<id>/secret (a new secret, the one it replaces still signing for a
while). The events the scan writers write follow a change at once on the server that made
it and within half a second on another sharing the database, also when the change keeps
the webhooks' counts and the sum of their events (one webhook's events traded for
another's). Deliveries carry the new and the previous secret's signatures while the
previous one is kept. POST /webhook/<id>/recover sends failed events again, and
POST /webhook/<id>/test a webhook.test event to the one webhook."""
import contextlib
import json
import time

import pytest
import requests

from conftest import Api, Server, start_server
from lib import webhooks as wh
from lib.wait import sample, wait_until

HOOK = "https://hooks.example.com/qr"
ALLOW = "QRTrackWebhookAllow 127.0.0.1/32\n"


@pytest.fixture(scope="module")
def srv():
    # (the outbox's rows are read from the database: no delivery worker here)
    s = start_server(extra="QRTrackWebhookDelivery Off\n")
    yield s
    s.cleanup()


_accounts = [0]


@pytest.fixture
def acct(srv):
    _accounts[0] += 1
    name = "change%d" % _accounts[0]
    srv.account(name)
    with Api(srv, srv.token(name)) as s:
        s.account = name
        yield s


def make_hook(api, events, url=HOOK):
    r = api.post("/webhook", json={"url": url, "events": events})
    assert r.status_code == 200, r.text
    return r.json()


def make_tracker(api):
    r = api.post("/tracker", json={"redirect_url": "https://example.com/landing"})
    assert r.status_code == 200, r.text
    return r.json()


def scan(srv, code, kind="q"):
    r = requests.get("%s/%s/%s" % (srv.base, kind, code), allow_redirects=False, timeout=30,
                     headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"})
    assert r.status_code == 302, r.text
    return r


def rows(srv, tracker_id):
    """The outbox's rows of a tracker: (webhook id, event type, state), in order."""
    out = []
    for line in srv.sql("SELECT webhook_id, event_type, state FROM webhook_events WHERE "
                        "tracker_id = %d ORDER BY id" % tracker_id).splitlines():
        if line.strip():
            w, t, s = line.split("|")
            out.append((int(w), t, int(s)))
    return out


def test_a_patch_changes_url_and_events_and_answers_the_webhook_as_shown(srv, acct):
    w = make_hook(acct, ["click.created"])
    t = make_tracker(acct)
    scan(srv, t["code"])
    assert rows(srv, t["tracker_id"]) == []
    r = acct.patch("/webhook/%d" % w["id"], json={"url": HOOK + "/v2",
                                                  "events": ["scan.created", "scan.created"]})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got == acct.get("/webhook/%d" % w["id"]).json()
    assert got["url"] == HOOK + "/v2" and got["events"] == ["scan.created"]
    assert got["created_at"] == w["created_at"] and "secret" not in got
    assert (got["disabled_at"], got["failures"], got["pending"]) == (None, 0, 0)
    # the next scan is written for it, the click no more
    scan(srv, t["code"])
    scan(srv, t["code"], "l")
    assert rows(srv, t["tracker_id"]) == [(w["id"], "scan.created", 0)]
    assert acct.get("/webhook").json()["data"][0]["events"] == ["scan.created"]
    # the fields it is shown with are taken and ignored; nothing given changes nothing
    shown = acct.get("/webhook/%d" % w["id"]).json()
    r = acct.patch("/webhook/%d" % w["id"], json=dict(shown, id=999, failures=7))
    assert r.status_code == 200 and r.json() == shown
    assert acct.patch("/webhook/%d" % w["id"], json={}).json() == shown


def test_disabled_through_the_api_then_enabled_again(srv, acct):
    w = make_hook(acct, ["scan.created"])
    t = make_tracker(acct)
    scan(srv, t["code"])
    scan(srv, t["code"])
    assert acct.get("/webhook/%d" % w["id"]).json()["pending"] == 2
    r = acct.patch("/webhook/%d" % w["id"], json={"enabled": False})
    assert r.status_code == 200, r.text
    off = r.json()
    assert off["disabled_at"] and off["disabled_reason"] == "disabled through the API"
    # its waiting events dropped, as a disable by the worker drops them; no new one
    assert (off["pending"], off["dropped"]) == (0, 2)
    scan(srv, t["code"])
    assert [s for _, _, s in rows(srv, t["tracker_id"])] == [3, 3]
    # disabled again: nothing changes, not even the time
    assert acct.patch("/webhook/%d" % w["id"], json={"enabled": False}).json() == off
    # a webhook the worker disabled (a 410 after failures) is enabled again
    srv.sql("UPDATE webhooks SET failures = 10, disabled_reason = 'gone (410)' "
            "WHERE id = %d" % w["id"])
    r = acct.patch("/webhook/%d" % w["id"], json={"enabled": True})
    assert r.status_code == 200, r.text
    on = r.json()
    assert (on["disabled_at"], on["disabled_reason"], on["failures"]) == (None, None, 0)
    scan(srv, t["code"])
    assert rows(srv, t["tracker_id"])[-1] == (w["id"], "scan.created", 0)
    assert acct.patch("/webhook/%d" % w["id"], json={"enabled": True}).json()["pending"] == 1


@pytest.mark.parametrize("body,field", [
    ({"url": "ftp://hooks.example.com/"}, "url"),
    ({"url": "http://10.1.2.3/hook"}, "url"),
    ({"url": None}, "url"),
    ({"url": 7}, "url"),
    ({"events": None}, "events"),
    ({"events": []}, "events"),
    ({"events": ["scan.deleted"]}, "events.0"),
    ({"events": "scan.created"}, "events"),
    ({"enabled": "yes"}, "enabled"),
    ({"enabled": None}, "enabled"),
    ({"secret": "whsec_" + "A" * 43 + "="}, "secret"),
    ({"Url": HOOK}, "Url"),
])
def test_invalid_changes_are_422_naming_the_field_and_change_nothing(srv, acct, body, field):
    w = make_hook(acct, ["scan.created"])
    before = acct.get("/webhook/%d" % w["id"]).json()
    r = acct.patch("/webhook/%d" % w["id"], json=dict(body, events=["click.created"])
                   if field != "events" and "events" not in body else body)
    assert r.status_code == 422, r.text
    assert field in r.json()["errors"], r.json()
    assert acct.get("/webhook/%d" % w["id"]).json() == before


def test_bodies_other_accounts_and_read_tokens(srv, acct):
    w = make_hook(acct, ["scan.created"])
    path = "/webhook/%d" % w["id"]
    assert acct.patch(path, data="{", headers={"Content-Type": "application/json"}
                      ).status_code == 400
    assert acct.patch(path, data="[]", headers={"Content-Type": "application/json"}
                      ).status_code == 400
    assert acct.patch(path, data={"enabled": "false"}).status_code == 415
    assert acct.post(path + "/secret", data={"keep_previous_for": "0"}).status_code == 415
    assert acct.patch("/webhook/999999999", json={"enabled": True}).status_code == 404
    assert acct.post("/webhook/999999999/secret").status_code == 404
    srv.account("change-other")
    with Api(srv, srv.token("change-other")) as other:
        for r in (other.patch(path, json={"enabled": False}), other.post(path + "/secret")):
            assert r.status_code == 404 and r.json()["message"] == "Webhook not found."
    reader = srv.admin("token", "add", acct.account, "--scope", "read").stdout.split()[0]
    with Api(srv, reader) as ro:
        assert ro.patch(path, json={"enabled": False}).status_code == 403
        assert ro.post(path + "/secret").status_code == 403
    assert acct.get(path).json()["disabled_at"] is None


def test_a_new_secret_keeps_the_previous_one_for_the_time_asked(srv, acct):
    w = make_hook(acct, ["scan.created"])
    path = "/webhook/%d/secret" % w["id"]
    now = time.time()
    r = acct.post(path)
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["secret"] != w["secret"] and a["secret"].startswith("whsec_")
    until = wh_time(a["previous_secret_until"])
    assert now + 86400 - 5 <= until <= time.time() + 86400 + 5
    assert {k: v for k, v in a.items() if k not in ("secret", "previous_secret_until")} == \
        {k: v for k, v in w.items() if k != "secret"}
    # the database keeps the replaced secret and the new one
    assert secrets(srv, w["id"]) == (a["secret"], w["secret"], int(until))
    b = acct.post(path, json={"keep_previous_for": 60}).json()
    assert secrets(srv, w["id"])[:2] == (b["secret"], a["secret"])
    c = acct.post(path, json={"keep_previous_for": 0}).json()
    assert c["previous_secret_until"] is None
    assert secrets(srv, w["id"]) == (c["secret"], None, None)
    assert len({w["secret"], a["secret"], b["secret"], c["secret"]}) == 4
    for bad in (-1, 604801, 1.5, "60", None, True):
        r = acct.post(path, json={"keep_previous_for": bad})
        assert r.status_code == 422 and "keep_previous_for" in r.json()["errors"], (bad, r.text)
    r = acct.post(path, json={"keep": 60})
    assert r.status_code == 422 and "keep" in r.json()["errors"]
    assert secrets(srv, w["id"])[0] == c["secret"]


def wh_time(s):
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S+0000")) - time.timezone


def secrets(srv, wid):
    cur, prev, until = srv.sql("SELECT secret, secret_prev, secret_prev_until FROM webhooks "
                               "WHERE id = %d" % wid).strip().split("|")
    return cur, prev or None, int(until) if until else None


def test_deliveries_are_signed_by_both_secrets_while_the_previous_one_is_kept():
    rec = wh.Receiver()
    s = start_server(extra=ALLOW, accounts=[("acme", "professional")])
    try:
        with Api(s, s.token("acme")) as api:
            w = make_hook(api, ["tracker.created"], url=rec.url("/rot"))
            new = api.post("/webhook/%d/secret" % w["id"],
                           json={"keep_previous_for": 3600}).json()
            make_tracker(api)
            got = wait_until(lambda: rec.got("/rot"), timeout=30, what="a delivery")
            (_, _, h, body, _), = got
            sigs = h["webhook-signature"].split(" ")
            assert len(sigs) == 2 and all(x.startswith("v1,") for x in sigs)
            assert wh.verify(new["secret"], dict(h, **{"webhook-signature": sigs[0]}), body)
            assert wh.verify(w["secret"], dict(h, **{"webhook-signature": sigs[1]}), body)
            # the previous secret past its time: the new one's signature alone
            s.sql("UPDATE webhooks SET secret_prev_until = %d WHERE id = %d"
                  % (int(time.time()) - 1, w["id"]))
            make_tracker(api)
            got = wait_until(lambda: rec.got("/rot")[1:], timeout=30, what="a second delivery")
            (_, _, h, body, _), = got
            assert " " not in h["webhook-signature"]
            assert wh.verify(new["secret"], h, body) and not wh.verify(w["secret"], h, body)
            # a new secret kept for no time: the previous one signs nothing
            last = api.post("/webhook/%d/secret" % w["id"], json={"keep_previous_for": 0}).json()
            make_tracker(api)
            got = wait_until(lambda: rec.got("/rot")[2:], timeout=30, what="a third delivery")
            (_, _, h, body, _), = got
            assert wh.verify(last["secret"], h, body) and not wh.verify(new["secret"], h, body)
            # re-enabled after the worker disabled it, deliveries go on (to a new url too)
            s.sql("UPDATE webhooks SET disabled_at = 1, disabled_reason = 'gone (410)', "
                  "failures = 10 WHERE id = %d" % w["id"])
            assert api.patch("/webhook/%d" % w["id"], json={"url": rec.url("/moved")}
                             ).status_code == 200
            make_tracker(api)       # (disabled: no event)
            sample(lambda: None, seconds=1.0)
            assert api.patch("/webhook/%d" % w["id"], json={"enabled": True}
                             ).status_code == 200
            t = make_tracker(api)
            got = wait_until(lambda: rec.got("/moved"), timeout=30, what="the delivery after")
            (_, _, h, body, _), = got
            assert json.loads(body)["data"]["tracker_id"] == t["tracker_id"]
            assert wh.verify(last["secret"], h, body)
            assert len(rec.got("/rot")) == 3
    finally:
        s.cleanup()
        rec.stop()


@contextlib.contextmanager
def two_servers():
    """Two servers on one database (two nodes), account acme made, no delivery worker."""
    a = b = None
    try:
        a = Server(extra="QRTrackWebhookDelivery Off\n")
        a.admin("init")
        a.account("acme")
        a.start()
        b = Server(extra="QRTrackWebhookDelivery Off\n", shared_db=a)
        b.start()
        yield a, b
    finally:
        for s in (b, a):
            if s:
                s.cleanup()


def test_another_server_follows_a_change_that_keeps_the_counts_and_the_sum_of_events():
    """Two servers on one database (two nodes). Webhook X takes scans, Y clicks; through
    the first server X is made to take clicks and Y scans: the webhooks' count, highest id,
    disabled count and sum of events stay as they were. The second server's scans are
    written for Y (not X) within half a second, its clicks for X."""
    with two_servers() as (a, b):
        with Api(a, a.token("acme")) as api:
            x = make_hook(api, ["scan.created"])
            y = make_hook(api, ["click.created"])
            t = make_tracker(api)
            time.sleep(1.0)     # (the second server has read both)
            scan(b, t["code"])
            scan(b, t["code"], "l")
            assert rows(a, t["tracker_id"]) == [(x["id"], "scan.created", 0),
                                                (y["id"], "click.created", 0)]
            assert api.patch("/webhook/%d" % x["id"], json={"events": ["click.created"]}
                             ).status_code == 200
            assert api.patch("/webhook/%d" % y["id"], json={"events": ["scan.created"]}
                             ).status_code == 200
        time.sleep(1.0)
        scan(b, t["code"])
        scan(b, t["code"], "l")
        assert rows(a, t["tracker_id"])[2:] == [(y["id"], "scan.created", 0),
                                                (x["id"], "click.created", 0)]


def test_a_stale_cache_writes_no_event_of_a_type_the_webhook_no_longer_takes():
    """The second server's cache still says X takes scans when its scans commit (the
    change made by hand, the writer's next look at the fingerprint not due yet): the events
    X takes are read again in each batch's transaction, and no scan.created row is
    written."""
    with two_servers() as (a, b):
        with Api(a, a.token("acme")) as api:
            x = make_hook(api, ["scan.created", "click.created"])
            t = make_tracker(api)
        time.sleep(1.0)
        scan(b, t["code"])
        assert rows(a, t["tracker_id"]) == [(x["id"], "scan.created", 0)]
        # click.created alone, by hand: the second server's writer checked the webhooks'
        # fingerprint at its scan just now, and looks again half a second later, so the
        # scans that follow at once meet its cache as it was
        a.sql("UPDATE webhooks SET events = events & ~1 WHERE id = %d" % x["id"])
        for _ in range(5):
            scan(b, t["code"])
        scan(b, t["code"], "l")
        assert [r[1] for r in rows(a, t["tracker_id"])] == ["scan.created", "click.created"]


def test_failed_events_since_a_time_wait_again(srv, acct):
    w = make_hook(acct, ["tracker.expired"])
    other = make_hook(acct, ["tracker.expired"])
    now = int(time.time())
    # events of w: failed (their retries spent) two days and ten days ago, failed now,
    # delivered, waiting; one of the other webhook failed
    ids = wh.add_events(srv, w["id"], [1, 1, 2, 3, 4])
    wh.add_events(srv, other["id"], [1])
    ages = dict(zip(ids, [2 * 86400, 10 * 86400, 0, 0, 0]))
    for mid, state in zip(ids, [2, 2, 2, 1, 0]):
        srv.sql("UPDATE webhook_events SET state = %d, attempts = %d, created_at = %d "
                "WHERE msg_id = '%s'" % (state, 8 if state == 2 else 1 if state else 0,
                                         now - ages[mid], mid))
    srv.sql("UPDATE webhook_events SET state = 2, attempts = 8 WHERE webhook_id = %d"
            % other["id"])
    path = "/webhook/%d/recover" % w["id"]
    r = acct.post(path, json={"since": wh.iso(now - 3 * 86400)})
    assert r.status_code == 200, r.text
    assert r.json() == {"recovered": 2}
    got = wh.events(srv, w["id"])
    assert [got[m] for m in ids] == [(0, 0), (2, 8), (0, 0), (1, 1), (0, 0)]
    due = srv.sql("SELECT next_attempt_at FROM webhook_events WHERE msg_id = '%s'" % ids[0])
    assert abs(int(due) - time.time()) < 30
    assert wh.events(srv, other["id"]) == {m: (2, 8) for m in wh.events(srv, other["id"])}
    assert acct.get("/webhook/%d" % w["id"]).json()["pending"] == 3
    # by default the week kept: the ten-day-old one is past it
    assert acct.post(path).json() == {"recovered": 0}
    srv.sql("UPDATE webhook_events SET created_at = %d WHERE msg_id = '%s'"
            % (now - 6 * 86400, ids[1]))
    assert acct.post(path, json={}).json() == {"recovered": 1}
    # a disabled webhook: 409, nothing changed
    srv.sql("UPDATE webhook_events SET state = 2 WHERE webhook_id = %d" % w["id"])
    assert acct.patch("/webhook/%d" % w["id"], json={"enabled": False}).status_code == 200
    r = acct.post(path)
    assert r.status_code == 409 and "enable it again" in r.json()["message"], r.text
    assert {s for s, _ in wh.events(srv, w["id"]).values()} == {2}
    for bad in ({"since": "yesterday"}, {"since": 1}, {"since": None}, {"from": wh.iso(now)}):
        r = acct.post("/webhook/%d/recover" % other["id"], json=bad)
        assert r.status_code == 422, (bad, r.text)
    assert acct.post("/webhook/%d/recover" % other["id"], data={"since": "x"}
                     ).status_code == 415
    assert acct.post("/webhook/999999999/recover").status_code == 404
    srv.account("recover-other")
    with Api(srv, srv.token("recover-other")) as stranger:
        assert stranger.post("/webhook/%d/recover" % other["id"]).status_code == 404
    reader = srv.admin("token", "add", acct.account, "--scope", "read").stdout.split()[0]
    with Api(srv, reader) as ro:
        assert ro.post("/webhook/%d/recover" % other["id"]).status_code == 403
    assert {s for s, _ in wh.events(srv, other["id"]).values()} == {2}


def test_recovered_events_are_delivered_with_their_webhook_ids():
    rec = wh.Receiver()
    s = start_server(extra=ALLOW, accounts=[("acme", "professional")])
    try:
        with Api(s, s.token("acme")) as api:
            w = make_hook(api, ["tracker.expired"], url=rec.url("/again"))
            # two events whose retries were spent while the receiver was down
            ids = wh.add_events(s, w["id"], [5, 5], due=int(time.time()) + 86400)
            s.sql("UPDATE webhook_events SET state = 2, attempts = 8 WHERE webhook_id = %d"
                  % w["id"])
            sample(lambda: None, seconds=1.0)
            assert rec.got("/again") == []
            assert api.post("/webhook/%d/recover" % w["id"]).json() == {"recovered": 2}
            got = wait_until(lambda: rec.got("/again") if len(rec.got("/again")) >= 2
                             else None, timeout=30, what="the recovered events")
            assert [h["webhook-id"] for _, _, h, _, _ in got] == ids
            assert all(wh.verify(w["secret"], h, body) for _, _, h, body, _ in got)
            wait_until(lambda: set(wh.events(s, w["id"]).values()) == {(1, 1)},
                       timeout=30, what="both delivered at their first attempt")
    finally:
        s.cleanup()
        rec.stop()


def test_a_test_event_is_written_for_that_webhook_alone(srv, acct):
    """POST /webhook/<id>/test: a webhook.test event waiting for the webhook asked (not for
    the account's others, whatever events it takes), due now; 409 while it is disabled."""
    w = make_hook(acct, ["tracker.expired"])
    other = make_hook(acct, ["tracker.expired", "scan.created"])
    path = "/webhook/%d/test" % w["id"]
    r = acct.post(path)
    assert r.status_code == 202, r.text
    sent = r.json()
    assert sent["event_type"] == "webhook.test" and sent["event_id"].startswith("msg_"), sent
    row = srv.sql("SELECT msg_id, event_type, tracker_id, state, next_attempt_at, body "
                  "FROM webhook_events WHERE webhook_id = %d" % w["id"]).strip().split("|", 5)
    assert row[:4] == [sent["event_id"], "webhook.test", "0", "0"], row
    assert abs(int(row[4]) - time.time()) < 30
    body = json.loads(row[5])
    assert body["type"] == "webhook.test" and body["data"] == {"webhook_id": w["id"]}, body
    assert wh.events(srv, other["id"]) == {}
    assert acct.get("/webhook/%d" % w["id"]).json()["pending"] == 1
    assert acct.post(path, json={}).status_code == 202
    assert len(wh.events(srv, w["id"])) == 2
    # bodies, other accounts, read tokens, unknown webhooks: nothing written
    for r in (acct.post(path, json={"url": HOOK}), acct.post(path, json={"x": None})):
        assert r.status_code == 422, r.text
    assert acct.post(path, data="{", headers={"Content-Type": "application/json"}
                     ).status_code == 400
    assert acct.post(path, data={"x": "1"}).status_code == 415
    assert acct.post("/webhook/999999999/test").status_code == 404
    assert acct.post("/webhook/x/test").status_code == 404
    srv.account("test-other")
    with Api(srv, srv.token("test-other")) as stranger:
        r = stranger.post(path)
        assert r.status_code == 404 and r.json()["message"] == "Webhook not found."
    reader = srv.admin("token", "add", acct.account, "--scope", "read").stdout.split()[0]
    with Api(srv, reader) as ro:
        assert ro.post(path).status_code == 403
    assert len(wh.events(srv, w["id"])) == 2
    # disabled: 409, nothing written (its waiting events were dropped by the disable)
    assert acct.patch("/webhook/%d" % w["id"], json={"enabled": False}).status_code == 200
    r = acct.post(path)
    assert r.status_code == 409 and "enable it again" in r.json()["message"], r.text
    assert {st for st, _ in wh.events(srv, w["id"]).values()} == {3}
    assert wh.events(srv, other["id"]) == {}


def test_a_test_event_is_delivered_signed_and_listed():
    """The receiver gets the test event signed with the webhook's secret, its webhook-id the
    one the answer gave, and the deliveries list its attempt (the dashboard's card too)."""
    rec = wh.Receiver()
    s = start_server(extra=ALLOW, accounts=[("acme", "professional")])
    try:
        with Api(s, s.token("acme")) as api:
            w = make_hook(api, ["scan.created"], url=rec.url("/test"))
            sent = api.post("/webhook/%d/test" % w["id"]).json()
            got = wait_until(lambda: rec.got("/test"), timeout=30, what="the test delivery")
            (_, _, h, body, _), = got
            assert h["webhook-id"] == sent["event_id"]
            assert wh.verify(w["secret"], h, body)
            doc = json.loads(body)
            assert doc["type"] == "webhook.test" and doc["data"] == {"webhook_id": w["id"]}
            listed = wait_until(lambda: api.get("/webhook", params={"attempts": 1}).json()
                                ["data"][0]["attempts"], timeout=30, what="the attempt listed")
            assert [(a["event_id"], a["event_type"], a["http_status"]) for a in listed] == \
                [(sent["event_id"], "webhook.test", 200)]
            assert api.get("/webhook/%d" % w["id"]).json()["pending"] == 0
    finally:
        s.cleanup()
        rec.stop()
