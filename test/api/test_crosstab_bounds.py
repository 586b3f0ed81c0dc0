"""The tag crosstab's bounds (issue 13): at most 500 distinct values of each dimension
on the covered trackers, else 422 naming the limit and the dimension, quickly and
without the memory of the matrix; just inside the limit, the right numbers, and the
serving child's memory grows by a few MB at most (the matrix is streamed as text).

A server of its own, so that the children's peak memory (VmHWM) measures this
module's requests only."""
import time

import pytest

from conftest import start_server
from lib.procs import peak_kb
from test_reports import DAY, T0, Account, V, fmt, json_error, oracle_crosstab

LIMIT = 500


@pytest.fixture(scope="module")
def own_server():
    srv = start_server()
    yield srv
    srv.stop()
    srv.cleanup()


@pytest.fixture
def acct(own_server):
    a = Account(own_server)
    yield a
    a.close()


def add_tracker(acct, name, tags):
    """Account.tracker, with a new token every 100 creations (the rate limit)."""
    acct.calls += 1
    if acct.calls > 100:
        acct._renew()
    return acct.tracker(name, tags)


def test_2000_by_2000_is_refused_quickly_and_cheaply(own_server, acct):
    # 200 trackers with 10 values of each dimension of their own: 2000 x 2000.
    ids = [add_tracker(acct, "big%d" % i,
                       ["row:r%04d" % (i * 10 + j) for j in range(10)]
                       + ["col:c%04d" % (i * 10 + j) for j in range(10)])
           for i in range(200)]
    acct.load([V(tid, T0 + n, who=n % 50) for n, tid in enumerate(ids)])
    before = peak_kb(own_server)
    assert before > 0
    t = time.time()
    r = acct.get("/report/tag-crosstab", row="row", col="col")
    elapsed = time.time() - t
    body = json_error(r, 422, "row")
    assert "col" in body["errors"], body
    assert str(LIMIT) in body["message"] and "2000" in body["message"], body
    assert str(LIMIT) in body["errors"]["col"][0], body
    assert elapsed < 3.0, elapsed
    grown = peak_kb(own_server) - before
    assert grown < 16 * 1024, "children grew by %d kB" % grown
    # Only one dimension over the limit: only that one is named.
    r = acct.get("/report/tag-crosstab", row="row", col="col", **{"trackers[]": ids[:51]})
    body = json_error(r, 422, "row")
    assert "col" in body["errors"] and "510" in body["message"], body
    r = acct.get("/report/tag-crosstab", row="col", col="nothing")
    assert r.status_code == 200 and r.json()["data"]["rows"] == [], r.text
    # Listing trackers brings it under the limit: an answer, and the right one.
    sub = ids[:5]
    r = acct.get("/report/tag-crosstab", row="row", col="col", **{"trackers[]": sub})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == oracle_crosstab(acct, "row", "col", covered=sub)


def test_just_inside_the_limit(own_server, acct):
    # 50 trackers with 10 row values each (500 in all) and 10 col values of 100 in all
    # (shared: several trackers per cell), plus trackers that share row values.
    ids = []
    for i in range(50):
        ids.append(add_tracker(acct, "in%d" % i,
                               ["row:v%03d" % (i * 10 + j) for j in range(10)]
                               + ["col:w%02d" % ((i * 7 + j) % 100) for j in range(10)]))
    ids.append(add_tracker(acct, "shared", ["row:v000", "row:v499", "col:w00"]))
    ids.append(add_tracker(acct, "onlyrow", ["row:zzz"]))     # no col: not counted
    visits = []
    for n in range(600):
        tid = ids[(n * 13) % len(ids)]
        visits.append(V(tid, T0 + n * 3601, "click" if n % 5 == 0 else "scan",
                        who=n % 40, bot=n % 17 == 0))
    acct.load(visits)
    before = peak_kb(own_server)
    assert before > 0
    t = time.time()
    r = acct.get("/report/tag-crosstab", row="row", col="col")
    elapsed = time.time() - t
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["data"]["rows"]) == LIMIT and len(body["data"]["cols"]) == 100
    assert body["data"] == oracle_crosstab(acct, "row", "col")
    assert body["meta"] == {"row": "row", "col": "col", "tracker_count": len(ids),
                            "visit_start": None, "visit_start_end": None}
    assert elapsed < 3.0, elapsed
    grown = peak_kb(own_server) - before
    assert grown < 16 * 1024, "children grew by %d kB" % grown
    # Transposed (100 x 500), over a window in an offset, and over listed trackers.
    s, e = T0 + 2 * DAY + 1, T0 + 15 * DAY
    r = acct.get("/report/tag-crosstab", row="col", col="row",
                 visit_start=fmt(s, 19800), visit_start_end=fmt(e, -3600))
    assert r.status_code == 200, r.text
    assert r.json()["data"] == oracle_crosstab(acct, "col", "row", s, e)
    sub = ids[10:20] + ids[-2:]
    r = acct.get("/report/tag-crosstab", row="row", col="col", **{"trackers[]": sub})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == oracle_crosstab(acct, "row", "col", covered=sub)
    assert r.json()["meta"]["tracker_count"] == len(sub)
    # One more row value on a tracker with a col value: over the limit.
    add_tracker(acct, "onemore", ["row:v500", "col:w00"])
    body = json_error(acct.get("/report/tag-crosstab", row="row", col="col"), 422, "row")
    assert "col" not in body["errors"] and "501" in body["message"], body
