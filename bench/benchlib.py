"""Helpers shared by the bench scripts (not a bench itself: bench.py runs bench_*.py).

Importing it makes QRT_PG_DURABLE=1 the default (benchmarks measure PostgreSQL with
its durable defaults: fsync, synchronous_commit and full_page_writes on) and puts
test/api on the path for conftest's Server and PostgreSQL cluster.
"""
import os
import subprocess
import sys


os.environ.setdefault("QRT_PG_DURABLE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "api"))
from conftest import BACKEND, PlainApi, pg_cluster  # noqa: E402
from lib.env import PSQL  # noqa: E402

PG = BACKEND == "pgsql"
NAME = "PostgreSQL" if PG else "SQLite"


# conftest's Api holds every response to the OpenAPI document: that check runs in this
# process and would be timed with every request.
Api = PlainApi


def psql(srv, sql, capture=False, user=None):
    """Runs a script of statements in the server's PostgreSQL database, as the
    database's owner (or user, e.g. "postgres" for a VACUUM of every table)."""
    pg = pg_cluster()
    p = subprocess.run([PSQL, "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1",
                        "-h", "127.0.0.1", "-p", str(pg.port), "-U", user or pg.user,
                        "-d", srv.dbname, "-f", "-"], input=sql, text=True, check=True,
                       env=dict(os.environ, PGCLIENTENCODING="UTF8"),
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return p.stdout


def pg_describe(srv):
    """'PostgreSQL 15.x (durable: fsync on)' for the bench's first line."""
    return "PostgreSQL %s (%s)" % (
        srv.sql("SHOW server_version").split()[0],
        "durable: fsync on" if srv.sql("SHOW fsync").strip() == "on" else "fsync off")


def pg_size_mb(srv):
    return int(srv.sql("SELECT pg_database_size(current_database())")) / 1e6


# Schema 7 keeps a visit's strings in dictionaries (sql/007_lean_visits.sql). The
# benches generate visits with their strings into a table of the old columns (src),
# then these statements put the distinct strings into the dictionaries and the visits,
# with their ids, into visit_rows, in the order of src's column `order`.
UA_COLS = ["user_agent", "browser", "browser_version", "os", "device"]
PLACE_COLS = ["country", "city"]
GEN_COLS = ("tracker_id, visit_start, source, ip, country, city, browser, "
            "browser_version, os, device, referer, user_agent, bot, visitor")


def dict_key(cols, pg, prefix=""):
    """The SQL of a dictionary row's key (qrt_dict_key)."""
    one = ("COALESCE(octet_length({c}) || ':' || {c}, '-')" if pg
           else "COALESCE(length(CAST({c} AS BLOB)) || ':' || {c}, '-')")
    return " || ".join(one.format(c=prefix + c) for c in cols)


def lean_sql(pg, src="gen", order="x", before_rows="", after_rows=""):
    """The statements that move generated visits (table src) into the schema 7
    layout; before_rows and after_rows run around the insert into visit_rows (say,
    dropping and creating its secondary indexes)."""
    ku, kg = dict_key(UA_COLS, pg, "s."), dict_key(PLACE_COLS, pg, "s.")
    return """
INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    SELECT k, user_agent, browser, browser_version, os, device FROM (SELECT DISTINCT
        {ku} AS k, s.user_agent, s.browser, s.browser_version, s.os, s.device
        FROM {src} s) d WHERE NOT EXISTS (SELECT 1 FROM visit_uas e WHERE e.k = d.k);
INSERT INTO visit_places (k, country, city)
    SELECT k, country, city FROM (SELECT DISTINCT {kg} AS k, s.country, s.city
        FROM {src} s) d WHERE NOT EXISTS (SELECT 1 FROM visit_places e WHERE e.k = d.k);
INSERT INTO visit_referers (referer)
    SELECT DISTINCT s.referer FROM {src} s WHERE s.referer IS NOT NULL AND NOT EXISTS
        (SELECT 1 FROM visit_referers e WHERE e.referer = s.referer);
INSERT INTO visit_ips (ip)
    SELECT DISTINCT s.ip FROM {src} s WHERE s.ip IS NOT NULL AND NOT EXISTS
        (SELECT 1 FROM visit_ips e WHERE e.ip = s.ip);
{before}
INSERT INTO visit_rows ({id_col}tracker_id, visit_start, click, bot, visitor, ua_id,
                        place_id, ref_id, ip_id)
    SELECT {id_val}s.tracker_id, s.visit_start,
           CASE WHEN s.source = 'click' THEN 1 ELSE 0 END,
           s.bot, s.visitor, u.id, g.id, r.id, i.id
    FROM {src} s JOIN visit_uas u ON u.k = {ku} JOIN visit_places g ON g.k = {kg}
    LEFT JOIN visit_referers r ON r.referer = s.referer
    LEFT JOIN visit_ips i ON i.ip = s.ip
    ORDER BY {rows_order};
{seq}
{after}
""".format(ku=ku, kg=kg, src=src, before=before_rows, after=after_rows,
           # SQLite (schema 11): ids from visit_seq in the order of `order`, the rows
           # written in the table's key order (as a scan-grown table, packed)
           id_col="" if pg else "id, ",
           id_val="" if pg else ("(SELECT last FROM visit_seq) + "
                                 "ROW_NUMBER() OVER (ORDER BY s.%s), " % order),
           rows_order="s.%s" % order if pg else "2, 3, 1",
           # (the floor of every bucket of ids, each tracker's newest id: SQLite's schema
           # 14, PostgreSQL's 57, when the build measured has it: BENCH_BUILD)
           seq=("DO $$ BEGIN IF to_regclass('visit_floor') IS NOT NULL THEN\n%s\nEND IF; "
                "END $$;" if pg else "UPDATE visit_seq SET last = (SELECT COALESCE(MAX(id), "
                "0) FROM visit_rows);\n%s")
           % ("DELETE FROM visit_floor;\n"
              "INSERT INTO visit_floor (bucket, min_start) "
              "SELECT id >> 12, MIN(visit_start) FROM visit_rows GROUP BY 1;\n"
              "UPDATE trackers SET last_visit_id = COALESCE((SELECT "
              "MAX(v.id) FROM visit_rows v WHERE v.tracker_id = "
              "trackers.id), 0);"))


def bytes_per_visit(size_bytes, visits):
    return size_bytes / visits if visits else 0.0
