-- mod_qrtrack schema, version 20 (PostgreSQL): a visitor's visits indexed as the
-- write path seeks them, over the visits that are not bots alone (every reader asks
-- for those: a visitor's previous visit, its visits from a time on, a rebuild's pages),
-- as SQLite's index has been since version 16.
-- - A visitor with many visits (a kiosk, an office behind one address: one visitor
--   id) that the planner's statistics do not know (visitors newer than the last
--   ANALYZE; every visitor before the first, where "bot = 0" counted as rare too)
--   looked like a visitor of a few visits: PostgreSQL read all of its visits through a
--   bitmap and sorted them, for each batch's seek of its previous visit, rather than
--   walk the index backwards to the first. With 30,000 visits of one visitor: 15 ms and
--   650 pages a batch, and more with each visit.
-- - visits_visitor_id: a visitor's latest visit anywhere (qrt_agg_seek_v_many, without
--   the join on agg_trk that made the walk look long).
-- - visits_visitor_tracker: its latest visit on one tracker (qrt_agg_seek_t), sought
--   when its latest visit was on another; before, along visits_visitor_id with the
--   tracker as a filter, which the planner took for rare as well.
-- SQLite's index is unchanged: it holds each visit's tracker already (the table's key),
-- and SQLite walks it.
{{PGSQL}}DROP INDEX IF EXISTS visits_visitor_id;
{{PGSQL}}CREATE INDEX visits_visitor_id ON visit_rows (visitor, visit_start, id) WHERE bot = 0;
{{PGSQL}}CREATE INDEX IF NOT EXISTS visits_visitor_tracker ON visit_rows (visitor, tracker_id, visit_start, id) WHERE bot = 0;
UPDATE qrt_schema SET version = 20;
