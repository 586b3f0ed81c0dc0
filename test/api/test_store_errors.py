"""Every API handler reports a store failure through the one helper: while the
database is gone, reports answer 503 with Retry-After like every other endpoint,
never 500."""
import pytest

from lib import pg as pglib
from conftest import BACKEND, Api, PgCluster, Server

pgsql_only = pytest.mark.skipif(
    BACKEND != "pgsql", reason="stops a PostgreSQL cluster of its own: runs in the "
    "PostgreSQL pass of `make api` (QRT_TEST_BACKEND=pgsql)")


@pytest.fixture
def own_cluster():
    """A PostgreSQL cluster of the test's own, to stop (the session's cluster stays up
    for the other tests)."""
    with pglib.own_cluster() as own:
        yield own


@pgsql_only
def test_reports_answer_503_with_retry_after_while_the_database_is_gone(own_cluster):
    srv = Server()
    try:
        srv.admin("init")
        srv.account("acme")
        srv.start()
        tok = srv.token("acme")
        with Api(srv, tok) as s:
            r = s.post("/tracker", json={"redirect_url": "https://example.com/a",
                                         "tags": ["color:red", "size:big"]})
            assert r.status_code == 200, r.text
            tid = r.json()["tracker_id"]
            # Warm: the child's connection and the report scope cache are in use.
            assert s.get("/report/", params={"report": "name"}).status_code == 200
        own_cluster.halt()
        calls = [("/report/", {"report": "name"}),
                 ("/report/", {"report": "date", "trackers[]": [tid]}),
                 ("/report/tag-crosstab", {"row": "color", "col": "size"}),
                 ("/dashboard/scansAnalytics", {}),
                 ("/tracker", {})]
        with Api(srv, tok) as s:
            for path, params in calls:
                r = s.get(path, params=params)
                assert r.status_code == 503, (path, r.status_code, r.text,
                                              srv.error_log()[-2000:])
                assert int(r.headers["Retry-After"]) > 0, (path, r.headers)
                assert r.json()["message"], (path, r.text)
    finally:
        srv.cleanup()
