"""Visits: analytics (spec endpoint 5), the listing (9) and the CSV export (10).

Visits come from real scans (GET /q/<code>, /l/<code>) or, when their times,
referers or user agents must be chosen, from `qrtrack-admin visits import`.
"""
import calendar
import csv
import io
import json
import os
import random
import subprocess
import time
import uuid

import requests

from conftest import sqlite_only
from lib.visits import CHROME, CSV_HEADER, T0, csv_rows, export, import_visits, listing, new_tracker, ts, visit  # noqa: F401

VISIT_KEYS = {"id", "tracker_id", "visit_start", "source", "ip", "country", "city", "browser",
              "browser_version", "os", "device", "referer", "user_agent", "bot",
              "destination"}


# -- helpers -------------------------------------------------------------------


def scan(server, code, path="q", ua=CHROME, referer=None):
    headers = {"User-Agent": ua}
    if referer:
        headers["Referer"] = referer
    r = requests.get("%s/%s/%s" % (server.base, path, code), headers=headers,
                     allow_redirects=False, timeout=30)
    assert r.status_code == 302, (r.status_code, r.text)


def all_ids(api, tid, **params):
    params.setdefault("rows", 1000)
    return [v["id"] for v in listing(api, tid, **params)["data"]]


def error_422(r, field):
    assert r.status_code == 422, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    body = r.json()
    assert field in body["errors"], body
    assert isinstance(body["message"], str) and body["message"]
    return body


# -- endpoint 5: analytics -------------------------------------------------------------

def test_analytics_of_a_new_tracker(api):
    t = new_tracker(api)
    r = api.get("/tracker/analytics/%d" % t["tracker_id"])
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    assert r.json() == {"totalScans": 0, "totalClicks": 0, "uniqueVisitors": 0, "bots": 0,
                        "lastVisit": None}


def test_analytics_counts_scans_clicks_and_leaves_bots_out(server, api):
    t = new_tracker(api)
    for _ in range(2):
        scan(server, t["code"])
    scan(server, t["code"], path="l")
    scan(server, t["code"], ua="Mozilla/5.0 (compatible; Googlebot/2.1; "
                               "+http://www.google.com/bot.html)")
    a = api.get("/tracker/analytics/%d" % t["tracker_id"]).json()
    assert a["totalScans"] == 2 and a["totalClicks"] == 1
    assert a["bots"] == 1
    assert a["uniqueVisitors"] >= 1
    assert isinstance(a["totalScans"], int) and isinstance(a["totalClicks"], int)
    last = calendar.timegm(time.strptime(a["lastVisit"], "%Y-%m-%dT%H:%M:%S+0000"))
    assert abs(last - time.time()) < 120
    # The show endpoint agrees.
    s = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert s["totalScans"] == 2 and s["totalClicks"] == 1


def test_analytics_of_imported_visits(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [
        visit(tid, T0, ip="198.51.100.0"),
        visit(tid, T0 + 5, ip="198.51.100.0"),
        visit(tid, T0 + 9, source="click", ip="192.0.2.0"),
        visit(tid, T0 + 20, device="bot", bot=True, ip="192.0.2.0", user_agent="bot/1.0"),
    ])
    a = api.get("/tracker/analytics/%d" % tid).json()
    assert a["totalScans"] == 2 and a["totalClicks"] == 1 and a["bots"] == 1
    # Bots count only under "bots": not as visitors, nor as the last visit.
    assert a["uniqueVisitors"] == 2
    assert a["lastVisit"] == ts(T0 + 9)


# -- access: 403 and 404 on all three endpoints -----------------------------------------

ENDPOINTS = ["/tracker/analytics/%s", "/visits/tracker/%s", "/visits/tracker/%s/download/csv"]


def test_other_accounts_tracker_is_403_everywhere(api, other_api):
    t = new_tracker(api)
    for ep in ENDPOINTS:
        r = other_api.get(ep % t["tracker_id"])
        assert r.status_code == 403, (ep, r.status_code, r.text)
        assert r.headers["Content-Type"] == "application/json; charset=utf-8"
        assert r.json()["message"]
        # Parameters, valid or not, do not change that.
        r = other_api.get(ep % t["tracker_id"], params={"rows": 5, "search": "chrome"})
        assert r.status_code == 403
        assert other_api.get(ep % t["tracker_id"], params={"page": "0"}).status_code == 403


def test_unknown_and_non_numeric_ids_are_404(api):
    for ep in ENDPOINTS:
        for bad in ["999999999", "0", "abc", "-1", "1.5", "1e3", "01", "+1",
                    "99999999999999999999999", "%20"]:
            r = api.get(ep % bad)
            assert r.status_code == 404, (ep, bad, r.status_code, r.text)
            assert r.json()["message"]


def test_deleted_tracker_is_404(server, api):
    t = new_tracker(api)
    scan(server, t["code"])
    assert api.delete("/tracker/%d" % t["tracker_id"]).status_code in (200, 204)
    for ep in ENDPOINTS:
        assert api.get(ep % t["tracker_id"]).status_code == 404


def test_no_token_is_401(api, anon):
    t = new_tracker(api)
    for ep in ENDPOINTS:
        assert anon.get(ep % t["tracker_id"]).status_code == 401


