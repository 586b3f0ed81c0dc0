-- mod_qrtrack schema, version 60 (PostgreSQL; SQLite only takes the number): agg_link and
-- agg_gaps made again with narrower rows, as schema 52 made visit_rows and agg_cnt: their
-- 8-byte columns first (times, the group's entry id), then 4-byte account, tracker and
-- visit count, then the two smallints, so that no column pads: 40 bytes of columns instead
-- of 58 (68 bytes a row with its header and line pointer, against 92). Their keys lose their
-- padding too (40 bytes an entry instead of 48). A row counts the visits of one second with
-- one previous visit's second and the same groups: a 4-byte count is ample. agg_link_p and
-- agg_gaps_p lose the count: every read by previous time also tests the visit's time, which
-- is read from the table, so the count in the index saved no read (16 bytes an entry instead
-- of 24 and 32). At 10,000,000 visits on the reports bench the two tables held 131 bytes a
-- visit.
{{PGSQL}}CREATE TABLE agg_link60 (visit_time BIGINT NOT NULL, previous_time BIGINT NOT NULL, browser_country_city_id BIGINT NOT NULL, account_id INTEGER NOT NULL, tracker_id INTEGER NOT NULL, visit_count INTEGER NOT NULL, flags SMALLINT NOT NULL, unsealed SMALLINT NOT NULL DEFAULT 1);
{{PGSQL}}INSERT INTO agg_link60 (visit_time, previous_time, browser_country_city_id, account_id, tracker_id, visit_count, flags, unsealed) SELECT visit_time, previous_time, browser_country_city_id, account_id, tracker_id, visit_count, flags, unsealed FROM agg_link ORDER BY account_id, visit_time, previous_time, flags, tracker_id, browser_country_city_id;
{{PGSQL}}DROP TABLE agg_link;
{{PGSQL}}ALTER TABLE agg_link60 RENAME TO agg_link;
{{PGSQL}}ALTER TABLE agg_link ADD CONSTRAINT agg_link12_pkey PRIMARY KEY (account_id, visit_time, previous_time, flags, tracker_id, browser_country_city_id);
{{PGSQL}}CREATE INDEX agg_link_p ON agg_link (account_id, previous_time);
{{PGSQL}}CREATE TABLE agg_gaps60 (visit_time BIGINT NOT NULL, previous_time BIGINT NOT NULL, value_id BIGINT NOT NULL, account_id INTEGER NOT NULL, tracker_id INTEGER NOT NULL, visit_count INTEGER NOT NULL, kind SMALLINT NOT NULL, unsealed SMALLINT NOT NULL DEFAULT 1);
{{PGSQL}}INSERT INTO agg_gaps60 (visit_time, previous_time, value_id, account_id, tracker_id, visit_count, kind, unsealed) SELECT visit_time, previous_time, value_id, account_id, tracker_id, visit_count, kind, unsealed FROM agg_gaps ORDER BY kind, account_id, visit_time, previous_time, tracker_id, value_id;
{{PGSQL}}DROP TABLE agg_gaps;
{{PGSQL}}ALTER TABLE agg_gaps60 RENAME TO agg_gaps;
{{PGSQL}}ALTER TABLE agg_gaps ADD CONSTRAINT agg_gaps_pkey PRIMARY KEY (kind, account_id, visit_time, previous_time, tracker_id, value_id);
{{PGSQL}}CREATE INDEX agg_gaps_p ON agg_gaps (kind, account_id, previous_time);
UPDATE qrt_schema SET version = 60;
