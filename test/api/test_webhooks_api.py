"""Webhooks (CONTRACT section 7, "Webhooks"): the API, the events written to the outbox
in the transaction of what they report, and the outbox bound.

POST/GET/DELETE /webhook and GET /webhook/<id>/deliveries; the secret is shown once;
other accounts' webhooks are 404; QRTrackWebhookLimit. Scans and clicks make one
webhook_events row per subscribed, enabled webhook (none for others, none when their
commit fails); tracker changes and expiry make theirs; past QRTrackWebhookOutboxLimit
the oldest pending rows are dropped and counted. Deliveries are the worker's (not here):
the rows are read from the database.
"""
import base64
import calendar
import concurrent.futures
import json
import re
import time

import pytest
import requests

from conftest import BACKEND, Api, PlainApi, Server, apxs, start_server
from lib.outside import OutsideLock
from lib.server import qrtrack_status
from lib.wait import wait_until

LIMIT = 3
OUTBOX = 10
STATUS = ("LoadModule status_module %s/mod_status.so\n<Location /server-status>\n"
          "    SetHandler server-status\n</Location>\n")
HOOK = "https://hooks.example.com/qr"


@pytest.fixture(scope="module")
def srv():
    # (this file tests the API and the outbox: no delivery worker writes attempts here)
    s = start_server(extra="QRTrackWebhookLimit %d\nQRTrackWebhookOutboxLimit %d\n"
                           "QRTrackWebhookAllow 10.20.0.0/16 fd20::/16\n"
                           "QRTrackWebhookDelivery Off\n%s"
                     % (LIMIT, OUTBOX, STATUS % apxs("LIBEXECDIR")))
    yield s
    s.cleanup()


_accounts = [0]


@pytest.fixture
def acct(srv):
    """A fresh account (webhooks count per account) and a client of it."""
    _accounts[0] += 1
    name = "hooks%d" % _accounts[0]
    srv.account(name)
    with Api(srv, srv.token(name)) as s:
        yield s


def make_hook(api, events, url=HOOK):
    r = api.post("/webhook", json={"url": url, "events": events})
    assert r.status_code == 200, r.text
    return r.json()


