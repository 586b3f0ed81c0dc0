"""Reports over listed trackers hold the blocks they read from the visits where the
report cache keeps them (qrt_aggcache_put_held), up to the cache's bytes, and copy the
rest: with a QRTrackReportCache too small for a list's blocks, every request reads them
again, holds them for its count and lets go of them after it. The answers are those of a
server without the cache, request after request, and the children's memory stays flat
(held blocks never let go of, or held past the cache's bytes and pushed out by the
report's own later blocks, made it grow with every request). A child hands back to the
system the memory such reports freed, once its reports have counted 2,000,000 visits one by
one."""
import random
import re
import time

import pytest

from conftest import REPORTS, Api, start_server
from lib.memory import rss_kb
from lib.visits import import_visits, new_tracker, ts, visit

DAY = 86400
BROWSERS = ["Chrome", "Safari", "Firefox", "Edge"]
# A child's growth allowed over 40 requests once its memory has grown to what a report
# takes: what its last reports freed since the last trim (every 2,000,000 visits counted)
# is still there, 4.6-5.8 MB; 40 MB were the blocks never let go of. Under make test-asan
# each allocation carries the sanitizer's redzones and a freed one waits in its
# quarantine: 9-10 MB.
GROWTH_KB = (16 if REPORTS else 8) * 1024


def settled_account(srv):
    """acme's token and 24 trackers, with 150,000 visits of 20,000 visitors over the 180
    days from 200 days ago, imported into srv (stopped while their days are sealed):
    (token, tracker ids, the first day's time, now)."""
    tok = srv.token("acme")
    with Api(srv, tok) as api:
        tids = [new_tracker(api)["tracker_id"] for _ in range(24)]
    now = int(time.time())
    first = now - 200 * DAY
    rng = random.Random(39)
    visits = [visit(rng.choice(tids), first + rng.randrange(180 * DAY),
                    browser=rng.choice(BROWSERS), ip="198.51.100.%d" % rng.randrange(256),
                    user_agent="agent %d" % rng.randrange(20000),
                    source=rng.choice(["scan", "scan", "click"]))
              for _ in range(150000)]
    import_visits(srv, visits)
    srv.stop()
    srv.admin("aggregates", "seal")
    srv.start()
    return tok, tids, first, now


def answers_without_cache(srv, tids, first, now, kinds):
    """A window over the settled account's days and 20 of its trackers (some of them: their
    visitors are counted from the visits, where all of them are the account's aggregates),
    and the reports of each kind over it from a server on srv's database without the cache
    of sealed values, which counts the visits in the database: (params, reports)."""
    params = {"visit_start": ts(first - DAY), "visit_start_end": ts(now - DAY),
              "trackers[]": tids[:20]}
    want = {}
    off = start_server(extra="QRTrackReportCache 0\n", shared_db=srv)
    try:
        with Api(off, off.token("acme")) as a:
            for kind in kinds:
                r = a.get("/report/", params=dict(params, report=kind))
                assert r.status_code == 200, r.text
                want[kind] = r.json()
                assert 100000 < sum(x["visits"] for x in want[kind]["data"]) < 150000
    finally:
        off.stop()
        off.cleanup()
    return params, want


@pytest.fixture(scope="module")
def settled():
    """The module's database, made once (its tests only read it, each through a server of
    its own): (the server that made it, stopped; acme's trackers, the first day's time, now,
    a window over 20 of the trackers and the reports by date, browser and city over it from
    a server without the cache)."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        tok, tids, first, now = settled_account(srv)
        params, want = answers_without_cache(srv, tids, first, now, ("date", "browser", "city"))
        srv.stop()
        yield srv, tids, first, now, params, want
    finally:
        srv.cleanup()


def test_a_list_past_the_cache_is_held_for_each_report_and_let_go(settled):
    # (prefork: a child's memory is that of one request at a time, not of whichever of its
    # threads ran one last; one connection throughout, so that one child serves them all:
    # past httpd's 100 requests a connection the other child took over, and its own growth
    # to what a report takes fell between the two measures)
    made, _, _, _, params, want = settled
    srv = start_server(extra="QRTrackReportCache 1\nMaxKeepAliveRequests 0\n", shared_db=made,
                       mpm="prefork")
    try:
        # 150,000 visits of 20,000 visitors over days long settled: the listed trackers'
        # some 2 MB of blocks, more than the 1 MB cache keeps
        tok = srv.token("acme")
        rss = []
        with Api(srv, tok) as a:
            for _ in range(3):
                for _ in range(20):
                    for kind in ("browser", "date"):
                        assert a.get("/report/", params=dict(params, report=kind)).json() \
                            == want[kind]
                rss.append(rss_kb(srv))
        # each request holds up to the cache's 1 MB of blocks in it and copies the rest:
        # once the children's memory has grown to what a report takes, 40 more requests
        # would leave 40 MB behind were they not let go
        assert rss[2] - rss[1] < GROWTH_KB, rss
    finally:
        srv.stop()
        srv.cleanup()


def test_a_child_hands_back_what_its_reports_freed(settled):
    # (the event MPM, as served: each of a child's threads has its own heap in the C
    # library, which keeps what a report freed at that report's peak)
    made, tids, first, now, _, _ = settled
    srv = start_server(shared_db=made, loglevel="warn qrtrack:debug")
    try:
        tok = srv.token("acme")
        window = {"visit_start": ts(first - DAY), "visit_start_end": ts(now - DAY)}
        listed = dict(window, report="browser", **{"trackers[]": tids[:20]})
        with Api(srv, tok) as a:
            # the account's reports come from its aggregates: nothing counted one by one
            for _ in range(30):
                assert a.get("/report/", params=dict(window, report="browser")).status_code \
                    == 200
            assert "QRT00123" not in srv.error_log()
            want = a.get("/report/", params=listed).json()
            assert 100000 < sum(x["visits"] for x in want["data"]) < 150000
            # 40 reports of some 125,000 visits each, counted from the listed trackers'
            # blocks: 5,000,000 visits over the two children
            for _ in range(40):
                assert a.get("/report/", params=listed).json() == want
        assert re.search(r"\[qrtrack:debug\] .*QRT00123: handed back the memory reports "
                         r"freed \(\d+ us\)", srv.error_log())
    finally:
        srv.stop()
        srv.cleanup()


def test_a_long_lists_blocks_are_read_by_two_threads(settled):
    """A list of 16 trackers or more whose blocks no request has read yet: a second thread,
    over a connection of the child's own, reads them from the end of the list while the
    request reads from its start (QRT00509 at debug says how many spans it read). Every
    answer, the first and the later ones (from the blocks kept), is that of a server
    without the cache, which counts the visits in the database."""
    made, _, _, _, window, want = settled
    srv = start_server(shared_db=made, loglevel="warn qrtrack:debug")
    try:
        tok = srv.token("acme")
        # by date first (blocks without strings), then by browser and city (with them):
        # each child reads each kind of block once
        with Api(srv, tok) as a:
            for _ in range(4):
                for kind in ("date", "browser", "city"):
                    assert a.get("/report/", params=dict(window, report=kind)).json() \
                        == want[kind], kind
        read = [int(n) for n in re.findall(r"\[qrtrack:debug\] .*QRT00509: a second thread "
                                           r"read (\d+) spans of a list's visits",
                                           srv.error_log())]
        # (two children at most each read both kinds once, and nothing after)
        assert read and max(read) > 0 and len(read) <= 4, read
    finally:
        srv.stop()
        srv.cleanup()
