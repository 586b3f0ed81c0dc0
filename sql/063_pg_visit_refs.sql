-- mod_qrtrack schema, version 63 (PostgreSQL; SQLite only takes the number): dictionary
-- references counted per entry, as SQLite counts them (schema 36), in place of
-- visit_dict_counts and the indexes visits_by_ip and visits_by_dest.
-- - visit_refs counts, for each entry of the dictionaries whose strings the retention erases
--   (d: 1 user agents, 2 referers, 3 addresses, 4 destinations), the visit rows that name
--   it: a narrow table of its own, so that changing a count writes a 48-byte row version,
--   not a dictionary's wide row and its index entries again; half of each page is left
--   free (fillfactor 50) so that a count's new version stays on its page, where later
--   accesses prune the old ones, and the key's index is not touched.
-- - Statement triggers on visit_rows add each statement's references (one upsert per
--   distinct entry, in key order; subtracted for rows deleted or changed), whoever writes:
--   the scan writer, imports, the retention's erasure, SQL by hand.
-- - visit_dict_counts (a count per tracker, dictionary and entry: some 32 bytes a visit on
--   the reports bench, and half of a varied batch's insert) is dropped: a search reads the
--   entries a tracker's visits name from visits_ua, visits_place, visits_ref and visits_ip,
--   and counts along them.
{{PGSQL}}CREATE TABLE IF NOT EXISTS visit_refs (n BIGINT NOT NULL, id BIGINT NOT NULL, d SMALLINT NOT NULL, PRIMARY KEY (d, id)) WITH (fillfactor = 50);
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_ins ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_upd ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_del ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_trunc ON visit_rows;
{{PGSQL}}DROP FUNCTION IF EXISTS qrt_visit_dict_counts();
{{PGSQL}}DROP TABLE IF EXISTS visit_dict_counts;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_ip;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_dest;
{{PGSQL}}LOCK TABLE visit_rows IN SHARE MODE;
{{PGSQL}}DELETE FROM visit_refs;
{{PGSQL}}INSERT INTO visit_refs (d, id, n) SELECT 1, ua_id, COUNT(*) FROM visit_rows GROUP BY ua_id UNION ALL SELECT 2, ref_id, COUNT(*) FROM visit_rows WHERE ref_id IS NOT NULL GROUP BY ref_id UNION ALL SELECT 3, ip_id, COUNT(*) FROM visit_rows WHERE ip_id IS NOT NULL GROUP BY ip_id UNION ALL SELECT 4, dest_id, COUNT(*) FROM visit_rows WHERE dest_id IS NOT NULL GROUP BY dest_id ORDER BY 1, 2;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visit_refs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
IF TG_OP = 'TRUNCATE' THEN DELETE FROM visit_refs; RETURN NULL; END IF
; IF TG_OP <> 'INSERT' THEN
UPDATE visit_refs k SET n = k.n - c.n FROM (SELECT d, id, COUNT(*) AS n FROM (SELECT 1 AS d, ua_id AS id FROM qrt_old UNION ALL SELECT 2, ref_id FROM qrt_old WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_old WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_old WHERE dest_id IS NOT NULL) o GROUP BY 1, 2) c WHERE k.d = c.d AND k.id = c.id
; END IF
; IF TG_OP <> 'DELETE' THEN
INSERT INTO visit_refs (d, id, n) SELECT d, id, COUNT(*) FROM (SELECT 1 AS d, ua_id AS id FROM qrt_new UNION ALL SELECT 2, ref_id FROM qrt_new WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_new WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_new WHERE dest_id IS NOT NULL) o GROUP BY 1, 2 ORDER BY 1, 2 ON CONFLICT (d, id) DO UPDATE SET n = visit_refs.n + excluded.n
; END IF
; RETURN NULL
; END $$;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_refs_ins ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_refs_ins AFTER INSERT ON visit_rows REFERENCING NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_refs_upd ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_refs_upd AFTER UPDATE ON visit_rows REFERENCING OLD TABLE AS qrt_old NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_refs_del ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_refs_del AFTER DELETE ON visit_rows REFERENCING OLD TABLE AS qrt_old FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();
{{PGSQL}}DROP TRIGGER IF EXISTS visit_refs_trunc ON visit_rows;
{{PGSQL}}CREATE TRIGGER visit_refs_trunc AFTER TRUNCATE ON visit_rows FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();
UPDATE qrt_schema SET version = 63;
