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
    SQLite: each dictionary row's refs is the number of visit rows that name it."""
    if server.backend != "pgsql":
        for table, column in SQLITE_REFS:
            wrong = server.sql(
                "SELECT d.id, d.refs, COALESCE(c.n, 0) FROM %s d LEFT JOIN (SELECT %s AS id, "
                "COUNT(*) AS n FROM visit_rows GROUP BY %s) c ON c.id = d.id "
                "WHERE d.refs <> COALESCE(c.n, 0) LIMIT 5" % (table, column, column)).split()
            assert not wrong, (table, wrong)
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
