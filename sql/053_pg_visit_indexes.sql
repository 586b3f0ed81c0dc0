-- mod_qrtrack schema, version 53 (PostgreSQL; SQLite only takes the number): fewer and
-- narrower indexes on visit_rows, each still serving its readers.
-- - visits_visitor_id carries the tracker id (INCLUDE) and visits_visitor_tracker goes: the
--   seek of a visitor's previous visit on one tracker walks that visitor's visits newest
--   first along visits_visitor_id, testing the tracker in the index entry, and stops at the
--   first on the tracker (a visitor's visits are few; its previous one on the tracker is
--   usually among its last). One index entry a visit instead of two.
-- - visits_ua, visits_place, visits_ref and visits_ip keep the tracker and the dictionary id
--   only. Their readers (a search's picks and counts, a tracker's own addresses) look the
--   matched visits up in the table anyway; without time and id in the key, the visits of
--   one tracker that name one entry are one key, which PostgreSQL's B-tree stores once with
--   the list of its rows (deduplication): a few bytes a visit for a place or an address
--   that repeats, instead of 44.
-- visits_by_ip and visits_by_dest (the retention's sweep of unnamed addresses and
-- destinations) stay: they lead with the entry, as that sweep asks.
{{PGSQL}}DROP INDEX IF EXISTS visits_visitor_tracker;
{{PGSQL}}DROP INDEX IF EXISTS visits_visitor_id;
{{PGSQL}}CREATE INDEX visits_visitor_id ON visit_rows (visitor, visit_start, id) INCLUDE (tracker_id) WHERE bot = 0;
{{PGSQL}}DROP INDEX IF EXISTS visits_ua;
{{PGSQL}}CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id);
{{PGSQL}}DROP INDEX IF EXISTS visits_place;
{{PGSQL}}CREATE INDEX visits_place ON visit_rows (tracker_id, place_id);
{{PGSQL}}DROP INDEX IF EXISTS visits_ref;
{{PGSQL}}CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id) WHERE ref_id IS NOT NULL;
{{PGSQL}}DROP INDEX IF EXISTS visits_ip;
{{PGSQL}}CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id) WHERE ip_id IS NOT NULL;
UPDATE qrt_schema SET version = 53;