def make_tracker(api, **kw):
    body = {"redirect_url": "https://example.com/landing"}
    body.update(kw)
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def scan(srv, code, kind="q"):
    return requests.get("%s/%s/%s" % (srv.base, kind, code), allow_redirects=False, timeout=30,
                        headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"})


def events(srv, where):
    """webhook_events rows: (id, webhook_id, msg_id, event_type, tracker_id, visit_id, body
    as JSON, created_at, next_attempt_at, state), by id. A visit's event holds its visit's
    id and no body (rendered at delivery)."""
    out = []
    for line in srv.sql("SELECT id, webhook_id, msg_id, event_type, tracker_id, visit_id, body,"
                        " created_at, next_attempt_at, state FROM webhook_events WHERE %s"
                        " ORDER BY id" % where).splitlines():
        if not line.strip():
            continue
        f = line.split("|")
        body = "|".join(f[6:-3])
        out.append({"id": int(f[0]), "webhook_id": int(f[1]), "msg_id": f[2], "type": f[3],
                    "tracker_id": int(f[4]) if f[4] else None,
                    "visit_id": int(f[5]) if f[5] else None,
                    "body": json.loads(body) if body else None, "created_at": int(f[-3]),
                    "next_attempt_at": int(f[-2]), "state": int(f[-1])})
    return out


def of_tracker(srv, tid):
    return events(srv, "tracker_id = %d" % tid)


# -- the API ---------------------------------------------------------------------------

def test_create_list_show_delete_and_the_secret_shown_once(acct):
    w = make_hook(acct, ["scan.created", "tracker.updated", "scan.created"])
    assert w["url"] == HOOK and w["events"] == ["scan.created", "tracker.updated"]
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", w["secret"])
    assert len(base64.b64decode(w["secret"][6:])) == 32
    assert w["disabled_at"] is None and w["failures"] == 0
    other = make_hook(acct, ["click.created"], url="http://hooks.example.com:8080/x?y=1")
    assert other["secret"] != w["secret"]

    r = acct.get("/webhook")
    assert r.status_code == 200
    listed = r.json()
    assert [h["id"] for h in listed["data"]] == [w["id"], other["id"]]
    assert listed["meta"]["total"] == 2
    assert all("secret" not in h for h in listed["data"])
    assert w["secret"] not in r.text

    r = acct.get("/webhook/%d" % w["id"])
    assert r.status_code == 200
    shown = r.json()
    assert "secret" not in shown and w["secret"] not in r.text
    assert shown["pending"] == 0 and shown["dropped"] == 0
    assert {k: shown[k] for k in ("id", "url", "events", "created_at")} == \
        {k: w[k] for k in ("id", "url", "events", "created_at")}

    r = acct.delete("/webhook/%d" % w["id"])
    assert r.status_code == 204
    assert acct.get("/webhook/%d" % w["id"]).status_code == 404
    assert acct.delete("/webhook/%d" % w["id"]).status_code == 404
    assert [h["id"] for h in acct.get("/webhook").json()["data"]] == [other["id"]]


@pytest.mark.parametrize("body,field", [
    ({"events": ["scan.created"]}, "url"),
    ({"url": 5, "events": ["scan.created"]}, "url"),
    ({"url": "ftp://hooks.example.com/", "events": ["scan.created"]}, "url"),
    ({"url": "hooks.example.com/x", "events": ["scan.created"]}, "url"),
    ({"url": "https://hooks.example.com/" + "a" * 2030, "events": ["scan.created"]}, "url"),
    ({"url": "https://user:pw@hooks.example.com/", "events": ["scan.created"]}, "url"),
    ({"url": "https://user@hooks.example.com/", "events": ["scan.created"]}, "url"),
    ({"url": "http://127.0.0.1:8080/", "events": ["scan.created"]}, "url"),
    ({"url": "http://10.1.2.3/", "events": ["scan.created"]}, "url"),
    ({"url": "http://192.168.0.10/", "events": ["scan.created"]}, "url"),
    ({"url": "http://172.20.0.1/", "events": ["scan.created"]}, "url"),
    ({"url": "http://169.254.169.254/latest/meta-data/", "events": ["scan.created"]}, "url"),
    ({"url": "http://0.0.0.0/", "events": ["scan.created"]}, "url"),
    ({"url": "http://[::1]/", "events": ["scan.created"]}, "url"),
    ({"url": "http://[::ffff:127.0.0.1]/", "events": ["scan.created"]}, "url"),
    ({"url": "http://[fe80::1]/", "events": ["scan.created"]}, "url"),
    ({"url": "http://[fd00::1]/", "events": ["scan.created"]}, "url"),
    ({"url": HOOK}, "events"),
    # the server makes the secret: one the client chose would be ignored, not used
    ({"url": HOOK, "events": ["scan.created"], "secret": "mine"}, "secret"),
    ({"url": HOOK, "event": ["scan.created"]}, "event"),
    ({"url": HOOK, "events": []}, "events"),
    ({"url": HOOK, "events": "scan.created"}, "events"),
    ({"url": HOOK, "events": ["scan.created"] * 33}, "events"),
    ({"url": HOOK, "events": ["scan.created", "scan.deleted"]}, "events.1"),
    ({"url": HOOK, "events": [7]}, "events.0"),
])
def test_invalid_webhooks_are_422_naming_the_field(acct, body, field):
    r = acct.post("/webhook", json=body)
    assert r.status_code == 422, r.text
    assert field in r.json()["errors"], r.json()
    assert acct.get("/webhook").json()["meta"]["total"] == 0


def test_public_addresses_and_names_are_accepted(acct):
    for url in ("http://93.184.216.34/hook", "https://[2606:4700::1111]/x",
                "https://localhost.example/"):
        make_hook(acct, ["scan.created"], url=url)


def test_inside_addresses_that_qrtrackwebhookallow_lists_are_accepted(acct):
    """QRTrackWebhookAllow lists 10.20.0.0/16 and fd20::/16: a URL naming an address in
    them is accepted, its neighbours and documentation addresses are not."""
    for url in ("http://10.20.1.2:8080/hook", "https://[fd20::5]/x"):
        make_hook(acct, ["scan.created"], url=url)
    for url in ("http://10.21.0.1/hook", "https://[fd21::5]/x", "http://203.0.113.7/"):
        r = acct.post("/webhook", json={"url": url, "events": ["scan.created"]})
        assert r.status_code == 422 and "url" in r.json()["errors"], (url, r.text)


def test_a_body_that_is_not_json_is_400(acct):
    r = acct.post("/webhook", data="{", headers={"Content-Type": "application/json"})
    assert r.status_code == 400


def test_a_form_body_is_415_not_a_missing_url(acct):
    # (a form's fields were read as none sent: "The url field is required." for a url given)
    for kw in ({"data": {"url": HOOK, "events": "scan.created"}},
               {"files": {"url": (None, HOOK), "events": (None, "scan.created")}}):
        r = acct.post("/webhook", **kw)
        assert r.status_code == 415, r.text
        assert "application/json" in r.json()["message"]
    assert acct.get("/webhook").json()["data"] == []


def test_other_accounts_webhooks_are_404(srv, acct):
    w = make_hook(acct, ["scan.created"])
    srv.account("hooks-stranger")
    with Api(srv, srv.token("hooks-stranger")) as them:
        for path in ("/webhook/%d" % w["id"], "/webhook/%d/deliveries" % w["id"]):
            r = them.get(path)
            assert r.status_code == 404 and r.json()["message"] == "Webhook not found."
        assert them.delete("/webhook/%d" % w["id"]).status_code == 404
        assert them.get("/webhook").json()["data"] == []
    assert acct.get("/webhook/%d" % w["id"]).status_code == 200
    assert acct.get("/webhook/999999999").status_code == 404


def test_the_per_account_limit_is_422_with_a_clear_message(acct):
    hooks = [make_hook(acct, ["scan.created"]) for _ in range(LIMIT)]
    r = acct.post("/webhook", json={"url": HOOK, "events": ["scan.created"]})
    assert r.status_code == 422
    assert "QRTrackWebhookLimit" in r.json()["message"] and "%d" % LIMIT in r.json()["message"]
    assert acct.delete("/webhook/%d" % hooks[0]["id"]).status_code == 204
    make_hook(acct, ["scan.created"])


def test_creations_at_once_never_pass_the_limit(srv, acct):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: PlainApi(srv, acct.token).post(
            "/webhook", json={"url": HOOK, "events": ["scan.created"]}).status_code,
            range(8)))
    assert codes.count(200) <= LIMIT and set(codes) <= {200, 422, 503}, codes
    assert acct.get("/webhook").json()["meta"]["total"] == codes.count(200)


