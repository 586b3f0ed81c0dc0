"""Moving an installation from SQLite to PostgreSQL (and back) with
`qrtrack-admin copy-to DRIVER PARAMS`.

A SQLite server gets accounts, tokens (one revoked), trackers with tags (one
PATCHed, one deleted), scans and clicks through the running server (bots among
them) and visits imported with `visits import`; it is stopped, copied into a fresh
PostgreSQL database, and a PostgreSQL server started on that database must answer
every read of the API exactly as the SQLite one did, to the same tokens: trackers,
analytics, visit listings and CSV, every report, the crosstab and the dashboard.
New rows then get ids above the copied ones, and old codes keep recording. A target
with rows is refused; the PostgreSQL database copied back into SQLite answers alike.
Runs under either QRT_TEST_BACKEND: it starts the servers of both kinds itself.
"""
import base64
import calendar
import json
import re
import time

import pytest
import requests

from conftest import Api, Server
from lib.png import logo_png
from lib.visits import import_visits, ts

DAY = 86400
T0 = calendar.timegm((2026, 3, 10, 9, 0, 0, 0, 0, 0))       # 2026-03-10T09:00:00+0000
UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
     "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1 visitor-%d"
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
REPORTS = ["name", "type", "tag", "date", "browser", "city", "country"]
TABLES = ["accounts", "tokens", "trackers", "tracker_tags", "tracker_routing", "visits",
          "tracker_visitors", "tracker_history", "styles", "webhooks", "webhook_events",
          "webhook_attempts", "webhook_drops"]


def today():
    return time.strftime("%Y-%m-%d", time.gmtime())


def visit(base, path, ua, referer=None):
    headers = {"User-Agent": ua}
    if referer:
        headers["Referer"] = referer
    r = requests.get(base + path, headers=headers, allow_redirects=False, timeout=30)
    assert r.status_code == 302, (path, r.status_code, r.text)
    return r


