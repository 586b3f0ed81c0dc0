"""Visits in dictionaries (schema 7, sql/007_lean_visits.sql): search over the
dictionaries' values answers what a substring search over the visits' own columns
answered (CONTRACT section 4), in the same order and with the same paging, whichever
way the server finds the visits (walking the time index for a common word, picking
through the dictionaries' indexes for a rare one); a database of schema 6 with
visits migrates and answers the same; imports fill the dictionaries once per value.
"""
import json
import os

import pytest

from conftest import Api, start_server
from lib.visits import T0, export, import_visits, listing, new_tracker, ts, visit
from lib.search import FIELDS, IPHONE, _epoch, fold, oracle  # noqa: F401

# The newest schema version: the number of the last migration in sql/.
LATEST = str(max(int(f.split("_")[0]) for f in os.listdir(
    os.path.join(os.path.dirname(__file__), "..", "..", "sql")) if f[:1].isdigit()))

ANDROID = ("Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like "
           "Gecko) Chrome/120.0.0.0 Mobile Safari/537.36")


def population(tid, n=240):
    """Visits where one word is common, others rare, some match in several
    dictionaries at once, with NULL referers and LIKE's metacharacters in values."""
    out = []
    for i in range(n):
        kw = {"ip": "192.0.%d.0" % (i % 7 * 10)}
        if i % 3:
            kw.update(user_agent=IPHONE + (" v%d" % (i % 5)), browser="Mobile Safari",
                      os="iOS", device="mobile")
        else:
            kw.update(user_agent=ANDROID, browser="Chrome Mobile", os="Android",
                      device="tablet" if i % 2 else "mobile")
        if i % 4 == 0:
            kw["referer"] = None
        elif i % 4 == 1:
            kw["referer"] = "https://news.example/story/%d?utm=qr" % (i % 9)
        elif i % 4 == 2:
            kw["referer"] = "https://berlin.example/100%_off\\x" if i % 8 == 2 \
                else "https://shop.example/a_b"
        else:
            kw["referer"] = "https://shop.example/100 off/axb"
        if i % 37 == 5:
            kw.update(country="IS", city="Reykjavík")
        elif i % 5 == 0:
            kw.update(country="BR", city="São Paulo")
        elif i % 11 == 0:
            kw.update(country=None, city=None)
        else:
            kw.update(country="DE", city="Berlin")
        # Times with ties, not in id order.
        out.append(visit(tid, T0 + (i * 7919) % 50 * 60, source="click" if i % 6 == 0
                         else "scan", **kw))
    return out


WORDS = ["iphone", "IPHONE", "Safari", "reykjav", "REYKJAVÍK", "berlin", "story/4", "story",
         "são p", "ão Pa", "SÃO", "100%", "100%_", "a_b", "%_o", "_off\\x", "0.10.", "192.0.6",
         "null", "tablet", "zzzqqq", "Mobile", "off/", ".example/"]


def expect_page(vs, rows, page):
    return [v["id"] for v in vs[(page - 1) * rows: page * rows]]


def check_search(server, tid, everything, word, **window):
    """The search's pages against the oracle (a token of its own: the rate limit)."""
    with Api(server, server.token("acme")) as api:
        return _check_search(api, tid, everything, word, **window)


