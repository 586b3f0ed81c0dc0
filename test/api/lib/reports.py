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


# -- the oracle of reports and KPIs ------------------------------------------------

def day_of(t, off=0):
    return time.strftime("%Y-%m-%d", time.gmtime(t + off))


def _bound(x):
    return x if x else None


def oracle_rows(acct, kind, s=None, e=None, off=0, covered=None):
    cov = covered if covered is not None else acct.live()
    tr = acct.trackers
    groups = {}

    def group(key):
        return groups.setdefault(key, {"scans": 0, "clicks": 0, "who": set()})

    if kind == "name":
        for tid in cov:
            group((tid, tr[tid]["name"]))
    elif kind == "type":
        for tid in cov:
            group(tr[tid]["type"])
    elif kind == "tag":
        for tid in cov:
            for tag in tr[tid]["tags"]:
                group(tag)
    for v in acct.visits:
        if v.bot or v.tid not in cov or (s is not None and v.t < s) or \
                (e is not None and v.t > e):
            continue
        if kind == "name":
            keys = [(v.tid, tr[v.tid]["name"])]
        elif kind == "type":
            keys = [tr[v.tid]["type"]]
        elif kind == "tag":
            keys = tr[v.tid]["tags"]
        elif kind == "date":
            keys = [day_of(v.t, off)]
        elif kind == "destination":
            keys = [v.destination]
        else:
            keys = [_bound(getattr(v, kind))]
        for k in keys:
            g = group(k)
            g["clicks" if v.source == "click" else "scans"] += 1
            g["who"].add(v.visitor())
    rows = []
    for k, g in groups.items():
        n = g["scans"] + g["clicks"]
        if kind in ("date", "browser", "city", "country") and n == 0:
            continue
        row = {"visits": n, "scans": g["scans"], "clicks": g["clicks"],
               "unique_visitors": len(g["who"])}
        if kind == "name":
            row["tracker_id"], row["name"] = k
        else:
            row[kind] = k
        rows.append(row)
    if kind == "date":
        rows.sort(key=lambda r: r["date"])
    elif kind == "name":
        rows.sort(key=lambda r: (-r["visits"], r["tracker_id"]))
    else:
        rows.sort(key=lambda r: (-r["visits"], r[kind] is None,
                                 (r[kind] or "").encode()))
    return rows


def oracle_dashboard(acct, d0, d1, covered=None, compare=True):
    cov = covered if covered is not None else acct.live()

    def period(a, b):
        s, e = a * DAY, (b + 1) * DAY - 1
        vs = [v for v in acct.visits if v.tid in cov and not v.bot and s <= v.t <= e]
        per = {}
        for v in vs:
            x = per.setdefault(v.tid, [0, 0])
            x[v.source == "click"] += 1
        return {"scans": sum(1 for v in vs if v.source != "click"),
                "clicks": sum(1 for v in vs if v.source == "click"),
                "uniques": len({v.visitor() for v in vs}), "active": len(per),
                "per": per, "vs": vs}

    n = d1 - d0 + 1
    cur, prev = period(d0, d1), period(d0 - n, d0 - 1)

    def kpi(key):
        value, before = cur[key], prev[key]
        change = None
        if compare and before:
            tenths = (abs(value - before) * 1000 * 2 + before) // (2 * before)
            change = (tenths if value >= before else -tenths) / 10
        return {"value": value, "previous": before if compare else None, "change": change}

    daily = []
    for d in range(d0, d1 + 1):
        vs = [v for v in cur["vs"] if v.t // DAY == d]
        daily.append({"date": day_of(d * DAY), "scans": sum(v.source != "click" for v in vs),
                      "clicks": sum(v.source == "click" for v in vs)})
    top = sorted(cur["per"].items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))[:10]
    return {"period": {"dateStart": day_of(d0 * DAY), "dateEnd": day_of(d1 * DAY)},
            "previousPeriod": ({"dateStart": day_of((d0 - n) * DAY),
                                "dateEnd": day_of((d0 - 1) * DAY)} if compare else None),
            "kpis": {"totalScans": kpi("scans"), "totalClicks": kpi("clicks"),
                     "uniqueVisitors": kpi("uniques"), "activeTrackers": kpi("active")},
            "daily": daily,
            "topTrackers": [{"tracker_id": tid, "name": acct.trackers[tid]["name"],
                             "scans": sc, "clicks": cl} for tid, (sc, cl) in top]}


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
