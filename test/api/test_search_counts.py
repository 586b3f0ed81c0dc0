"""A search's total over the whole of a tracker's visits (schemas 19 and 63). When a
search matches one of the user agents, places or referers alone and its window holds all
of the tracker's visits, PostgreSQL counts the matched entries along the index of tracker
and entry without reading the table (schemas 19 to 62 added up per-tracker counts instead,
visit_dict_counts, kept by statement triggers). The totals must follow every change to
visit_rows: the scan writer's batches, imports, SQL written by hand through the visits view
(insert, update, delete) or into visit_rows, a TRUNCATE, and the retention's erasure
(test_retention checks its counts after its purge).

Each step checks, on both backends, that every search's total and first page are those
of an oracle over the listing, with no window, with a window around every visit (which
PostgreSQL counts without the window, having found the tracker's first and last visit
inside it) and with a window that cuts some visits off (counted along the indexes); it
also checks the dictionaries' reference counts against the visits."""

import requests

from conftest import Api, start_server
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit
from lib.search import IPHONE, _epoch, oracle
from lib.counts import check_counts  # noqa: F401
from lib.wait import wait_until

WORDS = ["iphone", "Safari", "berlin", "reykjav", "story/4", "shop.example", "tablet",
         "zzzqqq"]
EVERYTHING = {"visit_start": "1970-01-02T00:00:00+0000",
              "visit_start_end": "2100-01-01T00:00:00+0000"}
PART = (T0 + 10 * 60, T0 + 40 * 60)


def check_searches(server, tid):
    with Api(server, server.token("acme")) as api:
        everything = listing(api, tid, rows=1000)["data"]
        for word in WORDS:
            want = oracle(everything, word)
            whole = listing(api, tid, search=word, rows=25)
            windowed = listing(api, tid, search=word, rows=25, **EVERYTHING)
            assert whole["meta"]["total"] == windowed["meta"]["total"] == len(want), word
            assert [v["id"] for v in whole["data"]] == [v["id"] for v in want[:25]], word
            assert [v["id"] for v in windowed["data"]] == [v["id"] for v in want[:25]], word
            inside = [v for v in want if PART[0] <= _epoch(v["visit_start"]) <= PART[1]]
            part = listing(api, tid, search=word, rows=25, visit_start=ts(PART[0]),
                           visit_start_end=ts(PART[1]))
            assert part["meta"]["total"] == len(inside), word
            assert [v["id"] for v in part["data"]] == [v["id"] for v in inside[:25]], word
    check_counts(server)
    return everything


def people(tid, n, k=0):
    out = []
    for i in range(n):
        kw = {"ip": "198.51.100.%d" % (i % 5)}
        if i % 3:
            kw.update(user_agent=IPHONE, browser="Mobile Safari", os="iOS", device="mobile")
        else:
            kw.update(device="tablet")
        kw["referer"] = (None, "https://news.example/story/%d" % (i % 6),
                         "https://shop.example/x")[i % 3]
        if i % 9 == 4:
            kw.update(country="IS", city="Reykjavík")
        out.append(visit(tid, T0 + (k + i) * 60, **kw))
    return out