def _check_search(api, tid, everything, word, **window):
    want = oracle(everything, word)
    for rows in (7, 1000):
        last = max(1, -(-len(want) // rows))
        for page in sorted({1, 2, last, last + 1}):
            got = listing(api, tid, search=word, rows=rows, page=page, **window)
            assert [v["id"] for v in got["data"]] == expect_page(want, rows, page), \
                (word, rows, page, window)
            assert got["meta"]["total"] == len(want), (word, got["meta"], len(want))
            assert got["meta"]["last_page"] == last, (word, got["meta"])
    return want


def test_search_over_dictionaries_answers_as_a_substring_search(server, api):
    tid = new_tracker(api)["tracker_id"]
    import_visits(server, population(tid), pipe=True)   # (ids not in time order)
    everything = listing(api, tid, rows=1000)["data"]
    assert len(everything) == 240
    sizes = {}
    for word in WORDS:
        sizes[word] = len(check_search(server, tid, everything, word))
    # The population does what it is meant to: common, rare, none, NULLs unmatched.
    assert sizes["iphone"] == 160 and sizes["IPHONE"] == 160
    assert sizes["reykjav"] == 7 and sizes["zzzqqq"] == 0 and sizes["null"] == 0
    assert sizes["SÃO"] == 0 and sizes["são p"] == sizes["ão Pa"] > 0
    assert sizes["100%"] < sizes["off/"] and 0 < sizes["a_b"] < 60
    assert sizes["berlin"] > sizes["reykjav"]
    assert sizes["0.10."] > 0 and sizes["192.0.6"] > 0
    # The same under a window, and the CSV export follows the search too.
    window = {"visit_start": ts(T0 + 10 * 60), "visit_start_end": ts(T0 + 30 * 60)}
    inside = [v for v in everything if T0 + 10 * 60 <= _epoch(v["visit_start"]) <= T0 + 30 * 60]
    for word in ("iphone", "reykjav", "story/4", "berlin"):
        check_search(server, tid, inside, word, **window)
        with Api(server, server.token("acme")) as a:
            rows = export(a, tid, search=word)
        assert [int(r[0]) for r in rows] == [v["id"] for v in oracle(everything, word)]


def test_search_with_since_id_polls(server, api):
    tid = new_tracker(api)["tracker_id"]
    import_visits(server, population(tid, 60), pipe=True)
    everything = listing(api, tid, rows=1000)["data"]
    ids = sorted(v["id"] for v in everything)
    since = ids[30]
    for word in ("iphone", "reykjav", "berlin", "a_b"):
        want = [v for v in oracle(everything, word) if v["id"] > since]
        got = listing(api, tid, search=word, since_id=since, rows=1000)
        assert [v["id"] for v in got["data"]] == [v["id"] for v in want], word
        assert got["meta"]["total"] == len(want)


def test_new_values_from_scans_are_searchable(server, api):
    """The scan writer's dictionary cache: values it has not met before, and ones it
    has, both land and are found."""
    import requests
    t = new_tracker(api)
    for ua in ("Lean-Agent/1 (Kiosk Mode)", "Lean-Agent/1 (Kiosk Mode)",
               "Lean-Agent/2 (Other)"):
        r = requests.get("%s/q/%s" % (server.base, t["code"]), allow_redirects=False,
                         headers={"User-Agent": ua, "Referer": "https://lean.example/r"},
                         timeout=30)
        assert r.status_code == 302
    got = listing(api, t["tracker_id"], search="KIOSK mo")
    assert got["meta"]["total"] == 2
    assert all(v["user_agent"] == "Lean-Agent/1 (Kiosk Mode)" for v in got["data"])
    assert listing(api, t["tracker_id"], search="lean.example/")["meta"]["total"] == 3
    n = int(server.sql("SELECT COUNT(*) FROM visit_referers WHERE referer = "
                       "'https://lean.example/r'").strip())
    assert n == 1


def test_imports_fill_each_dictionary_once_per_value(server, api):
    tid = new_tracker(api)["tracker_id"]
    ua = "Dict-Once/1.0 (%s)" % tid
    vs = [visit(tid, T0 + i, user_agent=ua, referer="https://once.example/%d" % tid,
                city="Once-%d" % tid, ip="198.51.100.%d" % (tid % 250)) for i in range(50)]
    import_visits(server, vs[:20])
    import_visits(server, vs[20:])
    assert server.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent = '%s'" % ua).strip() == "1"
    assert server.sql("SELECT COUNT(*) FROM visit_places WHERE city = 'Once-%d'"
                      % tid).strip() == "1"
    assert server.sql("SELECT COUNT(*) FROM visit_referers WHERE referer = "
                      "'https://once.example/%d'" % tid).strip() == "1"
    assert listing(api, tid, search="once-%d" % tid)["meta"]["total"] == 50


# A schema 6 database, made from a newer one by undoing migrations 025, 009, 008 and 007
# (the view shows the visitor ids' hex digits, as schema 6 stored them).
TO_V6 = {
    "sqlite": """
CREATE TABLE visits_v6 (id INTEGER PRIMARY KEY, tracker_id BIGINT NOT NULL,
    visit_start BIGINT NOT NULL, source VARCHAR(8) NOT NULL, ip VARCHAR(64),
    country VARCHAR(8), city VARCHAR(128), browser VARCHAR(64), browser_version VARCHAR(32),
    os VARCHAR(64), device VARCHAR(16), referer VARCHAR(2048), user_agent VARCHAR(1024),
    bot SMALLINT NOT NULL DEFAULT 0, visitor CHAR(16) NOT NULL);
INSERT INTO visits_v6 SELECT id, tracker_id, visit_start, source, ip, country, city,
    browser, browser_version, os, device, referer, user_agent, bot, visitor FROM visits ORDER BY id;
DROP VIEW visits;
DROP TABLE visit_rows; DROP TABLE visit_uas; DROP TABLE visit_places;
DROP TABLE visit_referers; DROP TABLE visit_ips; DROP TABLE visit_destinations;
ALTER TABLE visits_v6 RENAME TO visits;
CREATE INDEX visits_tracker_id ON visits (tracker_id, id);
CREATE INDEX visits_tracker_visitor ON visits (tracker_id, visit_start, id, visitor, bot);
CREATE INDEX visits_visitor ON visits (visitor, visit_start);
CREATE TABLE tracker_visitors6 (tracker_id BIGINT NOT NULL, visitor CHAR(16) NOT NULL,
    first_visit BIGINT NOT NULL, PRIMARY KEY (tracker_id, visitor));
INSERT INTO tracker_visitors6 SELECT tracker_id, printf('%016x', visitor), first_visit
    FROM tracker_visitors;
DROP TABLE tracker_visitors;
ALTER TABLE tracker_visitors6 RENAME TO tracker_visitors;
DROP TABLE agg_blob;
UPDATE qrt_schema SET version = 6;
""",
    "pgsql": """
CREATE TABLE visits_v6 (id BIGSERIAL PRIMARY KEY, tracker_id BIGINT NOT NULL,
    visit_start BIGINT NOT NULL, source VARCHAR(8) NOT NULL, ip VARCHAR(64),
    country VARCHAR(8), city VARCHAR(128), browser VARCHAR(64), browser_version VARCHAR(32),
    os VARCHAR(64), device VARCHAR(16), referer VARCHAR(2048), user_agent VARCHAR(1024),
    bot SMALLINT NOT NULL DEFAULT 0, visitor CHAR(16) NOT NULL);
INSERT INTO visits_v6 SELECT id, tracker_id, visit_start, source, ip, country, city,
    browser, browser_version, os, device, referer, user_agent, bot, visitor FROM visits ORDER BY id;
SELECT setval(pg_get_serial_sequence('visits_v6', 'id'), (SELECT MAX(id) FROM visits_v6));
DROP VIEW visits;
DROP FUNCTION qrt_visits_write();
DROP TABLE visit_rows; DROP TABLE visit_uas; DROP TABLE visit_places;
DROP TABLE visit_referers; DROP TABLE visit_ips; DROP TABLE visit_destinations;
ALTER TABLE visits_v6 RENAME TO visits;
CREATE INDEX visits_tracker_id ON visits (tracker_id, id);
CREATE INDEX visits_tracker_visitor ON visits (tracker_id, visit_start, id, visitor, bot);
CREATE INDEX visits_visitor_id ON visits (visitor, visit_start, id);
ALTER TABLE tracker_visitors ALTER COLUMN visitor TYPE CHAR(16)
    USING lpad(to_hex(visitor), 16, '0');
DROP TABLE agg_blob;
UPDATE qrt_schema SET version = 6;
""",
}


def answers(srv, tok, tid):
    out = {}
    with Api(srv, srv.token("acme")) as a:
        def get(path, **params):
            r = a.get(path, params=params)
            body = r.text if r.headers.get("Content-Type", "").startswith("text/csv") \
                else r.json()
            out[path + json.dumps(params, sort_keys=True)] = (r.status_code, body)

        get("/visits/tracker/%d" % tid, rows=1000)
        for word in WORDS:
            get("/visits/tracker/%d" % tid, rows=9, page=2, search=word)
        get("/visits/tracker/%d/download/csv" % tid)
        get("/tracker/analytics/%d" % tid)
        for rep in ("browser", "city", "country", "name", "date"):
            get("/report/", report=rep)
        get("/dashboard/scansAnalytics", dateStart="2026-11-01", dateEnd="2026-11-30")
    return out


def test_a_version_6_database_with_visits_migrates_and_answers_the_same():
    srv = start_server(accounts=[("acme", "professional")])
    try:
        tok = srv.token("acme")
        with Api(srv, tok) as a:
            tid = new_tracker(a)["tracker_id"]
        import_visits(srv, population(tid, 120), pipe=True)
        before = answers(srv, tok, tid)
        srv.stop()
        srv.sql(TO_V6[srv.backend])
        assert srv.sql("SELECT MAX(version) FROM qrt_schema").strip() == "6"
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 120
        srv.start()
        assert srv.sql("SELECT MAX(version) FROM qrt_schema").strip() == LATEST
        assert int(srv.sql("SELECT COUNT(*) FROM visit_rows").strip()) == 120
        from lib.counts import check_counts
        check_counts(srv)       # (PostgreSQL: schema 19 counted the visits there)
        after = answers(srv, tok, tid)
        assert after.keys() == before.keys()
        for k in before:
            assert after[k] == before[k], k
        # New visits after the migration take fresh ids and land in the dictionaries.
        max_before = max(v["id"] for v in before[
            "/visits/tracker/%d" % tid + json.dumps({"rows": 1000})][1]["data"])
        import_visits(srv, [visit(tid, T0 + 99999, city="Reykjavík")])
        with Api(srv, tok) as a:
            got = listing(a, tid, search="reykjav", rows=1)
        assert got["data"][0]["id"] > max_before
        check_counts(srv)
    finally:
        srv.cleanup()
