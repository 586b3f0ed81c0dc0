"""Several nodes on one PostgreSQL database (CONTRACT section 5): two httpd servers,
each with its own config, port, shared memory and committer, share one database and,
for the rate limits, one memcached (QRTrackRateLimitStore memcache), as docs/operations.md's
"Several servers" sets them up.

A tracker made through one node is scanned through the other and counted once; a
PATCH or DELETE through one node is followed by the other's scans within a second;
one visitor's scans spread over both nodes at once stay exact (scans, unique
visitors, reports), every scan gets its 302 and no transaction is lost to a deadlock.
"""
import concurrent.futures
import time

import pytest
import requests

from conftest import BACKEND, Api, Memcached, Server
from lib import pg as pglib
from lib.outside import OutsideLock
from lib.server import snapshot_codes
from lib.wait import wait_until

pytestmark = pytest.mark.skipif(
    BACKEND != "pgsql", reason="several nodes share a PostgreSQL database: this file runs "
    "in the PostgreSQL pass of `make api` (QRT_TEST_BACKEND=pgsql)")

UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
     "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1 visitor-%d"


@pytest.fixture
def own_cluster():
    """A PostgreSQL cluster of the test's own, to stop and start; the session's is put
    back whatever happens (lib.pg.own_cluster)."""
    with pglib.own_cluster() as own:
        yield own


@pytest.fixture(scope="module")
def nodes():
    mc = Memcached()
    conf = "QRTrackRateLimitStore memcache %s\n" % mc.addr
    a = b = None
    try:
        a = Server(extra=conf, loglevel="info")
        a.admin("init")
        a.account("acme")
        a.start()
        b = Server(extra=conf, shared_db=a, loglevel="info")
        b.start()
        tok = a.token("acme")
        b.tokens.append(tok)
        yield a, b, tok
    finally:
        for srv in (b, a):
            if srv:
                srv.cleanup()
        mc.stop()


def scan(node, code, ua=UA % 0):
    return requests.get("%s/q/%s" % (node.base, code), headers={"User-Agent": ua},
                        allow_redirects=False, timeout=30)


def create(node, tok, url="https://example.com/a"):
    with Api(node, tok) as s:
        r = s.post("/tracker", json={"redirect_url": url})
        assert r.status_code == 200, r.text
        return r.json()


def analytics(node, tok, tid):
    with Api(node, tok) as s:
        r = s.get("/tracker/analytics/%d" % tid)
        assert r.status_code == 200, r.text
        return r.json()


def test_one_tokens_requests_alternating_between_nodes_admit_exactly_the_limit(nodes):
    """200 requests of one token, alternating between the nodes, in one minute: exactly
    120 (the default limit) answered 200, the rest 429; no 5xx."""
    a, b, _ = nodes
    tok = a.token("acme")
    b.tokens.append(tok)

    def one(i):
        with Api((a, b)[i % 2], tok) as s:
            return s.get("/account").status_code

    codes = [one(i) for i in range(200)]
    assert codes.count(200) == 120 and codes.count(429) == 80, codes
    assert codes[:120] == [200] * 120


def test_made_on_one_node_scanned_on_the_other_counted_once(nodes):
    a, b, tok = nodes
    t = create(a, tok)
    r = scan(b, t["code"])
    assert r.status_code == 302 and r.headers["Location"] == "https://example.com/a"
    for node in (a, b):
        got = analytics(node, tok, t["tracker_id"])
        assert got["totalScans"] == 1 and got["uniqueVisitors"] == 1, got


def follows_within(node, code, check, limit=1.0, ua=UA % 0):
    """Seconds until the node's scans of code satisfy check (fails past limit)."""
    start = time.monotonic()
    last = []

    def followed():
        last[:] = [scan(node, code, ua)]
        return check(last[0])
    wait_until(followed, timeout=limit, interval=0.02, what=lambda: "%s to follow: %s %s" % (
        node.base, last[0].status_code, last[0].headers.get("Location")))
    return time.monotonic() - start


