"""Smart codes (CONTRACT section 7, "Redirect rules and validity"): rules, validity
windows, scan caps and password gates, decided at scan time."""
import concurrent.futures
import datetime
import html
import re
import threading
import time

import pytest
import requests

from conftest import Api, apxs, start_server
from lib.qr import IPHONE

ANDROID = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/120.0.0.0 Mobile Safari/537.36")
DESKTOP = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
           "Gecko) Chrome/120.0.0.0 Safari/537.36")
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
HOME = "https://example.com/home"
STORE = "https://apps.apple.com/app/x"
PLAY = "https://play.google.com/store/apps/x"


@pytest.fixture(scope="module")
def srv():
    extra = ("LoadModule setenvif_module %s/mod_setenvif.so\n"
             "SetEnvIf X-Test-Country \"^([A-Z]{2})$\" MM_COUNTRY_CODE=$1\n"
             % apxs("LIBEXECDIR"))
    s = start_server(extra=extra, accounts=[("acme", "professional"), ("other", "starter")])
    yield s
    s.cleanup()


@pytest.fixture
def api(srv):
    with Api(srv, srv.token("acme")) as a:
        yield a


def create(api, **body):
    body.setdefault("redirect_url", HOME)
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def scan(srv, t, ua=IPHONE, kind="q", method="GET", **kw):
    headers = {"User-Agent": ua, **kw.pop("headers", {})}
    return requests.request(method, "%s/%s/%s" % (srv.base, kind, t["code"]),
                            allow_redirects=False, headers=headers, timeout=30, **kw)


def where(r):
    return r.headers.get("Location") if r.status_code == 302 else r.status_code


def visits(api, t):
    r = api.get("/visits/tracker/%d" % t["tracker_id"], params={"rows": 1000})
    assert r.status_code == 200, r.text
    return r.json()["data"]


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S+0000")


NOW = datetime.datetime.now(datetime.timezone.utc)


# -- the fields ---------------------------------------------------------------------

def test_a_plain_tracker_shows_the_fields_unset(api):
    t = create(api)
    assert t["rules"] == [] and t["valid_from"] is None and t["valid_until"] is None
    assert t["max_scans"] is None and t["expired_url"] is None
    assert t["password_protected"] is False
    assert "password" not in t


def test_fields_are_stored_shown_listed_and_cleared(api):
    rules = [{"redirect_url": STORE, "os": ["iOS"]},
             {"redirect_url": PLAY, "device": ["mobile"], "country": ["de"],
              "language": ["de"], "weekdays": [5, 1], "hours": "22:00-06:00",
              "utc_offset": "+01:00", "from": "2026-01-01T00:00:00+0100",
              "until": "2030-01-01T00:00:00Z"}]
    t = create(api, rules=rules, valid_from="2026-01-01T00:00:00+0000",
               valid_until="2099-12-31T23:59:59+0000", max_scans=5,
               expired_url="https://example.com/over", password="s3cret pass")
    assert t["rules"][0] == {"redirect_url": STORE, "os": ["iOS"]}
    second = t["rules"][1]
    assert second["country"] == ["DE"] and second["weekdays"] == [1, 5]
    assert second["hours"] == "22:00-06:00" and second["utc_offset"] == "+0100"
    assert second["from"] == "2025-12-31T23:00:00+0000"
    assert t["valid_until"] == "2099-12-31T23:59:59+0000" and t["max_scans"] == 5
    assert t["expired_url"] == "https://example.com/over" and t["password_protected"] is True
    shown = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert shown == t
    listed = [x for x in api.get("/tracker", params={"rows": 1000}).json()["data"]
              if x["tracker_id"] == t["tracker_id"]]
    assert listed == [t]
    assert "s3cret" not in api.get("/tracker", params={"rows": 1000}).text

    # A PATCH that changes only the name keeps the rest, password included.
    p = api.patch("/tracker/%d" % t["tracker_id"], json={"name": "Renamed"}).json()
    assert p["rules"] == t["rules"] and p["password_protected"] is True
    # null clears.
    p = api.patch("/tracker/%d" % t["tracker_id"],
                  json={"rules": None, "valid_from": None, "valid_until": None,
                        "max_scans": None, "expired_url": None, "password": None}).json()
    assert p["rules"] == [] and p["valid_from"] is None and p["valid_until"] is None
    assert p["max_scans"] is None and p["expired_url"] is None
    assert p["password_protected"] is False
    assert where(scan(api.server, t)) == HOME


