"""Reports (6), tag crosstab (7) and portfolio KPIs (8), checked to the visit.

Every test works in an account of its own, seeds visits with `qrtrack-admin visits
import` (chosen times, sources, browsers, places, bots; a visitor is an (ip, user
agent) pair) and compares every row, cell and KPI with a plain Python oracle that
reads the same visits: windows with inclusive bounds, one second outside, offsets
(whole hours, -0530, +0545, and +0007 that no aggregate aligns with), visits imported
out of order, trackers listed, deleted and retagged, and the aggregates rebuilt.
"""
import calendar
import json
import os
import random
import time
import uuid

import pytest

from conftest import Api
from lib.reports import (Account, DAY, T0, UA, V, acct, day_of, fmt, json_error,  # noqa: F401
                         oracle_crosstab, oracle_dashboard, oracle_rows)
from lib.wait import wait_until

REPORTS = ["name", "type", "tag", "date", "browser", "city", "country"]


# -- helpers -------------------------------------------------------------------


def report(acct, kind, s=None, e=None, off=0, covered=None, **extra):
    params = {"report": kind}
    if s is not None:
        params["visit_start"] = fmt(s, off)
    if e is not None:
        params["visit_start_end"] = fmt(e, off)
    if covered is not None:
        params["trackers[]"] = covered
    params.update(extra)
    r = acct.get("/report/", **params)
    assert r.status_code == 200, r.text
    return r.json()


def check(acct, kind, s=None, e=None, off=0, covered=None):
    body = report(acct, kind, s, e, off, covered)
    # (days in the offset of visit_start, UTC without one: CONTRACT section 4)
    want = oracle_rows(acct, kind, s, e, off if s is not None else 0, covered)
    assert body["data"] == want, (kind, s and fmt(s, off), e and fmt(e, off), covered)
    cov = covered if covered is not None else acct.live()
    assert body["meta"] == {"report": kind, "tracker_count": len(set(cov)),
                            "visit_start": fmt(s, off) if s is not None else None,
                            "visit_start_end": fmt(e, off) if e is not None else None}


def check_all(acct, s=None, e=None, off=0, covered=None):
    for kind in REPORTS:
        check(acct, kind, s, e, off, covered)


# -- a hand-made account: every number checked -------------------------------------

def seed_small(acct):
    """Four trackers, visits on both sides of every edge that the tests cut at."""
    a = acct.tracker("alpha", ["campaign:spring", "region:eu", "vip"])
    b = acct.tracker("bravo", ["campaign:spring", "region:us"])
    c = acct.tracker("charlie", ["campaign:fall", "region:eu", "region:us"])
    d = acct.tracker("delta")
    h = 3600
    acct.load([
        V(a, T0 + 10 * h, who=1, browser="Chrome", country="DE", city="Berlin"),
        V(a, T0 + 10 * h, who=1, browser="Chrome", country="DE", city="Berlin"),
        V(a, T0 + 10 * h + 1, "click", who=2, browser="Safari", country="FR", city="Paris"),
        V(b, T0 + 21 * h + 59 * 60 + 59, who=1, browser="Chrome", country="DE",
          city="Berlin"),
        V(b, T0 + 22 * h, who=3, browser="Firefox", country="US", city=None),
        V(c, T0 + DAY + 1, "click", who=2, browser="Safari", country="FR", city="Paris"),
        V(c, T0 + DAY + 5 * h, who=4, browser=None, country=None, city=None),
        V(c, T0 + DAY + 5 * h, who=4, browser="Bot", bot=True),
        V(a, T0 + 2 * DAY - 1, who=5, browser="Chrome", country="DE", city="Munich"),
        V(a, T0 + 2 * DAY, who=1, browser="Chrome", country="DE", city="Berlin"),
        V(b, T0 + 3 * DAY + 12 * h, "click", who=1, browser="Chrome", country="DE",
          city="Berlin"),
        V(a, T0 - 1, who=6, browser="Edge", country="AT", city="Wien"),
        V(d, T0 + 12 * h, who=7, browser="Chrome", country="DE", city="Berlin", bot=True),
    ])
    return a, b, c, d


def test_known_numbers(acct):
    a, b, c, d = seed_small(acct)
    # The whole history, by hand.
    body = report(acct, "name")
    assert body["data"] == [
        {"tracker_id": a, "name": "alpha", "visits": 6, "scans": 5, "clicks": 1,
         "unique_visitors": 4},
        {"tracker_id": b, "name": "bravo", "visits": 3, "scans": 2, "clicks": 1,
         "unique_visitors": 2},
        {"tracker_id": c, "name": "charlie", "visits": 2, "scans": 1, "clicks": 1,
         "unique_visitors": 2},
        {"tracker_id": d, "name": "delta", "visits": 0, "scans": 0, "clicks": 0,
         "unique_visitors": 0}]
    assert body["meta"] == {"report": "name", "tracker_count": 4, "visit_start": None,
                            "visit_start_end": None}
    assert report(acct, "browser")["data"] == [
        {"browser": "Chrome", "visits": 6, "scans": 5, "clicks": 1, "unique_visitors": 2},
        {"browser": "Safari", "visits": 2, "scans": 0, "clicks": 2, "unique_visitors": 1},
        {"browser": "Edge", "visits": 1, "scans": 1, "clicks": 0, "unique_visitors": 1},
        {"browser": "Firefox", "visits": 1, "scans": 1, "clicks": 0, "unique_visitors": 1},
        {"browser": None, "visits": 1, "scans": 1, "clicks": 0, "unique_visitors": 1}]
    # The first day only, in UTC: inclusive bounds; T0 - 1 is one second outside.
    tag = report(acct, "tag", T0, T0 + DAY - 1)["data"]
    assert tag == [
        {"tag": "campaign:spring", "visits": 5, "scans": 4, "clicks": 1,
         "unique_visitors": 3},
        {"tag": "region:eu", "visits": 3, "scans": 2, "clicks": 1, "unique_visitors": 2},
        {"tag": "vip", "visits": 3, "scans": 2, "clicks": 1, "unique_visitors": 2},
        {"tag": "region:us", "visits": 2, "scans": 2, "clicks": 0, "unique_visitors": 2},
        {"tag": "campaign:fall", "visits": 0, "scans": 0, "clicks": 0,
         "unique_visitors": 0}]
    # Days in +0200: 22:00 UTC is the next local day.
    dates = report(acct, "date", T0, T0 + 2 * DAY, off=7200)
    assert dates["data"] == [
        {"date": "2026-03-10", "visits": 4, "scans": 3, "clicks": 1, "unique_visitors": 2},
        {"date": "2026-03-11", "visits": 3, "scans": 2, "clicks": 1, "unique_visitors": 3},
        {"date": "2026-03-12", "visits": 2, "scans": 2, "clicks": 0, "unique_visitors": 2}]
    assert dates["meta"]["visit_start"] == "2026-03-10T02:00:00+0200"
    assert dates["meta"]["visit_start_end"] == "2026-03-12T02:00:00+0200"
    check_all(acct)


@pytest.mark.parametrize("off", [0, 7200, -19800, 20700, 420, -36000])
def test_windows_and_offsets(acct, off):
    seed_small(acct)
    h = 3600
    edges = [T0 - 1, T0, T0 + 10 * h, T0 + 10 * h + 1, T0 + 21 * h + 59 * 60 + 59,
             T0 + 22 * h, T0 + DAY + 1, T0 + 2 * DAY - 1, T0 + 2 * DAY, T0 + 3 * DAY + 12 * h]
    windows = [(None, None), (T0, None), (None, T0 + DAY)]
    for i, s in enumerate(edges):
        for e in edges[i:]:
            windows += [(s, e), (s + 1, e), (s, e - 1)]
    random.Random(off).shuffle(windows)
    for s, e in windows[:14]:
        if s is not None and e is not None and s > e:
            continue
        check_all(acct, s, e, off)