def test_patch_and_delete_on_one_node_are_followed_by_the_other(nodes):
    a, b, tok = nodes
    t = create(a, tok, "https://example.com/before")
    for _ in range(3):          # both nodes' children have the code cached
        assert scan(a, t["code"]).headers["Location"] == "https://example.com/before"
        assert scan(b, t["code"]).headers["Location"] == "https://example.com/before"
    with Api(a, tok) as s:
        r = s.patch("/tracker/%d" % t["tracker_id"],
                    json={"redirect_url": "https://example.com/after"})
        assert r.status_code == 200, r.text
    # At once on the node that made the change, within a second on the other.
    assert scan(a, t["code"]).headers["Location"] == "https://example.com/after"
    follows_within(b, t["code"], lambda r: r.headers.get("Location") ==
                   "https://example.com/after")
    with Api(b, tok) as s:
        assert s.delete("/tracker/%d" % t["tracker_id"]).status_code == 204
    assert scan(b, t["code"]).status_code == 404
    follows_within(a, t["code"], lambda r: r.status_code == 404)
    # And it stays gone on both a while later (time passing is the check, so a sleep).
    time.sleep(0.6)
    assert scan(a, t["code"]).status_code == 404 and scan(b, t["code"]).status_code == 404


def test_a_webhook_made_on_one_node_gets_the_other_nodes_scans_within_a_second(nodes):
    a, b, tok = nodes
    t = create(a, tok)
    assert scan(b, t["code"]).status_code == 302    # b's writer knows the tracker already
    with Api(a, tok) as s:
        r = s.post("/webhook", json={"url": "https://hooks.example.com/nodes",
                                     "events": ["scan.created"]})
        assert r.status_code == 200, r.text
        hook = r.json()["id"]

    def rows():
        return int(a.sql("SELECT COUNT(*) FROM webhook_events WHERE webhook_id = %d"
                         % hook).strip())
    # b reads the webhooks again within half a second of a change made elsewhere (the
    # margin over a second is for the psql reads between scans)
    follows_within(b, t["code"], lambda r: r.status_code == 302 and rows() > 0, limit=1.5)
    n = rows()
    for node in (a, b, b):
        assert scan(node, t["code"]).status_code == 302
    assert rows() == n + 3


ANDROID = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/120.0.0.0 Mobile Safari/537.36")


def test_rules_and_a_password_set_on_one_node_are_followed_by_the_other(nodes):
    """CONTRACT section 7: rules, validity and passwords reach every node within a
    second, like redirect_url."""
    a, b, tok = nodes
    t = create(a, tok, "https://example.com/home")
    for _ in range(3):
        assert scan(b, t["code"], ANDROID).headers["Location"] == "https://example.com/home"
    with Api(a, tok) as s:
        r = s.patch("/tracker/%d" % t["tracker_id"], json={"rules": [
            {"redirect_url": "https://play.example.com/", "os": ["Android"]}]})
        assert r.status_code == 200, r.text
    follows_within(b, t["code"], lambda r: r.headers.get("Location") ==
                   "https://play.example.com/", ua=ANDROID)
    with Api(b, tok) as s:
        r = s.patch("/tracker/%d" % t["tracker_id"], json={"password": "on both"})
        assert r.status_code == 200, r.text
    assert scan(b, t["code"]).status_code == 200
    follows_within(a, t["code"], lambda r: r.status_code == 200)
    r = requests.post("%s/q/%s" % (a.base, t["code"]), data={"password": "on both"},
                      headers={"User-Agent": ANDROID}, allow_redirects=False, timeout=30)
    assert r.status_code == 302 and r.headers["Location"] == "https://play.example.com/"


def test_max_scans_is_exact_with_scans_spread_over_both_nodes(nodes):
    """max_scans 100 and 400 concurrent scans over both nodes: exactly 100 sent to the
    destination, 300 to expired_url, 400 visits recorded."""
    a, b, tok = nodes
    with Api(a, tok) as s:
        r = s.post("/tracker", json={"redirect_url": "https://example.com/prize",
                                     "max_scans": 100,
                                     "expired_url": "https://example.com/gone"})
        assert r.status_code == 200, r.text
        t = r.json()

    def one(i):
        r = scan((a, b)[i % 2], t["code"], UA % (1000 + i))
        return r.headers.get("Location") if r.status_code == 302 else r.status_code

    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        got = list(ex.map(one, range(400)))
    assert got.count("https://example.com/prize") == 100, got
    assert got.count("https://example.com/gone") == 300, got
    for node in (a, b):
        assert analytics(node, tok, t["tracker_id"])["totalScans"] == 400


