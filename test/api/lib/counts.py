"""Search totals checked against a window's and an oracle's."""
import time
import requests
from lib.api import Api
from lib.server import start_server
from lib.visits import T0, import_visits, listing, new_tracker, ts, visit
from lib.search import IPHONE, _epoch, oracle


SQLITE_REFS = (("visit_uas", "ua_id"), ("visit_referers", "ref_id"), ("visit_ips", "ip_id"),
               ("visit_destinations", "dest_id"))


def refs(server, table, alias):
    """The count of visit rows that name the row alias of dictionary table, as stored:
    its refs column on SQLite, its row of visit_refs on PostgreSQL (schema 63, 0 when it
    has none)."""
    if server.backend != "pgsql":
        return "%s.refs" % alias
    d = [t for t, _ in SQLITE_REFS].index(table) + 1
    return ("COALESCE((SELECT r.n FROM visit_refs r WHERE r.d = %d AND r.id = %s.id), 0)"
            % (d, alias))


def check_counts(server):
    """Each dictionary row's count of the visit rows that name it (refs) is right: on
    SQLite its refs plus the scan writer's references waiting in visit_refs_due (schema 62,
    dictionary d 1-4 in SQLITE_REFS' order), no waiting reference naming a row that is
    gone; on PostgreSQL its row of visit_refs (schema 63), kept by its triggers, none left
    non-zero for a row that is gone, and no per-tracker counts (visit_dict_counts)."""
    pg = server.backend == "pgsql"
    for d, (table, column) in enumerate(SQLITE_REFS, 1):
        due = ("SELECT 0 AS id, 0 AS n" if pg else
               "SELECT id, SUM(n) AS n FROM visit_refs_due WHERE d = %d GROUP BY id" % d)
        wrong = server.sql(
            "SELECT d.id, %s, COALESCE(q.n, 0), COALESCE(c.n, 0) FROM %s d "
            "LEFT JOIN (%s) q ON q.id = d.id LEFT JOIN (SELECT %s AS id, "
            "COUNT(*) AS n FROM visit_rows GROUP BY %s) c ON c.id = d.id "
            "WHERE %s + COALESCE(q.n, 0) <> COALESCE(c.n, 0) LIMIT 5"
            % (refs(server, table, "d"), table, due, column, column,
               refs(server, table, "d"))).split()
        assert not wrong, (table, wrong)
        gone = server.sql("SELECT COUNT(*) FROM %s q WHERE q.d = %d AND %s AND "
                          "NOT EXISTS (SELECT 1 FROM %s WHERE id = q.id)"
                          % ("visit_refs" if pg else "visit_refs_due", d,
                             "q.n <> 0" if pg else "1 = 1", table))
        assert int(gone.strip()) == 0, (table, gone)
    if pg:
        assert server.sql("SELECT to_regclass('visit_dict_counts')").strip() == ""