def test_deliveries_list_attempts_newest_first_with_the_state(srv, acct):
    w = make_hook(acct, ["tracker.created"])
    t = make_tracker(acct)
    ev = [e for e in of_tracker(srv, t["tracker_id"]) if e["webhook_id"] == w["id"]]
    assert len(ev) == 1
    # what the delivery worker writes, by hand
    srv.sql("INSERT INTO webhook_attempts (event_id, webhook_id, attempt, http_status, error, at,"
            " next_attempt_at) VALUES (%d, %d, 1, NULL, 'timed out', 1790000000, 1790000005);"
            "INSERT INTO webhook_attempts (event_id, webhook_id, attempt, http_status, error, at,"
            " next_attempt_at) VALUES (%d, %d, 2, 200, NULL, 1790000006, NULL)"
            % (ev[0]["id"], w["id"], ev[0]["id"], w["id"]))
    r = acct.get("/webhook/%d/deliveries" % w["id"])
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["meta"]["total"] == 2
    assert [a["attempt"] for a in d["data"]] == [2, 1]
    assert d["data"][0]["event_id"] == ev[0]["msg_id"]
    assert d["data"][0]["event_type"] == "tracker.created"
    assert d["data"][0]["http_status"] == 200 and d["data"][0]["next_attempt_at"] is None
    assert d["data"][1]["http_status"] is None and d["data"][1]["error"] == "timed out"
    assert d["data"][1]["at"] == "2026-09-21T14:13:20+0000"
    assert d["state"] == {"disabled_at": None, "disabled_reason": None, "failures": 0,
                          "pending": 1, "dropped": 0}
    r = acct.get("/webhook/%d/deliveries?rows=1&page=2" % w["id"])
    assert [a["attempt"] for a in r.json()["data"]] == [1]
    assert acct.get("/webhook/%d/deliveries?rows=1001" % w["id"]).status_code == 422


def test_the_list_with_attempts_carries_each_webhooks_state_and_latest_attempts(srv, acct):
    """GET /webhook?attempts=N: each webhook as GET /webhook/<id> shows it and its latest N
    attempts as deliveries lists them, so a page of webhooks and their state is one request
    (the dashboard's card made one more a webhook); without attempts, the list as before."""
    busy = make_hook(acct, ["tracker.created"])
    quiet = make_hook(acct, ["scan.created"])
    ev = [e for e in of_tracker(srv, make_tracker(acct)["tracker_id"])
          if e["webhook_id"] == busy["id"]]
    srv.sql(";".join("INSERT INTO webhook_attempts (event_id, webhook_id, attempt, http_status,"
                     " error, at, next_attempt_at) VALUES (%d, %d, %d, 500, 'HTTP 500', %d, %d)"
                     % (ev[0]["id"], busy["id"], n, 1790000000 + n, 1790000100 + n)
                     for n in (1, 2, 3)))
    srv.account("hooks-neighbour")
    with Api(srv, srv.token("hooks-neighbour")) as them:
        theirs = make_hook(them, ["tracker.created"])
        make_tracker(them)
    r = acct.get("/webhook", params={"attempts": 2})
    assert r.status_code == 200, r.text
    listed = {w["id"]: w for w in r.json()["data"]}
    assert set(listed) == {busy["id"], quiet["id"]} and theirs["id"] not in listed
    for w in (busy, quiet):
        shown = acct.get("/webhook/%d" % w["id"]).json()
        latest = acct.get("/webhook/%d/deliveries" % w["id"], params={"rows": 2}).json()["data"]
        assert listed[w["id"]] == dict(shown, attempts=latest), listed[w["id"]]
    assert [a["attempt"] for a in listed[busy["id"]]["attempts"]] == [3, 2]
    assert listed[busy["id"]]["pending"] == 1 and listed[quiet["id"]]["pending"] == 0
    assert listed[quiet["id"]]["attempts"] == []
    none = acct.get("/webhook", params={"attempts": 0}).json()["data"]
    assert [(w["pending"], w["attempts"]) for w in none] == [(1, []), (0, [])]
    plain = acct.get("/webhook").json()["data"]
    assert all(set(w) == {"id", "url", "events", "created_at", "disabled_at",
                          "disabled_reason", "failures"} for w in plain), plain
    for bad in ("21", "-1", "x", "", "1.5", "99999999999999999999"):
        r = acct.get("/webhook", params={"attempts": bad})
        assert r.status_code == 422 and "attempts" in r.json()["errors"], (bad, r.text)