def test_the_first_scans_after_valid_until_on_both_nodes_make_one_expiry_event(nodes):
    """A tracker past its valid_until scanned on both nodes at once, their committers
    recording the scans together (held behind the write lock another program holds, then
    let go): one tracker.expired, from whichever committed first, not one a node (both read
    the tracker's last visit from before either scan)."""
    a, b, tok = nodes
    past = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(time.time() - 3600))
    with Api(a, tok) as s:
        r = s.post("/webhook", json={"url": "https://hooks.example.com/expired",
                                     "events": ["tracker.expired"]})
        assert r.status_code == 200, r.text
        hook = r.json()["id"]
        r = s.post("/tracker", json={"redirect_url": "https://example.com/sale",
                                     "valid_until": past})
        assert r.status_code == 200, r.text
        t = r.json()
    # (each node's committer reads the account's webhooks again at most every 0.5 s)
    time.sleep(1.2)
    outside = OutsideLock(a, 2.0, advisory=True)
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            got = list(ex.map(lambda node: scan(node, t["code"]).status_code, (a, b)))
    finally:
        outside.wait()
    assert got == [410, 410], got
    made = a.sql("SELECT event_type FROM webhook_events WHERE webhook_id = %d AND "
                 "tracker_id = %d" % (hook, t["tracker_id"])).split()
    assert made == ["tracker.expired"], made
    assert analytics(b, tok, t["tracker_id"])["totalScans"] == 2


def test_a_change_on_one_node_reaches_the_other_nodes_next_report(nodes):
    """Each node keeps the scope of an account's reports while the account's trackers
    version in the shared database stays (schema 18): a change made through one node
    reaches the other's very next report (not within a second, as scans: at once)."""
    a, b, tok = nodes
    t = create(a, tok, "https://example.com/tagged")
    assert scan(a, t["code"]).status_code == 302

    def tags(node):
        with Api(node, tok) as s:
            r = s.get("/report/", params={"report": "tag"})
            assert r.status_code == 200, r.text
            return sorted(row["tag"] for row in r.json()["data"])

    def names(node):
        with Api(node, tok) as s:
            r = s.get("/report/", params={"report": "name"})
            assert r.status_code == 200, r.text
            return {row["tracker_id"]: row["name"] for row in r.json()["data"]}

    for _ in range(4):          # every child of both nodes keeps the scope
        assert tags(a) == [] and tags(b) == []
        assert names(b)[t["tracker_id"]] == "example.com"
    with Api(a, tok) as s:
        r = s.patch("/tracker/%d" % t["tracker_id"],
                    json={"tags": ["campaign:spring"], "name": "spring"})
        assert r.status_code == 200, r.text
    for _ in range(4):
        assert tags(b) == ["campaign:spring"] and tags(a) == ["campaign:spring"]
        assert names(b)[t["tracker_id"]] == "spring"
    with Api(b, tok) as s:
        assert s.delete("/tracker/%d" % t["tracker_id"]).status_code == 204
    for _ in range(4):
        assert t["tracker_id"] not in names(a) and tags(a) == []


def test_one_visitors_scans_over_both_nodes_stay_exact(nodes):
    a, b, tok = nodes
    t = create(a, tok, "https://example.com/busy")
    jobs = [(i % 2, v) for v in range(40) for i in range(16)]

    def one(job):
        node, v = job
        return scan((a, b)[(node + v) % 2], t["code"], UA % v).status_code

    with concurrent.futures.ThreadPoolExecutor(max_workers=24) as ex:
        codes = list(ex.map(one, jobs))
    assert codes == [302] * 640
    for node in (a, b):
        got = analytics(node, tok, t["tracker_id"])
        assert got["totalScans"] == 640 and got["uniqueVisitors"] == 40, got
    with Api(b, tok) as s:
        r = s.get("/report/", params={"report": "name", "trackers[]": t["tracker_id"]})
        assert r.status_code == 200, r.text
        row = r.json()["data"][0]
        assert (row["visits"], row["scans"], row["unique_visitors"]) == (640, 640, 40), row
        r = s.get("/report/", params={"report": "browser"})
        assert r.status_code == 200
    assert int(a.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                     % t["tracker_id"]).strip()) == 640
    for node in (a, b):
        log = node.error_log()
        assert "deadlock" not in log.lower(), log[-2000:]
        assert "QRT00040" not in log, log[-2000:]


