-- mod_qrtrack schema, version 50. visits_dest: the visits that went elsewhere than their
-- tracker's URL (dest_id, schema 25), by time, so that report=destination over all of an
-- account's trackers reads only those and takes the rest from the report aggregates.
-- Visits without a destination are not in it (a few bytes for each visit that has one).
CREATE INDEX IF NOT EXISTS visits_dest ON visit_rows (visit_start) WHERE dest_id IS NOT NULL;
UPDATE qrt_schema SET version = 50;
