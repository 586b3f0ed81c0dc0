"""Visits for the tests: trackers, scans, imports, listings and exports."""
import calendar
import csv
import io
import json
import os
import subprocess
import time
import uuid
import requests
from lib.env import sqlite_only


CSV_HEADER = ["id", "visit_start", "source", "tracker_id", "tracker_name", "ip", "country",
              "city", "browser", "browser_version", "os", "device", "referer", "user_agent",
              "bot"]


CHROME = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Mobile Safari/537.36")


T0 = calendar.timegm((2026, 11, 27, 10, 0, 0, 0, 0, 0))     # 2026-11-27T10:00:00+0000


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


def import_visits(server, visits, pipe=False):
    """Loads visits through qrtrack-admin (counters and aggregates follow); what it
    prints, the count of visits imported. A file's visits are written in time order;
    pipe: through a pipe, in the order given."""
    if pipe:
        return server.admin("visits", "import", "-", input="".join(
            json.dumps(v, ensure_ascii=False) + "\n" for v in visits)).stdout.strip()
    path = os.path.join(server.dir, "visits-%s.jsonl" % uuid.uuid4().hex)
    with open(path, "w", encoding="utf-8") as f:
        for v in visits:
            f.write(json.dumps(v, ensure_ascii=False) + "\n")
    os.chmod(path, 0o644)
    try:
        return server.admin("visits", "import", path).stdout.strip()
    finally:
        os.unlink(path)


def listing(api, tid, **params):
    r = api.get("/visits/tracker/%d" % tid, params=params)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    return r.json()


def csv_rows(r):
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(r.content.decode("utf-8"), newline="")))
    assert rows[0] == CSV_HEADER
    return rows[1:]


def export(api, tid, **params):
    return csv_rows(api.get("/visits/tracker/%d/download/csv" % tid, params=params))
