"""PostgreSQL (schema 56): a report's partial days read their visits through the BRIN
index of visit_rows' times (visits_start_brin), not one probe per tracker of the account,
when the visits lie in time order; reports over such days answer as without the index,
and the index stays through the rebuild of visit_rows by migration 052 run again."""
import glob
import re
import subprocess
import sys

import pytest

from conftest import Api, BACKEND, started
from lib.env import TOP
from lib.migrations import migration_version, rewind
from lib.visits import T0, import_visits, ts, visit

pytestmark = pytest.mark.skipif(BACKEND != "pgsql", reason="a PostgreSQL index")

TRACKERS = 400
VISITS = 120000
STEP = 20       # seconds between two visits: VISITS over about four weeks from T0


def statement(name):
    """The SQL PostgreSQL prepares for a statement, %lld and %s left in."""
    files = sorted(glob.glob("%s/sql/statements/*.sql" % TOP))
    out = subprocess.run([sys.executable, "tools/gen_statements.py", "dump"] + files,
                         cwd=TOP, capture_output=True, text=True, check=True).stdout
    pg = out.split("-- pgsql\n", 1)[1]
    return re.search(r"(?m)^%s\n    (.*)$" % re.escape(name), pg).group(1)


def plan(srv, name, *values):
    sql = statement(name)
    for v in values:
        sql = sql.replace("%lld", str(v), 1)
    return srv.sql("EXPLAIN " + sql)


def reports(a, start, end):
    out = []
    for kind in ("city", "country", "browser", "name", "date", "tag"):
        r = a.get("/report/", params={"report": kind, "visit_start": ts(start),
                                      "visit_start_end": ts(end)})
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def test_partial_days_are_read_through_the_time_index():
    srv, tok = started()
    try:
        with Api(srv, tok) as a:
            r = a.post("/tracker/bulk", json={"trackers": [
                {"redirect_url": "https://example.com/%d" % i, "tags": ["t%d" % (i % 3)]}
                for i in range(TRACKERS)]})
            assert r.status_code == 200, r.text
            tids = [int(t["tracker_id"]) for t in a.get(
                "/tracker", params={"rows": 1000}).json()["data"]]
            assert len(tids) == TRACKERS
            import_visits(srv, [visit(tids[0], T0, user_agent="brin", city="Lyon")])
            # the visits of a busy account, written in time order as scans write them
            srv.sql("INSERT INTO visit_rows (tracker_id, visit_start, click, bot, visitor, "
                    "ua_id, place_id, ref_id, ip_id, dest_id) SELECT t.ids[1 + x %% %d], "
                    "%d + x * %d, 0, 0, x %% 5000, v.ua_id, v.place_id, NULL, NULL, NULL "
                    "FROM generate_series(1, %d) x, (SELECT ua_id, place_id FROM visit_rows "
                    "LIMIT 1) v, (SELECT array_agg(id ORDER BY id) AS ids FROM trackers) t"
                    % (TRACKERS, T0, STEP, VISITS))
            srv.stop()
            srv.admin("aggregates", "rebuild")
            srv.start()
            srv.sql("ANALYZE")
            account = int(srv.sql("SELECT account_id FROM trackers WHERE id = %d" % tids[0]))
            last = T0 + VISITS * STEP
            # an hour after the last visit, and one in the middle of the visits
            for t0 in (last + 3600, T0 + VISITS * STEP // 2):
                got = plan(srv, "report_edge_visits_city", account, t0, t0 + 3599)
                assert "visits_start_brin" in got, got
            # windows whose first and last days are partial, one ending past the visits
            windows = [(T0 + 7 * 3600 + 17, T0 + 9 * 86400 + 5 * 3600),
                       (T0 + 20 * 86400 + 3 * 3600, last + 2 * 86400 + 3600)]
            with_index = [reports(a, s, e) for s, e in windows]
            assert with_index[0][0]["data"], with_index
            srv.sql("DROP INDEX visits_start_brin")
            assert [reports(a, s, e) for s, e in windows] == with_index
            # migration 052 run again rebuilds visit_rows; 056 after it makes the index anew
            rewind(srv, migration_version("pg_narrow"))
            # (the start rewrites the 120,000 rows and their indexes before it answers:
            # on a loaded machine that takes more than a plain start's 20 s)
            srv.start(timeout=180)
            assert "visits_start_brin" in srv.sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'visit_rows'").split()
            assert [reports(a, s, e) for s, e in windows] == with_index
    finally:
        srv.cleanup()
