"""PostgreSQL's scan writer sends a batch's statements pipelined (libpq's pipeline mode):
the writes nothing reads ride with the COMMIT. A statement failing inside a pipeline
ends it cleanly: the batch is rolled back whole, its scans answer 503 as before, and
the writer's connection serves the next batch; a deadlock there is retried as before
and the visit recorded once. The same when the COMMIT itself fails (a deferred check),
alone or among concurrent batches."""
import concurrent.futures

import pytest
import requests

from conftest import BACKEND, Api, start_server
from lib.qr import IPHONE

pytestmark = pytest.mark.skipif(
    BACKEND != "pgsql", reason="libpq's pipeline mode: this file runs in the PostgreSQL "
    "pass of `make api` (QRT_TEST_BACKEND=pgsql)")


@pytest.fixture
def srv():
    s = start_server(accounts=[("acme", "professional")])
    yield s
    s.stop()
    s.cleanup()


def tracker(srv):
    with Api(srv, srv.token("acme")) as a:
        r = a.post("/tracker", json={"redirect_url": "https://example.com/spring"})
        assert r.status_code == 200, r.text
        return r.json()


def scan(t):
    return requests.get(t["scan_url"], allow_redirects=False,
                        headers={"User-Agent": IPHONE}, timeout=30)


def recorded(srv, t):
    """(visits, the tracker's total_scans)."""
    row = srv.sql("SELECT (SELECT COUNT(*) FROM visits WHERE tracker_id = %d), total_scans "
                  "FROM trackers WHERE id = %d" % (t["tracker_id"], t["tracker_id"]))
    return tuple(int(x) for x in row.strip().split("|"))


def test_a_statement_failing_mid_pipeline_rolls_the_batch_back_and_the_next_commits(srv):
    t = tracker(srv)
    # agg_cnt's upsert is held for the pipeline, with statements after it and COMMIT
    srv.sql("CREATE TABLE test_fail (x int);"
            "CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF EXISTS (SELECT 1 FROM test_fail) THEN RAISE EXCEPTION 'injected'; END IF; "
            "RETURN NEW; END $$;"
            "CREATE TRIGGER test_fail BEFORE INSERT OR UPDATE ON agg_cnt "
            "FOR EACH ROW EXECUTE FUNCTION test_fail();"
            "INSERT INTO test_fail VALUES (1)")
    r = scan(t)
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After") == "1"
    assert recorded(srv, t) == (0, 0)
    assert "injected" in srv.error_log()
    srv.sql("DELETE FROM test_fail")
    for n in (1, 2):
        r = scan(t)
        assert r.status_code == 302, r.text
        assert recorded(srv, t) == (n, n)


def test_a_deadlock_inside_the_pipeline_is_retried_and_recorded_once(srv):
    t = tracker(srv)
    # the trackers' counters are the last statement before COMMIT; the first try fails
    srv.sql("CREATE SEQUENCE test_tries;"
            "CREATE FUNCTION test_deadlock() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF nextval('test_tries') = 1 THEN "
            "RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01'; END IF; "
            "RETURN NEW; END $$;"
            "CREATE TRIGGER test_deadlock BEFORE UPDATE ON trackers "
            "FOR EACH ROW EXECUTE FUNCTION test_deadlock()")
    r = scan(t)
    assert r.status_code == 302, r.text
    assert recorded(srv, t) == (1, 1)
    assert int(srv.sql("SELECT last_value FROM test_tries").strip()) == 2
    r = scan(t)
    assert r.status_code == 302, r.text
    assert recorded(srv, t) == (2, 2)


# A check that fails only at COMMIT (a deferred constraint trigger on the trackers'
# counters): the last result of the batch's last round trip.
DEFERRED = ("CREATE FUNCTION test_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF {cond} THEN RAISE EXCEPTION 'injected at commit' USING ERRCODE = '{code}'; "
            "END IF; RETURN NULL; END $$;"
            "CREATE CONSTRAINT TRIGGER test_at_commit AFTER UPDATE ON trackers "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_at_commit()")


def test_a_commit_failing_at_its_end_answers_503_and_the_next_batch_commits(srv):
    t = tracker(srv)
    srv.sql("CREATE TABLE test_fail (x int);"
            + DEFERRED.format(cond="EXISTS (SELECT 1 FROM test_fail)", code="P0001")
            + ";INSERT INTO test_fail VALUES (1)")
    r = scan(t)
    assert r.status_code == 503, r.text
    assert recorded(srv, t) == (0, 0)
    assert "injected at commit" in srv.error_log()
    srv.sql("DELETE FROM test_fail")
    for n in (1, 2):
        r = scan(t)
        assert r.status_code == 302, r.text
        assert recorded(srv, t) == (n, n)


def test_a_deadlock_at_commit_is_retried_and_recorded_once(srv):
    t = tracker(srv)
    srv.sql("CREATE SEQUENCE test_tries;"
            + DEFERRED.format(cond="nextval('test_tries') = 1", code="40P01"))
    r = scan(t)
    assert r.status_code == 302, r.text
    assert recorded(srv, t) == (1, 1)
    assert int(srv.sql("SELECT last_value FROM test_tries").strip()) == 2


def test_concurrent_scans_with_commits_failing_now_and_then_are_each_counted_once(srv):
    """Batches follow each other under load: every 302 has its visit, every 503 none,
    whichever commit failed."""
    t = tracker(srv)
    # every third commit fails at its end (a deferred trigger fires once a tracker row)
    srv.sql("CREATE SEQUENCE test_tries;"
            + DEFERRED.format(cond="nextval('test_tries') % 3 = 0", code="P0001"))
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        codes = list(ex.map(lambda _: scan(t).status_code, range(400)))
    assert set(codes) <= {302, 503}, codes
    ok = codes.count(302)
    assert ok > 0 and codes.count(503) > 0, codes
    assert recorded(srv, t) == (ok, ok)