def test_only_get(api):
    t = new_tracker(api)
    for ep in ENDPOINTS:
        r = api.post(ep % t["tracker_id"], json={})
        assert r.status_code == 405
        assert "GET" in r.headers["Allow"]


# -- endpoint 9: the listing --------------------------------------------------------------

def test_listing_shape_and_defaults(server, api):
    t = new_tracker(api)
    scan(server, t["code"], referer="https://news.example/a")
    body = listing(api, t["tracker_id"])
    assert set(body) == {"data", "meta"}
    assert body["meta"] == {"current_page": 1, "per_page": 25, "total": 1, "last_page": 1}
    v = body["data"][0]
    assert set(v) == VISIT_KEYS
    assert isinstance(v["id"], int) and v["tracker_id"] == t["tracker_id"]
    assert v["source"] == "scan" and v["bot"] is False
    assert v["referer"] == "https://news.example/a"
    assert v["user_agent"] == CHROME
    assert v["browser"].startswith("Chrome") and v["device"] == "mobile"
    time.strptime(v["visit_start"], "%Y-%m-%dT%H:%M:%S+0000")


def test_empty_listing(api):
    t = new_tracker(api)
    body = listing(api, t["tracker_id"])
    assert body == {"data": [], "meta": {"current_page": 1, "per_page": 25, "total": 0,
                                         "last_page": 1}}


def test_imported_visit_round_trips(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    v = visit(tid, T0, source="click", ip="2001:db8:1::", country="JP", city="東京",
              browser="Safari", browser_version="17", os="iOS", device="tablet",
              referer="https://example.org/ü?x=1&y=\"2\"", user_agent="Mozilla/5.0 (iPad) ü",
              bot=False, destination="https://example.org/dest?ü=1")
    import_visits(server, [v])
    got = listing(api, tid)["data"][0]
    want = dict(v)
    want["id"] = got["id"]
    assert got == want


def import_lines(server, lines, check=True):
    """Loads raw JSON lines through qrtrack-admin; the finished process."""
    path = os.path.join(server.dir, "lines-%s.jsonl" % uuid.uuid4().hex)
    with open(path, "wb") as f:
        f.write(b"".join(line + b"\n" for line in lines))
    os.chmod(path, 0o644)
    try:
        return server.admin("visits", "import", path, check=check)
    finally:
        os.unlink(path)


def test_import_refuses_a_line_longer_than_16_mb_from_a_file_and_a_pipe(server, api):
    """A line of more than 16 MB fails the import at its line, read to its end without
    being kept (a line of 400 MB took 1.3 GB, and a memory limit killed the process)."""
    t = new_tracker(api)
    ok = (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan"}'
          % t["tracker_id"])
    long_line = (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", '
                 b'"source": "scan", "city": "' % t["tracker_id"]) + b"x" * (17 << 20) + b'"}'
    p = import_lines(server, [ok, long_line, ok], check=False)
    assert p.returncode != 0 and "line 2: a line of more than 16 MB" in p.stderr, p.stderr
    p = server.admin("visits", "import", "-", input=(b"\n".join([ok, long_line, ok]) + b"\n")
                     .decode(), check=False)
    assert p.returncode != 0 and "line 2: a line of more than 16 MB" in p.stderr, p.stderr
    # (a file is checked whole before it is written; a pipe's batch with the line is not
    # written either)
    assert listing(api, t["tracker_id"])["data"] == []


def test_import_lines_read_alike_in_one_pass_and_through_jansson(server, api):
    # The importer reads a plain line in one pass (qrt_jsonl) and hands any other to
    # jansson: the same visits come out either way, and what neither can take fails
    # the import whole, naming the line.
    t = new_tracker(api)
    tid = t["tracker_id"]
    # plain: read in one pass (UTF-8 as it is); escaped: the same visit with JSON
    # escapes, which the one-pass reader declines.
    plain = ('{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00+0000", "source": "scan",'
             ' "ip": "203.0.113.9", "referer": null, "bot": false,'
             ' "user_agent": "UA/1", "city": "K\u00f6ln"}' % tid).encode()
    escaped = ('{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00+0000", "source": "scan",'
               ' "ip": "203.0.113.9", "referer": null, "bot": false,'
               r' "user_agent": "UA\/1", "city": "K\u00f6ln"}' % tid).encode()
    assert import_lines(server, [plain, escaped]).stdout.strip() == "2"
    data = listing(api, tid)["data"]
    assert len(data) == 2
    for v in data:
        v.pop("id")
    assert data[0] == data[1]
    assert data[0]["city"] == "Köln" and data[0]["user_agent"] == "UA/1"
    bad = [
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z"' % tid, "not a JSON object"),
        (b'[1, 2]', "not a JSON object"),
        (b'{"tracker_id": "%d", "visit_start": "2026-03-01T10:00:00Z", "source": "scan"}' % tid,
         "bad tracker_id"),
        (b'{"tracker_id": %d.0, "visit_start": "2026-03-01T10:00:00Z", "source": "scan"}' % tid,
         "bad tracker_id"),
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         b' "bot": "no"}' % tid, "bad bot"),
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         b' "city": ["x"]}' % tid, "bad city (not a string)"),
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         b' "city": "\xff"}' % tid, "not a JSON object"),
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         rb' "city": "a\u0000b"}' % tid, "not a JSON object"),
        (b'{"tracker_id": 99999999999999999999, "visit_start": "2026-03-01T10:00:00Z"}',
         "a number out of range (at most 2^63 - 1)"),
        # a member named twice, whichever reader reads the line: refused, as by the API
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         b' "city": "Bonn", "city": "K\xc3\xb6ln"}' % tid, "city named twice"),
        # (a nested value, which only jansson reads)
        (b'{"tracker_id": %d, "visit_start": "2026-03-01T10:00:00Z", "source": "scan",'
         b' "city": "Bonn", "extra": {"a": 1}, "city": "K\xc3\xb6ln"}' % tid,
         "a member named twice"),
    ]
    for line, why in bad:
        p = import_lines(server, [plain, line], check=False)
        assert p.returncode != 0 and ("line 2: " + why) in p.stderr, (line, p.stderr)
    assert len(listing(api, tid)["data"]) == 2


