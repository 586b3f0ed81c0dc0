"""Accounts of visits with an oracle of their reports."""
import calendar
import json
import os
import random
import time
import uuid
import pytest
from lib.api import Api


T0 = calendar.timegm((2026, 3, 10, 0, 0, 0, 0, 0, 0))      # 2026-03-10T00:00:00+0000


DAY = 86400


UA = ["Mozilla/5.0 (iPhone) Safari/604.1 #%d" % i for i in range(8)]


def fmt(t, off=0):
    """t (epoch seconds) written in offset off (seconds east of UTC)."""
    sign = "-" if off < 0 else "+"
    a = abs(off)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + off)) + \
        "%s%02d%02d" % (sign, a // 3600, a % 3600 // 60)


class Account:
    """A fresh account with its own trackers; a new token every 100 requests keeps
    the per-token rate limit out of the way."""

    def __init__(self, server):
        self.server = server
        self.name = "rep-" + uuid.uuid4().hex[:12]
        server.account(self.name)
        self.trackers = {}          # id -> {"name", "type", "tags", "deleted"}
        self.visits = []            # what was imported
        self.calls = 0
        self.api = None
        self._renew()

    def _renew(self):
        if self.api:
            self.api.close()
        self.api = Api(self.server, self.server.token(self.name))
        self.calls = 0

    def get(self, path, **params):
        self.calls += 1
        if self.calls > 100:
            self._renew()
        return self.api.get(path, params=params)

    def tracker(self, name, tags=()):
        self.calls += 1
        if self.calls > 100:
            self._renew()
        r = self.api.post("/tracker", json={"redirect_url": "https://example.com/" + name,
                                            "name": name, "tags": list(tags)})
        assert r.status_code == 200, r.text
        t = r.json()
        self.trackers[t["tracker_id"]] = {"name": name, "type": t["type"],
                                          "tags": sorted(set(tags)), "deleted": False}
        return t["tracker_id"]

    def retag(self, tid, tags):
        r = self.api.patch("/tracker/%d" % tid, json={"tags": list(tags)})
        assert r.status_code == 200, r.text
        self.trackers[tid]["tags"] = sorted(set(tags))

    def rename(self, tid, name):
        r = self.api.patch("/tracker/%d" % tid, json={"name": name})
        assert r.status_code == 200, r.text
        self.trackers[tid]["name"] = name

    def delete(self, tid):
        r = self.api.delete("/tracker/%d" % tid)
        assert r.status_code in (200, 204), r.text
        self.trackers[tid]["deleted"] = True

    def live(self):
        return sorted(i for i, t in self.trackers.items() if not t["deleted"])

    def load(self, visits, as_file=False):
        """Imports visits in the order given (through a pipe); as_file: from a file,
        which the import writes in time order."""
        if not as_file:
            self.server.admin("visits", "import", "-",
                              input="".join(json.dumps(v.line()) + "\n" for v in visits))
            self.visits.extend(visits)
            return
        path = os.path.join(self.server.dir, "rep-%s.jsonl" % uuid.uuid4().hex)
        with open(path, "w", encoding="utf-8") as f:
            for v in visits:
                f.write(json.dumps(v.line()) + "\n")
        os.chmod(path, 0o644)
        try:
            self.server.admin("visits", "import", path)
        finally:
            os.unlink(path)
        self.visits.extend(visits)

    def rebuild(self):
        self.server.admin("aggregates", "rebuild")

    def close(self):
        self.api.close()


class V:
    """One visit as imported."""

    def __init__(self, tid, t, source="scan", who=0, ua=0, browser="Chrome", country="DE",
                 city="Berlin", bot=False, destination=None):
        self.tid, self.t, self.source, self.bot = tid, t, source, bot
        self.destination = destination
        # one /24 a visitor: the import anonymises addresses as a scan does
        self.ip = "198.51.%d.0" % who
        self.ua = UA[ua]
        self.browser, self.country, self.city = browser, country, city

    def visitor(self):
        return (self.ip, self.ua)

    def line(self):
        line = {"tracker_id": self.tid, "visit_start": fmt(self.t), "source": self.source,
                "ip": self.ip, "user_agent": self.ua, "browser": self.browser,
                "country": self.country, "city": self.city, "bot": self.bot,
                "device": "bot" if self.bot else "mobile"}
        if self.destination:
            line["destination"] = self.destination
        return line


@pytest.fixture
def acct(server):
    a = Account(server)
    yield a
    a.close()


def oracle_crosstab(acct, row, col, s=None, e=None, covered=None):
    cov = covered if covered is not None else acct.live()
    tr = acct.trackers

    def values(tid, dim):
        return sorted({t.split(":", 1)[1] for t in tr[tid]["tags"]
                       if ":" in t and t.split(":", 1)[0] == dim})

    both = [tid for tid in cov if values(tid, row) and values(tid, col)]
    visits = {tid: 0 for tid in both}
    for v in acct.visits:
        if v.tid in visits and not v.bot and (s is None or v.t >= s) and \
                (e is None or v.t <= e):
            visits[v.tid] += 1
    rows = sorted({x for tid in both for x in values(tid, row)}, key=str.encode)
    cols = sorted({x for tid in both for x in values(tid, col)}, key=str.encode)
    matrix = [[0] * len(cols) for _ in rows]
    rt, ct = [0] * len(rows), [0] * len(cols)
    for tid in both:
        for r in values(tid, row):
            rt[rows.index(r)] += visits[tid]
            for c in values(tid, col):
                matrix[rows.index(r)][cols.index(c)] += visits[tid]
        for c in values(tid, col):
            ct[cols.index(c)] += visits[tid]
    return {"rows": rows, "cols": cols, "matrix": matrix, "row_totals": rt,
            "col_totals": ct, "total": sum(visits.values())}


def json_error(r, status, field=None):
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["message"]
    if field:
        assert field in body["errors"], body
    return body