def test_times_past_1970_to_9999_in_utc_are_kept_as_those_ends_and_read_back(api):
    # taken in their offset, 1970-01-01T00:00:00+0100 is before 1970 in UTC and
    # 9999-12-31T23:59:59-1200 after 9999: kept as the ends, as rules' times are, so the
    # time shown is the one kept and may be sent back
    t = create(api, valid_from="1970-01-01T00:00:00+0100",
               valid_until="9999-12-31T23:59:59-1200",
               rules=[{"redirect_url": STORE, "os": ["iOS"], "from": "1970-01-01T00:59:59+0100",
                       "until": "9999-12-31T23:59:59-1400"}])
    assert t["valid_from"] == "1970-01-01T00:00:00+0000", t
    assert t["valid_until"] == "9999-12-31T23:59:59+0000", t
    assert t["rules"][0]["from"] == "1970-01-01T00:00:00+0000"
    assert t["rules"][0]["until"] == "9999-12-31T23:59:59+0000"
    back = {k: t[k] for k in ("valid_from", "valid_until", "rules")}
    r = api.patch("/tracker/%d" % t["tracker_id"], json=back)
    assert r.status_code == 200, r.text
    assert {k: r.json()[k] for k in back} == back
    history = api.get("/tracker/%d/history" % t["tracker_id"]).json()["data"]
    assert history[-1]["changes"]["valid_from"] == [None, "1970-01-01T00:00:00+0000"]
    # (a time of 1970 in UTC, whatever its offset, is as it was)
    t = create(api, valid_from="1970-01-01T01:00:00+0100")
    assert t["valid_from"] == "1970-01-01T00:00:00+0000"
    assert where(scan(api.server, t)) == HOME


@pytest.mark.parametrize("body,field", [
    ({"rules": {"redirect_url": HOME}}, "rules"),
    ({"rules": [{"redirect_url": HOME}]}, "rules.0"),
    ({"rules": [{"redirect_url": HOME, "os": ["iOS"]}, {"os": ["iOS"]}]}, "rules.1.redirect_url"),
    ({"rules": [{"redirect_url": "ftp://x.org/", "os": ["iOS"]}]}, "rules.0.redirect_url"),
    ({"rules": [{"redirect_url": HOME, "hours": "25:00-01:00"}]}, "rules.0.hours"),
    ({"rules": [{"redirect_url": HOME, "weekdays": [8]}]}, "rules.0.weekdays"),
    ({"rules": [{"redirect_url": HOME, "country": ["USA"]}]}, "rules.0.country"),
    ({"rules": [{"redirect_url": HOME, "device": ["phone"]}]}, "rules.0.device"),
    ({"rules": [{"redirect_url": HOME, "utc_offset": "+1500", "hours": "01:00-02:00"}]},
     "rules.0.utc_offset"),
    ({"rules": [{"redirect_url": HOME, "from": "tomorrow"}]}, "rules.0.from"),
    ({"rules": [{"redirect_url": HOME, "os": ["iOS"], "colour": "red"}]}, "rules.0.colour"),
    ({"rules": [{"redirect_url": HOME, "hours": "10:00-10:00"}]}, "rules.0.hours"),
    ({"rules": [{"redirect_url": HOME, "os": ["iOS"]}] * 21}, "rules"),
    ({"max_scans": 0}, "max_scans"),
    ({"max_scans": "ten"}, "max_scans"),
    ({"max_scans": 10 ** 12}, "max_scans"),
    ({"valid_from": "2026-13-01T00:00:00+0000"}, "valid_from"),
    ({"valid_from": "2026-02-01T00:00:00+0000", "valid_until": "2026-01-01T00:00:00+0000"},
     "valid_until"),
    ({"expired_url": "javascript:alert(1)"}, "expired_url"),
    ({"password": ""}, "password"),
    ({"password": "x" * 129}, "password"),
    ({"password": 1234}, "password"),
])
def test_bad_fields_are_refused_with_their_name(api, body, field):
    body = dict(body, redirect_url=HOME)
    r = api.post("/tracker", json=body)
    assert r.status_code == 422, r.text
    assert field in r.json()["errors"], r.json()
    t = create(api)
    r = api.patch("/tracker/%d" % t["tracker_id"], json=body)
    assert r.status_code == 422 and field in r.json()["errors"]