def test_import_refuses_nul_bytes_and_stores_visits_as_scans_have_them(server, api):
    """NUL bytes (a line of them, or after a whole object) fail the import with their
    line number; addresses are validated and anonymised as a scan's are, devices are
    the five a scan gets, times start at 1970."""
    t = new_tracker(api)
    tid = t["tracker_id"]
    ok = json.dumps(visit(tid, T0)).encode()
    for line in (b"\0" * 100000, b"\0" + ok, ok + b"\0trailing", ok[:30] + b"\0" + ok[30:]):
        p = import_lines(server, [ok, b"", line, ok], check=False)
        assert p.returncode != 0 and "line 3: a NUL byte" in p.stderr, (line[:40], p.stderr)
    bad = [(visit(tid, T0, ip="<script>"), "bad ip"),
           (visit(tid, T0, ip="203.0.113.300"), "bad ip"),
           (visit(tid, T0, device="<script>"), "bad device"),
           (visit(tid, T0, device="Mobile"), "bad device"),
           (dict(visit(tid, T0), visit_start="1970-01-01T00:30:00+0100"), "bad visit_start")]
    for v, why in bad:
        p = import_lines(server, [ok, json.dumps(v).encode()], check=False)
        assert p.returncode != 0 and ("line 2: " + why) in p.stderr, (v, p.stderr)
    assert listing(api, tid)["data"] == []
    import_visits(server, [visit(tid, T0, ip="198.51.100.77", device="tablet"),
                           visit(tid, T0 + 1, ip="2001:db8:abcd:12::1", device="bot", bot=True),
                           visit(tid, T0 + 2, ip=None, device=None),
                           dict(visit(tid, 0), visit_start="1970-01-01T01:00:00+0100")])
    # (a file's visits are stored in time order: the one of 1970 first)
    got = sorted(listing(api, tid)["data"], key=lambda v: v["id"])
    assert [v["ip"] for v in got] == ["203.0.113.0", "198.51.100.0", "2001:db8:abcd::", None]
    assert [v["device"] for v in got] == ["mobile", "tablet", "bot", "other"]
    assert got[0]["visit_start"].startswith("1970-01-01T00:00:00")


def admin_stdin(server, data):
    """visits import - with data on a pipe; the finished process."""
    return subprocess.run(server.as_user + [server.admin_tool, "--driver", server.driver,
                                            "--params", server.db, "visits", "import", "-"],
                          input=data, capture_output=True)


