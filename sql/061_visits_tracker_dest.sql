-- mod_qrtrack schema, version 61. visits_tracker_dest: a tracker's visits that went elsewhere
-- than its URL (dest_id, schema 25), by time, so that report=destination over listed trackers
-- reads only those and takes the rest from the trackers' other reads (as schema 50's
-- visits_dest does for all of an account's trackers). Visits without a destination are not
-- in it.
CREATE INDEX IF NOT EXISTS visits_tracker_dest ON visit_rows (tracker_id, visit_start) WHERE dest_id IS NOT NULL;
UPDATE qrt_schema SET version = 61;
