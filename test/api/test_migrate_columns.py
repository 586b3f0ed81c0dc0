"""Schema 23 renames the report aggregates' columns (sql/023_readable_columns.sql): a
database as schema 22 left them, with visits, aggregate rows and sealed values, upgrades
to 23 on start with every row kept and answers every report, crosstab, KPI and analytics
figure as before; afterwards its aggregates keep being written (the figures of new visits
are those a rebuild gives), and a database that says an older version than it is
(rewound to 22 with the new names) migrates again without a change. Both backends."""
import json
import os
import re
import time

from conftest import Api, started
from lib.env import LATEST_SCHEMA, SQL_DIR
from lib.retention import DAY, snapshot, visit
from lib.wait import wait_until


# The newest schema: what a start migrates to.
LATEST = LATEST_SCHEMA
# (table, name at schema 22, name at schema 23), read from the migration itself.
with open(os.path.join(SQL_DIR, "023_readable_columns.sql")) as f:
    RENAMES = re.findall(r"ALTER TABLE (\w+) RENAME COLUMN (\w+) TO (\w+);", f.read())

# Every aggregate table, its rows in a fixed order (columns by position: the names change).
TABLES = {"agg_cnt": 10, "agg_blob": 5, "agg_day": 5, "agg_link": 8, "agg_gaps": 8,
          "agg_vals": 2, "agg_bcy": 4, "agg_trk": 3, "agg_tag": 2, "agg_unsealed": 2}


def columns(srv):
    """Each aggregate table's column names, in one query: {table: set of names}."""
    if srv.backend == "pgsql":
        out = srv.sql("SELECT table_name, column_name FROM information_schema.columns WHERE "
                      "table_schema = current_schema()")
    else:
        out = srv.sql(" UNION ALL ".join("SELECT '%s', name FROM pragma_table_info('%s')"
                                         % (t, t) for t in TABLES))
    got = {}
    for line in out.splitlines():
        table, name = line.split("|")
        got.setdefault(table, set()).add(name)
    return got


def renamed(srv, new):
    """Every renamed column has its name of schema 23 (new) or of 22 (not new), and not
    the other one."""
    cols = columns(srv)
    for table, old, now in RENAMES:
        have, gone = (now, old) if new else (old, now)
        assert have in cols[table] and gone not in cols[table], (table, have)


def rows(srv):
    """Every aggregate table's rows, as text, sorted."""
    out = {}
    for table, n in TABLES.items():
        order = ", ".join(str(i) for i in range(1, n + 1))
        out[table] = srv.sql("SELECT * FROM %s ORDER BY %s" % (table, order)).splitlines()
    return out


def to_schema_22(srv):
    """The aggregate tables' columns under their names of schema 22, version 22."""
    srv.sql("".join("ALTER TABLE %s RENAME COLUMN %s TO %s;\n" % (t, new, old)
                    for t, old, new in reversed(RENAMES))
            + "UPDATE qrt_schema SET version = 22;\n")


def version(srv):
    return int(srv.sql("SELECT MAX(version) FROM qrt_schema").strip())


def write(srv, lines):
    path = srv.dir + "/import-%d.jsonl" % time.time_ns()
    with open(path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    srv.admin("visits", "import", path)


def history(tids, now, start, n):
    """n visits from 45 days ago on, visitors coming back across trackers and days."""
    return [visit(tids[k % 3], now - 45 * DAY + k * 11 * 3600 + k * 37,
                  "v%d" % (k * 7 % 14), city=("Berlin", "Köln", "Paris", "Pune")[k % 4],
                  browser=("Firefox", "Chrome")[k % 5 == 0],
                  source=("scan", "click")[k % 4 == 3])
            for k in range(start, start + n)]


def test_a_schema_22_database_upgrades_to_23_with_the_same_reports():
    assert len(RENAMES) >= 20, RENAMES
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        now = int(time.time())
        with Api(srv, tok) as a:
            tids = [a.post("/tracker", json={"redirect_url": "https://example.com/%d" % k,
                                             "tags": tags}).json()["tracker_id"]
                    for k, tags in enumerate((["campaign:spring", "region:eu"],
                                              ["campaign:autumn", "region:us"],
                                              ["campaign:spring", "region:us", "vip"]))]
        # 45 to 3 days ago, and a few today (a day not sealed: its rows stay unsealed)
        write(srv, history(tids, now, 0, 90)
              + [visit(tids[k % 3], now - k * 60, "v%d" % k) for k in range(4)])
        # every settled day sealed (no change behind the comparisons below), today not:
        # sealed at once here rather than when the writers are next idle
        srv.admin("aggregates", "seal")
        yesterday = now // DAY - 1
        wait_until(lambda: srv.sql("SELECT COUNT(*) FROM agg_unsealed WHERE day < %d"
                                   % yesterday).strip() == "0",
                   60, 0.2, "the writers sealing the settled days")
        assert srv.sql("SELECT COUNT(*) FROM agg_blob WHERE kind = 10 AND bucket = %d"
                       % ((now - 40 * DAY) // DAY)).strip() == "1"
        with Api(srv, tok) as a:
            before = snapshot(a, tids, now)
        srv.stop()
        stored = rows(srv)
        assert stored["agg_cnt"] and stored["agg_link"] and stored["agg_gaps"] \
            and stored["agg_blob"], stored

        to_schema_22(srv)
        assert version(srv) == 22
        renamed(srv, False)
        assert rows(srv) == stored

        srv.start()                             # migrates to 23 and on
        assert version(srv) == LATEST
        renamed(srv, True)
        assert rows(srv) == stored
        with Api(srv, tok) as a:
            assert snapshot(a, tids, now) == before

        # A database that says an older version than it is: nothing is done again.
        srv.stop()
        srv.sql("UPDATE qrt_schema SET version = 22")
        srv.start()
        assert version(srv) == LATEST
        assert rows(srv) == stored

        # The aggregates keep being written under their new names: visits into sealed
        # days and today give the figures a rebuild from the visits gives.
        write(srv, history(tids, now, 90, 40)
              + [visit(tids[k % 3], now - 300 - k, "v%d" % (k + 3)) for k in range(4)])
        with Api(srv, tok) as a:
            written = snapshot(a, tids, now)
        assert written != before
        srv.stop()
        srv.admin("aggregates", "rebuild")
        srv.admin("aggregates", "seal")
        srv.start()
        with Api(srv, tok) as a:
            assert snapshot(a, tids, now) == written
    finally:
        srv.cleanup()