def test_import_commits_whole_batches_and_stops_at_a_bad_line(server, api):
    # qrtrack-admin writes 40,000 visits a transaction on SQLite, 25,000 on PostgreSQL
    # (these lines are short: the batch's 16 MB of text is not reached) while its reader
    # thread parses the next batch. From a pipe, a bad line or an unknown tracker fails
    # its own batch unwritten, naming the line, after the batches before it are
    # committed. A file is checked whole first (its run of up to 4,000,000 visits):
    # a bad line or an unknown tracker anywhere in it, and nothing is written.
    batch = 25000 if server.backend == "pgsql" else 40000
    t = new_tracker(api)
    tid = t["tracker_id"]

    def line(i, tracker=tid):
        return json.dumps({"tracker_id": tracker, "visit_start": ts(T0 + i), "source": "scan",
                           "ip": "203.0.%d.%d" % (i // 250 % 250, i % 250),
                           "user_agent": "UA %d" % (i % 7)}).encode()

    def totals():
        a = api.get("/tracker/analytics/%d" % tid).json()
        return a["totalScans"], listing(api, tid)["meta"]["total"]

    lines = [line(i) for i in range(batch + 15000)]
    lines[batch + 12000] = b'{"tracker_id": %d, "source": "scan"}' % tid
    p = import_lines(server, lines, check=False)
    assert p.returncode != 0, p.stderr
    assert "line %d: bad visit_start" % (batch + 12001) in p.stderr, p.stderr
    assert totals() == (0, 0)
    # an unknown tracker on the file's last line but one: nothing is written either
    lines = [line(i) for i in range(batch + 2000)]
    lines[-2] = line(1, tracker=999999999)
    p = import_lines(server, lines, check=False)
    assert p.returncode != 0, p.stderr
    assert "line %d: bad tracker_id (no such tracker)" % (batch + 1999) in p.stderr, p.stderr
    assert totals() == (0, 0)
    # the same two from a pipe: the batches before the bad line's are committed
    lines = [line(i) for i in range(batch + 15000)]
    lines[batch + 12000] = b'{"tracker_id": %d, "source": "scan"}' % tid
    p = admin_stdin(server, b"".join(x + b"\n" for x in lines))
    assert p.returncode != 0 and b"line %d: bad visit_start" % (batch + 12001) in p.stderr
    assert totals() == (batch, batch)
    lines = [line(3 * batch + i) for i in range(batch + 2000)]
    lines[batch - 2] = line(1, tracker=999999999)
    p = admin_stdin(server, b"".join(x + b"\n" for x in lines))
    assert p.returncode != 0, p.stderr
    assert b"line %d: bad tracker_id (no such tracker)" % (batch - 1) in p.stderr, p.stderr
    assert totals() == (batch, batch)
    # from stdin, blank lines between: every visit
    n = batch + 500
    p = admin_stdin(server, b"\n\n".join(line(5 * batch + i) for i in range(n)) + b"\n")
    assert p.returncode == 0 and p.stdout.strip() == str(n).encode(), p.stderr
    assert totals() == (batch + n, batch + n)
    newest = listing(api, tid, rows=1)["data"][0]
    assert newest["visit_start"] == ts(T0 + 5 * batch + n - 1)


def test_a_file_is_stored_in_time_order(server, api):
    # A file's visits are written in the order of their visit_start (equal times in
    # the order of their lines), over several batches: their ids follow that order, and
    # the counters count each visit once (test_reports checks the aggregates of a
    # shuffled file). From a pipe they are written as they come.
    batch = 25000 if server.backend == "pgsql" else 40000
    t = new_tracker(api)
    tid = t["tracker_id"]
    n = batch + batch // 2
    rnd = random.Random(39)
    times = [T0 - 86400 * 30 + rnd.randrange(86400 * 30) for _ in range(n)]
    for k in range(0, 60, 3):      # a few equal times, their lines apart
        times[k * 7] = times[k * 7 + 1] = times[n - k - 1] = T0 - 3600
    # 600 returning visitors: the aggregates' chains of each visitor's visits
    lines = [json.dumps({"tracker_id": tid, "visit_start": ts(times[i]),
                         "source": "click" if i % 5 == 0 else "scan",
                         "ip": "198.51.%d.%d" % (i % 600 // 250, 1 + i % 250),
                         "user_agent": "UA %d" % (i % 600), "city": "c%d" % i}).encode()
             for i in range(n)]
    p = import_lines(server, lines)
    assert p.stdout.strip() == str(n)
    got = all_ids_and_cities(api, tid)
    order = sorted(range(n), key=lambda i: (times[i], i))
    assert [c for _, c in got] == ["c%d" % i for i in order]
    assert [i for i, _ in got] == sorted(i for i, _ in got)
    a = api.get("/tracker/analytics/%d" % tid).json()
    assert (a["totalScans"], a["totalClicks"]) == (n - len(range(0, n, 5)), len(range(0, n, 5)))
    assert a["uniqueVisitors"] == 600
    # a pipe's lines as they come
    t2 = new_tracker(api)["tracker_id"]
    p = admin_stdin(server, b"".join(x.replace(b'"tracker_id": %d' % tid,
                                                 b'"tracker_id": %d' % t2) + b"\n"
                                       for x in lines[:500]))
    assert p.returncode == 0, p.stderr
    assert [c for _, c in all_ids_and_cities(api, t2)] == ["c%d" % i for i in range(500)]


def all_ids_and_cities(api, tid):
    """Every visit of tid as (id, city), in the order of their ids."""
    got, page = [], 1
    while True:
        data = listing(api, tid, rows=1000, page=page)["data"]
        got += [(v["id"], v["city"]) for v in data]
        if len(data) < 1000:
            return sorted(got)
        page += 1


def test_newest_first_ties_by_id_descending(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    # Imported out of time order (two files: one file's visits are written in time
    # order), with three visits in the same second.
    import_visits(server, [visit(tid, T0 + 10, city="b1")])
    import_visits(server, [visit(tid, T0, city="a"), visit(tid, T0 + 10, city="b2"),
                           visit(tid, T0 + 99, city="c"), visit(tid, T0 + 10, city="b3")])
    data = listing(api, tid)["data"]
    assert [v["city"] for v in data] == ["c", "b3", "b2", "b1", "a"]
    same = [v["id"] for v in data[1:4]]
    assert same == sorted(same, reverse=True)
    # A poll's answer is in the same order (b1 has the lowest id: imported first).
    first = min(v["id"] for v in data)
    assert [v["city"] for v in listing(api, tid, since_id=first)["data"]] == [
        "c", "b3", "b2", "a"]
    assert [v["city"] for v in listing(api, tid, since_id=first, rows=2, page=2)["data"]] == [
        "b2", "a"]


def test_paging(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [visit(tid, T0 + i, city="c%d" % i) for i in range(7)])
    seen = []
    for page in (1, 2, 3):
        body = listing(api, tid, rows=3, page=page)
        assert body["meta"] == {"current_page": page, "per_page": 3, "total": 7,
                                "last_page": 3}
        seen += [v["city"] for v in body["data"]]
    assert seen == ["c%d" % i for i in range(6, -1, -1)]
    body = listing(api, tid, rows=3, page=4)
    assert body["data"] == [] and body["meta"]["total"] == 7
    assert len(listing(api, tid, rows=1000)["data"]) == 7
    assert len(listing(api, tid, rows=1)["data"]) == 1
    assert listing(api, tid, page=100000000)["data"] == []


def test_paging_errors_name_the_parameter(api):
    t = new_tracker(api)
    url = "/visits/tracker/%d" % t["tracker_id"]
    for page in ["0", "-1", "abc", "1.5", "", " 1", "01", "1e2", "100000001",
                 "99999999999999999999"]:
        error_422(api.get(url, params={"page": page}), "page")
    for rows in ["0", "1001", "abc", "-5", "", "2.0", "99999999999999999999"]:
        error_422(api.get(url, params={"rows": rows}), "rows")
    body = error_422(api.get(url, params={"page": "0", "search": "ab"}), "page")
    assert "search" in body["errors"]


def test_search_parameter_errors(api):
    t = new_tracker(api)
    url = "/visits/tracker/%d" % t["tracker_id"]
    for s in ["", "a", "ab", "东京", "é", "a\x01b", "ab\n", "x" * 257]:
        error_422(api.get(url, params={"search": s}), "search")
    # Characters, not bytes: three of them are enough.
    assert api.get(url, params={"search": "东京都"}).status_code == 200
    assert api.get(url, params={"search": "   "}).status_code == 200
    assert api.get(url, params={"search": "x" * 256}).status_code == 200
    # Invalid UTF-8, percent-encoded in the URL: the message names what is wrong
    body = error_422(api.get(url + "?search=%FF%FE%FD"), "search")
    assert "UTF-8" in body["errors"]["search"][0], body


def test_search_matches_each_field_case_insensitively(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [
        visit(tid, T0 + 1, browser="Firefox Focus", city="b"),
        visit(tid, T0 + 2, os="HarmonyOS", city="o"),
        visit(tid, T0 + 3, device="tablet", city="d"),
        visit(tid, T0 + 4, city="Zürich"),
        visit(tid, T0 + 5, referer="https://News.Example/story", city="r"),
        visit(tid, T0 + 6, user_agent="CustomAgent/7 (Kiosk)", city="u"),
        visit(tid, T0 + 7, ip="198.51.100.0", city="i"),
        visit(tid, T0 + 8, ip="2001:db8:abcd::", city="i6"),
    ])

    def cities(s, **kw):
        return [v["city"] for v in listing(api, tid, search=s, **kw)["data"]]

    assert cities("FIREFOX") == ["b"]
    assert cities("harmony") == ["o"]
    assert cities("TABLET") == ["d"]
    assert cities("ZüRICH") == ["Zürich"]
    assert cities("news.example") == ["r"]
    assert cities("kiosk") == ["u"]
    assert cities("51.100") == ["i"]
    assert cities("DB8:ABCD") == ["i6"]
    assert cities("no such thing") == []
    # Every visit has "Chrome" in its browser or in its user agent.
    assert len(cities("chrome")) == 8
    assert listing(api, tid, search="chrome", rows=3)["meta"] == {
        "current_page": 1, "per_page": 3, "total": 8, "last_page": 3}


def test_search_finds_its_text_as_written_whatever_the_letters(server, api):
    """Text written as it is stored is found whatever its letters, and ASCII letters in any
    case (PostgreSQL folded the stored text with Unicode's lower case and the search text with
    ASCII's: an upper-case letter outside ASCII found nothing)."""
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [
        visit(tid, T0 + 1, city="ÄRGERSTADT"),
        visit(tid, T0 + 2, user_agent="İSTANBUL-Agent/1.0", city="ua"),
        visit(tid, T0 + 3, referer="https://ΣΊΣ.example/ǅEM", city="ref"),
    ])

    def cities(s):
        return [v["city"] for v in listing(api, tid, search=s)["data"]]

    assert cities("ÄRGERSTADT") == ["ÄRGERSTADT"]
    assert cities("ÄRGERstadt") == ["ÄRGERSTADT"]
    assert cities("İSTANBUL") == ["ua"]
    assert cities("İstanbul-agent") == ["ua"]
    assert cities("ΣΊΣ") == ["ref"]
    assert cities("ǅEM") == ["ref"]
    assert [r[CSV_HEADER.index("city")] for r in export(api, tid, search="ÄRGER")] \
        == ["ÄRGERSTADT"]


def test_search_is_literal_text(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [
        visit(tid, T0, referer="https://a.example/100%_off", city="pct"),
        visit(tid, T0 + 1, referer="https://a.example/1000xoff", city="plain"),
        visit(tid, T0 + 2, user_agent="back\\slash agent", city="bs"),
        visit(tid, T0 + 3, user_agent="it's \"quoted\"; DROP TABLE visits; --", city="q"),
    ])

    def cities(s):
        return sorted(v["city"] for v in listing(api, tid, search=s)["data"])

    assert cities("0%_") == ["pct"]
    assert cities("%%%") == []
    assert cities("___") == []
    assert cities("k\\s") == ["bs"]
    assert cities("'s \"quoted\"; drop") == ["q"]
    assert len(listing(api, tid)["data"]) == 4


def test_since_id(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [visit(tid, T0 + i) for i in range(5)])
    ids = all_ids(api, tid)
    assert all_ids(api, tid, since_id=ids[2]) == ids[:2]
    assert all_ids(api, tid, since_id=0) == ids
    assert all_ids(api, tid, since_id=ids[0]) == []
    assert listing(api, tid, since_id=ids[2])["meta"]["total"] == 2
    body = listing(api, tid, since_id=ids[4], rows=1, page=2)
    assert [v["id"] for v in body["data"]] == [ids[1]]
    assert body["meta"] == {"current_page": 2, "per_page": 1, "total": 4, "last_page": 4}
    # With a window and a search too (visit_start of ids[k] is T0 + 4 - k).
    assert all_ids(api, tid, since_id=ids[4], visit_start_end=ts(T0 + 2),
                   search="ANDROID") == ids[2:4]
    assert all_ids(api, tid, since_id=ids[4], search="nothing like it") == []
    assert all_ids(api, tid, since_id=ids[0] + 1000) == []
    url = "/visits/tracker/%d" % tid
    for bad in ["-1", "abc", "1.5", "", "99999999999999999999"]:
        error_422(api.get(url, params={"since_id": bad}), "since_id")


# -- the window ---------------------------------------------------------------------------

def test_window_edges_are_inclusive(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    start, end = T0, T0 + 3600
    import_visits(server, [visit(tid, start - 1, city="before"), visit(tid, start, city="start"),
                           visit(tid, start + 60, city="inside"), visit(tid, end, city="end"),
                           visit(tid, end + 1, city="after")])

    def cities(**kw):
        return [v["city"] for v in listing(api, tid, **kw)["data"]]

    assert cities(visit_start=ts(start), visit_start_end=ts(end)) == ["end", "inside", "start"]
    assert cities(visit_start=ts(start)) == ["after", "end", "inside", "start"]
    assert cities(visit_start_end=ts(end)) == ["end", "inside", "start", "before"]
    assert cities(visit_start=ts(end), visit_start_end=ts(end)) == ["end"]
    assert cities(visit_start=ts(end + 2)) == []
    # The same instants in other offsets.
    assert cities(visit_start="2026-11-27T12:00:00+0200",
                  visit_start_end="2026-11-27T05:00:00-0600") == ["end", "inside", "start"]
    assert cities(visit_start="2026-11-27T12:00:00+02:00",
                  visit_start_end="2026-11-27T11:00:00Z") == ["end", "inside", "start"]
    # The window applies to the count and to search, too.
    body = listing(api, tid, visit_start=ts(start), visit_start_end=ts(end), search="chrome",
                   rows=2)
    assert body["meta"]["total"] == 3 and len(body["data"]) == 2


def test_accepted_date_forms(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [visit(tid, T0, city="x")])
    url = "/visits/tracker/%d" % tid
    for form in ["2026-11-27T10:00:00+0000", "2026-11-27T10:00:00+00:00",
                 "2026-11-27T10:00:00Z", "2026-11-27T11:00:00+0100",
                 "2026-11-27T04:30:00-0530"]:
        for name in ("visit_start", "visit_start_end"):
            body = listing(api, tid, **{name: form})
            assert [v["city"] for v in body["data"]] == ["x"], (name, form)
    # An unencoded '+' arrives as a space and is still accepted; %2B is the plus itself.
    for raw in ["2026-11-27T10:00:00+0000", "2026-11-27T10:00:00%2B0000",
                "2026-11-27T10:00:00+00:00", "2026-11-27T10:00:00%2B00:00",
                "2026-11-27T10:00:00%200000", "2026-11-27T10:00:00Z"]:
        r = api.get(url + "?visit_start=" + raw + "&visit_start_end=" + raw)
        assert r.status_code == 200, (raw, r.text)
        assert [v["city"] for v in r.json()["data"]] == ["x"], raw


def test_bad_dates_are_422_naming_the_parameter(api):
    t = new_tracker(api)
    url = "/visits/tracker/%d" % t["tracker_id"]
    bad = ["2026-13-01T00:00:00+0000", "2026-11-20", "2026-11-20T10:00:00",
           "2026-02-30T00:00:00+0000", "2026-11-20T24:00:00+0000", "2026-11-20T10:60:00+0000",
           "2026-11-20T10:00:60+0000", "2026-11-20 10:00:00+0000", "20261120T100000Z",
           "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:00+2500", "2026-11-20T10:00:00+01",
           "2026-11-20T10:00:00z", "2026-11-20t10:00:00Z", "1795687200", "yesterday", "",
           "2026-11-20T10:00:00+0000 ", "2026-11-20T10:00:00+0000x", "0000-01-01T00:00:00Z",
           "２０２６-11-20T10:00:00Z", "2026-11-20T10:00:00\x01+0000"]
    for name in ("visit_start", "visit_start_end"):
        for value in bad:
            body = error_422(api.get(url, params={name: value}), name)
            assert name in body["message"] or name in json.dumps(body["errors"])


def test_window_start_after_end_is_422(api):
    t = new_tracker(api)
    r = api.get("/visits/tracker/%d" % t["tracker_id"],
                params={"visit_start": ts(T0 + 1), "visit_start_end": ts(T0)})
    error_422(r, "visit_start_end")


# -- polling: ETag, 304, since_id -----------------------------------------------------------

def test_etag_and_304(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    scan(server, t["code"])
    url = "/visits/tracker/%d" % tid
    r1 = api.get(url)
    etag = r1.headers["ETag"]
    assert etag.startswith('W/"') and etag.endswith('"')
    assert api.get(url).headers["ETag"] == etag          # stable

    for inm in [etag, etag[2:], '"nope", ' + etag, "*"]:
        r = api.get(url, headers={"If-None-Match": inm})
        assert r.status_code == 304, (inm, r.status_code)
        assert r.content == b""
        assert r.headers["ETag"] == etag
        assert "X-RateLimit-Limit" in r.headers and "X-RateLimit-Remaining" in r.headers
    assert api.get(url, headers={"If-None-Match": '"nope"'}).status_code == 200

    # Another query is another representation.
    r = api.get(url, params={"rows": 5}, headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.headers["ETag"] != etag
    r = api.get(url, params={"search": "chrome"}, headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.headers["ETag"] != etag

    # A new visit makes the next poll a 200 with the new visit on top.
    first = r1.json()["data"][0]["id"]
    scan(server, t["code"], path="l")
    r2 = api.get(url, headers={"If-None-Match": etag})
    assert r2.status_code == 200
    assert r2.headers["ETag"] != etag
    assert r2.json()["data"][0]["source"] == "click"
    assert r2.json()["data"][0]["id"] > first
    assert api.get(url, headers={"If-None-Match": r2.headers["ETag"]}).status_code == 304


def test_poll_with_since_id(server, api):
    """What an automation platform does: keep the highest id seen, ask for newer ones."""
    t = new_tracker(api)
    tid = t["tracker_id"]
    url = "/visits/tracker/%d" % tid
    scan(server, t["code"])
    scan(server, t["code"])
    last = max(v["id"] for v in listing(api, tid)["data"])
    r = api.get(url, params={"since_id": last})
    assert r.status_code == 200 and r.json()["data"] == []
    etag = r.headers["ETag"]
    assert api.get(url, params={"since_id": last},
                   headers={"If-None-Match": etag}).status_code == 304
    scan(server, t["code"], referer="https://new.example/")
    r = api.get(url, params={"since_id": last}, headers={"If-None-Match": etag})
    assert r.status_code == 200
    data = r.json()["data"]
    assert len(data) == 1 and data[0]["id"] > last
    assert data[0]["referer"] == "https://new.example/"


def test_other_accounts_etag_gets_403(api, other_api):
    t = new_tracker(api)
    url = "/visits/tracker/%d" % t["tracker_id"]
    etag = api.get(url).headers["ETag"]
    assert other_api.get(url, headers={"If-None-Match": etag}).status_code == 403
    assert other_api.get(url, headers={"If-None-Match": "*"}).status_code == 403


# -- endpoint 10: CSV ---------------------------------------------------------------------------

def test_csv_headers_and_empty_export(api):
    t = new_tracker(api)
    r = api.get("/visits/tracker/%d/download/csv" % t["tracker_id"])
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert r.headers["Content-Disposition"] == (
        'attachment; filename="tracker-%d-visits.csv"' % t["tracker_id"])
    assert "X-RateLimit-Limit" in r.headers
    assert r.content == (",".join(CSV_HEADER) + "\r\n").encode()


def test_csv_round_trip(server, api):
    name = 'Spring, "sale" – Zürich'
    t = new_tracker(api, name=name)
    tid = t["tracker_id"]
    tricky = [
        visit(tid, T0 + 1, user_agent='Agent "quoted", with comma', referer="https://a.example/?a=1,2"),
        visit(tid, T0 + 2, user_agent="line one\nline two\r\nline three", referer=None),
        visit(tid, T0 + 3, user_agent="Ünïcødé 東京 😀 agent", city="São Paulo", country="BR"),
        visit(tid, T0 + 4, referer="=cmd|' /C calc'!A0", user_agent="+SUM(1,2)"),
        visit(tid, T0 + 5, referer="@evil", user_agent="-2+3", browser="\tTab"),
        visit(tid, T0 + 6, user_agent=" padded ", referer="https://x.example/ end"),
        visit(tid, T0 + 7, source="click", device="bot", bot=True, user_agent="crawler/1.0"),
    ]
    import_visits(server, tricky)
    rows = export(api, tid)
    assert len(rows) == len(tricky)
    by_json = {v["id"]: v for v in listing(api, tid)["data"]}
    # Same order as the listing: newest first.
    assert [int(r[0]) for r in rows] == list(by_json)
    for row, want in zip(rows, reversed(tricky)):
        got = dict(zip(CSV_HEADER, row))
        assert got["tracker_id"] == str(tid)
        assert got["tracker_name"] == name
        assert got["visit_start"] == want["visit_start"]
        assert got["bot"] == ("true" if want["bot"] else "false")
        assert got["source"] == want["source"]
        for k in ("ip", "country", "city", "browser", "browser_version", "os", "device",
                  "referer", "user_agent"):
            v = want[k] if want[k] is not None else ""
            if v[:1] in ("=", "+", "-", "@", "\t", "\r"):
                v = "'" + v             # the formula guard, and only that
            assert got[k] == v, (k, got[k], v)
        assert by_json[int(got["id"])]["user_agent"] == want["user_agent"]


def test_csv_bytes_are_rfc4180(server, api):
    t = new_tracker(api, name="plain")
    tid = t["tracker_id"]
    import_visits(server, [visit(tid, T0, user_agent="a\nb", referer="=1+1")])
    body = api.get("/visits/tracker/%d/download/csv" % tid).content
    assert body.startswith(b"id,visit_start,source,tracker_id,tracker_name,ip,country,city,"
                           b"browser,browser_version,os,device,referer,user_agent,bot\r\n")
    assert body.endswith(b"\r\n")
    assert b'"a\nb"' in body                 # the newline stays inside a quoted cell
    assert b",\"'=1+1\"," in body
    assert body.decode("utf-8")
    assert body.count(b"\r\n") == 2
    assert not body.startswith(b"\xef\xbb\xbf")


def test_csv_window_search_and_since_id(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    start, end = T0, T0 + 60
    import_visits(server, [visit(tid, start - 1, city="before"), visit(tid, start, city="start"),
                           visit(tid, start + 30, city="mid", user_agent="Special Agent"),
                           visit(tid, end, city="end"), visit(tid, end + 1, city="after")])

    def cities(**kw):
        return [dict(zip(CSV_HEADER, r))["city"] for r in export(api, tid, **kw)]

    assert cities() == ["after", "end", "mid", "start", "before"]
    assert cities(visit_start=ts(start), visit_start_end=ts(end)) == ["end", "mid", "start"]
    assert cities(visit_start="2026-11-27T10:00:00+00:00") == ["after", "end", "mid", "start"]
    assert cities(search="SPECIAL") == ["mid"]
    ids = [v["id"] for v in listing(api, tid)["data"]]
    assert cities(since_id=ids[2]) == ["after", "end"]
    # page and rows belong to the listing; the export has everything.
    assert len(cities(rows=1, page=3)) == 5


def test_csv_parameter_errors_are_422(api):
    t = new_tracker(api)
    url = "/visits/tracker/%d/download/csv" % t["tracker_id"]
    error_422(api.get(url, params={"visit_start": "2026-13-01T00:00:00+0000"}), "visit_start")
    error_422(api.get(url, params={"visit_start_end": "2026-11-20"}), "visit_start_end")
    error_422(api.get(url, params={"search": "ab"}), "search")
    error_422(api.get(url, params={"since_id": "x"}), "since_id")


def test_csv_many_rows_across_chunks(server, api):
    """More rows than one export chunk, many in the same second: none lost, none twice."""
    t = new_tracker(api)
    tid = t["tracker_id"]
    n = 2600
    import_visits(server, [visit(tid, T0 + (i % 4) * 1000 if i % 3 else T0 + 7,
                                 city="city%d" % i) for i in range(n)])
    rows = export(api, tid)
    assert len(rows) == n
    keys = [(r[1], int(r[0])) for r in rows]
    assert keys == sorted(keys, reverse=True)
    assert len({r[0] for r in rows}) == n
    ids = all_ids(api, tid)
    assert [int(r[0]) for r in rows[:1000]] == ids
    # Windowed and searched exports cross chunks the same way.
    rows = export(api, tid, visit_start=ts(T0 + 7), visit_start_end=ts(T0 + 2000))
    want = sum(1 for i in range(n)
               if T0 + 7 <= (T0 + (i % 4) * 1000 if i % 3 else T0 + 7) <= T0 + 2000)
    assert len(rows) == want
    assert len(export(api, tid, search="ty1")) == sum(1 for i in range(n)
                                                     if str(i).startswith("1"))
    a = api.get("/tracker/analytics/%d" % tid).json()
    assert a["totalScans"] == n


def test_csv_head(api):
    t = new_tracker(api)
    r = api.head("/visits/tracker/%d/download/csv" % t["tracker_id"])
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert r.content == b""


@sqlite_only("a UTF8 PostgreSQL database refuses to store bytes that are not UTF-8")
def test_stored_invalid_utf8_is_replaced(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    import_visits(server, [visit(tid, T0, user_agent="placeholder-ua")])
    server.sql("UPDATE visits SET user_agent = CAST(X'41FF42C3' AS TEXT) "
               "WHERE tracker_id = %d" % tid)
    v = listing(api, tid)["data"][0]
    assert v["user_agent"] == "A\ufffdB\ufffd"
    row = dict(zip(CSV_HEADER, export(api, tid)[0]))
    assert row["user_agent"] == "A\ufffdB\ufffd"


def test_csv_client_going_away_mid_export(server, api):
    """A download dropped half-way costs the server nothing lasting."""
    t = new_tracker(api)
    tid = t["tracker_id"]
    n = 20000
    import_visits(server, [visit(tid, T0 + i, user_agent="agent %d " % i + "x" * 200)
                           for i in range(n)])
    for _ in range(3):
        with api.get("/visits/tracker/%d/download/csv" % tid, stream=True) as r:
            assert r.status_code == 200
            first = next(r.iter_content(4096))
            assert first.startswith(b"id,visit_start,")
        # Closing the response mid-body drops the connection.
    rows = export(api, tid)
    assert len(rows) == n
    assert listing(api, tid)["meta"]["total"] == n
    assert not server.crash_lines()
