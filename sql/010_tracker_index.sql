-- mod_qrtrack schema, version 10: SQLite's visits_tracker_id without the id (issue 12,
-- item 4). Every SQLite index ends with the rowid, which is the visit's id, so
-- (tracker_id, id) held the id twice; (tracker_id) alone has the same order and serves
-- the same seeks (tracker_id = ? AND id > ?, MAX(id)). About 4 bytes per visit.
-- PostgreSQL's index names the id: it stays.
{{SQLITE}}DROP INDEX IF EXISTS visits_tracker_id;
{{SQLITE}}CREATE INDEX visits_tracker_id ON visit_rows (tracker_id);
UPDATE qrt_schema SET version = 10;