def test_rules_only_in_a_json_body(api):
    r = api.post("/tracker", data={"redirect_url": HOME, "rules": "[]"})
    assert r.status_code == 422 and "rules" in r.json()["errors"]
    r = api.post("/tracker", data={"redirect_url": HOME, "max_scans": "3",
                                   "valid_until": "2099-01-01T00:00:00+0000"})
    assert r.status_code == 200 and r.json()["max_scans"] == 3


# -- rules ------------------------------------------------------------------------------

def test_rules_send_each_visitor_to_their_place_first_match_wins(srv, api):
    t = create(api, rules=[{"redirect_url": STORE, "os": ["ios"]},
                           {"redirect_url": PLAY, "os": ["Android"]},
                           {"redirect_url": "https://example.com/mobile", "device": ["mobile"]},
                           {"redirect_url": "https://example.com/de", "language": ["de"]},
                           {"redirect_url": "https://example.com/fr", "country": ["FR"]}])
    assert where(scan(srv, t, IPHONE)) == STORE
    assert where(scan(srv, t, ANDROID)) == PLAY
    assert where(scan(srv, t, ANDROID, kind="l")) == PLAY
    assert where(scan(srv, t, DESKTOP)) == HOME
    # The most preferred language only: de-AT matches "de"; en first does not.
    assert where(scan(srv, t, DESKTOP, headers={"Accept-Language": "de-AT,en;q=0.5"})) \
        == "https://example.com/de"
    assert where(scan(srv, t, DESKTOP, headers={"Accept-Language": "en;q=0.9,de;q=0.8"})) \
        == HOME
    assert where(scan(srv, t, DESKTOP, headers={"Accept-Language": "fr;q=0.1,de;q=0.9"})) \
        == "https://example.com/de"
    assert where(scan(srv, t, DESKTOP, headers={"X-Test-Country": "FR"})) \
        == "https://example.com/fr"
    assert where(scan(srv, t, DESKTOP, headers={"Accept-Language": "x" * 8000})) == HOME
    # Every scan was recorded.
    assert len(visits(api, t)) == 9


def test_time_rules_read_in_their_offset(srv, api):
    # The weekday is read when the tracker is made (not when the module was loaded); a
    # scan whose day (UTC) ended meanwhile is made again on a new tracker.
    for _ in range(2):
        today = datetime.datetime.now(datetime.timezone.utc).isoweekday()
        other = today % 7 + 1
        t = create(api, rules=[{"redirect_url": "https://example.com/other-day",
                                "weekdays": [other]},
                               {"redirect_url": "https://example.com/today",
                                "weekdays": [today]}])
        got = where(scan(srv, t, DESKTOP))
        if datetime.datetime.now(datetime.timezone.utc).isoweekday() == today:
            break
    assert got == "https://example.com/today"
    # The same weekday seen from +14:00 or -12:00 may differ: an hour window of the
    # whole day in the local time of the offset matches whatever the day.
    hour = NOW.strftime("%H:00")
    nxt = (NOW + datetime.timedelta(hours=1)).strftime("%H:00")
    t2 = create(api, rules=[{"redirect_url": "https://example.com/now", "hours":
                             "%s-%s" % (hour, nxt)}])
    assert where(scan(srv, t2, DESKTOP)) in ("https://example.com/now", HOME)
    t3 = create(api, rules=[{"redirect_url": "https://example.com/past",
                             "until": iso(NOW - datetime.timedelta(days=1))},
                            {"redirect_url": "https://example.com/current",
                             "from": iso(NOW - datetime.timedelta(days=1)),
                             "until": iso(NOW + datetime.timedelta(days=1))}])
    assert where(scan(srv, t3, DESKTOP)) == "https://example.com/current"


