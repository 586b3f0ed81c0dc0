-- mod_qrtrack schema, version 52 (PostgreSQL; SQLite only takes the number): narrower rows.
-- - visit_rows made again with a 4-byte tracker id, its 8-byte columns first and the two
--   smallints last, so no column pads. Its rows go in in id order (the writers' order) and
--   its primary key, appended to at its end, fills its pages. The dictionary ids stay 8
--   bytes: a dictionary's sequence takes an id for every new string (a referer with a click
--   id is one a visit) and for some strings already there, so 4 bytes could run out.
-- - visit_dict_counts likewise: its count and dictionary id first, a 4-byte tracker id.
-- - agg_cnt likewise: its counters first, then 4-byte account, day bucket and tracker, the
--   kind and level, the value; its keys lose their padding (16 bytes an entry).
-- The view visits and its triggers are made again over the new table, as they were.
{{PGSQL}}DROP VIEW IF EXISTS visits;
{{PGSQL}}CREATE TABLE visit_rows52 (id BIGINT NOT NULL, visit_start BIGINT NOT NULL, visitor BIGINT NOT NULL, ua_id BIGINT NOT NULL, place_id BIGINT NOT NULL, ref_id BIGINT, ip_id BIGINT, dest_id BIGINT, tracker_id INTEGER NOT NULL, click SMALLINT NOT NULL, bot SMALLINT NOT NULL);
{{PGSQL}}INSERT INTO visit_rows52 (id, visit_start, visitor, ua_id, place_id, ref_id, ip_id, dest_id, tracker_id, click, bot) SELECT id, visit_start, visitor, ua_id, place_id, ref_id, ip_id, dest_id, tracker_id, click, bot FROM visit_rows ORDER BY id;
{{PGSQL}}ALTER SEQUENCE visit_rows_id_seq OWNED BY NONE;
{{PGSQL}}DROP TABLE visit_rows;
{{PGSQL}}ALTER TABLE visit_rows52 RENAME TO visit_rows;
{{PGSQL}}ALTER SEQUENCE visit_rows_id_seq OWNED BY visit_rows.id;
{{PGSQL}}ALTER TABLE visit_rows ALTER COLUMN id SET DEFAULT nextval('visit_rows_id_seq');
{{PGSQL}}ALTER TABLE visit_rows ADD CONSTRAINT visit_rows_pkey PRIMARY KEY (id) WITH (fillfactor = 100);
{{PGSQL}}CREATE INDEX visits_tracker_visitor ON visit_rows (tracker_id, visit_start, id, visitor, bot, click, ua_id, place_id);
{{PGSQL}}CREATE INDEX visits_tracker_id ON visit_rows (tracker_id, id);
{{PGSQL}}CREATE INDEX visits_visitor_id ON visit_rows (visitor, visit_start, id) WHERE bot = 0;
{{PGSQL}}CREATE INDEX visits_visitor_tracker ON visit_rows (visitor, tracker_id, visit_start, id) WHERE bot = 0;
{{PGSQL}}CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id, visit_start, id);
{{PGSQL}}CREATE INDEX visits_place ON visit_rows (tracker_id, place_id, visit_start, id);
{{PGSQL}}CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id, visit_start, id) WHERE ref_id IS NOT NULL;
{{PGSQL}}CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id, visit_start, id) WHERE ip_id IS NOT NULL;
{{PGSQL}}CREATE INDEX visits_by_ip ON visit_rows (ip_id) WHERE ip_id IS NOT NULL;
{{PGSQL}}CREATE INDEX visits_by_dest ON visit_rows (dest_id) WHERE dest_id IS NOT NULL;
{{PGSQL}}CREATE INDEX visits_dest ON visit_rows (visit_start) WHERE dest_id IS NOT NULL;
-- (the counts' triggers and table only where they are: schema 63 dropped them)
{{PGSQL}}DO $$ BEGIN IF to_regproc('qrt_visit_dict_counts') IS NOT NULL THEN CREATE TRIGGER visit_dict_counts_ins AFTER INSERT ON visit_rows REFERENCING NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts(); CREATE TRIGGER visit_dict_counts_upd AFTER UPDATE ON visit_rows REFERENCING OLD TABLE AS qrt_old NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts(); CREATE TRIGGER visit_dict_counts_del AFTER DELETE ON visit_rows REFERENCING OLD TABLE AS qrt_old FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts(); CREATE TRIGGER visit_dict_counts_trunc AFTER TRUNCATE ON visit_rows FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts(); END IF; END $$;
{{PGSQL}}CREATE VIEW visits AS SELECT v.id AS id, v.tracker_id AS tracker_id, v.visit_start AS visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END AS source, i.ip AS ip, g.country AS country, g.city AS city, u.browser AS browser, u.browser_version AS browser_version, u.os AS os, u.device AS device, r.referer AS referer, u.user_agent AS user_agent, v.bot AS bot, lpad(to_hex(v.visitor), 16, '0') AS visitor, d.url AS destination FROM visit_rows v LEFT JOIN visit_ips i ON i.id = v.ip_id LEFT JOIN visit_places g ON g.id = v.place_id LEFT JOIN visit_uas u ON u.id = v.ua_id LEFT JOIN visit_referers r ON r.id = v.ref_id LEFT JOIN visit_destinations d ON d.id = v.dest_id;
{{PGSQL}}CREATE TRIGGER visits_write INSTEAD OF INSERT OR UPDATE OR DELETE ON visits FOR EACH ROW EXECUTE FUNCTION qrt_visits_write();
{{PGSQL}}DO $$ BEGIN IF to_regclass('visit_dict_counts') IS NOT NULL THEN CREATE TABLE visit_dict_counts52 (n BIGINT NOT NULL, id BIGINT NOT NULL, tracker_id INTEGER NOT NULL, d SMALLINT NOT NULL); INSERT INTO visit_dict_counts52 (n, id, tracker_id, d) SELECT n, id, tracker_id, d FROM visit_dict_counts ORDER BY tracker_id, d, id; DROP TABLE visit_dict_counts; ALTER TABLE visit_dict_counts52 RENAME TO visit_dict_counts; ALTER TABLE visit_dict_counts ADD CONSTRAINT visit_dict_counts_pkey PRIMARY KEY (tracker_id, d, id); CREATE INDEX visit_dict_counts_by_id ON visit_dict_counts (d, id); END IF; END $$;
{{PGSQL}}CREATE TABLE agg_cnt52 (scans BIGINT NOT NULL, clicks BIGINT NOT NULL, first_visits BIGINT NOT NULL, followed_visits BIGINT NOT NULL, account_id INTEGER NOT NULL, bucket INTEGER NOT NULL, tracker_id INTEGER NOT NULL, kind SMALLINT NOT NULL, level SMALLINT NOT NULL, value VARCHAR(255) NOT NULL);
{{PGSQL}}INSERT INTO agg_cnt52 (scans, clicks, first_visits, followed_visits, account_id, bucket, tracker_id, kind, level, value) SELECT scans, clicks, first_visits, followed_visits, account_id, bucket, tracker_id, kind, level, value FROM agg_cnt ORDER BY account_id, kind, level, bucket, tracker_id, value;
{{PGSQL}}DROP TABLE agg_cnt;
{{PGSQL}}ALTER TABLE agg_cnt52 RENAME TO agg_cnt;
{{PGSQL}}ALTER TABLE agg_cnt ADD CONSTRAINT agg_cnt_pkey PRIMARY KEY (account_id, kind, level, bucket, tracker_id, value);
{{PGSQL}}CREATE INDEX agg_cnt_grp ON agg_cnt (account_id, tracker_id, kind, level, bucket);
{{PGSQL}}CREATE INDEX agg_cnt_account_days ON agg_cnt (level, bucket, account_id) WHERE kind = 2;
UPDATE qrt_schema SET version = 52;
