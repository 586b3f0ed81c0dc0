"""A visitor with many visits (a kiosk, an office behind one address: one visitor id)
costs each new visit a walk to its latest visit, not a read of all of them, whatever
the planner's statistics say.

The write path seeks each batch's visitors' previous visits (their uniques and
returns). On PostgreSQL that seek joined agg_trk, and the planner, for a visitor it
took for rare (every visitor before the first ANALYZE, where "bot = 0" counted as rare
too; a visitor newer than the last one), read all of the visitor's visits through a
bitmap and sorted them: 15 ms a batch with 30,000 visits, more with each visit; the
scan bench's single visitor fell to 800 scans a second. Now the seek takes the
visitor's latest visit anywhere, along an index of the visits that are not bots
(schema 20, as SQLite's), and checks its account in the server
(qrt_store_agg_write.c: agg_seek_visitor_many, agg_seek_account); its latest visit on
one tracker (agg_seek_visitor_on_tracker, when the latest was on another) walks the same
index, whose entries carry the tracker on PostgreSQL (schema 53), never the tracker's visits.

The queries below are the module's own, prepared as it prepares them (its arrays bound
as text) and planned both ways PostgreSQL may plan them for the writer's connection
(for the values given, and generically), run on the server's database with
statistics taken before the heavy visitor came. The test checks how many pages
PostgreSQL reads for them, and that SQLite neither scans nor sorts. (The old seeks, the
one with its join on agg_trk and the one with the tracker as a filter, read all 30,000
visits here: about 650 pages each.)"""
import json

from conftest import Api, start_server
from lib.visits import T0, import_visits, new_tracker, visit

VISITS = 30000
# PostgreSQL: agg_seek_visitor_many and agg_seek_visitor_on_tracker: parameters, statement, values,
# and the column of the visit's time.
PG_SEEKS = [
    ("(varchar, varchar, varchar)",
     "SELECT u.n, p.visit_start, p.id, p.tracker_id, p.ua_id, p.place_id, "
     "COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '') FROM unnest("
     "CAST($1 AS BIGINT[]), CAST($2 AS BIGINT[]), CAST($3 AS BIGINT[])) "
     "AS u(n, visitor, before) "
     "CROSS JOIN LATERAL (SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id "
     "FROM visit_rows v WHERE v.visitor = u.visitor AND v.bot = 0 "
     "AND v.id < u.before ORDER BY v.visit_start DESC, v.id DESC LIMIT 1) p "
     "LEFT JOIN visit_uas vu ON vu.id = p.ua_id "
     "LEFT JOIN visit_places vp ON vp.id = p.place_id",
     "('{{0}}', '{{{visitor}}}', '{{{before}}}')", 1),
    ("(bigint, bigint, bigint)",
     "SELECT v.visit_start FROM visit_rows v WHERE v.visitor = $1 "
     "AND +v.tracker_id = $2 AND v.bot = 0 AND v.id < $3 "
     "ORDER BY v.visit_start DESC, v.id DESC LIMIT 1",
     "({visitor}, {tracker}, {before})", 0)]
# SQLite: agg_seek_visitor and agg_seek_visitor_on_tracker.
SQLITE_SEEKS = [
    "SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id "
    "FROM visit_rows v WHERE v.visitor = {visitor} AND v.bot = 0 "
    "AND v.id < {before} ORDER BY v.visit_start DESC, v.id DESC LIMIT 1",
    "SELECT v.visit_start FROM visit_rows v WHERE v.visitor = {visitor} "
    "AND +v.tracker_id = {tracker} AND v.bot = 0 AND v.id < {before} "
    "ORDER BY v.visit_start DESC, v.id DESC LIMIT 1"]


def pages_read(plan):
    """Pages a plan of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) read, from its top node."""
    top = json.loads(plan)[0]["Plan"]
    return top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)


def heavy_visitor(server, tid, t0, ip):
    """VISITS visits of one visitor from t0 on: (visitor id, the id after its last)."""
    import_visits(server, [visit(tid, t0 + i, ip=ip) for i in range(VISITS)])
    row = server.sql("SELECT visitor, COUNT(*), MAX(id) FROM visit_rows WHERE tracker_id = "
                     "%d AND visit_start >= %d GROUP BY visitor" % (tid, t0)).split()
    assert len(row) == 1, "one visitor: %s" % row
    visitor, count, last = row[0].split("|")
    assert int(count) == VISITS
    return visitor, int(last) + 1


def check_seeks(server, tid, visitor, before, latest, seeks=None):
    args = {"visitor": visitor, "before": before, "tracker": tid}
    if server.backend == "pgsql":
        for params, sql, values, col in seeks or PG_SEEKS:
            for mode in ("force_custom_plan", "force_generic_plan"):
                prep = "SET plan_cache_mode = %s; PREPARE s %s AS %s; " % (mode, params, sql)
                run = "EXECUTE s " + values.format(**args)
                found = server.sql(prep + run).split("\n")[0].split("|")
                assert found[col] == str(latest), (sql, found)
                pages = pages_read(server.sql(
                    prep + "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + run))
                # The walk: a few index pages, a heap page, a dictionary's (all of the
                # visitor's visits: hundreds of pages, more with each visit).
                assert pages <= 20, (sql, mode, pages)
    else:
        for sql in [SQLITE_SEEKS[-1]] if seeks else SQLITE_SEEKS:
            q = sql.format(**args)
            assert server.sql(q).split("\n")[0].split("|")[0] == str(latest), q
            plan = server.sql("EXPLAIN QUERY PLAN " + q)
            assert "visits_visitor" in plan, plan
            assert "TEMP B-TREE" not in plan, plan


def test_a_visitors_previous_visit_is_a_walk_to_it():
    """A server of its own: the test decides when its statistics are taken."""
    server = start_server(extra="QRTrackAccountRateLimit acme 1000\n",
                          accounts=[("acme", "professional")])
    try:
        with Api(server, server.token("acme")) as api:
            tids = [new_tracker(api)["tracker_id"] for _ in range(200)]
        tid = tids[0]
        if server.backend == "pgsql":
            # The planner's statistics stay what this test makes them (no autovacuum).
            server.sql("ALTER TABLE visit_rows SET (autovacuum_enabled = false)")
        # Statistics taken over 199 visitors of about 10 visits each on 200 trackers; a
        # heavy visitor comes after, whom they do not know.
        import_visits(server, [visit(tids[i % 200], T0 - 86400 + i,
                                     ip="198.51.100.%d" % (i % 199)) for i in range(2000)])
        server.sql("ANALYZE visit_rows")
        visitor, before = heavy_visitor(server, tid, T0, "203.0.113.7")
        check_seeks(server, tid, visitor, before, T0 + VISITS - 1)
        # A visitor of 10 visits, one of them on the heavy visitor's tracker: its
        # latest visit there is not sought along that tracker's 30,000 later visits.
        light = server.sql("SELECT visitor, MAX(visit_start) FROM visit_rows WHERE "
                           "tracker_id = %d AND visit_start < %d GROUP BY visitor "
                           "ORDER BY visitor LIMIT 1" % (tid, T0)).split("|")
        check_seeks(server, tid, light[0], before, int(light[1]), seeks=PG_SEEKS[-1:])
    finally:
        server.stop()
        server.cleanup()
