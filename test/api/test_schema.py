"""sql/schema.sqlite.sql and sql/schema.pgsql.sql: the schema that the migrations
(sql/0NN_*.sql) make, for a reader. Each file is loaded into an empty database and
described from the catalog (columns, keys, indexes, triggers, functions, sequences),
then compared with a database that `qrtrack-admin init` has just migrated: the files
cannot drift from what runs.

QRT_SCHEMA_WRITE=1 writes the backend's file from the migrated database instead
(`make schema-files` does it for both backends)."""
import os
import re
import sqlite3
import subprocess
import tempfile

from lib.env import PSQL

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WRITE = os.environ.get("QRT_SCHEMA_WRITE") == "1"
HEADER = """-- The schema of mod_qrtrack on {backend}, version {version}: what the migrations
-- sql/0NN_*.sql make (they are what runs; this file is for reading). Generated from a
-- freshly migrated database by `make schema-files`; test/api/test_schema.py checks it.
"""


def norm(sql):
    """SQL text with its whitespace collapsed (none next to parentheses and commas)."""
    s = re.sub(r"\s+", " ", sql or "").strip()
    return re.sub(r" ?([(),;]) ?", r"\1", s)


def schema_file(backend):
    return os.path.join(TOP, "sql", "schema.%s.sql" % backend)


def migrate(server, params):
    cmd = [server.admin_tool, "--driver", server.driver, "--params", params, "init"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# -- SQLite -------------------------------------------------------------------

def sqlite_describe(con):
    out = []
    rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                       "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
    for kind, name, table, sql in rows:
        if kind == "table":
            cols = [c[1:] for c in con.execute('PRAGMA table_xinfo("%s")' % name)]
            fks = [f[2:] for f in con.execute('PRAGMA foreign_key_list("%s")' % name)]
            idx = sorted(i[1:] for i in con.execute('PRAGMA index_list("%s")' % name))
            auto = [(i[0], [c[1:] for c in con.execute('PRAGMA index_xinfo("%s")' % i[0])])
                    for i in idx if i[0].startswith("sqlite_autoindex_")]
            out.append((kind, name, cols, fks, idx, auto, "WITHOUT ROWID" in sql.upper()))
        elif kind == "index":
            cols = [c[1:] for c in con.execute('PRAGMA index_xinfo("%s")' % name)]
            where = re.search(r"\bWHERE\b(.*)$", sql or "", re.S | re.I)
            out.append((kind, name, table, cols, norm(where.group(1)) if where else None))
        else:
            out.append((kind, name, table, norm(sql)))
    return out


def sqlite_tidy(sql):
    """SQLite's stored text, with the columns that ALTER TABLE appended on lines of
    their own and a trigger's statements ended on their line."""
    if "\n, " in sql and sql.startswith("CREATE TABLE"):
        sql = sql.replace("\n, ", ",\n    ")
        if sql.endswith(")") and not sql.endswith("\n)"):
            sql = sql[:-1] + "\n)"
    if sql.startswith("CREATE TRIGGER"):
        sql = sql.replace("\n; END", ";\nEND").replace("\n; ", ";\n")
    return sql


def sqlite_text(con):
    version = con.execute("SELECT MAX(version) FROM qrt_schema").fetchone()[0]
    rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                       "WHERE name NOT LIKE 'sqlite_%' AND sql IS NOT NULL "
                       "ORDER BY rowid").fetchall()
    parts = [HEADER.format(backend="SQLite", version=version)]
    # each table or view in the order the migrations made them, then its indexes and
    # triggers
    for kind, name, table, sql in rows:
        if kind in ("table", "view"):
            parts.append(sqlite_tidy(sql) + ";\n")
            for k2, n2, t2, s2 in rows:
                if k2 in ("index", "trigger") and t2 == name:
                    parts.append(sqlite_tidy(s2) + ";\n")
    return "\n".join(parts)