def test_validation(acct, other_api):
    a = acct.tracker("mine")
    foreign = other_api.post("/tracker", json={"redirect_url": "https://example.org/"})
    fid = foreign.json()["tracker_id"]
    for params, field in [({}, "report"), ({"report": "names"}, "report"),
                          ({"report": "NAME"}, "report"), ({"report": ""}, "report"),
                          ({"report": "name", "visit_start": "2026-03-10"}, "visit_start"),
                          ({"report": "name", "visit_start_end": "2026-03-10T00:00:00"},
                           "visit_start_end"),
                          ({"report": "name", "visit_start": "2026-03-11T00:00:00+0000",
                            "visit_start_end": "2026-03-10T00:00:00+0000"},
                           "visit_start_end"),
                          ({"report": "name", "trackers[]": "x"}, "trackers")]:
        json_error(acct.get("/report/", **params), 422, field)
    # Any foreign, deleted or unknown id: 403, and nothing about it in the answer.
    for ids in [[fid], [a, fid], [999999999]]:
        for path, extra in [("/report/", {"report": "name"}),
                            ("/report/tag-crosstab", {"row": "a", "col": "b"}),
                            ("/dashboard/scansAnalytics", {})]:
            r = acct.get(path, **dict(extra, **{"trackers[]": ids}))
            body = json_error(r, 403)
            assert str(fid) not in r.text and "example.org" not in r.text, body
    json_error(acct.get("/report/tag-crosstab", col="b"), 422, "row")
    json_error(acct.get("/report/tag-crosstab", row="a"), 422, "col")
    json_error(acct.get("/report/tag-crosstab", row="", col="b"), 422, "row")
    json_error(acct.get("/report/tag-crosstab", row="a", col="b" * 65), 422, "col")
    json_error(acct.get("/report/tag-crosstab", row="a", col="b", visit_start="x"), 422,
               "visit_start")
    for params, field in [({"dateStart": "2026-3-1"}, "dateStart"),
                          ({"dateEnd": "2026-02-30"}, "dateEnd"),
                          ({"dateStart": "2026-03-02", "dateEnd": "2026-03-01"}, "dateStart"),
                          ({"dateStart": "2000-01-01", "dateEnd": "2026-03-01"}, "dateStart"),
                          ({"compare": "maybe"}, "compare"),
                          ({"trackers": "1;2"}, "trackers")]:
        json_error(acct.get("/dashboard/scansAnalytics", **params), 422, field)
    # The spec's own path with and without the trailing slash.
    assert acct.get("/report", report="name").status_code == 200
    # POST answers as GET (test_reports_post.py); other methods are 405 naming both
    r = acct.api.post(acct.server.api_base + "/report/", params={"report": "name"})
    assert r.status_code == 200
    assert r.json() == acct.get("/report", report="name").json()
    r = acct.api.delete(acct.server.api_base + "/report/", params={"report": "name"})
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["Allow"].split(",")} == {"GET", "HEAD", "POST"}


def test_tracker_lists_and_deleted_trackers(acct):
    a, b, c, d = seed_small(acct)
    for cov in [[a], [b, c], [a, b, c, d], [c, c]]:
        check_all(acct, covered=cov)
        check_all(acct, T0 + 10 * 3600 + 1, T0 + 2 * DAY, 7200, covered=cov)
    # The other list forms: an id list, repeats, and indexes as PHP's http_build_query and
    # jQuery's param write them (dropped, they widened the report to every tracker)
    for params in [{"trackers": "%d,%d" % (b, c)}, {"trackers": [b, c]},
                   {"trackers[0]": b, "trackers[1]": c}, {"Trackers[]": [b, c]}]:
        r = acct.get("/report/", report="browser", **params)
        assert r.json()["data"] == oracle_rows(acct, "browser", covered=[b, c])
    # A deleted tracker leaves every report, before and after a rebuild.
    acct.delete(c)
    check_all(acct)
    check_all(acct, T0 + 3600, T0 + 3 * DAY, -19800)
    acct.rebuild()
    check_all(acct)
    check_all(acct, T0 + 3600, T0 + 3 * DAY, -19800)
    r = acct.get("/report/", report="name", **{"trackers[]": [c]})
    json_error(r, 403)


def test_list_keys_of_another_form_and_empty_items_are_422(acct):
    """A list of trackers written in a form the API does not take (keys with other
    brackets, as a client may write them) or with an empty item between its commas is 422
    naming the list: dropped, or its empty items skipped, the report covered every tracker
    or fewer than were asked for without a word."""
    a, b, c, d = seed_small(acct)
    bad = [{"trackers[x]": b}, {"trackers[-1]": b}, {"trackers[99999999999]": b},
           {"trackers[0][1]": b}, {"trackers[]x": b}, {"Trackers[ 0]": b},
           {"trackers[0]": b, "trackers[x]": c}, {"trackers": "%d,,%d" % (b, c)},
           {"trackers": ",%d" % b}, {"trackers": "%d," % b}, {"trackers[]": [b, ""]}]
    for params in bad:
        for path, extra in [("/report/", {"report": "name"}),
                            ("/report/tag-crosstab", {"row": "campaign", "col": "region"}),
                            ("/dashboard/scansAnalytics", {})]:
            json_error(acct.get(path, **dict(extra, **params)), 422, "trackers")
    # (the same lists, well formed, are taken)
    for params in [{"trackers[0]": b, "trackers[1]": c}, {"trackers": "%d,%d" % (b, c)}]:
        r = acct.get("/report/", report="name", **params)
        assert sorted(row["tracker_id"] for row in r.json()["data"]) == sorted([b, c])


def test_only_an_end_with_an_offset_groups_days_in_utc(acct):
    """report=date with visit_start_end alone: its offset places the window's end, and the
    days are UTC's, as without any date (the offset of visit_start only sets them)."""
    a, b, c, d = seed_small(acct)
    for off in (-34200, 50400):
        for e in (T0 + 2 * DAY + 3600, None):
            check(acct, "date", None, e, off)
        body = report(acct, "date", None, T0 + 3 * DAY, off)
        assert body["data"] == report(acct, "date", None, T0 + 3 * DAY, 0)["data"]


def test_retagged_trackers(acct):
    a, b, c, d = seed_small(acct)
    acct.retag(a, ["campaign:fall", "region:eu"])
    acct.retag(d, ["vip"])
    check(acct, "tag")
    check(acct, "tag", T0 + 3600, T0 + 2 * DAY + 5, 3600)
    assert acct.get("/report/tag-crosstab", row="campaign", col="region").json()["data"] \
        == oracle_crosstab(acct, "campaign", "region")
    acct.rebuild()
    check(acct, "tag")
    check(acct, "tag", T0 + 3600, T0 + 2 * DAY + 5, 3600)
    # New visits after the rebuild follow the new tags.
    acct.load([V(a, T0 + 4 * DAY, who=9), V(d, T0 + 4 * DAY + 1, who=9)])
    check_all(acct)
    check_all(acct, T0 + 2 * DAY, None)


