-- mod_qrtrack schema, version 15: tracker_visitors.first_visit no longer kept (issue 12,
-- item 4). The column was written with a visitor's first visit on a tracker and never
-- read (copy-to carries it). The writers now write 0, which SQLite keeps in the row's
-- header alone (a time took 5 bytes), and SQLite makes the table again with 0 in every
-- row (147 -> about 110 MB at 10M visits). The column stays: a database that says an
-- older version than it is runs migration 009 again, which copies it. PostgreSQL keeps
-- its rows as they are (a bigint takes 8 bytes, 0 or not).
{{SQLITE}}CREATE TABLE tracker_visitors15 (tracker_id BIGINT NOT NULL, visitor BIGINT NOT NULL, first_visit BIGINT NOT NULL, PRIMARY KEY (tracker_id, visitor)) WITHOUT ROWID;
{{SQLITE}}INSERT INTO tracker_visitors15 (tracker_id, visitor, first_visit) SELECT tracker_id, visitor, 0 FROM tracker_visitors ORDER BY tracker_id, visitor;
{{SQLITE}}DROP TABLE tracker_visitors;
{{SQLITE}}ALTER TABLE tracker_visitors15 RENAME TO tracker_visitors;
UPDATE qrt_schema SET version = 15;
