"""Reports, the tag crosstab and the dashboard as POSTs of their parameters (issue 39,
"any tracker list"): a list of 1,000 tracker ids does not fit httpd's request line
(414), while the same list in a JSON or form body gives the GET's answer, checked
against the oracle of test_reports; and every hostile body gets its 4xx."""
import random
import urllib.parse

import pytest

from conftest import Api
from lib.reports import DAY, T0, V, acct, day_of, fmt, oracle_dashboard, oracle_rows  # noqa: F401


def bulk_trackers(acct, n):
    """n trackers made by POST /tracker/bulk (tags of three campaigns and two regions);
    their ids, in the account's oracle."""
    ids = []
    for at in range(0, n, 1000):
        rows = [{"redirect_url": "https://example.com/b%d" % i, "name": "b%04d" % i,
                 "tags": ["campaign:%s" % "xyz"[i % 3], "region:%d" % (i % 2)]}
                for i in range(at, min(n, at + 1000))]
        r = acct.api.post("/tracker/bulk", json={"trackers": rows})
        assert r.status_code == 200, r.text
        for d in r.json()["data"]:
            t = d["tracker"]
            acct.trackers[t["tracker_id"]] = {"name": t["name"], "type": t["type"],
                                              "tags": sorted(t["tags"]), "deleted": False}
            ids.append(t["tracker_id"])
    return ids


@pytest.fixture
def thousand(acct):
    """An account of 1,000 trackers, 3,000 visits over 700 of them across four days."""
    ids = bulk_trackers(acct, 1000)
    rng = random.Random(39)
    busy = ids[:700]
    acct.load([V(rng.choice(busy), T0 + rng.randrange(0, 4 * DAY),
                 rng.choice(["scan", "click"]), who=rng.randrange(200), ua=rng.randrange(8),
                 browser=rng.choice(["Chrome", "Safari", None]),
                 country=rng.choice(["DE", "US"]), city=rng.choice(["Berlin", "Austin", None]),
                 bot=rng.random() < 0.03)
               for _ in range(3000)])
    return ids


def post(acct, path, **kw):
    acct.calls += 1
    if acct.calls > 100:
        acct._renew()
    return acct.api.post(path, **kw)