def test_a_patch_of_rules_is_followed_by_the_next_scan(srv, api):
    t = create(api)
    assert where(scan(srv, t, IPHONE)) == HOME
    api.patch("/tracker/%d" % t["tracker_id"], json={"rules": [{"redirect_url": STORE,
                                                               "os": ["iOS"]}]})
    assert where(scan(srv, t, IPHONE)) == STORE


# -- validity -----------------------------------------------------------------------------

def test_an_expired_code_answers_410_with_a_page_and_records_the_visit(srv, api):
    t = create(api, valid_until=iso(NOW - datetime.timedelta(hours=1)))
    r = scan(srv, t)
    assert r.status_code == 410
    assert r.headers["Content-Type"].startswith("text/html")
    assert "<html" in r.text.lower() and 'name="viewport"' in r.text
    assert r.headers.get("Location") is None
    assert scan(srv, t, method="HEAD").status_code == 410
    assert len(visits(api, t)) == 1


def test_an_expired_code_goes_to_expired_url(srv, api):
    before = create(api, valid_from=iso(NOW + datetime.timedelta(days=1)),
                    expired_url="https://example.com/soon")
    after = create(api, valid_until=iso(NOW - datetime.timedelta(seconds=5)),
                   expired_url="https://example.com/ended")
    inside = create(api, valid_from=iso(NOW - datetime.timedelta(days=1)),
                    valid_until=iso(NOW + datetime.timedelta(days=1)),
                    expired_url="https://example.com/ended")
    assert where(scan(srv, before)) == "https://example.com/soon"
    assert where(scan(srv, after, kind="l")) == "https://example.com/ended"
    assert where(scan(srv, inside)) == HOME
    assert len(visits(api, before)) == 1 and len(visits(api, after)) == 1


def test_max_scans_is_exact_under_concurrent_scans(srv, api):
    t = create(api, max_scans=7, expired_url="https://example.com/over")
    # Bots and clicks do not count.
    assert where(scan(srv, t, GOOGLEBOT)) == HOME
    assert where(scan(srv, t, kind="l")) == HOME

    def one(i):
        return where(scan(srv, t, IPHONE, headers={"X-Forwarded-For": "10.0.0.%d" % i}))

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        got = list(ex.map(one, range(40)))
    assert got.count(HOME) == 7, got
    assert got.count("https://example.com/over") == 33, got
    # Once over, clicks and bots are expired too.
    assert where(scan(srv, t, kind="l")) == "https://example.com/over"
    assert where(scan(srv, t, GOOGLEBOT)) == "https://example.com/over"
    assert len(visits(api, t)) == 44
    # Raising the cap lets more through.
    api.patch("/tracker/%d" % t["tracker_id"], json={"max_scans": 8})
    assert where(scan(srv, t)) == HOME
    assert where(scan(srv, t)) == "https://example.com/over"


def test_max_scans_without_expired_url_answers_410(srv, api):
    t = create(api, max_scans=1)
    assert where(scan(srv, t)) == HOME
    assert where(scan(srv, t)) == 410