def check_sqlite(server):
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "migrated.db")
        migrate(server, db)
        migrated = sqlite3.connect(db)
        if WRITE:
            with open(schema_file("sqlite"), "w") as f:
                f.write(sqlite_text(migrated))
        loaded = sqlite3.connect(":memory:")
        with open(schema_file("sqlite")) as f:
            loaded.executescript(f.read())
        assert sqlite_describe(loaded) == sqlite_describe(migrated)
        migrated.close()


# -- PostgreSQL ---------------------------------------------------------------

PG_QUERIES = [
    # columns, in their order
    "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
    "pg_get_expr(d.adbin, d.adrelid), a.attstattarget "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v') "
    "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum",
    # keys, uniques, foreign keys, checks
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2",
    "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = 'public'::regnamespace "
    "ORDER BY 1",
    "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger "
    "WHERE NOT tgisinternal ORDER BY 1, 2",
    "SELECT proname, pg_get_function_identity_arguments(oid), pg_get_functiondef(oid) "
    "FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1, 2",
    "SELECT c.relname, s.seqtypid::regtype::text, s.seqstart, s.seqincrement, s.seqcycle "
    "FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid "
    "WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c "
    "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v' ORDER BY 1",
]


def psql(params, query):
    p = subprocess.run([PSQL, "-X", "-q", "-At", "-F", "\x1f", "-R", "\x1e",
                        "-v", "ON_ERROR_STOP=1", "-d", params, "-c", query],
                       capture_output=True, text=True)
    assert p.returncode == 0, "psql %s: %s" % (query, p.stderr)
    return p.stdout


def pg_describe(params):
    out = []
    for q in PG_QUERIES:
        rows = [r.split("\x1f") for r in psql(params, q).split("\x1e") if r]
        out.append([[norm(v) for v in r] for r in rows])
    return out


def pg_text(params):
    version = psql(params, "SELECT MAX(version) FROM qrt_schema").strip()
    p = subprocess.run(["pg_dump", "--schema-only", "--no-owner", "--no-privileges",
                        "--no-comments", "-d", params], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    keep = []
    for line in p.stdout.split("\n"):
        # pg_dump's session settings and section comments say nothing of the schema
        if line.startswith(("SET ", "SELECT pg_catalog.set_config", "--", "\\restrict",
                            "\\unrestrict")):
            continue
        if not line.strip() and (not keep or not keep[-1].strip()):
            continue
        keep.append(line.replace("public.", ""))
    return HEADER.format(backend="PostgreSQL", version=version) + \
        "\n-- (the functions are made before the tables that their bodies name)\n" + \
        "SET check_function_bodies = false;\n\n" + "\n".join(keep).strip() + "\n"


def pg_database(params, name):
    psql(params, "CREATE DATABASE %s" % name)
    return re.sub(r"dbname=\S+", "dbname=" + name, params)


def pg_drop(params, name):
    psql(params, "DROP DATABASE IF EXISTS %s" % name)


def check_pgsql(server):
    tag = "%d_%d" % (os.getpid(), id(server) % 100000)
    migrated_db, loaded_db = "qrt_schema_m_" + tag, "qrt_schema_l_" + tag
    try:
        migrated = pg_database(server.db, migrated_db)
        migrate(server, migrated)
        if WRITE:
            with open(schema_file("pgsql"), "w") as f:
                f.write(pg_text(migrated))
        loaded = pg_database(server.db, loaded_db)
        with open(schema_file("pgsql")) as f:
            p = subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", loaded],
                               stdin=f, capture_output=True, text=True)
        assert p.returncode == 0, "loading sql/schema.pgsql.sql: " + p.stderr
        assert pg_describe(loaded) == pg_describe(migrated)
    finally:
        pg_drop(server.db, migrated_db)
        pg_drop(server.db, loaded_db)


def test_schema_file_is_the_migrated_schema(server):
    if server.backend == "pgsql":
        check_pgsql(server)
    else:
        check_sqlite(server)
