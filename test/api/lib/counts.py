"""Search totals checked against a window's and an oracle's."""
import time
import requests
from lib.api import Api
from lib.server import start_server
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit
from lib.search import IPHONE, _epoch, oracle


def check_counts(server):
    """PostgreSQL: visit_dict_counts is what the visits say, with no row of 0."""
    if server.backend != "pgsql":
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
