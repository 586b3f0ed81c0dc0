-- mod_qrtrack schema, version 16 (SQLite): a tracker's visitors are read from its visits
-- (issue 12, item 4: tracker_visitors took 110 MB at 10M visits).
-- - tracker_visitors said which visitors a tracker has seen, so that a visit knows
--   whether it is its visitor's first there (trackers.unique_visitors). The visits say
--   it too: visits_visitor, now only over the visits that are not bots (every reader
--   of it asks for those alone), ends with the tracker of each visit, so "has this
--   visitor a visit on this tracker" is a seek in it that reads no row.
-- - The table stays, empty: a database that says an older version than it is runs
--   migrations 009 and 015 again, which copy it. Nothing writes it on SQLite any more.
-- - agg_cnt becomes WITHOUT ROWID: its key was a second copy of nearly every column.
-- PostgreSQL keeps its tables and indexes as they are: only the version changes.
{{SQLITE}}DELETE FROM tracker_visitors;
{{SQLITE}}DROP INDEX IF EXISTS visits_visitor;
{{SQLITE}}CREATE INDEX visits_visitor ON visit_rows (visitor, visit_start, id) WHERE bot = 0;
{{SQLITE}}CREATE TABLE agg_cnt16 (kind SMALLINT NOT NULL, account_id BIGINT NOT NULL, lvl SMALLINT NOT NULL, b BIGINT NOT NULL, grp BIGINT NOT NULL, val VARCHAR(255) NOT NULL, scans BIGINT NOT NULL, clicks BIGINT NOT NULL, firsts BIGINT NOT NULL, rets BIGINT NOT NULL, PRIMARY KEY (kind, account_id, lvl, b, grp, val)) WITHOUT ROWID;
{{SQLITE}}INSERT INTO agg_cnt16 (kind, account_id, lvl, b, grp, val, scans, clicks, firsts, rets) SELECT kind, account_id, lvl, b, grp, val, scans, clicks, firsts, rets FROM agg_cnt ORDER BY kind, account_id, lvl, b, grp, val;
{{SQLITE}}DROP TABLE agg_cnt;
{{SQLITE}}ALTER TABLE agg_cnt16 RENAME TO agg_cnt;
{{SQLITE}}CREATE INDEX agg_cnt_grp ON agg_cnt (kind, account_id, grp, lvl, b);
UPDATE qrt_schema SET version = 16;
