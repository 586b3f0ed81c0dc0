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

PG = BACKEND == "pgsql"
NAME = "PostgreSQL" if PG else "SQLite"


# conftest's Api holds every response to the OpenAPI document: that check runs in this
# process and would be timed with every request.
Api = PlainApi


def psql(srv, sql, capture=False, user=None):
    """Runs a script of statements in the server's PostgreSQL database, as the
    database's owner (or user, e.g. "postgres" for a VACUUM of every table)."""
    pg = pg_cluster()
    p = subprocess.run(["psql", "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1",
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
