-- mod_qrtrack schema, version 3: distinct visitors of a few listed trackers.
-- The dashboard over listed trackers counts the distinct visitors of their non-bot
-- visits in a period with COUNT(DISTINCT visitor); this index holds every column that
-- count reads, so the database answers it from the index without reading the visits.
-- It starts with (tracker_id, visit_start, id), so it also serves the visit listings and
-- exports in place of visits_tracker_time: each visit still updates three indexes.
CREATE INDEX visits_tracker_visitor ON visits (tracker_id, visit_start, id, visitor, bot);
DROP INDEX visits_tracker_time;
UPDATE qrt_schema SET version = 3;
