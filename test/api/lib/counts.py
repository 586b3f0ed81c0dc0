"""Search totals checked against a window's and an oracle's."""
import time
import requests
from lib.api import Api
from lib.server import start_server
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit
from lib.search import IPHONE, _epoch, oracle


SQLITE_REFS = (("visit_uas", "ua_id"), ("visit_referers", "ref_id"), ("visit_ips", "ip_id"),
               ("visit_destinations", "dest_id"))


def check_counts(server):
    """PostgreSQL: visit_dict_counts is what the visits say, with no row of 0.
    SQLite: each dictionary row's refs, plus the scan writer's references waiting in
    visit_refs_due (schema 62, dictionary d 1-4 in SQLITE_REFS' order), is the number of
    visit rows that name it; no waiting reference names a row that is gone."""
    if server.backend != "pgsql":
        for d, (table, column) in enumerate(SQLITE_REFS, 1):
            wrong = server.sql(
                "SELECT d.id, d.refs, COALESCE(q.n, 0), COALESCE(c.n, 0) FROM %s d "
                "LEFT JOIN (SELECT id, SUM(n) AS n FROM visit_refs_due WHERE d = %d "
                "GROUP BY id) q ON q.id = d.id LEFT JOIN (SELECT %s AS id, "
                "COUNT(*) AS n FROM visit_rows GROUP BY %s) c ON c.id = d.id "
                "WHERE d.refs + COALESCE(q.n, 0) <> COALESCE(c.n, 0) LIMIT 5"
                % (table, d, column, column)).split()
            assert not wrong, (table, wrong)
            gone = server.sql("SELECT COUNT(*) FROM visit_refs_due q WHERE q.d = %d AND "
                              "NOT EXISTS (SELECT 1 FROM %s WHERE id = q.id)" % (d, table))
            assert int(gone.strip()) == 0, (table, gone)
        return
    kept = server.sql("SELECT tracker_id, d, id, n FROM visit_dict_counts "
                      "ORDER BY 1, 2, 3").split()
    want = server.sql(
        "SELECT tracker_id, d, id, COUNT(*) FROM (SELECT tracker_id, 1 AS d, ua_id AS id "
        "FROM visit_rows UNION ALL SELECT tracker_id, 2, place_id FROM visit_rows UNION ALL "
        "SELECT tracker_id, 3, ref_id FROM visit_rows WHERE ref_id IS NOT NULL) o "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").split()
    assert kept == want
    assert not [r for r in kept if r.endswith("|0")]