def test_search_totals_follow_every_change_to_the_visits(server, api):
    t = new_tracker(api)
    tid = t["tracker_id"]
    other = new_tracker(api)["tracker_id"]
    # Imports: two trackers, one statement of many rows each.
    import_visits(server, people(tid, 60) + people(other, 20))
    check_searches(server, tid)
    check_searches(server, other)

    # Scans through the writer (its batches), new and known values.
    for ua in (IPHONE, "Search-Counts/1 (tablet kiosk)", IPHONE):
        r = requests.get("%s/q/%s" % (server.base, t["code"]), allow_redirects=False,
                         headers={"User-Agent": ua,
                                  "Referer": "https://news.example/story/42"}, timeout=30)
        assert r.status_code == 302
    wait_until(lambda: listing(api, tid)["meta"]["total"] >= 63, timeout=10,
               what="the scans in the listing")
    check_searches(server, tid)

    # SQL by hand through the view: one row in, one changed (its user agent, place and
    # referer), one out.
    server.sql("INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, "
               "browser, os, device, referer, user_agent, bot, visitor) VALUES "
               "(%d, %d, 'scan', '203.0.113.0', 'DE', 'Berlin', 'Chrome', 'Android', "
               "'tablet', 'https://shop.example/hand', 'hand/1', 0, '00000000000000aa')"
               % (tid, T0 + 5000))
    first = listing(api, tid, rows=1000)["data"]
    iphone = [v for v in first if v["user_agent"] == IPHONE]
    server.sql("UPDATE visits SET user_agent = 'hand/2', browser = 'Firefox', os = 'Linux', "
               "device = 'desktop', city = 'Reykjavík', country = 'IS', referer = NULL "
               "WHERE id = %d" % iphone[0]["id"])
    server.sql("DELETE FROM visits WHERE id = %d" % iphone[1]["id"])
    check_searches(server, tid)

    # Straight into visit_rows: many rows in one statement each.
    server.sql("UPDATE visit_rows SET ref_id = NULL WHERE tracker_id = %d AND id %% 2 = 0"
               % tid)
    check_searches(server, tid)
    server.sql("DELETE FROM visit_rows WHERE tracker_id = %d AND id %% 3 = 0" % tid)
    check_searches(server, tid)
    check_searches(server, other)
    server.sql("DELETE FROM visit_rows WHERE tracker_id = %d" % other)
    assert check_searches(server, other) == []


def test_visits_emptied_by_hand_leave_no_count():
    """Every visit removed at once (PostgreSQL: TRUNCATE, whose trigger has no rows to
    read; SQLite: a DELETE of every row): searches find nothing, then new visits are
    counted from zero. A server of its own: its database is emptied."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            tid = new_tracker(a)["tracker_id"]
        import_visits(srv, people(tid, 30))
        assert len(check_searches(srv, tid)) == 30
        srv.sql("TRUNCATE visit_rows" if srv.backend == "pgsql" else "DELETE FROM visit_rows")
        assert check_searches(srv, tid) == []
        import_visits(srv, people(tid, 12, k=100))
        assert len(check_searches(srv, tid)) == 12
    finally:
        srv.cleanup()


def test_a_large_tracker_finds_its_entries_before_and_after_its_descents(server, api):
    """A tracker of 2,600 visits naming 60 entries of each dictionary, among 1,200 visits
    of another tracker that each name their own: the dictionaries hold more entries than a
    quarter of the tracker's visits, so a search reads the tracker's own entries. PostgreSQL
    reads the first ten (one per 256 visits) by a descent of the index each, the other 50
    in one pass after them (schema 64): a search finds entries of both parts, and none of
    the other tracker's."""
    tid = new_tracker(api)["tracker_id"]
    other = new_tracker(api)["tracker_id"]
    mine, rows = [], []
    for i in range(2600):
        k = i % 60
        v = visit(tid, T0 + i * 10, user_agent="LooseAgent/%02d" % k, city="Town%02d" % k,
                  referer="https://r.example/p%02d" % k, ip="198.51.%d.0" % k)
        mine.append(v)
        rows.append(v)
        if i % 2:
            j = i // 2
            rows.append(visit(other, T0 + i * 10 + 5, user_agent="Other/%d" % j,
                              city="Else%d" % j, referer="https://o.example/%d" % j,
                              ip="10.%d.%d.0" % (j // 256, j % 256)))
    import_visits(server, rows)
    with Api(server, server.token("acme")) as a:
        for word in ("looseagent/07", "LooseAgent/45", "town03", "Town59", "r.example/p30",
                     "198.51.12.", "loose", "else7", "other/", "zzqq"):
            want = oracle(mine, word)
            got = listing(a, tid, search=word, rows=25)
            assert got["meta"]["total"] == len(want), word
            assert len(got["data"]) == min(25, len(want)), word
            assert oracle(got["data"], word) == got["data"], word
            ids = [v["id"] for v in got["data"]]
            assert ids == sorted(ids, reverse=True), word