# -- events of scans and clicks ----------------------------------------------------------

def test_scans_and_clicks_make_one_row_per_subscribed_enabled_webhook(srv, acct):
    scans = make_hook(acct, ["scan.created"])
    both = make_hook(acct, ["scan.created", "click.created"])
    make_hook(acct, ["tracker.deleted"])
    # a disabled webhook gets nothing (the worker disables; here by hand, then a change
    # through the API makes the writers read the webhooks again at once)
    srv.sql("UPDATE webhooks SET disabled_at = 1, disabled_reason = 'gone (410)' "
            "WHERE id = %d" % scans["id"])
    t = make_tracker(acct)
    assert acct.delete("/webhook/%d" % both["id"]).status_code == 204
    both = make_hook(acct, ["scan.created", "click.created"])
    assert scan(srv, t["code"]).status_code == 302
    assert scan(srv, t["code"], "l").status_code == 302
    rows = of_tracker(srv, t["tracker_id"])
    assert [(e["webhook_id"], e["type"]) for e in rows] == \
        [(both["id"], "scan.created"), (both["id"], "click.created")]
    visits = acct.get("/visits/tracker/%d" % t["tracker_id"]).json()["data"]
    by_id = {v["id"]: v for v in visits}
    # the rows hold the visits' references; the bodies rendered from them at delivery are
    # test_webhooks_delivery's test_a_visits_event_is_rendered_at_delivery_as_the_api_shows_it
    for e in rows:
        assert re.fullmatch(r"msg_[A-Za-z0-9_-]{22,}", e["msg_id"])
        assert e["state"] == 0 and e["next_attempt_at"] == e["created_at"]
        assert e["body"] is None
        assert by_id[e["visit_id"]]["source"] == e["type"].split(".")[0]
    assert len({e["msg_id"] for e in rows}) == len(rows)
    assert len({e["visit_id"] for e in rows}) == len(rows)
    shown = acct.get("/webhook/%d" % both["id"]).json()
    assert shown["pending"] == 2


def test_accounts_without_webhooks_and_unsubscribed_events_get_no_rows(srv, acct):
    make_hook(acct, ["click.created"])
    t = make_tracker(acct)
    srv.account("hooks-none")
    with Api(srv, srv.token("hooks-none")) as none:
        u = make_tracker(none)
    for _ in range(3):
        assert scan(srv, t["code"]).status_code == 302
        assert scan(srv, u["code"]).status_code == 302
    assert of_tracker(srv, t["tracker_id"]) == [] and of_tracker(srv, u["tracker_id"]) == []
    assert scan(srv, t["code"], "l").status_code == 302
    assert [e["type"] for e in of_tracker(srv, t["tracker_id"])] == ["click.created"]


def test_a_visit_whose_commit_fails_makes_no_row():
    """The outbox's insert fails for one tracker (a trigger made before the server starts:
    a schema changed under a running SQLite server breaks its prepared statements): its
    visits' transactions are undone whole, visit and event alike."""
    s = Server()
    try:
        s.admin("init")
        s.account("acme")
        if BACKEND == "pgsql":
            s.sql("CREATE FUNCTION qrt_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
                  "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;"
                  "CREATE TRIGGER qrt_test_refuse BEFORE INSERT ON webhook_events FOR EACH ROW "
                  "WHEN (NEW.tracker_id = 1) EXECUTE FUNCTION qrt_test_refuse()")
        else:
            s.sql("CREATE TRIGGER qrt_test_refuse BEFORE INSERT ON webhook_events "
                  "WHEN NEW.tracker_id = 1 BEGIN SELECT RAISE(ABORT, 'refused by the test'); "
                  "END")
        s.start()
        with Api(s, s.token("acme")) as api:
            w = make_hook(api, ["scan.created"])
            t, u = make_tracker(api), make_tracker(api)
            assert t["tracker_id"] == 1
            r = scan(s, t["code"])
            assert r.status_code == 503, r.status_code
            assert of_tracker(s, 1) == []
            assert api.get("/tracker/analytics/1").json()["totalScans"] == 0
            assert api.get("/visits/tracker/1").json()["data"] == []
            # another tracker's scan is recorded with its event
            assert scan(s, u["code"]).status_code == 302
            rows = of_tracker(s, u["tracker_id"])
            assert [(e["webhook_id"], e["type"]) for e in rows] == [(w["id"], "scan.created")]
    finally:
        s.cleanup()


