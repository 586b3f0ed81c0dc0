-- mod_qrtrack schema, version 16 (SQLite): a tracker's visitors are read from its visits
-- (issue 12, item 4: tracker_visitors took 110 MB at 10M visits).
-- - tracker_visitors said which visitors a tracker has seen, so that a visit knows
--   whether it is its visitor's first there (trackers.unique_visitors). The visits say
--   it too: visits_visitor, now only over the visits that are not bots (every reader
--   of it asks for those alone), ends with the tracker of each visit, so "has this
--   visitor a visit on this tracker" is a seek in it (a row is read only for an entry
--   of that tracker, for its bot column).
-- - The table stays, empty: a database that says an older version than it is runs
--   migrations 009 and 015 again, which copy it. Nothing writes it on SQLite any more.
-- PostgreSQL keeps its tables and indexes as they are: only the version changes.
{{SQLITE}}DELETE FROM tracker_visitors;
{{SQLITE}}DROP INDEX IF EXISTS visits_visitor;
{{SQLITE}}CREATE INDEX visits_visitor ON visit_rows (visitor, visit_start, id) WHERE bot = 0;
UPDATE qrt_schema SET version = 16;