def test_head_answers_what_a_get_would_past_max_scans_and_counts_nothing(srv, api):
    """HEAD (a link checker's, an unfurler's) redirects without recording, and answers
    as a GET would: the destination (or a rule's) while max_scans are not all sent on,
    then expired_url, or 410 without one; on /q and /l."""
    rules = [{"redirect_url": "https://example.com/phone", "os": ["iOS"]}]
    over = create(api, max_scans=2, expired_url="https://example.com/over")
    gone = create(api, max_scans=1, rules=rules)
    for kind in ("q", "l"):
        assert where(scan(srv, over, kind=kind, method="HEAD")) == HOME
        assert where(scan(srv, gone, kind=kind, method="HEAD")) == "https://example.com/phone"
    assert where(scan(srv, over)) == HOME
    assert where(scan(srv, gone)) == "https://example.com/phone"
    # (HEADs counted nothing: the second scan is still sent on)
    assert where(scan(srv, over, method="HEAD")) == HOME
    assert where(scan(srv, over)) == HOME
    assert len(visits(api, over)) == 2 and len(visits(api, gone)) == 1
    for kind in ("q", "l"):
        assert where(scan(srv, over, kind=kind)) == "https://example.com/over"
        assert where(scan(srv, over, kind=kind, method="HEAD")) == "https://example.com/over"
        assert where(scan(srv, gone, kind=kind)) == 410
        r = scan(srv, gone, kind=kind, method="HEAD")
        assert r.status_code == 410 and r.headers.get("Location") is None and not r.content
    # raised: open again, to HEAD as to GET
    api.patch("/tracker/%d" % gone["tracker_id"], json={"max_scans": 5})
    assert where(scan(srv, gone, method="HEAD")) == "https://example.com/phone"


@pytest.fixture
def srv_info():
    """A server of its own whose error log has qrtrack's info lines: a commit of the scan
    writer run again after a deadlock says so there (QRT00048)."""
    s = start_server(accounts=[("acme", "professional")], loglevel="warn qrtrack:info")
    yield s
    s.cleanup()


def test_patches_of_smart_fields_while_a_capped_code_is_scanned(srv_info):
    """PATCHes of a capped tracker's smart fields (max_scans, expired_url, rules) while
    its code is scanned from six threads: the scan writer locks the tracker's row of
    tracker_routing to take a scan under the cap, then the write lock; a PATCH that
    writes that row takes it before the write lock too. Before, the PATCH took the write
    lock first: on PostgreSQL the two deadlocked (40P01), PATCHes answered 500 after a
    second or more and the scans stalled. First 3 s under a cap no scan reaches (every
    scan takes the row), then under a cap 20 scans above the count: no PATCH fails, no
    deadlock is logged, every 302 is recorded and exactly max_scans go to
    redirect_url. (Either side of a deadlock may be the one PostgreSQL rolls back: the
    PATCH answers 500, QRT00020, or the scans' commit is run again, QRT00048; both say
    "deadlock detected" in the error log.)"""
    srv = srv_info
    with Api(srv, srv.token("acme")) as api:
        capped_code_scanned_while_patched(srv, api)


def capped_code_scanned_while_patched(srv, api):
    over = "https://example.com/over"
    t = create(api, max_scans=100000, expired_url=over)
    tid = t["tracker_id"]
    scans, patches = [], []
    # (three tokens a patcher, a PATCH each 30 ms: each token well within 120 a minute)
    tokens = [srv.token("acme") for _ in range(6)]

    def scanner(stop):
        with requests.Session() as s:
            while not stop.is_set():
                r = s.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                          headers={"User-Agent": IPHONE}, timeout=30)
                scans.append(where(r))

    def patcher(stop, k, cap):
        with requests.Session() as s:
            i = 0
            while not stop.wait(0.03):
                i += 1
                body = ({"max_scans": cap}, {"expired_url": over},
                        {"rules": [{"redirect_url": "https://example.com/r%d" % i,
                                    "os": ["NoSuchOS"]}]})[(i + k) % 3]
                body["expired_url"] = over
                r = s.patch("%s/tracker/%d" % (srv.api_base, tid), json=body, timeout=30,
                            headers={"Authorization": "Bearer " + tokens[3 * k + i % 3]})
                patches.append((r.status_code, r.text if r.status_code != 200 else ""))

    def run(seconds, cap):
        stop = threading.Event()
        threads = ([threading.Thread(target=scanner, args=(stop,)) for _ in range(6)]
                   + [threading.Thread(target=patcher, args=(stop, k, cap))
                      for k in range(2)])
        for x in threads:
            x.start()
        time.sleep(seconds)
        stop.set()
        for x in threads:
            x.join()

    run(3, 100000)
    first = len(scans)
    assert scans and set(scans) <= {HOME, 503}, set(scans)
    cap = scans.count(HOME) + 20
    assert api.patch("/tracker/%d" % tid, json={"max_scans": cap}).status_code == 200
    run(1.5, cap)
    assert patches and all(p[0] == 200 for p in patches), \
        [p for p in patches if p[0] != 200][:3]
    assert "deadlock detected" not in srv.error_log()
    sent = [x for x in scans if x in (HOME, over)]
    assert set(scans) <= {HOME, over, 503}, set(scans)
    assert sent.count(HOME) == min(cap, len(sent)), (first, sent.count(HOME), len(sent))
    assert int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d" % tid)) \
        == len(sent)
    assert api.get("/tracker/show/%d" % tid).json()["totalScans"] == len(sent)
    assert int(srv.sql("SELECT redirected FROM tracker_routing WHERE tracker_id = %d"
                       % tid)) == sent.count(HOME)