def test_every_change_reaches_the_next_report(server, acct):
    """A child keeps the scope of a report over all of an account's trackers (their
    names, types and tags, whether the aggregates still match them) while the account's
    trackers version stays (schema 18): each change made between two reports, through
    the API, by the admin tool or in SQL by hand, reaches the very next one. Each
    report is asked several times, so that every child of the server has the scope
    kept before the change; so are reports by tag over windows with partial days, which
    read the aggregates' tags of the trackers (kept with the scope, schema 18's version
    too)."""
    a, b, c, d = seed_small(acct)

    def all_reports():
        for _ in range(4):
            check_all(acct)
            check(acct, "tag", T0 + 10 * 3600, T0 + 3 * DAY + 13 * 3600)
            check(acct, "tag", T0 + 21 * 3600, T0 + DAY + 5 * 3600, 19800)
        assert acct.get("/report/tag-crosstab", row="campaign", col="region").json()[
            "data"] == oracle_crosstab(acct, "campaign", "region")

    all_reports()
    acct.retag(a, ["campaign:fall", "region:apac"])
    all_reports()
    acct.rename(b, "renamed-b")
    all_reports()
    e = acct.tracker("echo", ["campaign:spring", "region:eu"])
    all_reports()
    acct.load([V(e, T0 + 3 * DAY, who=4), V(b, T0 + 3 * DAY + 7, who=4)])
    all_reports()
    acct.delete(d)
    all_reports()
    acct.rebuild()
    all_reports()
    # A tracker renamed and retagged in SQL by hand (as a DBA might).
    server.sql("UPDATE trackers SET name = 'by-hand' WHERE id = %d" % c)
    acct.trackers[c]["name"] = "by-hand"
    all_reports()
    server.sql("DELETE FROM tracker_tags WHERE tracker_id = %d AND tag = 'region:us'" % c)
    acct.trackers[c]["tags"] = [x for x in acct.trackers[c]["tags"] if x != "region:us"]
    all_reports()
    server.sql("UPDATE trackers SET deleted_at = 1 WHERE id = %d" % e)
    acct.trackers[e]["deleted"] = True
    all_reports()


def test_crosstab(acct):
    a, b, c, d = seed_small(acct)
    e_ = acct.tracker("echo", ["campaign:spring", "campaign:fall", "region:apac"])
    acct.load([V(e_, T0 + 5, who=11), V(e_, T0 + 6, "click", who=12)])
    for row, col, s, e in [("campaign", "region", None, None),
                           ("region", "campaign", T0, T0 + DAY - 1),
                           ("region", "region", None, None),
                           ("campaign", "nothing", None, None),
                           ("vip", "region", None, None)]:
        params = {"row": row, "col": col}
        if s is not None:
            params.update(visit_start=fmt(s), visit_start_end=fmt(e))
        body = acct.get("/report/tag-crosstab", **params).json()
        assert body["data"] == oracle_crosstab(acct, row, col, s, e), (row, col)
        assert body["meta"] == {"row": row, "col": col, "tracker_count": 5,
                                "visit_start": fmt(s) if s else None,
                                "visit_start_end": fmt(e) if e else None}
    body = acct.get("/report/tag-crosstab", row="campaign", col="region").json()["data"]
    # charlie (region eu and us) counts in both columns; total counts each visit once.
    assert body["cols"] == ["apac", "eu", "us"] and body["rows"] == ["fall", "spring"]
    assert body["matrix"] == [[2, 2, 2], [2, 6, 3]]
    assert body["row_totals"] == [4, 11] and body["col_totals"] == [2, 8, 5]
    assert body["total"] == 13
    sub = acct.get("/report/tag-crosstab", row="campaign", col="region",
                   **{"trackers[]": [b, c]}).json()
    assert sub["data"] == oracle_crosstab(acct, "campaign", "region", covered=[b, c])
    assert sub["meta"]["tracker_count"] == 2


def test_dashboard(acct):
    a, b, c, d = seed_small(acct)
    d0 = T0 // DAY
    for params, (s, e, cov, cmp) in [
            ({"dateStart": day_of(T0), "dateEnd": day_of(T0 + 3 * DAY)},
             (d0, d0 + 3, None, True)),
            ({"dateStart": day_of(T0 + DAY), "dateEnd": day_of(T0 + 2 * DAY)},
             (d0 + 1, d0 + 2, None, True)),
            ({"dateStart": day_of(T0), "dateEnd": day_of(T0), "compare": "0"},
             (d0, d0, None, False)),
            ({"dateStart": day_of(T0 + 2 * DAY), "dateEnd": day_of(T0 + 3 * DAY),
              "trackers": "%d,%d" % (a, b)}, (d0 + 2, d0 + 3, [a, b], True)),
            ({"dateStart": day_of(T0 + 2 * DAY), "dateEnd": day_of(T0 + 3 * DAY),
              "trackers[]": [a]}, (d0 + 2, d0 + 3, [a], True)),
            ({"dateStart": day_of(T0 + DAY), "dateEnd": day_of(T0 + DAY),
              "trackers": [a, c]}, (d0 + 1, d0 + 1, [a, c], True))]:
        r = acct.get("/dashboard/scansAnalytics", **params)
        assert r.status_code == 200, r.text
        assert r.json() == oracle_dashboard(acct, s, e, cov, cmp), params
    # Day 2 against day 1: 2 scans after 4 (-50.0 %).
    k = acct.get("/dashboard/scansAnalytics", dateStart=day_of(T0 + DAY),
                 dateEnd=day_of(T0 + DAY)).json()["kpis"]
    assert k["totalScans"] == {"value": 2, "previous": 4, "change": -50.0}
    # Defaults: the 30 days up to today (UTC).
    now = int(time.time())
    acct.load([V(a, now - 5, who=20), V(b, now - 3 * DAY, "click", who=21),
               V(b, now - 40 * DAY, who=21)])
    today = now // DAY
    body = acct.get("/dashboard/scansAnalytics").json()
    assert body == oracle_dashboard(acct, today - 29, today)
    assert len(body["daily"]) == 30 and body["period"]["dateEnd"] == day_of(now)
    assert body["kpis"]["uniqueVisitors"] == {"value": 2, "previous": 1, "change": 100.0}


def test_live_scans_reach_the_reports(server, acct):
    a = acct.tracker("live", ["campaign:now"])
    r = acct.api.get("/tracker/show/%d" % a)
    code = r.json()["code"]
    import requests
    for ua in [UA[0], UA[0], UA[1]]:
        x = requests.get("%s/q/%s" % (server.base, code), headers={"User-Agent": ua},
                         allow_redirects=False, timeout=30)
        assert x.status_code == 302
    def counted():
        rows = report(acct, "name")["data"]
        return rows if rows and rows[0]["visits"] == 3 else None
    rows = wait_until(counted, timeout=15, interval=0.2, what="the three visits in the report")
    assert rows[0]["visits"] == 3 and rows[0]["scans"] == 3
    assert rows[0]["unique_visitors"] == 2
    tag = report(acct, "tag")["data"]
    assert tag == [{"tag": "campaign:now", "visits": 3, "scans": 3, "clicks": 0,
                    "unique_visitors": 2}]


# -- random histories: every report against the oracle -------------------------------

def random_history(acct, rng, n):
    tags = [["campaign:a", "region:eu"], ["campaign:a", "region:us"],
            ["campaign:b", "region:eu", "region:us"], ["campaign:b"], ["solo"], []]
    ids = [acct.tracker("t%d" % i, tg) for i, tg in enumerate(tags)]
    visits = []
    for _ in range(n):
        t = T0 + rng.choice([rng.randrange(0, 6 * DAY),
                             rng.randrange(DAY - 600, DAY + 600),
                             2 * DAY + rng.randrange(-5, 5) * 900])
        visits.append(V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                        who=rng.randrange(12), ua=rng.randrange(3),
                        browser=rng.choice(["Chrome", "Safari", None]),
                        country=rng.choice(["DE", "FR", None]),
                        city=rng.choice(["Berlin", "Paris", "Lyon", None]),
                        bot=rng.random() < 0.1))
    return ids, visits