# -- events of trackers -------------------------------------------------------------------

def test_tracker_created_updated_deleted_carry_the_tracker_as_shown(srv, acct):
    w = make_hook(acct, ["tracker.created", "tracker.updated", "tracker.deleted"])
    make_hook(acct, ["scan.created"])
    t = make_tracker(acct, name="first", tags=["a:b"], password="hunter22")
    r = acct.patch("/tracker/%d" % t["tracker_id"], json={"name": "second"})
    assert r.status_code == 200
    patched = r.json()
    shown = acct.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert acct.delete("/tracker/%d" % t["tracker_id"]).status_code == 204
    rows = of_tracker(srv, t["tracker_id"])
    assert [(e["webhook_id"], e["type"]) for e in rows] == [
        (w["id"], "tracker.created"), (w["id"], "tracker.updated"), (w["id"], "tracker.deleted")]
    assert rows[0]["body"]["data"] == t
    assert rows[1]["body"]["data"] == patched
    assert rows[2]["body"]["data"] == shown
    for e in rows:
        assert "hunter22" not in json.dumps(e["body"]) and "password" not in e["body"]["data"]
        assert e["body"]["data"]["password_protected"] is True


def test_bulk_and_keyed_creates_make_tracker_created_as_shown(srv, acct):
    """POST /tracker/bulk and a create under an Idempotency-Key take another path to the
    database than a plain create: their trackers are announced too, once, as answered
    (a replay announces nothing)."""
    w = make_hook(acct, ["tracker.created"])
    r = acct.post("/tracker/bulk", json={"trackers": [
        {"redirect_url": "https://example.com/b1", "name": "bulk one"},
        {"redirect_url": "nope"},
        {"redirect_url": "https://example.com/b2", "tags": ["c:d"]}]})
    assert r.status_code == 200, r.text
    made = [x["tracker"] for x in r.json()["data"] if "tracker" in x]
    assert len(made) == 2
    for t in made:
        rows = of_tracker(srv, t["tracker_id"])
        assert [(e["webhook_id"], e["type"]) for e in rows] == [(w["id"], "tracker.created")]
        assert rows[0]["body"]["data"] == t
    key = {"Idempotency-Key": "webhook-key-1"}
    body = {"redirect_url": "https://example.com/keyed"}
    first = acct.post("/tracker", json=body, headers=key)
    assert first.status_code == 200, first.text
    again = acct.post("/tracker", json=body, headers=key)
    assert again.json() == first.json()
    rows = of_tracker(srv, first.json()["tracker_id"])
    assert [(e["webhook_id"], e["type"]) for e in rows] == [(w["id"], "tracker.created")]
    assert rows[0]["body"]["data"] == first.json()


def test_a_failed_patch_makes_no_event(srv, acct):
    make_hook(acct, ["tracker.updated"])
    t = make_tracker(acct)
    r = acct.patch("/tracker/%d" % t["tracker_id"], json={"redirect_url": "ftp://x"})
    assert r.status_code == 422
    assert of_tracker(srv, t["tracker_id"]) == []


def test_a_patch_that_changes_nothing_makes_no_event(srv, acct):
    # (as it leaves no row in the history)
    make_hook(acct, ["tracker.updated"])
    t = make_tracker(acct, name="same", tags=["a:b"])
    for body in ({}, {"name": "same"}, {"tags": ["a:b"], "redirect_url": t["redirect_url"]}):
        r = acct.patch("/tracker/%d" % t["tracker_id"], json=body)
        assert r.status_code == 200, r.text
    assert of_tracker(srv, t["tracker_id"]) == []
    assert acct.patch("/tracker/%d" % t["tracker_id"], json={"name": "other"}) \
        .status_code == 200
    assert [e["type"] for e in of_tracker(srv, t["tracker_id"])] == ["tracker.updated"]


