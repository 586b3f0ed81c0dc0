"""A search reads the searched tracker's own strings, not everyone's (issue 33, item 3).

Another account's tracker holds 20,000 visits, each with a user agent and a referer of
its own that also hold the searched words; a small tracker of account acme is then
searched (listing, its totals, a window, a poll by since_id, the CSV export), and so is
the large one, whose matched entries are too many to list (it is walked instead), and
whose places and addresses are fewer than its visits (their dictionaries are read as a
whole). Every answer is the oracle's over the tracker's own listing. Correctness only:
the timings are in bench/bench_search.py."""
from conftest import Api
from lib.visits import T0, export, import_visits, listing, new_tracker, ts, visit
from lib.visits import IPHONE, _epoch, oracle

OTHERS = 20000
WORDS = ["needle", "NEEDLE", "iphone", "spam.example", "story/3", "berlin", "50%",
         "a_b", "zzzqqq"]


def crowd(tid, n):
    """n visits, each with a user agent and a referer no other visit has."""
    return [visit(tid, T0 + i, user_agent="Crowd/%d (needle; iPhone) %s" % (i, "x" * 200),
                  referer="https://spam.example/%d/needle?story/3" % i,
                  ip="198.51.100.%d" % (i % 200), city="Berlin" if i % 2 else "Paris")
            for i in range(n)]


def few(tid):
    """Ten visits: some share words with the crowd's strings, some LIKE metacharacters."""
    return [
        visit(tid, T0 + 10, user_agent=IPHONE, referer="https://news.example/story/3"),
        visit(tid, T0 + 20, user_agent="Kiosk/1 needle", city="Reykjavik", country="IS"),
        visit(tid, T0 + 30, referer="https://spam.example/mine"),
        visit(tid, T0 + 40, user_agent="Pct/50% off", ip="192.0.2.1"),
        visit(tid, T0 + 50, user_agent="Under/a_b"),
        visit(tid, T0 + 60, user_agent="Under/axb"),
        visit(tid, T0 + 70, referer="https://shop.example/NEEDLE"),
        visit(tid, T0 + 80),
        visit(tid, T0 + 90, user_agent=IPHONE, city="Paris", country="FR"),
        visit(tid, T0 + 100, device="tablet"),
    ]


def check(api, tid, words, rows=25):
    everything = listing(api, tid, rows=1000)["data"]
    total = listing(api, tid, rows=1)["meta"]["total"]
    if len(everything) < total:
        everything = [v for p in range(1, (total + 999) // 1000 + 1)
                      for v in listing(api, tid, rows=1000, page=p)["data"]]
    assert len(everything) == total
    for word in words:
        want = oracle(everything, word)
        got = listing(api, tid, search=word, rows=rows)
        assert got["meta"]["total"] == len(want), word
        assert [v["id"] for v in got["data"]] == [v["id"] for v in want[:rows]], word
        if len(want) > 2 * rows:
            deep = listing(api, tid, search=word, rows=rows, page=2)
            assert [v["id"] for v in deep["data"]] == [v["id"] for v in want[rows:2 * rows]]
        lo, hi = T0 + 25, T0 + 85
        inside = [v for v in want if lo <= _epoch(v["visit_start"]) <= hi]
        part = listing(api, tid, search=word, rows=rows, visit_start=ts(lo),
                       visit_start_end=ts(hi))
        assert part["meta"]["total"] == len(inside), word
        assert [v["id"] for v in part["data"]] == [v["id"] for v in inside[:rows]], word
        since = min(v["id"] for v in everything)
        newer = [v for v in want if v["id"] > since]
        poll = listing(api, tid, search=word, rows=rows, since_id=since)
        assert poll["meta"]["total"] == len(newer), word
        assert [v["id"] for v in poll["data"]] == [v["id"] for v in newer[:rows]], word
        csv = export(api, tid, search=word)
        assert [int(r[0]) for r in csv] == [v["id"] for v in want], word
    return everything


def test_search_reads_the_trackers_own_strings(server, api):
    server.account("crowd")
    with Api(server, server.token("crowd")) as other:
        big = new_tracker(other)["tracker_id"]
        import_visits(server, crowd(big, OTHERS))
        small = new_tracker(api)["tracker_id"]
        import_visits(server, few(small))
        # The small tracker: its own ten visits, whatever the crowd holds.
        mine = check(api, small, WORDS)
        assert len(mine) == 10
        assert listing(api, small, search="needle")["meta"]["total"] == 2
        assert listing(api, small, search="spam.example")["meta"]["total"] == 1
        assert listing(api, small, search="Crowd/")["meta"]["total"] == 0
        # Nor does the crowd's account see the small tracker's strings.
        assert listing(other, big, search="Kiosk/1")["meta"]["total"] == 0
        assert listing(other, big, search="shop.example")["meta"]["total"] == 0
        # The large tracker: every visit matches "needle" (more entries than are
        # listed: walked), a few match "Crowd/1999" (listed), "paris" its places.
        check(other, big, ["needle", "Crowd/1999", "paris", "198.51.100.19", "/777/"],
              rows=50)