# -- password -------------------------------------------------------------------------------

def test_a_password_gate(srv, api):
    t = create(api, password="open sesame")
    r = scan(srv, t)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert re.search(r'<form[^>]*method="post"', r.text)
    assert 'name="password"' in r.text and 'type="password"' in r.text
    assert "<script" not in r.text.lower()
    assert r.headers.get("Cache-Control") == "no-store"
    assert visits(api, t) == []
    r = scan(srv, t, method="POST", data={"password": "wrong"})
    assert r.status_code == 403 and 'name="password"' in r.text
    assert visits(api, t) == []
    r = scan(srv, t, method="POST", data={"password": "open sesame"})
    assert where(r) == HOME
    assert len(visits(api, t)) == 1
    r = scan(srv, t, kind="l", method="POST", data={"password": "open sesame"})
    assert where(r) == HOME
    # Not a form: refused without a try counted.
    r = scan(srv, t, method="POST", json={"password": "open sesame"})
    assert r.status_code == 415
    r = scan(srv, t, method="POST", data="password=" + "x" * 10000,
             headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    # The password is nowhere: not in the API, not in the log.
    assert "open sesame" not in api.get("/tracker/show/%d" % t["tracker_id"]).text
    assert "open sesame" not in srv.error_log()


def form_fields(page):
    """The fields a browser sends with the page's form, the password left out."""
    return {m.group(1): html.unescape(m.group(2)) for m in re.finditer(
        r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)}


def test_a_protected_code_records_the_page_that_sent_the_visitor(srv, api):
    """The visit is recorded by the form's POST, whose own Referer names the form if
    anything (the form's page sends none): the page that sent the visitor to the code
    goes with the form, through a wrong password too, and is the visit's referer."""
    t = create(api, password="open sesame")
    came_from = "https://news.example/story?id=7&utm_source=\"mail\"&q=<b>"
    page = scan(srv, t, kind="l", headers={"Referer": came_from})
    assert page.status_code == 200
    fields = form_fields(page.text)
    assert fields == {"referer": came_from}, page.text
    own = "%s/l/%s" % (srv.base, t["code"])
    wrong = scan(srv, t, kind="l", method="POST", data={**fields, "password": "nope"},
                 headers={"Referer": own})
    assert wrong.status_code == 403 and form_fields(wrong.text) == fields
    r = scan(srv, t, kind="l", method="POST", data={**fields, "password": "open sesame"},
             headers={"Referer": own})
    assert where(r) == HOME
    # A token in the carried referer is redacted, as in a Referer header.
    r = scan(srv, t, kind="l", method="POST", data={
        "referer": "https://h.example/api/x?api_token=secret123&a=1", "password": "open sesame"})
    assert where(r) == HOME
    # Without a referer the form has no such field, and the visit none.
    page = scan(srv, t)
    assert form_fields(page.text) == {}
    r = scan(srv, t, method="POST", data={"password": "open sesame"})
    assert where(r) == HOME
    # A referer longer than a visit keeps is cut for the form as for the visit, so the
    # form's body stays within its bound.
    long_from = "https://long.example/" + "/" * 3000
    fields = form_fields(scan(srv, t, headers={"Referer": long_from}).text)
    assert fields["referer"] == long_from[:2048]
    r = scan(srv, t, method="POST", data={**fields, "password": "open sesame"})
    assert where(r) == HOME
    seen = sorted((v["source"], v["referer"] or "") for v in visits(api, t))
    assert seen == sorted([("click", came_from),
                           ("click", "https://h.example/api/x?api_token=[redacted]&a=1"),
                           ("scan", ""), ("scan", long_from[:2048])]), seen


def test_a_code_without_password_takes_no_post(srv, api):
    t = create(api)
    r = scan(srv, t, method="POST", data={"password": "x"})
    assert r.status_code == 405 and "GET" in r.headers["Allow"]


def test_a_protected_code_says_it_takes_post_and_its_form_takes_only_a_form(srv, api):
    t = create(api, password="open sesame")
    for method in ("PUT", "DELETE", "PATCH"):
        r = scan(srv, t, method=method)
        assert r.status_code == 405, (method, r.text)
        assert sorted(m.strip() for m in r.headers["Allow"].split(",")) == \
            ["GET", "HEAD", "POST"], (method, r.headers["Allow"])
    r = scan(srv, create(api), method="PUT")
    assert r.status_code == 405 and "POST" not in r.headers["Allow"], r.headers["Allow"]
    # a media type that only begins like a form's is not one
    for ct in ("application/x-www-form-urlencodedXYZ", "application/x-www-form-urlencoded2"):
        r = scan(srv, t, method="POST", data="password=open+sesame",
                 headers={"Content-Type": ct})
        assert r.status_code == 415, (ct, r.status_code)
    r = scan(srv, t, method="POST", data="password=open+sesame", headers={
        "Content-Type": "application/x-www-form-urlencoded ; charset=UTF-8"})
    assert where(r) == HOME
    assert len(visits(api, t)) == 1


def test_a_password_form_sent_once_the_code_expired_is_answered_as_a_scan_then_is(srv, api):
    """The form, loaded while the code was valid, sent after valid_until (or before
    valid_from): 405 and nothing recorded, where a GET at that moment went to expired_url
    (or 410) and was recorded."""
    ended = create(api, password="open sesame", expired_url="https://example.com/ended",
                   valid_until=iso(NOW - datetime.timedelta(seconds=5)))
    early = create(api, password="open sesame",
                   valid_from=iso(NOW + datetime.timedelta(days=1)))
    for form in ({"password": "open sesame"}, {"password": "wrong"}):
        assert where(scan(srv, ended, method="POST", data=form)) == "https://example.com/ended"
        assert where(scan(srv, early, kind="l", method="POST", data=form)) == 410
    assert len(visits(api, ended)) == 2 and len(visits(api, early)) == 2
    assert {v["source"] for v in visits(api, early)} == {"click"}


def test_a_smart_field_sent_as_a_form_that_is_not_utf8_is_422(srv, api):
    """Such a field (JSON's strings are UTF-8) was read as absent: a password sent so left
    the tracker open, a cap or an end unset, with 200."""
    for field, value in (("password", "secret%FF"), ("max_scans", "5%FF"),
                         ("valid_until", "2030-01-01T00:00:00Z%FF"),
                         ("expired_url", "https://example.com/%FF"), ("rules", "%FF")):
        body = "redirect_url=https%%3A%%2F%%2Fexample.com%%2Fhome&%s=%s" % (field, value)
        r = api.post("/tracker", data=body,
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 422, (field, r.text)
        assert field in r.json()["errors"], (field, r.text)
    t = create(api, password="old one")
    r = api.patch("/tracker/%d" % t["tracker_id"], data="password=new%FF",
                  headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 422 and "password" in r.json()["errors"], r.text
    assert where(scan(srv, t, method="POST", data={"password": "old one"})) == HOME


def test_ten_wrong_tries_a_minute_then_429(srv, api):
    t = create(api, password="right one")
    other = create(api, password="right one")
    codes = [scan(srv, t, method="POST", data={"password": "guess%d" % i}).status_code
             for i in range(10)]
    assert codes == [403] * 10
    r = scan(srv, t, method="POST", data={"password": "right one"})
    # one Retry-After of whole seconds (two of them read as "60, 60", no valid value)
    assert r.status_code == 429 and re.fullmatch(r"[1-9][0-9]*", r.headers["Retry-After"]), \
        r.headers
    assert "<html" in r.text.lower()
    # Another tracker is counted apart.
    assert where(scan(srv, other, method="POST", data={"password": "right one"})) == HOME


def test_an_ipv6_clients_tries_count_for_its_whole_64():
    """One subscriber holds a whole IPv6 /64: its tries count together, whichever of the
    2^64 addresses each comes from, while the next /64 and IPv4 clients count apart."""
    extra = ("LoadModule remoteip_module %s/mod_remoteip.so\nRemoteIPHeader X-Forwarded-For\n"
             "RemoteIPInternalProxy 127.0.0.1\n" % apxs("LIBEXECDIR"))
    srv = start_server(extra=extra, accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a, password="right one")

        def guess(addr, pw="guess"):
            return scan(srv, t, method="POST", data={"password": pw},
                        headers={"X-Forwarded-For": addr}).status_code

        codes = [guess("2001:db8:1:2:%x::%x" % (i, i + 1)) for i in range(10)]
        assert codes == [403] * 10
        assert guess("2001:db8:1:2:ffff::1") == 429
        assert guess("2001:db8:1:2::99", "right one") == 429
        assert where(scan(srv, t, method="POST", data={"password": "right one"},
                          headers={"X-Forwarded-For": "2001:db8:1:3::1"})) == HOME
        assert guess("203.0.113.9") == 403
    finally:
        srv.cleanup()


def test_wrong_tries_at_once_get_no_more_checks_than_ten(srv, api):
    """A try counts from its start, not once its password was found wrong: sixteen
    guesses at once (three bursts) get ten checks (403), the rest 429; before, each
    burst's guesses all passed the count, each a password check. A right password
    takes its try back (five right ones at once after five wrong leave room for five
    more wrong ones), and a body that is not a form checks no password and counts
    nothing."""
    t = create(api, password="right one")
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        codes = []
        for b in range(3):
            codes += list(ex.map(lambda i: scan(srv, t, method="POST", data={
                "password": "guess%d-%d" % (b, i)}).status_code, range(16)))
        assert sorted(codes) == [403] * 10 + [429] * 38, codes
        u = create(api, password="right one")
        for i in range(5):
            assert scan(srv, u, method="POST", data={"password": "wrong%d" % i}) \
                .status_code == 403
        right = list(ex.map(lambda i: where(scan(srv, u, method="POST", data={
            "password": "right one"})), range(5)))
        assert right == [HOME] * 5, right
        for i in range(3):
            r = scan(srv, u, method="POST", data="password=x",
                     headers={"Content-Type": "text/plain"})
            assert r.status_code == 415, r.status_code
        codes = [scan(srv, u, method="POST", data={"password": "more%d" % i}).status_code
                 for i in range(6)]
        assert codes == [403] * 5 + [429], codes


def test_a_password_and_rules_together(srv, api):
    t = create(api, password="pw", rules=[{"redirect_url": STORE, "os": ["iOS"]}])
    assert scan(srv, t).status_code == 200
    assert where(scan(srv, t, IPHONE, method="POST", data={"password": "pw"})) == STORE
    assert where(scan(srv, t, DESKTOP, method="POST", data={"password": "pw"})) == HOME


def test_other_accounts_cannot_see_or_change_the_fields(srv, api):
    t = create(api, password="pw", max_scans=3)
    with Api(srv, srv.token("other")) as o:
        r = o.patch("/tracker/%d" % t["tracker_id"], json={"password": None})
        assert r.status_code == 403
    assert api.get("/tracker/show/%d" % t["tracker_id"]).json()["password_protected"] is True


def test_a_chunked_form_past_4_kb_is_refused(srv, api):
    t = create(api, password="pw")

    def chunks():
        yield b"password="
        for _ in range(10):
            yield b"x" * 1000
    r = requests.post("%s/q/%s" % (srv.base, t["code"]), data=chunks(), allow_redirects=False,
                      headers={"Content-Type": "application/x-www-form-urlencoded"},
                      timeout=30)
    assert r.status_code == 413
    assert visits(api, t) == []