def test_tracker_expired_once_when_max_scans_is_reached(srv, acct):
    w = make_hook(acct, ["tracker.expired"])
    t = make_tracker(acct, max_scans=2)
    for _ in range(4):
        scan(srv, t["code"])
    rows = of_tracker(srv, t["tracker_id"])
    assert [(e["webhook_id"], e["type"]) for e in rows] == [(w["id"], "tracker.expired")]
    data = rows[0]["body"]["data"]
    assert data["tracker_id"] == t["tracker_id"] and data["code"] == t["code"]
    assert data["reason"] == "max_scans" and data["max_scans"] == 2


def test_the_scan_that_takes_the_last_comes_before_the_expiry_and_the_scans_after_it(srv,
                                                                                        acct):
    """A tracker's events in the order things happened: the scan that took the last of
    max_scans, then tracker.expired, then the scans sent to expired_url; one scan at a
    time, and scans at once whose batch holds scans on both sides of the cap. (Each case
    with a webhook of its own account: its events stay within the outbox's bound.)"""
    make_hook(acct, ["scan.created", "tracker.expired"])
    over = "https://example.com/over"
    one = make_tracker(acct, max_scans=2, expired_url=over)
    for _ in range(3):
        assert scan(srv, one["code"]).status_code == 302
    assert [e["type"] for e in of_tracker(srv, one["tracker_id"])] == [
        "scan.created", "scan.created", "tracker.expired", "scan.created"]
    for _ in range(3):
        _accounts[0] += 1
        name = "hooks%d" % _accounts[0]
        srv.account(name)
        with Api(srv, srv.token(name)) as other:
            make_hook(other, ["scan.created", "tracker.expired"])
            t = make_tracker(other, max_scans=3, expired_url=over)
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
            got = list(ex.map(lambda _: scan(srv, t["code"]).headers["Location"], range(8)))
        assert got.count(over) == 5, got
        sent = {int(x) for x in srv.sql(
            "SELECT v.id FROM visit_rows v JOIN visit_destinations d ON d.id = v.dest_id "
            "WHERE v.tracker_id = %d AND d.url <> '%s'" % (t["tracker_id"], over)).split()}
        order = ["sent" if e["visit_id"] in sent else e["type"] if e["visit_id"] is None
                 else "over" for e in of_tracker(srv, t["tracker_id"])]
        assert order == ["sent"] * 3 + ["tracker.expired"] + ["over"] * 5, order


def test_tracker_expired_once_at_the_first_scan_after_valid_until(srv, acct):
    w = make_hook(acct, ["tracker.expired"])
    past = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(time.time() - 3600))
    t = make_tracker(acct, valid_until=past)
    for _ in range(3):
        assert scan(srv, t["code"]).status_code == 410
    rows = of_tracker(srv, t["tracker_id"])
    assert [(e["webhook_id"], e["type"]) for e in rows] == [(w["id"], "tracker.expired")]
    assert rows[0]["body"]["data"]["reason"] == "valid_until"
    assert rows[0]["body"]["data"]["valid_until"] == past


def test_a_patch_that_ends_a_trackers_validity_sends_tracker_expired(srv, acct):
    """A PATCH that puts max_scans at or under the scans sent on, or valid_until before the
    tracker's last visit and before now, makes tracker.expired after its tracker.updated
    (no later scan would: none takes the last of the cap, none is the first after
    valid_until); expired_at is the change's time. valid_until moved before now with no
    visit since leaves it to the next scan, as a valid_until that passes does."""
    w = make_hook(acct, ["tracker.updated", "tracker.expired"])
    hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(time.time() - 3600))
    capped = make_tracker(acct, max_scans=5)
    dated = make_tracker(acct)
    quiet = make_tracker(acct)
    time.sleep(0.7)     # every scan writer knows the webhook (QRT_WEBHOOK_CHECK)
    for t in (capped, capped, capped, dated, dated):
        assert scan(srv, t["code"]).status_code == 302
    before = int(time.time())
    for t, body in ((capped, {"max_scans": 2}), (dated, {"valid_until": hour_ago}),
                    (quiet, {"valid_until": hour_ago})):
        r = acct.patch("/tracker/%d" % t["tracker_id"], json=body)
        assert r.status_code == 200, r.text
    after = int(time.time())
    for t in (capped, dated, quiet):
        assert scan(srv, t["code"]).status_code == 410
    kinds = {t["tracker_id"]: [(e["webhook_id"], e["type"]) for e in of_tracker(srv,
                                                                             t["tracker_id"])]
             for t in (capped, dated, quiet)}
    # (the quiet one's from its first scan after valid_until, as before)
    for t in (capped, dated, quiet):
        assert kinds[t["tracker_id"]] == [(w["id"], "tracker.updated"),
                                          (w["id"], "tracker.expired")], kinds
    data = {t["tracker_id"]: of_tracker(srv, t["tracker_id"])[1]["body"]["data"]
            for t in (capped, dated)}
    assert data[capped["tracker_id"]]["reason"] == "max_scans"
    assert data[capped["tracker_id"]]["max_scans"] == 2
    assert data[dated["tracker_id"]]["reason"] == "valid_until"
    assert data[dated["tracker_id"]]["valid_until"] == hour_ago
    for d in data.values():
        at = calendar.timegm(time.strptime(d["expired_at"][:19], "%Y-%m-%dT%H:%M:%S"))
        assert before - 1 <= at <= after + 1, d
    # a PATCH that leaves it expired makes no second one
    r = acct.patch("/tracker/%d" % capped["tracker_id"], json={"max_scans": 1})
    assert r.status_code == 200, r.text
    assert [e["type"] for e in of_tracker(srv, capped["tracker_id"])].count(
        "tracker.expired") == 1


