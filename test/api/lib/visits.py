"""Visits for the tests: a tracker, a visit's fields, importing visits through qrtrack-admin,
the listing and the CSV export (shared by the visit, search and retention tests)."""
import calendar
import csv
import io
import json
import os
import time
import uuid

import requests

VISIT_KEYS = {"id", "tracker_id", "visit_start", "source", "ip", "country", "city", "browser",
              "browser_version", "os", "device", "referer", "user_agent", "bot"}
CSV_HEADER = ["id", "visit_start", "source", "tracker_id", "tracker_name", "ip", "country",
              "city", "browser", "browser_version", "os", "device", "referer", "user_agent",
              "bot"]
CHROME = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Mobile Safari/537.36")

T0 = calendar.timegm((2026, 11, 27, 10, 0, 0, 0, 0, 0))     # 2026-11-27T10:00:00+0000


# -- helpers -------------------------------------------------------------------

def ts(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(t))


def new_tracker(api, name=None):
    body = {"redirect_url": "https://example.com/landing"}
    if name is not None:
        body["name"] = name
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def visit(tid, t, **kw):
    v = {"tracker_id": tid, "visit_start": ts(t), "source": "scan", "ip": "203.0.113.0",
         "country": "DE", "city": "Berlin", "browser": "Chrome", "browser_version": "120",
         "os": "Android", "device": "mobile", "referer": None, "user_agent": CHROME,
         "bot": False}
    v.update(kw)
    return v


def import_visits(server, visits):
    """Loads visits through qrtrack-admin (counters and aggregates follow)."""
    path = os.path.join(server.dir, "visits-%s.jsonl" % uuid.uuid4().hex)
    with open(path, "w", encoding="utf-8") as f:
        for v in visits:
            f.write(json.dumps(v, ensure_ascii=False) + "\n")
    os.chmod(path, 0o644)
    try:
        server.admin("visits", "import", path)
    finally:
        os.unlink(path)


def scan(server, code, path="q", ua=CHROME, referer=None):
    headers = {"User-Agent": ua}
    if referer:
        headers["Referer"] = referer
    r = requests.get("%s/%s/%s" % (server.base, path, code), headers=headers,
                     allow_redirects=False, timeout=30)
    assert r.status_code == 302, (r.status_code, r.text)


def listing(api, tid, **params):
    r = api.get("/visits/tracker/%d" % tid, params=params)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    return r.json()


def all_ids(api, tid, **params):
    params.setdefault("rows", 1000)
    return [v["id"] for v in listing(api, tid, **params)["data"]]


def csv_rows(r):
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(r.content.decode("utf-8"), newline="")))
    assert rows[0] == CSV_HEADER
    return rows[1:]


def export(api, tid, **params):
    return csv_rows(api.get("/visits/tracker/%d/download/csv" % tid, params=params))


def error_422(r, field):
    assert r.status_code == 422, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    body = r.json()
    assert field in body["errors"], body
    assert isinstance(body["message"], str) and body["message"]
    return body


# -- the search's reference: what a substring search over a visit's fields finds ----

FIELDS = ["browser", "os", "device", "country", "city", "referer", "user_agent", "ip"]
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1")
ANDROID = ("Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like "
           "Gecko) Chrome/120.0.0.0 Mobile Safari/537.36")


def fold(s):
    """ASCII letters lowered, nothing else (SQLite's LIKE; the pattern on PostgreSQL)."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def oracle(visits, word):
    w = fold(word)
    return [v for v in visits
            if any(v[f] is not None and w in fold(str(v[f])) for f in FIELDS)]


def _epoch(s):
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S"))


def check_counts(server):
    """PostgreSQL: visit_dict_counts is what the visits say, with no row of 0."""
    if server.backend != "pgsql":
        return
    kept = server.sql("SELECT tracker_id, d, id, n FROM visit_dict_counts "
                      "ORDER BY 1, 2, 3").split()
    want = server.sql(
        "SELECT tracker_id, d, id, COUNT(*) FROM (SELECT tracker_id, 1 AS d, ua_id AS id "
        "FROM visit_rows UNION ALL SELECT tracker_id, 2, place_id FROM visit_rows UNION ALL "
        "SELECT tracker_id, 3, ref_id FROM visit_rows WHERE ref_id IS NOT NULL) o "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").split()
    assert kept == want
    assert not [r for r in kept if r.endswith("|0")]
