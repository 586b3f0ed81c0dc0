-- mod_qrtrack schema, version 17 (SQLite): links and gaps kept once, by the time of
-- their previous visit (issue 12, item 4: agg_link_p and agg_gaps_p held every column
-- of their tables a second time, 142 MB at 10M visits).
-- - The reads by previous time (p) read the tables' keys, which now start with p.
-- - The reads by time (t) read rows only for days that are not sealed: a sealed day's
--   links and gaps are read from its sealed value (agg_blob kind 10). A row says
--   whether its day is sealed: u = 1 while it is not, and the index agg_link_u
--   (agg_gaps_u) holds only those rows, by t. Sealing a day sets u = 0 on its rows;
--   a change to a sealed day sets u = 1 again on the rows its sealed value lists, in
--   the transaction that drops that value (qrt_store_agg_blob.c).
-- - Made again here with u from whether the row's day has a sealed value.
-- PostgreSQL keeps its tables and indexes, with u added and always 1 (its rows by t
-- are its primary keys').
-- (Not again on a table with the names of version 23, unsealed for u: a database that
-- says an older version than it is, whose tables are made already.)
{{SQLITE}}{{UNLESS_COLUMN:agg_link.unsealed}}CREATE TABLE agg_link17 (account_id BIGINT NOT NULL, p BIGINT NOT NULL, t BIGINT NOT NULL, flags SMALLINT NOT NULL, tracker_id BIGINT NOT NULL, bcy BIGINT NOT NULL, n BIGINT NOT NULL, u SMALLINT NOT NULL DEFAULT 1, PRIMARY KEY (account_id, p, t, flags, tracker_id, bcy)) WITHOUT ROWID;
{{SQLITE}}{{UNLESS_COLUMN:agg_link.unsealed}}INSERT INTO agg_link17 (account_id, p, t, flags, tracker_id, bcy, n, u) SELECT l.account_id, l.p, l.t, l.flags, l.tracker_id, l.bcy, l.n, CASE WHEN EXISTS (SELECT 1 FROM agg_blob b WHERE b.account_id = l.account_id AND b.lvl = 1 AND b.kind = 10 AND b.b = (l.t - ((l.t % 86400) + 86400) % 86400) / 86400) THEN 0 ELSE 1 END FROM agg_link l ORDER BY l.account_id, l.p, l.t, l.flags, l.tracker_id, l.bcy;
{{SQLITE}}{{UNLESS_COLUMN:agg_link.unsealed}}DROP TABLE agg_link;
{{SQLITE}}{{UNLESS_COLUMN:agg_link.unsealed}}ALTER TABLE agg_link17 RENAME TO agg_link;
{{SQLITE}}{{UNLESS_COLUMN:agg_link.unsealed}}CREATE INDEX agg_link_u ON agg_link (account_id, t, n, u) WHERE u = 1;
{{SQLITE}}{{UNLESS_COLUMN:agg_gaps.unsealed}}CREATE TABLE agg_gaps17 (kind SMALLINT NOT NULL, account_id BIGINT NOT NULL, p BIGINT NOT NULL, t BIGINT NOT NULL, grp BIGINT NOT NULL, vid BIGINT NOT NULL, n BIGINT NOT NULL, u SMALLINT NOT NULL DEFAULT 1, PRIMARY KEY (kind, account_id, p, t, grp, vid)) WITHOUT ROWID;
{{SQLITE}}{{UNLESS_COLUMN:agg_gaps.unsealed}}INSERT INTO agg_gaps17 (kind, account_id, p, t, grp, vid, n, u) SELECT g.kind, g.account_id, g.p, g.t, g.grp, g.vid, g.n, CASE WHEN EXISTS (SELECT 1 FROM agg_blob b WHERE b.account_id = g.account_id AND b.lvl = 1 AND b.kind = 10 AND b.b = (g.t - ((g.t % 86400) + 86400) % 86400) / 86400) THEN 0 ELSE 1 END FROM agg_gaps g ORDER BY g.kind, g.account_id, g.p, g.t, g.grp, g.vid;
{{SQLITE}}{{UNLESS_COLUMN:agg_gaps.unsealed}}DROP TABLE agg_gaps;
{{SQLITE}}{{UNLESS_COLUMN:agg_gaps.unsealed}}ALTER TABLE agg_gaps17 RENAME TO agg_gaps;
{{SQLITE}}{{UNLESS_COLUMN:agg_gaps.unsealed}}CREATE INDEX agg_gaps_u ON agg_gaps (kind, account_id, t, n, u) WHERE u = 1;
{{PGSQL}}{{UNLESS_COLUMN:agg_link.unsealed}}ALTER TABLE agg_link ADD COLUMN IF NOT EXISTS u SMALLINT NOT NULL DEFAULT 1;
{{PGSQL}}{{UNLESS_COLUMN:agg_gaps.unsealed}}ALTER TABLE agg_gaps ADD COLUMN IF NOT EXISTS u SMALLINT NOT NULL DEFAULT 1;
UPDATE qrt_schema SET version = 17;