# -- the outbox bound ------------------------------------------------------------------

def test_past_the_outbox_bound_the_oldest_pending_events_are_dropped_and_counted(srv, acct):
    """The oldest events past the bound are dropped: deleted when never tried (counted
    in webhook_drops), kept as dropped rows when tried (their attempts name them)."""
    before = int(qrtrack_status(srv).get("QRTrackWebhookDropped", "0"))
    w = make_hook(acct, ["scan.created"])
    t = make_tracker(acct)
    assert scan(srv, t["code"]).status_code == 302
    first = of_tracker(srv, t["tracker_id"])[0]["id"]
    srv.sql("UPDATE webhook_events SET attempts = 1 WHERE id = %d" % first)
    for _ in range(OUTBOX + 4):
        assert scan(srv, t["code"]).status_code == 302

    def bounded():
        s = acct.get("/webhook/%d" % w["id"]).json()
        return s if s["pending"] == OUTBOX else None
    shown = wait_until(bounded, timeout=10, interval=0.1, what="the bound applied")
    assert shown["dropped"] == 5
    rows = of_tracker(srv, t["tracker_id"])
    assert [(e["id"], e["state"]) for e in rows[:1]] == [(first, 3)]
    assert [e["state"] for e in rows[1:]] == [0] * OUTBOX
    newest = [int(x) for x in srv.sql("SELECT id FROM visits WHERE tracker_id = %d ORDER BY id "
                                      "DESC LIMIT %d" % (t["tracker_id"], OUTBOX)).split()]
    assert [e["visit_id"] for e in rows[1:]] == newest[::-1]
    assert rows[0]["body"] is None
    assert int(srv.sql("SELECT SUM(n) FROM webhook_drops WHERE webhook_id = %d"
                       % w["id"]).strip()) == 4
    assert int(qrtrack_status(srv)["QRTrackWebhookDropped"]) - before == 5
    d = acct.get("/webhook/%d/deliveries" % w["id"]).json()
    assert d["state"]["pending"] == OUTBOX and d["state"]["dropped"] == 5


def test_deleting_a_webhook_drops_its_pending_events(srv, acct):
    w = make_hook(acct, ["scan.created"])
    keep = make_hook(acct, ["scan.created"])
    t = make_tracker(acct)
    assert scan(srv, t["code"]).status_code == 302
    assert acct.delete("/webhook/%d" % w["id"]).status_code == 204
    rows = of_tracker(srv, t["tracker_id"])
    assert sorted((e["webhook_id"], e["state"]) for e in rows) == \
        [(w["id"], 3), (keep["id"], 0)]
    assert scan(srv, t["code"]).status_code == 302
    assert [e["webhook_id"] for e in of_tracker(srv, t["tracker_id"])].count(w["id"]) == 1


def test_a_delete_racing_scans_and_patches_leaves_no_waiting_event(srv, acct):
    """DELETE /webhook/<id> at once with PATCHes (tracker.updated) and scans (scan.created)
    of the account's trackers: once the DELETE answered and the scans committed, no event of
    the deleted webhook waits in the outbox (an event written by a transaction that read
    the webhook before the DELETE committed, and committed after the DELETE dropped the
    waiting events, would wait for ever: neither delivered nor swept)."""
    trackers = [make_tracker(acct) for _ in range(6)]
    apis = [Api(srv, acct.token) for _ in range(7)]
    scanners = [requests.Session() for _ in range(5)]
    leaks = []
    try:
        for rnd in range(6):
            w = make_hook(acct, ["tracker.updated", "scan.created"])
            time.sleep(0.7)     # every scan writer knows the webhook (QRT_WEBHOOK_CHECK)
            calls = [lambda: apis[0].delete("/webhook/%d" % w["id"]).status_code]
            calls += [lambda a=a, t=t: a.patch("/tracker/%d" % t["tracker_id"],
                                               json={"name": "r%d" % rnd}).status_code
                      for a, t in zip(apis[1:], trackers)]
            calls += [lambda s=s, t=t: s.get("%s/q/%s" % (srv.base, t["code"]),
                                             allow_redirects=False, timeout=30).status_code
                      for s, t in zip(scanners, trackers)]
            with concurrent.futures.ThreadPoolExecutor(len(calls)) as ex:
                got = [f.result() for f in [ex.submit(c) for c in calls]]
            assert got[0] == 204 and set(got[1:7]) == {200} and set(got[7:]) == {302}, got
            time.sleep(1.2)     # the scans' batches committed
            waiting = events(srv, "webhook_id = %d AND state = 0" % w["id"])
            if waiting:
                leaks.append((rnd, sorted(e["type"] for e in waiting)))
    finally:
        for c in apis + scanners:
            c.close()
    assert not leaks, "events of a deleted webhook left waiting: %r" % leaks


