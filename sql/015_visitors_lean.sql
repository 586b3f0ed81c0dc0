-- mod_qrtrack schema, version 15: tracker_visitors without first_visit (issue 12,
-- item 4). The column was written with a visitor's first visit on a tracker and never
-- read (copy-to carried it): 5 bytes of each row on SQLite (147 -> 100 MB
-- at 10M visits). SQLite makes the table again (DROP COLUMN would leave each row's
-- bytes in its page); PostgreSQL drops the column (its rows keep the bytes until they
-- are written again or VACUUM FULL).
{{SQLITE}}CREATE TABLE tracker_visitors15 (tracker_id BIGINT NOT NULL, visitor BIGINT NOT NULL, PRIMARY KEY (tracker_id, visitor)) WITHOUT ROWID;
{{SQLITE}}INSERT INTO tracker_visitors15 (tracker_id, visitor) SELECT tracker_id, visitor FROM tracker_visitors ORDER BY tracker_id, visitor;
{{SQLITE}}DROP TABLE tracker_visitors;
{{SQLITE}}ALTER TABLE tracker_visitors15 RENAME TO tracker_visitors;
{{PGSQL}}ALTER TABLE tracker_visitors DROP COLUMN IF EXISTS first_visit;
UPDATE qrt_schema SET version = 15;