def test_a_list_of_1000_trackers_posted_answers_as_the_oracle(acct, thousand):
    ids = thousand
    # (the account's every tracker but one: a list, not the whole account)
    listed = ids[1:]
    s, e, off = T0 + 3600, T0 + 3 * DAY + 5, 19800
    # in the query, the brackets' form passes httpd's limit of a request line
    r = acct.get("/report/", report="city", visit_start=fmt(s, off),
                 visit_start_end=fmt(e, off), **{"trackers[]": listed})
    assert r.status_code == 414
    for kind in ["name", "tag", "date", "city", "browser"]:
        want = oracle_rows(acct, kind, s, e, off, listed)
        body = {"report": kind, "visit_start": fmt(s, off), "visit_start_end": fmt(e, off),
                "trackers": listed}
        r = post(acct, "/report/", json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["data"] == want, kind
        assert got["meta"] == {"report": kind, "tracker_count": len(listed),
                               "visit_start": fmt(s, off), "visit_start_end": fmt(e, off)}
        # the same as a form, its list in brackets or with commas
        form = urllib.parse.urlencode([("report", kind), ("visit_start", fmt(s, off)),
                                       ("visit_start_end", fmt(e, off))]
                                      + [("trackers[]", i) for i in listed])
        r = post(acct, "/report/", data=form,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 200, r.text
        assert r.json() == got
        r = post(acct, "/report/", data={"report": kind, "visit_start": fmt(s, off),
                                         "visit_start_end": fmt(e, off),
                                         "trackers": ",".join(map(str, listed))})
        assert r.status_code == 200, r.text
        assert r.json() == got
    # every tracker listed is the account's report
    r = post(acct, "/report/", json={"report": "city", "trackers": ids})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == oracle_rows(acct, "city", covered=ids)
    assert r.json()["data"] == acct.get("/report/", report="city").json()["data"]


def test_the_crosstab_and_the_dashboard_posted_answer_as_their_gets(acct, thousand):
    listed = thousand[:400] + thousand[600:]
    d = T0 // DAY
    r = post(acct, "/dashboard/scansAnalytics",
             json={"dateStart": day_of(T0), "dateEnd": day_of(T0 + DAY), "trackers": listed,
                   "compare": False})
    assert r.status_code == 200, r.text
    assert r.json() == oracle_dashboard(acct, d, d + 1, covered=listed, compare=False)
    r = post(acct, "/report/tag-crosstab",
             json={"row": "campaign", "col": "region", "trackers": listed,
                   "visit_start": fmt(T0 + 7200), "visit_start_end": fmt(T0 + 2 * DAY)})
    assert r.status_code == 200, r.text
    short = acct.get("/report/tag-crosstab", row="campaign", col="region",
                     visit_start=fmt(T0 + 7200), visit_start_end=fmt(T0 + 2 * DAY),
                     trackers=",".join(map(str, listed)))
    assert short.status_code == 200, short.text
    assert r.json() == short.json()
    assert r.json()["meta"]["tracker_count"] == len(listed)
    # the query's parameters and the body's together, none given twice
    r = post(acct, "/report/tag-crosstab?row=campaign", json={"col": "region"})
    assert r.status_code == 200, r.text
    assert r.json() == acct.get("/report/tag-crosstab", row="campaign", col="region").json()
    # no body: the query alone, as a GET
    r = post(acct, "/report/?report=tag")
    assert r.status_code == 200, r.text
    assert r.json() == acct.get("/report/", report="tag").json()


def test_hostile_bodies_get_their_4xx(server, acct, other_api):
    mine = acct.tracker("one", ["campaign:a"])
    theirs = other_api.post("/tracker", json={"redirect_url": "https://example.com/x"}).json()
    cases = [
        ({"json": {"report": "city", "trackers": [mine, 1.5]}}, 422, "trackers"),
        ({"json": {"report": "city", "trackers": [[mine]]}}, 422, "trackers"),
        ({"json": {"report": {"kind": "city"}}}, 422, "report"),
        ({"json": {"report": 3.5}}, 422, "report"),
        ({"json": {"report": "city", "trackers": list(range(1, 1002))}}, 422, "trackers"),
        ({"json": {"report": "nope"}}, 422, "report"),
        # (a NUL byte, which a query or form cannot carry either: refused by the parser)
        ({"json": {"report": "city\u0000; DROP TABLE visits"}}, 400, None),
        ({"json": {"report": "city", "trackers": ["%d\u0000" % mine]}}, 400, None),
        ({"json": {"report": "city", "visit_start": "yesterday"}}, 422, "visit_start"),
        ({"json": {"report": "city", "trackers": "1; DROP TABLE visits"}}, 422, "trackers"),
        ({"json": {"report": "city", "trackers": [mine, theirs["tracker_id"]]}}, 403, None),
        ({"json": {"report": "city", "trackers": list(range(20000))}}, 413, None),
        ({"data": "{\"report\": ", "headers": {"Content-Type": "application/json"}},
         400, None),
        ({"json": ["report", "city"]}, 400, None),
        ({"data": "report=city", "headers": {"Content-Type": "text/plain"}}, 415, None),
    ]
    for kw, status, field in cases:
        r = post(acct, "/report/", **kw)
        assert r.status_code == status, (kw, r.status_code, r.text)
        assert "message" in r.json()
        if field:
            assert field in r.json()["errors"], (kw, r.text)
    # a parameter given both in the query and in the body
    r = post(acct, "/report/?report=city", json={"report": "tag"})
    assert r.status_code == 422 and "report" in r.json()["errors"]
    r = post(acct, "/report/?trackers[]=%d" % mine, data={"trackers": str(mine)})
    assert r.status_code == 422 and "trackers" in r.json()["errors"]
    # a parameter given twice in a JSON body (a list, or its name again in another case) is
    # 422 as it is in a query or a form, never its first value taken; the lists take many
    for path, body, field in (
            ("/report/", {"report": ["name", "city"]}, "report"),
            ("/report/", {"report": "name", "REPORT": "city"}, "report"),
            ("/report/", {"report": "date", "visit_start": ["2026-11-01T00:00:00Z",
                                                            "2026-10-01T00:00:00Z"]},
             "visit_start"),
            ("/report/tag-crosstab", {"row": ["campaign", "x"], "col": "region"}, "row"),
            ("/dashboard/scansAnalytics", {"compare": ["0", "1"]}, "compare"),
            ("/dashboard/scansAnalytics", {"dateStart": ["2026-11-01", "2026-10-01"]},
             "dateStart")):
        r = post(acct, path, json=body)
        assert r.status_code == 422, (body, r.text)
        assert field.lower() in {k.lower() for k in r.json()["errors"]}, (body, r.text)
    r = post(acct, "/report/", json={"report": ["name"], "trackers": [mine, mine]})
    assert r.status_code == 200, r.text
    # a null leaves a parameter out
    r = post(acct, "/report/", json={"report": "tag", "visit_start": None})
    assert r.status_code == 200 and r.json()["meta"]["visit_start"] is None
    # an empty list is not a list left out: every tracker is never what it asks for
    for path, body in (("/report/", {"report": "name", "trackers": []}),
                       ("/report/tag-crosstab", {"row": "campaign", "col": "region",
                                                 "trackers": []}),
                       ("/dashboard/scansAnalytics", {"trackers": []})):
        r = post(acct, path, json=body)
        assert r.status_code == 422, (path, r.status_code, r.text)
        assert "empty" in r.json()["errors"]["trackers"][0], r.text
    r = acct.get("/report/", report="name", **{"trackers[]": ""})
    assert r.status_code == 422 and "empty" in r.json()["errors"]["trackers"][0], r.text
    # nor is an empty selection joined with commas, in a query, a form or JSON
    for path, params in (("/report/", {"report": "name"}),
                         ("/report/tag-crosstab", {"row": "campaign", "col": "region"}),
                         ("/dashboard/scansAnalytics", {})):
        for key, value in (("trackers", ","), ("trackers", ",,,"), ("trackers[]", ",")):
            r = acct.get(path, **dict(params, **{key: value}))
            assert r.status_code == 422 and "empty" in r.json()["errors"]["trackers"][0], \
                (path, key, value, r.status_code, r.text)
        r = post(acct, path, json=dict(params, trackers=","))
        assert r.status_code == 422 and "empty" in r.json()["errors"]["trackers"][0], r.text
        r = post(acct, path, data=dict(params, trackers=","))
        assert r.status_code == 422 and "empty" in r.json()["errors"]["trackers"][0], r.text
    # a read-only token may post a report, not create a tracker
    with Api(server, server.token(acct.name, "--scope", "read")) as ro:
        r = ro.post("/report/", json={"report": "tag", "trackers": [mine]})
        assert r.status_code == 200, r.text
        assert ro.post("/tracker", json={"redirect_url": "https://example.com/r"}) \
            .status_code == 403