def test_a_deleted_webhooks_id_is_never_given_again(srv, acct):
    """A webhook deleted, another made (by another account): it gets a new id, and shows
    nothing of the deleted webhook's history (its dropped events, its attempts), which the
    outbox keeps for a week under the deleted webhook's id."""
    w = make_hook(acct, ["scan.created"])
    t = make_tracker(acct)
    assert scan(srv, t["code"]).status_code == 302
    ev, = wait_until(lambda: events(srv, "webhook_id = %d AND tracker_id = %d"
                                    % (w["id"], t["tracker_id"])), what="its event")
    # an attempt that failed, as the delivery worker records it
    srv.sql("INSERT INTO webhook_attempts (event_id, webhook_id, attempt, http_status, error, "
            "at, next_attempt_at) VALUES (%d, %d, 1, 500, '', %d, %d)"
            % (ev["id"], w["id"], int(time.time()), int(time.time()) + 5))
    assert acct.get("/webhook/%d/deliveries" % w["id"]).json()["meta"]["total"] == 1
    assert acct.delete("/webhook/%d" % w["id"]).status_code == 204
    _accounts[0] += 1
    name = "hooks%d" % _accounts[0]
    srv.account(name)
    with Api(srv, srv.token(name)) as other:
        new = make_hook(other, ["scan.created"])
        assert new["id"] > w["id"]
        shown = other.get("/webhook/%d" % new["id"]).json()
        assert (shown["pending"], shown["dropped"]) == (0, 0), shown
        d = other.get("/webhook/%d/deliveries" % new["id"]).json()
        assert d["meta"]["total"] == 0 and d["data"] == [], d
        assert other.get("/webhook/%d" % w["id"]).status_code == 404
    again = make_hook(acct, ["scan.created"])
    assert again["id"] > new["id"]


def test_scans_waiting_while_their_tracker_is_deleted_answer_404_and_make_no_event(srv, acct):
    """A tracker deleted while its scans wait for their commit (their code looked up
    before the deletion committed): the scan writer finds it deleted under the write lock,
    records none of its visits and answers them 404, as scans after the deletion are; no
    scan.created follows the tracker's deletion. Another tracker's scans of the same batch
    are recorded and redirected."""
    hook = make_hook(acct, ["scan.created"])
    gone, kept = make_tracker(acct), make_tracker(acct)
    time.sleep(0.7)     # every scan writer knows the webhook (QRT_WEBHOOK_CHECK)
    assert scan(srv, kept["code"]).status_code == 302      # (its code cached, a batch done)
    committed = int(qrtrack_status(srv)["QRTrackVisitsCommitted"])
    # (a tracker deleted as DELETE /tracker deletes it, by a transaction that holds the
    # write lock first: scans that came before its commit wait for the lock meanwhile)
    now = int(time.time())
    outside = OutsideLock(srv, 2.0, advisory=True,
                          sql="UPDATE trackers SET deleted_at = %d, updated_at = %d WHERE id = %d"
                          % (now, now, gone["tracker_id"]))
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            futures = [ex.submit(scan, srv, t["code"]) for t in (gone, kept, gone, kept)]
            got = [f.result().status_code for f in futures]
    finally:
        outside.wait()
    assert got == [404, 302, 404, 302], got
    # (mod_status counts the visits recorded: the two kept, not the two answered 404)
    assert int(qrtrack_status(srv)["QRTrackVisitsCommitted"]) - committed == 2
    assert scan(srv, gone["code"]).status_code == 404
    counts = dict(line.split("|") for line in srv.sql(
        "SELECT tracker_id, COUNT(*) FROM visits WHERE tracker_id IN (%d, %d) GROUP BY tracker_id"
        % (gone["tracker_id"], kept["tracker_id"])).split())
    assert counts == {str(kept["tracker_id"]): "3"}, counts
    made = events(srv, "webhook_id = %d" % hook["id"])
    assert [e["tracker_id"] for e in made] == [kept["tracker_id"]] * 3, made
