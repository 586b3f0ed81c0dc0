-- mod_qrtrack schema, version 59 (PostgreSQL; SQLite only takes the number): the index of a
-- tracker's visits in time order keeps the tracker, time and id only
-- (visits_tracker_time). visits_tracker_visitor also carried the visitor, bot, click, user
-- agent and place so that reports could read a window's visits without the table: 56 bytes
-- an entry where 24 do. A tracker's visits are appended inside the index (behind the other
-- trackers' ranges), so its pages split in halves and stay half to two thirds full either
-- way: after a time-ordered import, 131 bytes a visit against 70. Listings, counts, polls
-- and the retention's windows still walk it without the table (the order and the id are in
-- the key); a report's read of the days not sealed yet, and the sealing of a day, read the
-- table for the rest of each visit: those visits are a day's, written together, so they lie
-- together in the table.
{{PGSQL}}CREATE INDEX IF NOT EXISTS visits_tracker_time ON visit_rows (tracker_id, visit_start, id);
{{PGSQL}}DROP INDEX IF EXISTS visits_tracker_visitor;
UPDATE qrt_schema SET version = 59;