def test_capped_codes_scanned_on_both_nodes_in_opposite_orders_never_deadlock(nodes):
    """Two codes with max_scans, scanned at once through both nodes, each node's batches
    holding both in either order: the writers take the caps' row locks in one order, so
    neither waits for the other until PostgreSQL's deadlock check ends one (a second's
    stall of every scan in the batch, then the commit run again, QRT00048). Every scan is
    sent on and counted."""
    a, b, tok = nodes
    codes = []
    for i in range(2):
        with Api(a, tok) as s:
            r = s.post("/tracker", json={"redirect_url": "https://example.com/cap%d" % i,
                                         "max_scans": 1000000,
                                         "expired_url": "https://example.com/over"})
            assert r.status_code == 200, r.text
            codes.append((r.json()["tracker_id"], r.json()["code"]))
    before = [n.error_log().count("QRT00048") for n in (a, b)]
    jobs = [(k % 2, k) for k in range(1200)]

    def one(job):
        node, k = job
        # node a's stream goes A, B, A, B...; node b's B, A, B, A...
        tid, code = codes[(k // 2 + node) % 2]
        r = scan((a, b)[node], code, UA % (k % 50))
        return r.status_code, r.headers.get("Location")

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
        got = list(ex.map(one, jobs))
    assert all(code == 302 and where.startswith("https://example.com/cap")
               for code, where in got), [g for g in got if g[0] != 302][:5]
    for tid, _ in codes:
        n = int(a.sql("SELECT redirected FROM tracker_routing WHERE tracker_id = %d"
                      % tid).strip())
        assert n == 600, (tid, n)
    for node, was in zip((a, b), before):
        log = node.error_log()
        assert log.count("QRT00048") == was, log[-3000:]
        assert "deadlock" not in log.lower(), log[-3000:]


def test_nodes_started_at_once_on_an_empty_database_both_come_up():
    """The first start creates the schema: two nodes starting together on an empty
    database must not both try (one migrates, the other waits for it)."""
    import threading
    a = Server()
    b = Server(shared_db=a)
    errors = []

    def start(srv):
        try:
            srv.start()
        except AssertionError as e:
            errors.append(str(e))
    try:
        threads = [threading.Thread(target=start, args=(s,)) for s in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        a.account("acme")
        tok = a.token("acme")
        t = create(b, tok)
        assert scan(a, t["code"]).status_code == 302
        assert a.sql("SELECT MAX(version) FROM qrt_schema").strip() == \
            b.sql("SELECT MAX(version) FROM qrt_schema").strip()
    finally:
        b.cleanup()
        a.cleanup()


def test_a_restarted_database_keeps_scans_redirected_and_nothing_is_lost(own_cluster):
    """While PostgreSQL is down, scans still answer 302 (their visits committed to the
    node's spool first: no redirect without a durably recorded visit) and the API
    503; once it is back, both work again without restarting Apache, and every
    visit of the outage is in the database, once (test_outage.py goes further)."""
    own = own_cluster                   # a cluster of its own, to stop and start
    srv = None
    try:
        srv = Server()
        srv.admin("init")
        srv.account("acme")
        tok = srv.token("acme")
        srv.start()
        t = create(srv, tok)
        ok = sum(scan(srv, t["code"], UA % i).status_code == 302 for i in range(20))
        assert ok == 20
        # A child that has not looked the code up answers it from the node's snapshot,
        # which takes a new tracker a moment later (test_outage.py: a code the snapshot
        # does not have answers 503 meanwhile)
        wait_until(lambda: t["code"] in snapshot_codes(srv), timeout=15, interval=0.1,
                   what="the snapshot of the code")
        own.halt()
        during = [scan(srv, t["code"], UA % i) for i in range(10)]
        assert {r.status_code for r in during} == {302}, [r.status_code for r in during]
        assert {r.headers["Location"] for r in during} == {"https://example.com/a"}
        ok += len(during)
        with Api(srv, tok) as s:
            assert s.get("/tracker").status_code == 503
        own.start()

        def until_served(call, ok_status):
            """A pooled connection opened before the restart answers one 503 (with
            Retry-After) when first used, then is opened again: retry on those."""
            def served():
                r = call()
                if r.status_code == ok_status:
                    return r
                assert r.status_code == 503 and r.headers["Retry-After"], r.text
                return None
            return wait_until(served, timeout=20, interval=0.1,
                              what="to be served again after the restart")

        for i in range(20):
            until_served(lambda: scan(srv, t["code"], UA % i), 302)
            ok += 1
        with Api(srv, tok) as s:
            r = until_served(lambda: s.get("/tracker/analytics/%d" % t["tracker_id"]), 200)
        # Every 302 was recorded, once; the spooled ones may still be on their way.
        def recorded():
            with Api(srv, tok) as s:
                r = until_served(lambda: s.get("/tracker/analytics/%d" % t["tracker_id"]),
                                 200)
            return r if r.json()["totalScans"] >= ok else None
        if r.json()["totalScans"] < ok:
            r = wait_until(recorded, timeout=20, interval=0.1, what="every 302 recorded")
        assert r.json()["totalScans"] == ok == 50, r.json()
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 50
    finally:
        if srv:
            srv.cleanup()


def test_an_idempotency_key_used_on_one_node_then_the_other_creates_one_tracker(nodes):
    a, b, tok = nodes
    key = "nodes-%d" % time.time_ns()
    body = {"redirect_url": "https://example.com/idem-nodes-%s" % key}
    with Api(a, tok) as s:
        first = s.post("/tracker", json=body, headers={"Idempotency-Key": key})
    with Api(b, tok) as s:
        again = s.post("/tracker", json=body, headers={"Idempotency-Key": key})
        bulk = {"trackers": [body]}
        bulk_a = s.post("/tracker/bulk", json=bulk, headers={"Idempotency-Key": key + "b"})
    with Api(a, tok) as s:
        bulk_b = s.post("/tracker/bulk", json=bulk, headers={"Idempotency-Key": key + "b"})
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["tracker_id"] == first.json()["tracker_id"]
    assert bulk_b.headers["Idempotent-Replayed"] == "true" and bulk_b.content == bulk_a.content
    n = a.sql("SELECT COUNT(*) FROM trackers WHERE redirect_url = '%s'" % body["redirect_url"])
    assert int(n.split()[0]) == 2


def test_a_change_on_one_node_is_in_the_history_read_on_the_other(nodes):
    a, b, tok = nodes
    t = create(a, tok, "https://example.com/h1")
    with Api(a, tok) as s:
        assert s.patch("/tracker/%d" % t["tracker_id"],
                       json={"redirect_url": "https://example.com/h2"}).status_code == 200
    with Api(b, tok) as s:
        h = s.get("/tracker/%d/history" % t["tracker_id"]).json()
    assert [e["kind"] for e in h["data"]] == ["updated", "created"]
    assert h["data"][0]["changes"] == {
        "redirect_url": ["https://example.com/h1", "https://example.com/h2"]}


def test_a_read_token_is_refused_on_both_nodes(nodes):
    a, b, tok = nodes
    t = create(a, tok)
    ro = a.token("acme", "--scope", "read")
    b.tokens.append(ro)
    for node in (a, b):
        with Api(node, ro) as s:
            assert s.get("/tracker/show/%d" % t["tracker_id"]).status_code == 200
            for method, path in (("POST", "/tracker"), ("PATCH", "/tracker/%d" % t["tracker_id"]),
                                 ("DELETE", "/tracker/%d" % t["tracker_id"])):
                r = s.request(method, path, json={"redirect_url": "https://example.com/x"})
                assert r.status_code == 403 and r.json() == {"message": "This token is read-only."}