def create(api, url, tags=(), name=None):
    body = {"redirect_url": url, "tags": list(tags)}
    if name:
        body["name"] = name
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def seed(src):
    """Accounts, tokens, trackers and visits on a running server; what the tests need.

    The ids start far from 1 and have gaps, as in a database that has lived: rows of
    an account of no other use, written straight into the database."""
    src.sql("INSERT INTO accounts (id, name, plan, created_at) "
            "VALUES (40, 'early', 'free', 1000)")
    src.sql("INSERT INTO trackers (id, account_id, code, name, type, redirect_url, "
            "created_at, updated_at) VALUES (70, 40, 'early001', 'early', 'website', "
            "'https://example.com/early', 1000, 1000)")
    src.sql("INSERT INTO visits (id, tracker_id, visit_start, source, bot, visitor) "
            "VALUES (500, 70, 1000, 'scan', 0, '0123456789abcdef')")
    src.account("acme")
    src.account("other")
    tok = src.token("acme")
    other_tok = src.token("other")
    revoked = src.token("acme")
    tid = src.admin("token", "list", "acme").stdout.splitlines()[-1].split("\t")[0]
    src.admin("token", "revoke", tid)
    with Api(src, tok) as api:
        spring = create(api, "https://example.com/spring", ["campaign:spring", "region:eu"])
        summer = create(api, "https://example.com/summer", ["campaign:summer", "region:us",
                                                            "region:eu", "print"])
        moved = create(api, "https://example.com/old", ["campaign:spring"], name="Moved")
        gone = create(api, "https://example.com/gone", ["region:us"])
        quiet = create(api, "https://www.example.org/quiet")
        for i in range(6):
            visit(src.base, "/q/" + spring["code"], UA % (i % 4))
            visit(src.base, "/l/" + summer["code"], UA % i, "https://news.example/%d" % i)
        visit(src.base, "/q/" + spring["code"], BOT)
        visit(src.base, "/q/" + moved["code"], UA % 9)
        visit(src.base, "/q/" + gone["code"], UA % 1)
        r = api.patch("/tracker/%d" % moved["tracker_id"],
                      json={"redirect_url": "https://example.com/new",
                            "tags": ["campaign:autumn", "region:eu"]})
        assert r.status_code == 200, r.text
        assert api.delete("/tracker/%d" % gone["tracker_id"]).status_code in (200, 204)
        # Smart fields travel too (schema 24).
        r = api.patch("/tracker/%d" % quiet["tracker_id"],
                      json={"rules": [{"redirect_url": "https://example.org/ios",
                                       "os": ["iOS"]}],
                            "max_scans": 1000, "expired_url": "https://example.org/over",
                            "valid_until": "2099-01-01T00:00:00+0000",
                            "password": "moved along"})
        assert r.status_code == 200, r.text
        # Styles (a logo: bytes that are no text) and webhooks with their outbox travel too
        # (schemas 26 and 27).
        r = api.post("/style", json={"name": "brand", "fg": "#1A237E", "bg": "#FFFFFF",
                                      "logo": base64.b64encode(logo_png()).decode()})
        assert r.status_code in (200, 201), r.text
        # (subscribed to an event the seed never makes: no delivery changes the counts
        # while the servers run; the outbox's own copy is in test_store_copy.c)
        r = api.post("/webhook", json={"url": "https://hooks.example/moved",
                                        "events": ["tracker.expired"]})
        assert r.status_code == 200, r.text
        # the outbox bound's count of the events it deleted (schema 44), shown as dropped
        src.sql("INSERT INTO webhook_drops (webhook_id, at, n) VALUES (%d, %d, 4)"
                   % (r.json()["id"], int(time.time()) // 60 * 60))
    with Api(src, other_tok) as api:
        theirs = create(api, "https://example.net/theirs", ["campaign:spring"])
    visit(src.base, "/q/" + theirs["code"], UA % 3)
    lines = []
    for i in range(40):
        t = [spring, summer, moved, quiet][i % 4]
        lines.append({"tracker_id": t["tracker_id"], "visit_start": ts(T0 + i * 7 * 3600),
                      "source": "click" if i % 3 == 0 else "scan",
                      "ip": "198.51.100.%d" % (i % 7), "user_agent": UA % (i % 5),
                      "browser": ["Chrome", "Safari", "Firefox"][i % 3],
                      "country": ["DE", "FR", "US", None][i % 4],
                      "city": ["Berlin", "Paris", None][i % 3], "bot": i % 13 == 0,
                      "device": "bot" if i % 13 == 0 else "mobile"})
    assert import_visits(src, lines) == str(len(lines))
    live = [spring, summer, moved, quiet]
    return {"tok": tok, "other_tok": other_tok, "revoked": revoked, "live": live,
            "gone": gone, "theirs": theirs}


def answers(server, s):
    """Every read of the API the seeded data answers, as text with the server's own
    address taken out (scan_url and short_url carry it)."""
    out = {}
    with Api(server, s["tok"]) as api:
        def get(path, **params):
            r = api.get(path, params=params)
            body = r.text if r.headers.get("Content-Type", "").startswith("text/csv") \
                else r.json()
            out[path + "?" + json.dumps(params, sort_keys=True)] = (r.status_code, body)

        get("/account")
        get("/tracker", rows=100)
        get("/style")
        get("/style/brand")
        get("/webhook")
        for w in api.get("/webhook").json()["data"]:
            get("/webhook/%d/deliveries" % w["id"])
        r = api.get("/tracker/%d/qrcode" % s["live"][0]["tracker_id"],
                    params={"style": "brand", "format": "svg"})
        # (the image encodes this server's own address: its logo and colours are compared)
        out["styled svg"] = (r.status_code, b"<image" in r.content, b"1A237E" in r.content.upper())
        assert out["styled svg"] == (200, True, True), r.content[:300]
        ids = [t["tracker_id"] for t in s["live"]]
        for tid in ids + [s["gone"]["tracker_id"], s["theirs"]["tracker_id"]]:
            get("/tracker/show/%d" % tid)
            get("/tracker/analytics/%d" % tid)
            get("/visits/tracker/%d" % tid, rows=1000)
        get("/visits/tracker/%d" % ids[0], rows=5, page=2, search="iphone")
        get("/visits/tracker/%d/download/csv" % ids[1])
        window = {"visit_start": "2026-03-01T00:00:00+0200",
                  "visit_start_end": "2026-12-31T23:59:59+0200"}
        for rep in REPORTS:
            get("/report/", report=rep)
            get("/report/", report=rep, **window)
        get("/report/", report="name", **{"trackers[]": ids[:2]})
        get("/report/tag-crosstab", row="campaign", col="region")
        get("/dashboard/scansAnalytics", dateStart="2026-03-01", dateEnd=today())
        get("/dashboard/scansAnalytics", dateStart="2026-03-05", dateEnd="2026-03-20",
            trackers=",".join(map(str, ids[:3])))
    with Api(server, s["other_tok"]) as api:
        r = api.get("/tracker")
        out["other /tracker"] = (r.status_code, r.json())
    with Api(server, s["revoked"]) as api:
        out["revoked"] = api.get("/account").status_code
    out["account list"] = server.admin("account", "list").stdout
    out["token list"] = server.admin("token", "list", "acme").stdout
    return json.loads(json.dumps(out).replace(server.base, "BASE"))


# A tracker's visitors are read from the visits (schema 16 on SQLite, 47 on
# PostgreSQL): the table tracker_visitors stays empty on both.
PAIRS = "(SELECT DISTINCT tracker_id, visitor FROM visit_rows WHERE bot = 0) x"


def counts(server):
    n = []
    for t in TABLES:
        if t == "tracker_visitors":
            assert server.sql("SELECT COUNT(*) FROM tracker_visitors").strip() == "0"
            t = PAIRS
        n.append(int(server.sql("SELECT COUNT(*) FROM %s" % t).strip()))
    return n


@pytest.fixture(scope="module")
def moved():
    """The seeded SQLite server, stopped, and the PostgreSQL server it was copied into."""
    src = Server(backend="sqlite")
    dst = None
    try:
        src.admin("init")
        src.start()
        s = seed(src)
        before = answers(src, s)
        src.stop()
        n = counts(src)
        dst = Server(backend="pgsql")
        p = src.admin("copy-to", "pgsql", dst.db)
        yield {"src": src, "dst": dst.start(), "s": s, "before": before, "counts": n,
               "out": p.stdout}
    finally:
        for srv in (dst, src):
            if srv:
                srv.cleanup()


def test_copy_prints_one_line_of_counts(moved):
    n = moved["counts"]
    assert n[0] == 3 and n[1] == 3 and n[2] == 7 and n[4] == 1 and n[5] == 1 + 16 + 40, n
    assert moved["out"] == "copied %s; report aggregates rebuilt\n" % ", ".join(
        "%s %d" % (t, c) for t, c in zip(TABLES, n))
    assert counts(moved["dst"]) == n


def test_postgresql_answers_as_sqlite_did(moved):
    after = answers(moved["dst"], moved["s"])
    assert after.keys() == moved["before"].keys()
    for k in moved["before"]:
        assert after[k] == moved["before"][k], k
    # The fixtures mean something: tags, counters, a deletion, a revocation.
    trackers = {t["tracker_id"]: t for t in after['/tracker?{"rows": 100}'][1]["data"]}
    s = moved["s"]
    assert min(trackers) == 71 and min(v["id"] for v in after[
        '/visits/tracker/71?{"rows": 1000}'][1]["data"]) == 501
    assert trackers[s["live"][1]["tracker_id"]]["tags"] == sorted(
        ["campaign:summer", "region:us", "region:eu", "print"])
    assert trackers[s["live"][2]["tracker_id"]]["redirect_url"] == "https://example.com/new"
    assert s["gone"]["tracker_id"] not in trackers
    assert after["revoked"] == 401
    a = after["/tracker/analytics/%d?{}" % s["live"][0]["tracker_id"]][1]
    assert (a["totalScans"], a["totalClicks"], a["bots"]) == (12, 3, 2), a
    hooks = [v for k, v in after.items() if k.startswith("/webhook/")]
    assert [h[1]["state"]["dropped"] for h in hooks] == [4]
    # PostgreSQL's counts of visits per dictionary entry (schema 19) hold the copied visits.
    from lib.counts import check_counts
    check_counts(moved["dst"])


def test_new_rows_get_fresh_ids_and_old_codes_record(moved):
    dst, s = moved["dst"], moved["s"]
    max_tracker = int(dst.sql("SELECT MAX(id) FROM trackers").strip())
    max_visit = int(dst.sql("SELECT MAX(id) FROM visits").strip())
    max_token = int(dst.sql("SELECT MAX(id) FROM tokens").strip())
    max_account = int(dst.sql("SELECT MAX(id) FROM accounts").strip())
    assert dst.account("newcomer") == max_account + 1
    dst.token("newcomer")
    assert int(dst.sql("SELECT MAX(id) FROM tokens").strip()) == max_token + 1
    spring, moved_t = s["live"][0], s["live"][2]
    with Api(dst, s["tok"]) as api:
        t = create(api, "https://example.com/fresh")
        assert t["tracker_id"] == max_tracker + 1
        old = api.get("/tracker/analytics/%d" % spring["tracker_id"]).json()
        r = visit(dst.base, "/q/" + spring["code"], UA % 42)
        assert r.headers["Location"] == "https://example.com/spring"
        r = visit(dst.base, "/l/" + moved_t["code"], UA % 43)
        assert r.headers["Location"] == "https://example.com/new"
        new = api.get("/tracker/analytics/%d" % spring["tracker_id"]).json()
        assert new["totalScans"] == old["totalScans"] + 1
        assert new["uniqueVisitors"] == old["uniqueVisitors"] + 1
        top = api.get("/visits/tracker/%d" % spring["tracker_id"], params={"rows": 1}).json()
        assert top["data"][0]["id"] == max_visit + 1
        assert top["data"][0]["user_agent"] == UA % 42
        rep = api.get("/report/", params={"report": "name"}).json()["data"]
        row = [x for x in rep if x["tracker_id"] == spring["tracker_id"]][0]
        assert row["scans"] == new["totalScans"]
    assert requests.get(dst.base + "/q/" + s["gone"]["code"], allow_redirects=False,
                        timeout=30).status_code == 404
    # The copied password gate and rules work on the new database.
    quiet = s["live"][3]
    r = requests.get(dst.base + "/q/" + quiet["code"], allow_redirects=False, timeout=30)
    assert r.status_code == 200 and 'name="password"' in r.text
    r = requests.post(dst.base + "/q/" + quiet["code"], data={"password": "moved along"},
                      headers={"User-Agent": UA % 1}, allow_redirects=False, timeout=30)
    assert r.status_code == 302 and r.headers["Location"] == "https://example.org/ios"


def test_a_target_with_rows_is_refused(moved):
    src, dst = moved["src"], moved["dst"]
    before = counts(dst)
    p = src.admin("copy-to", "pgsql", dst.db, check=False)
    assert p.returncode != 0
    assert p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and "not empty" in p.stderr, p.stderr
    assert counts(dst) == before
    p = src.admin("copy-to", "nosuchdriver", "x", check=False)
    assert p.returncode != 0 and len(p.stderr.splitlines()) == 1, p.stderr
    p = src.admin("copy-to", "pgsql", check=False)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr


def test_postgresql_back_to_sqlite(moved):
    dst, s = moved["dst"], moved["s"]
    back = Server(backend="sqlite")
    try:
        p = dst.admin("copy-to", "sqlite3", back.db)
        assert re.match(r"^copied accounts \d+, tokens \d+, trackers \d+, tracker_tags \d+, "
                        r"tracker_routing \d+, visits \d+, tracker_visitors \d+, "
                        r"tracker_history \d+, styles \d+, webhooks \d+, webhook_events \d+, "
                        r"webhook_attempts \d+, webhook_drops \d+; report "
                        r"aggregates rebuilt\n$",
                        p.stdout), p.stdout
        assert counts(back) == counts(dst)
        back.start()
        want = answers(dst, s)
        got = answers(back, s)
        for k in want:
            assert got[k] == want[k], k
        with Api(back, s["tok"]) as api:
            t = create(api, "https://example.com/after")
            assert t["tracker_id"] == int(dst.sql("SELECT MAX(id) FROM trackers").strip()) + 1
    finally:
        back.cleanup()
