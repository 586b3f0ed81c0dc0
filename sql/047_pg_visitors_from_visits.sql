-- mod_qrtrack schema, version 47 (PostgreSQL): a tracker's visitors are read from its
-- visits, as SQLite's are since version 16. tracker_visitors said whether a visit is its
-- visitor's first on its tracker (trackers.unique_visitors); the aggregates seek the
-- visitor's previous visit there anyway, along visits_visitor_tracker, so the writers
-- mark a batch's first visits of each visitor unknown and the seek says (the table and
-- its key took as many bytes a visit as an index of visit_rows, and a round trip a batch).
-- The table stays, empty, as on SQLite. SQLite only takes the number.
{{PGSQL}}TRUNCATE tracker_visitors;
UPDATE qrt_schema SET version = 47;
