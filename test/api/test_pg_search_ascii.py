"""PostgreSQL (schema 66; SQLite only takes the number): the dictionaries' searched copies
(user_agent_lc, browser_lc, os_lc, device_lc, country_lc, city_lc, referer_lc) fold ASCII
letters alone, as a search folds its text (case-insensitive for ASCII letters, as SQLite's
LIKE). Made with lower(), which folds every letter, text with an upper-case letter beyond
ASCII was not found even as written. A database of the schema before upgrades: what was
missed is found, what was found still is, and the migration runs again over its own result."""
import pytest

from conftest import Api, BACKEND, started
from lib.migrations import column_types, migration_version, upgrade_twice
from lib.visits import T0, import_visits, listing, new_tracker, visit

pytestmark = pytest.mark.skipif(BACKEND != "pgsql", reason="PostgreSQL's schema")

VERSION = migration_version("pg_search_ascii")

COLUMNS = {"visit_uas": ("user_agent", "browser", "os", "device"),
           "visit_places": ("country", "city"), "visit_referers": ("referer",)}

# the schema before: the copies as schema 19 made them
OLD = " ".join("ALTER TABLE %s %s;" % (table, ", ".join(
    "DROP COLUMN %s_lc, ADD COLUMN %s_lc TEXT GENERATED ALWAYS AS (lower(%s)) STORED"
    % (c, c, c) for c in cols)) for table, cols in COLUMNS.items())


def copies(srv):
    """Each copy's generated expression."""
    return dict(line.split("|", 1) for line in srv.sql(
        "SELECT table_name || '.' || column_name, generation_expression FROM "
        "information_schema.columns WHERE column_name LIKE '%\\_lc'").splitlines() if line)


def test_the_searched_copies_fold_ascii_alone_and_the_upgrade_finds_what_was_missed():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            tid = new_tracker(a)["tracker_id"]
            import_visits(srv, [
                visit(tid, T0 + 1, city="ÄRGERSTADT", country="AT"),
                visit(tid, T0 + 2, user_agent="İSTANBUL-Agent/1.0 Firefox/120", city="ua"),
                visit(tid, T0 + 3, referer="https://ΣΊΣ.example/Story", city="ref"),
                visit(tid, T0 + 4, browser="ÉDGE", os="ÖS-TABLET", device="tablet", city="uas"),
                visit(tid, T0 + 5, city="São Paulo"),
            ])

            def cities(s):
                return sorted(v["city"] for v in listing(a, tid, search=s)["data"])

            def answers():
                return [cities(s) for s in ("ÄRGERSTADT", "Ärgerstadt", "İSTANBUL-agent",
                                            "ΣΊΣ.EXAMPLE/story", "ÉDGE", "ÖS-tablet", "TABLET",
                                            "SÃO", "são p", "firefox")]
            want = [["ÄRGERSTADT"], ["ÄRGERSTADT"], ["ua"], ["ref"], ["uas"], ["uas"],
                    ["uas"], [], ["São Paulo"], ["ua"]]
            assert answers() == want
            now = copies(srv)
            assert len(now) == 7 and all(e.startswith("translate(") for e in now.values()), now
            types = column_types(srv, list(COLUMNS))

            def city_copy():
                return srv.sql("SELECT city_lc FROM visit_places WHERE city = 'ÄRGERSTADT'")

            assert city_copy().strip() == "Ärgerstadt"

            def check_old():
                assert all(e.startswith("lower(") for e in copies(srv).values())
                # (the copy the search's "%Ärgerstadt%" did not find)
                assert city_copy().strip() == "ärgerstadt"

            def check():
                assert copies(srv) == now and column_types(srv, list(COLUMNS)) == types
                assert answers() == want
            upgrade_twice(srv, VERSION, OLD, check, check_old)
    finally:
        srv.cleanup()
