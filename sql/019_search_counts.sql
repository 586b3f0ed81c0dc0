-- mod_qrtrack schema, version 19: PostgreSQL's search (issue 12, item 3). SQLite's
-- is unchanged: its LIKE ignores ASCII case by itself, and it counts a tracker's
-- matched visits along its indexes fast enough.
--
-- The dictionaries' searched strings, lowercased once when a string is added (generated
-- columns), so that a search's LIKE runs on them as they are: lower() on each user agent
-- for each search was most of the time spent reading the dictionaries. (The addresses
-- keep lower() at search time: that dictionary has a row per address, and addresses are
-- stored lowercase already.)
{{PGSQL}}ALTER TABLE visit_uas ADD COLUMN IF NOT EXISTS user_agent_lc TEXT GENERATED ALWAYS AS (lower(user_agent)) STORED, ADD COLUMN IF NOT EXISTS browser_lc TEXT GENERATED ALWAYS AS (lower(browser)) STORED, ADD COLUMN IF NOT EXISTS os_lc TEXT GENERATED ALWAYS AS (lower(os)) STORED, ADD COLUMN IF NOT EXISTS device_lc TEXT GENERATED ALWAYS AS (lower(device)) STORED;
{{PGSQL}}ALTER TABLE visit_places ADD COLUMN IF NOT EXISTS country_lc TEXT GENERATED ALWAYS AS (lower(country)) STORED, ADD COLUMN IF NOT EXISTS city_lc TEXT GENERATED ALWAYS AS (lower(city)) STORED;
{{PGSQL}}ALTER TABLE visit_referers ADD COLUMN IF NOT EXISTS referer_lc TEXT GENERATED ALWAYS AS (lower(referer)) STORED;
-- No statistics on them: the planner would guess a substring's share of the visits from
-- the few strings that hold it (5 of 10 places hold 'reykjav', each place a tenth of the
-- visits: half of them), and read every visit of the tracker where the index of each
-- matched entry reads 99 (0.3 s against 10 ms). Without, it guesses from the pattern, as
-- it did of lower() before.
{{PGSQL}}ALTER TABLE visit_uas ALTER COLUMN user_agent_lc SET STATISTICS 0, ALTER COLUMN browser_lc SET STATISTICS 0, ALTER COLUMN os_lc SET STATISTICS 0, ALTER COLUMN device_lc SET STATISTICS 0;
{{PGSQL}}ALTER TABLE visit_places ALTER COLUMN country_lc SET STATISTICS 0, ALTER COLUMN city_lc SET STATISTICS 0;
{{PGSQL}}ALTER TABLE visit_referers ALTER COLUMN referer_lc SET STATISTICS 0;
-- How many visits of a tracker hold each user agent (d 1), place (d 2) and referer (d 3)
-- entry, bots included: a search over the whole of a tracker's visits that matches
-- entries of one of these dictionaries only counts its visits by adding these up rather
-- than reading each matched visit's index entry (a common word: a quarter of a million
-- entries, 30-70 ms). Statement triggers keep it in the transaction of every change to
-- visit_rows, whoever makes it (the writer's batch insert is one statement; the
-- retention's erasure updates ua_id and ref_id; a TRUNCATE empties it). Rows that fall to 0
-- are deleted.
{{PGSQL}}CREATE TABLE IF NOT EXISTS visit_dict_counts (tracker_id BIGINT NOT NULL, d SMALLINT NOT NULL, id BIGINT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tracker_id, d, id));
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visit_dict_counts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
IF TG_OP = 'TRUNCATE' THEN DELETE FROM visit_dict_counts; RETURN NULL; END IF
; IF TG_OP <> 'INSERT' THEN
UPDATE visit_dict_counts k SET n = k.n - c.n FROM (SELECT tracker_id, d, id, COUNT(*) AS n FROM (SELECT tracker_id, 1 AS d, ua_id AS id FROM qrt_old UNION ALL SELECT tracker_id, 2, place_id FROM qrt_old UNION ALL SELECT tracker_id, 3, ref_id FROM qrt_old WHERE ref_id IS NOT NULL) o GROUP BY 1, 2, 3) c WHERE k.tracker_id = c.tracker_id AND k.d = c.d AND k.id = c.id
; DELETE FROM visit_dict_counts k USING (SELECT DISTINCT tracker_id, 1 AS d, ua_id AS id FROM qrt_old UNION SELECT tracker_id, 2, place_id FROM qrt_old UNION SELECT tracker_id, 3, ref_id FROM qrt_old WHERE ref_id IS NOT NULL) c WHERE k.tracker_id = c.tracker_id AND k.d = c.d AND k.id = c.id AND k.n <= 0
; END IF
; IF TG_OP <> 'DELETE' THEN
INSERT INTO visit_dict_counts (tracker_id, d, id, n) SELECT tracker_id, d, id, COUNT(*) FROM (SELECT tracker_id, 1 AS d, ua_id AS id FROM qrt_new UNION ALL SELECT tracker_id, 2, place_id FROM qrt_new UNION ALL SELECT tracker_id, 3, ref_id FROM qrt_new WHERE ref_id IS NOT NULL) o GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 ON CONFLICT (tracker_id, d, id) DO UPDATE SET n = visit_dict_counts.n + excluded.n
; END IF
; RETURN NULL
; END $$;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_ins ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_dict_counts_ins AFTER INSERT ON visit_rows REFERENCING NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_upd ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_dict_counts_upd AFTER UPDATE ON visit_rows REFERENCING OLD TABLE AS qrt_old NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_del ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_dict_counts_del AFTER DELETE ON visit_rows REFERENCING OLD TABLE AS qrt_old FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_trunc ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_dict_counts_trunc AFTER TRUNCATE ON visit_rows FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();
-- The counts of the visits there already, anew (a database that says an older version
-- than it is runs this again), with the writers held off until this commits.
{{PGSQL}}LOCK TABLE visit_rows IN SHARE MODE;
{{PGSQL}}DELETE FROM visit_dict_counts;
{{PGSQL}}INSERT INTO visit_dict_counts (tracker_id, d, id, n) SELECT tracker_id, d, id, COUNT(*) FROM (SELECT tracker_id, 1 AS d, ua_id AS id FROM visit_rows UNION ALL SELECT tracker_id, 2, place_id FROM visit_rows UNION ALL SELECT tracker_id, 3, ref_id FROM visit_rows WHERE ref_id IS NOT NULL) o GROUP BY 1, 2, 3;
UPDATE qrt_schema SET version = 19;