def random_windows(rng, k):
    out = []
    for _ in range(k):
        off = rng.choice([0, 0, 3600, 7200, -19800, 20700, 420, -43200, 50400])
        s = rng.choice([None, T0 + rng.randrange(-DAY, 6 * DAY),
                        T0 + rng.randrange(-3, 7) * DAY - off + rng.choice([0, 0, -1, 1])])
        e = rng.choice([None, T0 + rng.randrange(0, 7 * DAY),
                        T0 + rng.randrange(0, 7) * DAY - off - rng.choice([1, 1, 0, 2])])
        if s is not None and e is not None and s > e:
            s, e = e, s
        out.append((s, e, off))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_random_histories(acct, seed):
    rng = random.Random(seed)
    ids, visits = random_history(acct, rng, 700)
    # In time order, then shuffled batches that land in the middle of the history.
    first = sorted(visits[:300], key=lambda v: v.t)
    acct.load(first)
    acct.load(visits[300:550])
    late = visits[550:]
    rng.shuffle(late)
    acct.load(late)
    for s, e, off in random_windows(rng, 10):
        check_all(acct, s, e, off)
    sub = ids[1:4]
    for s, e, off in random_windows(rng, 3):
        check_all(acct, s, e, off, covered=sub)
    # The rebuilt aggregates give the same answers as the incremental ones.
    acct.rebuild()
    for s, e, off in random_windows(rng, 6):
        check_all(acct, s, e, off)
    acct.retag(ids[3], ["campaign:a", "solo"])
    acct.delete(ids[0])
    for s, e, off in random_windows(rng, 3):
        check_all(acct, s, e, off)
    acct.rebuild()
    more = random_history(acct, rng, 150)[1]
    acct.load(more)
    for s, e, off in random_windows(rng, 6):
        check_all(acct, s, e, off)
        for row, col in [("campaign", "region"), ("region", "region")]:
            params = {"row": row, "col": col}
            if s is not None:
                params["visit_start"] = fmt(s, off)
            if e is not None:
                params["visit_start_end"] = fmt(e, off)
            assert acct.get("/report/tag-crosstab", **params).json()["data"] == \
                oracle_crosstab(acct, row, col, s, e)
    d = T0 // DAY
    for d0, d1 in [(d, d + 6), (d + 2, d + 2), (d + 1, d + 4)]:
        r = acct.get("/dashboard/scansAnalytics", dateStart=day_of(d0 * DAY),
                     dateEnd=day_of(d1 * DAY))
        assert r.json() == oracle_dashboard(acct, d0, d1)


def agg_rows(server, acct):
    """The account's aggregate rows (counters, links, gaps, quarter-hours), as text."""
    def cols(*names):
        # Every column as text: the four tables' columns differ in type.
        return ", ".join("CAST(%s AS TEXT)" % n for n in names)
    who = "account_id = (SELECT id FROM accounts WHERE name = '%s')" % acct.name
    q = ("SELECT 'c', " + cols("kind", "level", "bucket", "tracker_id", "value", "scans",
                               "clicks", "first_visits", "followed_visits") +
         " FROM agg_cnt WHERE " + who + " AND (scans <> 0 OR clicks <> 0 OR "
         "first_visits <> 0 OR followed_visits <> 0) UNION ALL "
         "SELECT 'l', " + cols("visit_time", "previous_time", "flags", "tracker_id",
                               "k.browser", "k.country", "k.city", "visit_count", "0") +
         " FROM agg_link JOIN agg_bcy k ON k.id = browser_country_city_id WHERE " + who +
         " AND visit_count <> 0 "
         "UNION ALL SELECT 'g', " + cols("kind", "visit_time", "previous_time", "tracker_id",
                                         "v.value", "visit_count", "0", "0", "0") +
         " FROM agg_gaps JOIN agg_vals v ON v.id = value_id WHERE " + who +
         " AND visit_count <> 0 "
         "UNION ALL "
         "SELECT 'd', " + cols("quarter_hour", "quarters_since_previous", "scans", "clicks",
                               "0", "0", "0", "0", "0") +
         " FROM agg_day WHERE " + who + " AND (scans <> 0 OR clicks <> 0)")
    return sorted(server.sql(q).splitlines())


def test_rebuild_keeps_tables_identical(server, acct):
    """Incremental aggregates and rebuilt ones are the same rows."""
    rng = random.Random(7)
    ids, visits = random_history(acct, rng, 400)
    acct.load(visits)
    before = agg_rows(server, acct)
    acct.rebuild()
    after = agg_rows(server, acct)
    assert before and before == after


def exact_and_as_rebuilt(server, acct, windows):
    """Every report over each (start, end, offset) window matches the oracle, and the
    aggregates are the rows a rebuild makes (a wrong chain would differ in links, gaps,
    first and returning visits)."""
    for s, e, off in windows:
        check_all(acct, s, e, off)
    before = agg_rows(server, acct)
    acct.rebuild()
    assert before and before == agg_rows(server, acct)


def test_long_histories_out_of_order(server, acct):
    """Two visitors with hundreds of visits each, then visits of theirs that land in the
    middle of their histories, often in a rare tracker, tag, browser or city. Such a
    visit reads the 64 visits before it, and seeks the latest one in each group those do
    not reach: the reports match the oracle, and the aggregates are the rows a rebuild
    makes."""
    rng = random.Random(29)
    ids = [acct.tracker("h0", ["campaign:a"]), acct.tracker("h1", ["campaign:b", "region:eu"]),
           acct.tracker("rare1", ["rare"]), acct.tracker("rare2", ["rare", "region:eu"])]

    def visit(t, p):
        # p: how often a rare tracker (tag), browser or city
        return V(rng.choice(ids[2:]) if rng.random() < p else rng.choice(ids[:2]), t,
                 rng.choice(["scan", "scan", "click"]), who=rng.randrange(2),
                 browser="Opera" if rng.random() < p else rng.choice(["Chrome", None]),
                 country=rng.choice(["DE", "FR"]),
                 city="Oslo" if rng.random() < p else "Berlin")
    history = sorted((visit(T0 + rng.randrange(0, 6 * DAY), 0.015) for _ in range(500)),
                     key=lambda v: v.t)
    acct.load(history)
    late = [visit(T0 + rng.randrange(0, 6 * DAY), 0.3) for _ in range(80)]
    acct.load(late[:40])
    for v in late[40:50]:
        acct.load([v])
    acct.load(late[50:])
    exact_and_as_rebuilt(server, acct, [(None, None, 0), (T0 + 3600, T0 + 4 * DAY + 5, 7200),
                                         (T0 + 2 * DAY, T0 + 2 * DAY + 7000, -19800)])


