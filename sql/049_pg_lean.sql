-- mod_qrtrack schema, version 49 (PostgreSQL; SQLite only takes the number): fewer bytes a visit.
-- - A tracker's visitors are read from its visits, as SQLite's are since version 16.
--   tracker_visitors said whether a visit is its visitor's first on its tracker
--   (trackers.unique_visitors); the aggregates seek the visitor's previous visit there
--   anyway, along visits_visitor_tracker, so the writers mark a batch's first visits of
--   each visitor unknown and the seek says. The table stays, empty, as on SQLite.
-- - agg_cnt made again with its 8-byte columns first and its keys led by the account
--   (every read names it): PostgreSQL pads a smallint before a bigint to 8 bytes, in the
--   heap and in each index entry. Its rows go in in key order. The reads of the account's
--   own counters (kind 2) without an account (agg_blob_unsealed_all, agg_blob_relist)
--   take a small partial index instead of the key's first column.
{{PGSQL}}TRUNCATE tracker_visitors;
{{PGSQL}}CREATE TABLE agg_cnt49 (account_id BIGINT NOT NULL, bucket BIGINT NOT NULL, tracker_id BIGINT NOT NULL, scans BIGINT NOT NULL, clicks BIGINT NOT NULL, first_visits BIGINT NOT NULL, followed_visits BIGINT NOT NULL, kind SMALLINT NOT NULL, level SMALLINT NOT NULL, value VARCHAR(255) NOT NULL);
{{PGSQL}}INSERT INTO agg_cnt49 (account_id, bucket, tracker_id, scans, clicks, first_visits, followed_visits, kind, level, value) SELECT account_id, bucket, tracker_id, scans, clicks, first_visits, followed_visits, kind, level, value FROM agg_cnt ORDER BY account_id, kind, level, bucket, tracker_id, value;
{{PGSQL}}DROP TABLE agg_cnt;
{{PGSQL}}ALTER TABLE agg_cnt49 RENAME TO agg_cnt;
{{PGSQL}}ALTER TABLE agg_cnt ADD CONSTRAINT agg_cnt_pkey PRIMARY KEY (account_id, kind, level, bucket, tracker_id, value);
{{PGSQL}}CREATE INDEX agg_cnt_grp ON agg_cnt (account_id, tracker_id, kind, level, bucket);
{{PGSQL}}CREATE INDEX agg_cnt_account_days ON agg_cnt (level, bucket, account_id) WHERE kind = 2;
UPDATE qrt_schema SET version = 49;