def test_batch_out_of_order_rechained_once(server, acct):
    """Visitors whose visits come in one import batch out of time order (shuffled, some
    before the visits stored already, several at the same second) are re-chained once
    a batch: the reports match the oracle, and the aggregates are the rows a rebuild
    makes (a wrong chain would differ in links, gaps, first and returning visits)."""
    rng = random.Random(45)
    ids = [acct.tracker("o0", ["campaign:a"]), acct.tracker("o1", ["campaign:b", "region:eu"]),
           acct.tracker("o2", ["rare"])]

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(3), browser=rng.choice(["Chrome", "Opera", None]),
                 country=rng.choice(["DE", "FR"]), city=rng.choice(["Berlin", "Oslo", None]),
                 bot=rng.random() < 0.03)
    stored = sorted((visit(T0 + rng.randrange(0, 4 * DAY)) for _ in range(300)),
                    key=lambda v: v.t)
    acct.load(stored)
    late = [visit(T0 + rng.randrange(-DAY, 5 * DAY) // 60 * 60) for _ in range(400)]
    rng.shuffle(late)
    acct.load(late[:200])
    acct.load(sorted(late[200:], key=lambda v: -v.t))
    exact_and_as_rebuilt(server, acct, [(None, None, 0), (T0 + 3600, T0 + 4 * DAY + 5, 7200),
                                         (T0 - DAY + 100, T0 + DAY, -19800)])


def test_batch_seeks_answered_by_recent_visits(server, acct):
    """An import batch in time order after the visitors' stored visits: most have a few
    (all of them among the eight an import's batch reads back a visitor, which then
    answer the seeks of a previous visit on a tracker, browser, country or city), some
    more than eight (those seeks are made), and some visits of theirs lie in another
    account between them (never the previous visit in this one); one visitor comes back
    150 times in the batch, from 100 cities. The reports match the oracle and the
    aggregates are the rows a rebuild makes."""
    rng = random.Random(61)
    other = Account(server)
    try:
        ids = [acct.tracker("r%d" % i, tags) for i, tags in
               enumerate([["campaign:a"], ["campaign:b"], ["campaign:a", "region:eu"], []])]
        elsewhere = other.tracker("elsewhere")

        def visit(tid, t, who):
            return V(tid, t, rng.choice(["scan", "scan", "click"]), who=who % 40, ua=who // 40,
                     browser=rng.choice(["Chrome", "Opera", None]),
                     country=rng.choice(["DE", "FR", None]),
                     city=rng.choice(["Berlin", "Oslo", "Lyon", None]), bot=rng.random() < 0.03)
        stored = []
        for who in range(120):
            k = 12 if who < 15 else rng.randrange(0, 6)
            stored += [visit(rng.choice(ids), T0 + rng.randrange(0, 2 * DAY), who)
                       for _ in range(k)]
        acct.load(sorted(stored, key=lambda v: v.t))
        other.load(sorted((visit(elsewhere, T0 + rng.randrange(0, 2 * DAY), who)
                           for who in range(0, 120, 3)), key=lambda v: v.t))
        batch = [visit(rng.choice(ids), T0 + 2 * DAY + rng.randrange(0, DAY), rng.randrange(120))
                 for _ in range(700)]
        # a kiosk: 150 visits in the batch from 100 cities, past the batch's own visits
        # that an import looks through before it seeks
        for k in range(150):
            v = visit(rng.choice(ids), T0 + 2 * DAY + rng.randrange(0, DAY), 159)
            v.city = "Kiosk %d" % rng.randrange(100)
            batch.append(v)
        acct.load(sorted(batch, key=lambda v: v.t))
        exact_and_as_rebuilt(server, acct, [(None, None, 0), (T0 + 3600, T0 + 3 * DAY + 5, 7200),
                                             (T0 + 2 * DAY + 100, T0 + 3 * DAY, -19800)])
    finally:
        other.close()


def test_a_shuffled_file_is_written_in_time_order_and_exact(server, acct):
    """A file's visits are written in time order (qrt_import's by-time reader): a
    shuffled file, then a second one whose visits land in the middle of the first's and
    before them, give the reports of the oracle and the aggregates a rebuild makes; the
    visits' ids follow their times, equal times in the order of their lines."""
    rng = random.Random(53)
    ids = [acct.tracker("f0", ["campaign:a"]), acct.tracker("f1", ["campaign:b", "region:eu"]),
           acct.tracker("f2", ["rare"])]

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(40), ua=rng.randrange(3),
                 browser=rng.choice(["Chrome", "Opera", None]),
                 country=rng.choice(["DE", "FR"]), city=rng.choice(["Berlin", "Oslo", None]),
                 bot=rng.random() < 0.03)
    first = [visit(T0 + rng.randrange(0, 4 * DAY) // 60 * 60) for _ in range(1500)]
    acct.load(first, as_file=True)
    second = [visit(T0 + rng.randrange(-DAY, 5 * DAY) // 60 * 60) for _ in range(700)]
    acct.load(second, as_file=True)
    exact_and_as_rebuilt(server, acct, [(None, None, 0), (T0 + 3600, T0 + 4 * DAY + 5, 7200),
                                         (T0 - DAY + 100, T0 + DAY, -19800)])
    # the first file's visits of one tracker come first by id, in (time, line) order
    got = []
    page = 1
    while True:
        r = acct.get("/visits/tracker/%d" % ids[0], rows=1000, page=page)
        assert r.status_code == 200, r.text
        got += r.json()["data"]
        if len(r.json()["data"]) < 1000:
            break
        page += 1
    got.sort(key=lambda v: v["id"])
    mine = sorted((v.t, k, v) for k, v in enumerate(first) if v.tid == ids[0])
    assert len(got) == len(mine) + sum(1 for v in second if v.tid == ids[0])
    assert [(v["visit_start"], v["city"], v["browser"], v["source"], v["bot"])
            for v in got[:len(mine)]] == \
        [(fmt(t), v.city, v.browser, v.source, v.bot) for t, _, v in mine]


def many_trackers(acct, n=70):
    """n trackers with 500 visits among them (a few bots); their ids."""
    rng = random.Random(11)
    ids = [acct.tracker("m%02d" % i, ["campaign:%s" % "xyz"[i % 3], "region:%d" % (i % 2)])
           for i in range(n)]
    visits = [V(rng.choice(ids), T0 + rng.randrange(0, 3 * DAY),
                rng.choice(["scan", "click"]), who=rng.randrange(30), ua=rng.randrange(4),
                browser=rng.choice(["Chrome", None]), country=rng.choice(["DE", "US"]),
                city=rng.choice(["Berlin", "Austin", None]), bot=rng.random() < 0.05)
              for _ in range(500)]
    acct.load(visits)
    return ids


LISTED_WINDOWS = [(None, None, 0), (T0 + 3600, T0 + 2 * DAY + 5, 7200),
                  (T0 + 100, T0 + 3 * DAY, 420)]


def test_many_trackers_counted_from_visits(acct):
    """More trackers than one statement lists (66 and 130 of them: their visits' blocks
    read 64 trackers a statement): distinct visitors of a list of trackers, or of an
    account whose aggregates went stale, are counted from the visits here."""
    ids = many_trackers(acct, 140)
    listed = ids[:66]
    for s, e, off in LISTED_WINDOWS:
        check_all(acct, s, e, off, covered=listed)
    for s, e, off in LISTED_WINDOWS[1:]:
        check_all(acct, s, e, off, covered=ids[5:135])
    acct.delete(ids[-1])
    acct.retag(ids[0], ["campaign:z"])
    for s, e, off in [(None, None, 0), (T0 + 3600, T0 + 2 * DAY + 5, -19800)]:
        check_all(acct, s, e, off)
    d = T0 // DAY
    r = acct.get("/dashboard/scansAnalytics", dateStart=day_of(T0), dateEnd=day_of(T0 + DAY))
    assert r.json() == oracle_dashboard(acct, d, d + 1)
    r = acct.get("/dashboard/scansAnalytics", dateStart=day_of(T0), dateEnd=day_of(T0 + DAY),
                 trackers=listed)
    assert r.json() == oracle_dashboard(acct, d, d + 1, covered=listed)


def test_many_listed_trackers_without_the_cache(server, acct):
    """A server keeping no sealed values (QRTrackReportCache 0) reads a list of more
    trackers than one statement lists a tracker at a time: the same answers."""
    from conftest import start_server
    ids = many_trackers(acct)
    off = start_server(extra="QRTrackReportCache 0\n", shared_db=server)
    try:
        acct.api.close()
        acct.api = Api(off, server.token(acct.name))
        acct.calls = 0
        for s, e, off_s in LISTED_WINDOWS:
            check_all(acct, s, e, off_s, covered=ids[:66])
        d = T0 // DAY
        r = acct.get("/dashboard/scansAnalytics", dateStart=day_of(T0),
                     dateEnd=day_of(T0 + DAY), trackers=ids[:66])
        assert r.json() == oracle_dashboard(acct, d, d + 1, covered=ids[:66])
    finally:
        off.stop()
        off.cleanup()
        acct._renew()


def test_all_trackers_but_a_few_quiet_ones(server, acct):
    """A list of every tracker of the account but one or two whose visits, and their
    visitors', are at most a 32nd of the listed ones' is counted as the account less those (qrt_report.c,
    report_co; a list of 999 of 1,000 trackers took seconds where all 1,000 took
    milliseconds): the same answers as the oracle's, by every report type and on the
    dashboard, the quiet trackers' visitors coming to listed trackers too (the same day
    and browser or not) and one of them to another account's tracker; the debug log
    names the way (QRT00506). A server of its own on the same database logs at debug."""
    from conftest import start_server
    rng = random.Random(5)
    ids = [acct.tracker("q%02d" % i, ["campaign:q"]) for i in range(70)]
    places = [("DE", "Berlin"), ("US", "Austin"), ("US", None), (None, None)]

    def visit(tid, who):
        country, city = rng.choice(places)
        return V(tid, T0 + rng.randrange(0, 3 * DAY), rng.choice(["scan", "scan", "click"]),
                 who=who, ua=0 if who > 250 else rng.randrange(4),
                 browser=rng.choice(["Chrome", "Firefox", None]), country=country, city=city,
                 bot=rng.random() < 0.05)
    visits = [visit(rng.choice(ids[2:]), rng.randrange(250)) for _ in range(5000)]
    visits += [visit(ids[0], rng.choice([1, 2, 3, 251, 252])) for _ in range(6)]
    visits += [visit(ids[1], rng.choice([4, 253])) for _ in range(4)]
    acct.load(visits)
    other = Account(server)
    other.load([V(other.tracker("elsewhere"), T0 + DAY + 60, who=251)])
    other.close()
    debug = start_server(loglevel="warn qrtrack:debug", shared_db=server)
    try:
        acct.api.close()
        acct.api = Api(debug, server.token(acct.name))
        acct.calls = 0
        d = T0 // DAY
        for covered in (ids[1:], ids[2:]):
            for s, e, off in LISTED_WINDOWS + [(T0 + DAY, T0 + 2 * DAY - 1, 0)]:
                check_all(acct, s, e, off, covered=covered)
            r = acct.get("/dashboard/scansAnalytics", dateStart=day_of(T0),
                         dateEnd=day_of(T0 + 2 * DAY), trackers=covered)
            assert r.json() == oracle_dashboard(acct, d, d + 2, covered=covered)
        log = debug.error_log()
        assert "QRT00506: counted the listed trackers as the account less the 1 it left " \
               "out" in log
        assert "QRT00506: counted the listed trackers as the account less the 2 it left " \
               "out" in log
    finally:
        debug.stop()
        debug.cleanup()
        acct._renew()


def test_listed_days_by_date_kept(server, acct):
    """A report by date over a list takes the whole sealed days an earlier one counted
    (qrt_report.c, report_date_kept: kept under the seals of each local day's UTC days, for
    that list and offset): the same answers as the oracle's, in other windows holding the
    same days, in another offset, for another list; after an import into a sealed day (its
    seals dropped) and after it is sealed again (new seals: what was kept of it is not
    taken). The debug log says when days were taken (QRT00510)."""
    from conftest import start_server
    rng = random.Random(11)
    ids = [acct.tracker("k%d" % i) for i in range(6)]
    first = T0 - 40 * DAY

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(60), bot=rng.random() < 0.05)
    # forty days, one of them (the 20th) without a visit
    times = sorted(t for t in (first + rng.randrange(40 * DAY) for _ in range(1500))
                   if not first + 19 * DAY <= t < first + 20 * DAY)
    acct.load([visit(t) for t in times])
    server.admin("aggregates", "seal")
    debug = start_server(loglevel="warn qrtrack:debug", shared_db=server)
    try:
        acct.api.close()
        acct.api = Api(debug, server.token(acct.name))
        acct.calls = 0
        lists = [ids[:4], ids[1:]]
        windows = [(first, first + 40 * DAY - 1, 0),
                   (first + 3 * DAY + 7000, first + 38 * DAY, 0),
                   (first + 2 * DAY, first + 30 * DAY - 1, 20700),
                   (first + DAY + 5, first + 39 * DAY, -34200)]
        for covered in lists:
            for s, e, off in windows + windows:
                check(acct, "date", s, e, off, covered)
        assert "QRT00510: took " in debug.error_log()
        # into a sealed day of every window (after the day without a visit, which has no
        # seals: in the runs of kept days): its seals dropped, the day counted from its
        # visits; then sealed again, under new seals
        acct.load([visit(first + 30 * DAY + 3600 + i) for i in range(5)])
        for covered in lists:
            for s, e, off in windows:
                check(acct, "date", s, e, off, covered)
        server.admin("aggregates", "seal")
        for covered in lists:
            for s, e, off in windows:
                check(acct, "date", s, e, off, covered)
                check_all(acct, s, e, off, covered)
    finally:
        debug.stop()
        debug.cleanup()
        acct._renew()


def test_listed_days_kept_for_every_child(server, acct):
    """The whole days one child's report by date over a list kept are taken by every
    child of the server (the table of kept days is in shared memory): after the first
    request, each request on a new connection, whichever child answers it, takes them
    (QRT00510) and answers as the first did."""
    import requests
    from conftest import start_server
    rng = random.Random(12)
    every = [acct.tracker("c%d" % i) for i in range(6)]
    ids = every[1:5]                        # (a list, not the account)
    first = T0 - 30 * DAY
    acct.load([V(rng.choice(every), first + rng.randrange(30 * DAY), who=rng.randrange(40))
               for _ in range(800)])
    server.admin("aggregates", "seal")
    debug = start_server(loglevel="warn qrtrack:debug", shared_db=server,
                         extra='LogFormat "%P %U" qrtpid\nCustomLog logs/pids.log qrtpid\n')
    try:
        params = {"report": "date", "visit_start": fmt(first, 0),
                  "visit_start_end": fmt(first + 30 * DAY - 1, 0), "trackers[]": ids}
        headers = {"Authorization": "Bearer " + server.token(acct.name),
                   "Connection": "close"}

        def ask():
            r = requests.get(debug.api_base + "/report/", params=params, headers=headers,
                             timeout=30)
            assert r.status_code == 200, r.text
            return r.json()["data"]

        want = ask()
        assert want == oracle_rows(acct, "date", first, first + 30 * DAY - 1, 0, ids)
        assert "QRT00510" not in debug.error_log()
        # (four at a time: both children accept some)
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(lambda _: ask(), range(24))) == [want] * 24
        took = [l for l in debug.error_log().splitlines() if "QRT00510: took " in l]
        assert len(took) == 24 and all("took 30 days of the window" in l for l in took), took[:3]
        with open(os.path.join(debug.dir, "logs", "pids.log")) as f:
            pids = {l.split()[0] for l in f if " /api/report/" in l}
        assert len(pids) >= 2, pids         # both children answered some
        # A graceful restart keeps the table: new children take the days at once.
        import subprocess
        from conftest import HTTPD
        subprocess.run([HTTPD, "-f", debug.conf, "-k", "graceful"], check=True)
        wait_until(lambda: debug.error_log().count("resuming normal operations") >= 2,
                   timeout=20, what="the graceful restart")
        for _ in range(6):
            assert ask() == want
        took = [l for l in debug.error_log().splitlines() if "QRT00510: took " in l]
        assert len(took) == 30 and all("took 30 days of the window" in l for l in took)
    finally:
        debug.cleanup()
        acct._renew()


# -- any window (issue 39): random seconds, offsets and lengths, sealed days and not ----

WINDOW_OFFSETS = [-43200, -34200, -18000, 0, 19800, 20700, 45900, 50400, 420]


def any_windows(rng, k, now, ids):
    """k windows with random start and end seconds between 400 days ago and tomorrow,
    lengths from a minute to ten years, the offsets of WINDOW_OFFSETS (-1200, -0930,
    +0545, +1245, +1400, +0007 ...), a third of them over a list of trackers."""
    out = []
    for _ in range(k):
        off = rng.choice(WINDOW_OFFSETS)
        s = now - 400 * DAY + rng.randrange(401 * DAY)
        if rng.random() < 0.3:
            # a local midnight, 14:30 or 19:05:34
            s -= (s + off) % DAY - rng.choice([0, 52200, 68734])
        e = s + int(60 * (10 * 365 * DAY / 60) ** rng.random())
        covered = sorted(rng.sample(ids, rng.randrange(1, len(ids) + 1))) \
            if rng.random() < 0.3 else None
        out.append((s, e, off, covered))
    return out


@pytest.mark.parametrize("seed", [39, 391, 3903])
def test_any_window_is_exact(server, acct, seed):
    """Windows a date picker or a script asks for: any start and end second, any offset,
    a minute to years long, listed trackers or all, over days that are sealed (settled,
    sealed at once by `aggregates seal`) and days that are not (today, and days whose
    sealed values an import just dropped): every report equals the visits' answer."""
    rng = random.Random(seed)
    now = int(time.time())
    tags = [["campaign:a", "region:eu"], ["campaign:b", "region:us"], ["campaign:a"],
            ["solo"], []]
    ids = [acct.tracker("w%d" % i, tg) for i, tg in enumerate(tags)]

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(25), ua=rng.randrange(3),
                 browser=rng.choice(["Chrome", "Safari", None]),
                 country=rng.choice(["DE", "NP", None]),
                 city=rng.choice(["Berlin", "Kathmandu", "Lyon", None]),
                 bot=rng.random() < 0.05)
    # A year of visits, denser in the last weeks, some today (a day never sealed).
    times = [now - rng.randrange(380 * DAY) for _ in range(250)] + \
            [now - rng.randrange(20 * DAY) for _ in range(250)] + \
            [now - rng.randrange(min(now % DAY, 3 * 3600) + 1) for _ in range(40)]
    acct.load([visit(t) for t in sorted(times)])
    server.admin("aggregates", "seal")
    asked = any_windows(rng, 12, now, ids)
    for s, e, off, covered in asked:
        check_all(acct, s, e, off, covered)
    # Out of order into sealed days: their sealed values go until the writers seal
    # them again; the windows read them from the rows meanwhile.
    acct.load([visit(now - rng.randrange(30 * DAY)) for _ in range(60)])
    more = any_windows(rng, 8, now, ids)
    for s, e, off, covered in more:
        check_all(acct, s, e, off, covered)
    # Sealed again: what a server kept of those days before the import (listed
    # trackers' blocks under the days' seals) is not what it reads now.
    server.admin("aggregates", "seal")
    for s, e, off, covered in asked + more:
        if covered:
            check_all(acct, s, e, off, covered)


def test_reports_stay_exact_while_the_writers_seal(server, acct):
    """Reports asked while the scan writers seal, in their idle time, the days an import
    touched: between two statements of a report a day's rows may turn into sealed values
    (a seal listed, rows no longer marked unsealed). Every answer equals the visits'
    answer all along: a report reads one snapshot of the database."""
    rng = random.Random(83)
    now = int(time.time())
    first = (now // DAY - 60) * DAY
    tags = [["campaign:a", "region:eu"], ["campaign:b"], []]
    ids = [acct.tracker("s%d" % i, tg) for i, tg in enumerate(tags)]

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(40), ua=rng.randrange(3),
                 browser=rng.choice(["Chrome", "Safari", None]),
                 country=rng.choice(["DE", "NP"]), city=rng.choice(["Berlin", "Lyon", None]))
    acct.load([visit(t) for t in sorted(first + rng.randrange(50 * DAY)
                                        for _ in range(800))])
    windows = [(None, None, 0, None),
               (first + 5 * DAY + 52200, first + 49 * DAY + 3000, -34200, None),
               (first + 7 * DAY, first + 40 * DAY + 68734, 20700, ids[:2])]
    yesterday = now // DAY - 1
    account = int(server.sql("SELECT id FROM accounts WHERE name = '%s'" % acct.name).strip())
    deadline = time.time() + 60
    rounds = 0
    while True:
        pending = int(server.sql("SELECT COUNT(*) FROM agg_unsealed WHERE account_id = %d "
                                 "AND day < %d" % (account, yesterday)).strip())
        for s, e, off, covered in windows:
            for kind in ("name", "tag", "date", "browser", "city"):
                check(acct, kind, s, e, off, covered)
        rounds += 1
        if pending == 0 and rounds >= 3:
            break
        assert time.time() < deadline, "the writers did not seal the imported days"


def test_windows_through_today_and_tomorrow_are_exact(server, acct):
    """Days not settled (today, tomorrow) have no sealed visits: a window's piece of one
    is read from its visits, or as the day's counters less the rest of the day when the
    rest holds fewer visits (a report through now, late in the day). "The last 24 hours",
    "the last 30 days", "since an hour ago", "until tomorrow", windows inside today,
    cut early, mid-day and late in today and tomorrow, with visits on both sides of each
    cut (imported: tomorrow too), several offsets: every report equals the visits'
    answer, and again after more visits today."""
    rng = random.Random(77)
    now = int(time.time())
    today = now - now % DAY
    ids = [acct.tracker("n%d" % i, tg) for i, tg in
           enumerate([["campaign:a", "region:eu"], ["campaign:b"], ["campaign:a"], []])]

    def visit(t):
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(30), ua=rng.randrange(3),
                 browser=rng.choice(["Chrome", "Safari", None]),
                 country=rng.choice(["DE", "NP", None]),
                 city=rng.choice(["Berlin", "Kathmandu", None]), bot=rng.random() < 0.05)
    times = [now - rng.randrange(40 * DAY) for _ in range(150)] + \
            [today + rng.randrange(2 * DAY) for _ in range(300)]
    acct.load([visit(t) for t in sorted(times)])
    server.admin("aggregates", "seal")
    cuts = [today + 2 * 3600 + rng.randrange(3600), today + 13 * 3600 + rng.randrange(3600),
            today + 22 * 3600 + rng.randrange(3600), today + DAY + 21 * 3600 + 7]
    windows = []
    for i, cut in enumerate(cuts):
        off = [0, 19800, -34200, 45900][i]
        windows += [(cut - DAY, cut, off), (cut - 30 * DAY, cut, off), (cut - 3600, cut, off),
                    (cut, today + 2 * DAY - 1, off), (cut - 7 * 3600, cut + 1800, off)]
    windows += [(today, today + DAY - 1, 0), (today + 60, today + 2 * DAY - 61, 0),
                (today - 3 * DAY + 17, today + DAY + 3600, 20700)]
    d = today // DAY

    def dashboards():
        # the portfolio KPIs of days through today and tomorrow, listed trackers or all
        for d0, d1, cov in [(d - 29, d, ids[:2]), (d, d + 1, ids[1:3]), (d - 2, d + 1, None),
                            (d - 29, d, None)]:
            params = {"dateStart": day_of(d0 * DAY), "dateEnd": day_of(d1 * DAY)}
            if cov:
                params["trackers"] = cov
            r = acct.get("/dashboard/scansAnalytics", **params)
            assert r.json() == oracle_dashboard(acct, d0, d1, cov), params
    for s, e, off in windows:
        check_all(acct, s, e, off)
    dashboards()
    # More visits today and tomorrow, some before visits stored already.
    acct.load([visit(today + rng.randrange(2 * DAY)) for _ in range(60)])
    for s, e, off in windows[::3]:
        check_all(acct, s, e, off)
    dashboards()


def test_windows_through_the_latest_visit_are_exact(server, acct):
    """A window through now ends after the account's latest visit: today is read as its
    counters less a rest of the day that holds no visit, which the day's quarter-hours
    say (agg_day.last_start, schema 58) without reading it. Windows ending at the latest
    visit, a second before it, after it in its quarter-hour and in later ones, starting
    after it; exact, then again after a tracker with the latest visits is deleted (the
    bound stays above the visits left), after visits and a bot land after it in the same
    quarter-hour and later, and with the bounds of rows from before schema 58 (none)."""
    rng = random.Random(58)
    now = int(time.time())
    today = now - now % DAY
    ids = [acct.tracker("l%d" % i, tg) for i, tg in
           enumerate([["campaign:a", "region:eu"], ["campaign:b"], ["campaign:a"]])]

    def visit(t, tid=None, bot=False):
        return V(tid or rng.choice(acct.live()), t, rng.choice(["scan", "scan", "click"]),
                 who=rng.randrange(20), ua=rng.randrange(3),
                 browser=rng.choice(["Chrome", "Safari"]), country=rng.choice(["DE", "NP"]),
                 city=rng.choice(["Berlin", "Kathmandu"]), bot=bot)
    # the latest visit at last, 7 minutes into a quarter-hour of today, some before it
    # in its quarter-hour
    last = today + 15 * 3600 + 7 * 60 + rng.randrange(60)
    times = [now - rng.randrange(30 * DAY) for _ in range(80)] + \
            [today + rng.randrange(last - today) for _ in range(150)] + \
            [last - rng.randrange(400) for _ in range(10)]
    acct.load([visit(t) for t in sorted(times)] + [visit(last, ids[0])])
    server.admin("aggregates", "seal")
    account = int(server.sql("SELECT id FROM accounts WHERE name = '%s'" % acct.name).split()[0])
    bound = "SELECT MAX(last_start) FROM agg_day WHERE account_id = %d AND quarter_hour = %d" \
        % (account, last // 900)
    assert int(server.sql(bound).split()[0]) == last
    ends = [last, last - 1, last + 1, last + 300, last + 3 * 3600, today + DAY - 1]
    windows = [(e - span, e, off) for e in ends
               for span, off in [(DAY, 0), (30 * DAY, 19800), (3600, -34200)]]
    windows += [(last + 1, last + 900, 0), (last + 1, today + DAY + 600, 45900),
                (today, last - 1, 0)]

    def check_windows(ws):
        for s, e, off in ws:
            check_all(acct, s, e, off)
    check_windows(windows)
    # The tracker with the latest visit deleted: its visits are no one's any more.
    acct.delete(ids[0])
    check_windows(windows[::2])
    # Visits after the latest, in its quarter-hour and later; a bot after them.
    acct.load([visit(last + 5), visit(last + 120), visit(last + 2 * 3600),
               visit(last + 3 * 3600 + 1, bot=True)])
    assert int(server.sql(bound).split()[0]) == last + 120
    check_windows(windows[1::2])
    # Rows from before schema 58: no bound (their quarter-hour's end stands in).
    server.sql("UPDATE agg_day SET last_start = NULL WHERE account_id = %d" % account)
    check_windows(windows[::3])
    acct.load([visit(last + 60)])
    check_windows(windows[2::3])


def test_partial_days_of_few_active_trackers_are_exact(server, acct):
    """A partial day not sealed (today, tomorrow) is read from the visits of the trackers
    with counters that day, not from every tracker of the account: most trackers idle
    today, some with visits only on other days, one only tomorrow, a bot on an idle one;
    windows cut inside those days, in several offsets; exact, then again after an idle
    tracker gets a visit today and after an active one is deleted."""
    rng = random.Random(59)
    now = int(time.time())
    today = now - now % DAY
    ids = [acct.tracker("p%d" % i, tg) for i, tg in
           enumerate([["campaign:a"], ["campaign:b", "region:eu"], ["campaign:a"], [],
                      ["region:eu"], ["campaign:c"]])]

    def visit(tid, t, bot=False):
        return V(tid, t, rng.choice(["scan", "scan", "click"]), who=rng.randrange(15),
                 ua=rng.randrange(3), browser=rng.choice(["Chrome", "Firefox"]),
                 country=rng.choice(["DE", "BR"]), city=rng.choice(["Berlin", "Recife"]),
                 bot=bot)
    old = [visit(rng.choice(ids), today - rng.randrange(1, 20 * DAY)) for _ in range(120)]
    todays = [visit(rng.choice(ids[:2]), today + rng.randrange(DAY)) for _ in range(80)]
    later = [visit(ids[3], today + DAY + rng.randrange(DAY)) for _ in range(20)] + \
        [visit(ids[2], today + rng.randrange(DAY), bot=True)]
    acct.load(sorted(old + todays + later, key=lambda v: v.t))
    server.admin("aggregates", "seal")
    windows = [(today + 2 * 3600 + 17, today + 20 * 3600, 0),
               (today - DAY + 5000, today + 9 * 3600 + 3, 19800),
               (today + 11 * 3600, today + DAY + 5 * 3600, -34200),
               (today - 3 * DAY + 100, today + DAY + 22 * 3600, 45900),
               (today + DAY + 3600, today + 2 * DAY - 1, 0)]

    def check_windows():
        for s, e, off in windows:
            check_all(acct, s, e, off)
    check_windows()
    # An idle tracker's first visit today; an active tracker deleted.
    acct.load([visit(ids[4], today + 6 * 3600 + 11), visit(ids[5], today + 19 * 3600)])
    check_windows()
    acct.delete(ids[0])
    check_windows()


@pytest.mark.parametrize("seed", [50, 5003])
def test_destination_windows_are_exact(server, acct, seed):
    """report=destination over all of an account's trackers takes the account's
    aggregates less the visits that went to a destination (schema 50): any window, sealed
    days and not, visitors whose visits all went to destinations, some to none, bots;
    equal to the visits' answer, and to the report over the same trackers listed."""
    rng = random.Random(seed)
    now = int(time.time())
    ids = [acct.tracker("d%d" % i) for i in range(4)]
    dests = ["https://a.example/%d" % seed, "https://b.example/x?y=1", None, None, None]

    def visit(t):
        who = rng.randrange(30)
        # visitors 0-5 always go to a destination, the others now and then
        d = dests[who % 2] if who < 6 else rng.choice(dests)
        return V(rng.choice(ids), t, rng.choice(["scan", "scan", "click"]), who=who,
                 ua=rng.randrange(2), bot=rng.random() < 0.05, destination=d)
    times = [now - rng.randrange(380 * DAY) for _ in range(200)] + \
            [now - rng.randrange(20 * DAY) for _ in range(200)] + \
            [now - rng.randrange(min(now % DAY, 3 * 3600) + 1) for _ in range(30)]
    acct.load([visit(t) for t in sorted(times)])
    server.admin("aggregates", "seal")
    check(acct, "destination")
    for s, e, off, covered in any_windows(rng, 10, now, ids) + \
            [(now - 30 * DAY, now, 0, None), (now - 400 * DAY, now + DAY, 19800, None)]:
        check(acct, "destination", s, e, off, covered)
        if covered is None:
            check(acct, "destination", s, e, off, ids)
    # Out of order into sealed days: read from the rows until sealed again.
    acct.load([visit(now - rng.randrange(30 * DAY)) for _ in range(40)])
    for s, e, off, covered in any_windows(rng, 6, now, ids):
        check(acct, "destination", s, e, off, covered)
    # A tracker deleted: its visits are no one's any more.
    acct.delete(ids[0])
    for s, e, off, covered in any_windows(rng, 4, now, ids[1:]) + [(None, None, 0, None)]:
        check(acct, "destination", s, e, off, covered)
