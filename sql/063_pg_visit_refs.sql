-- mod_qrtrack schema, version 63 (PostgreSQL; SQLite only takes the number): dictionary
-- references as SQLite keeps them (schemas 36 and 62), in place of visit_dict_counts and the
-- indexes visits_by_ip and visits_by_dest.
-- - Each dictionary whose strings the retention erases (user agents, referers, addresses,
--   destinations) counts in refs the visit rows that name an entry. A statement trigger on
--   visit_rows appends each statement's references to visit_refs_due (d: 1 user agents, 2
--   referers, 3 addresses, 4 destinations; negative for rows deleted or changed), one row
--   per distinct entry, with no index and no row updated: the writers add them to refs and
--   delete them now and then under the write lock, and so does each step of the retention's
--   sweep before it looks at refs.
-- - visit_dict_counts (a count per tracker, dictionary and entry: some 32 bytes a visit, and
--   half of a batch's insert) is dropped: a search reads the entries a tracker's visits
--   name from its indexes visits_ua, visits_place, visits_ref and visits_ip, and counts
--   along them.
{{PGSQL}}ALTER TABLE visit_uas ADD COLUMN IF NOT EXISTS refs BIGINT NOT NULL DEFAULT 0;
{{PGSQL}}ALTER TABLE visit_referers ADD COLUMN IF NOT EXISTS refs BIGINT NOT NULL DEFAULT 0;
{{PGSQL}}ALTER TABLE visit_ips ADD COLUMN IF NOT EXISTS refs BIGINT NOT NULL DEFAULT 0;
{{PGSQL}}ALTER TABLE visit_destinations ADD COLUMN IF NOT EXISTS refs BIGINT NOT NULL DEFAULT 0;
{{PGSQL}}CREATE TABLE IF NOT EXISTS visit_refs_due (d SMALLINT NOT NULL, id BIGINT NOT NULL, n BIGINT NOT NULL);
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_ins ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_upd ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_del ON visit_rows;
{{PGSQL}}DROP TRIGGER IF EXISTS visit_dict_counts_trunc ON visit_rows;
{{PGSQL}}DROP FUNCTION IF EXISTS qrt_visit_dict_counts();
{{PGSQL}}DROP TABLE IF EXISTS visit_dict_counts;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_ip;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_dest;
{{PGSQL}}DELETE FROM visit_refs_due;
{{PGSQL}}UPDATE visit_uas SET refs = COALESCE(c.n, 0) FROM (SELECT u.id, c.n FROM visit_uas u LEFT JOIN (SELECT ua_id AS id, COUNT(*) AS n FROM visit_rows GROUP BY ua_id) c ON c.id = u.id) c WHERE c.id = visit_uas.id AND visit_uas.refs IS DISTINCT FROM COALESCE(c.n, 0);
{{PGSQL}}UPDATE visit_referers SET refs = COALESCE(c.n, 0) FROM (SELECT r.id, c.n FROM visit_referers r LEFT JOIN (SELECT ref_id AS id, COUNT(*) AS n FROM visit_rows WHERE ref_id IS NOT NULL GROUP BY ref_id) c ON c.id = r.id) c WHERE c.id = visit_referers.id AND visit_referers.refs IS DISTINCT FROM COALESCE(c.n, 0);
{{PGSQL}}UPDATE visit_ips SET refs = COALESCE(c.n, 0) FROM (SELECT i.id, c.n FROM visit_ips i LEFT JOIN (SELECT ip_id AS id, COUNT(*) AS n FROM visit_rows WHERE ip_id IS NOT NULL GROUP BY ip_id) c ON c.id = i.id) c WHERE c.id = visit_ips.id AND visit_ips.refs IS DISTINCT FROM COALESCE(c.n, 0);
{{PGSQL}}UPDATE visit_destinations SET refs = COALESCE(c.n, 0) FROM (SELECT s.id, c.n FROM visit_destinations s LEFT JOIN (SELECT dest_id AS id, COUNT(*) AS n FROM visit_rows WHERE dest_id IS NOT NULL GROUP BY dest_id) c ON c.id = s.id) c WHERE c.id = visit_destinations.id AND visit_destinations.refs IS DISTINCT FROM COALESCE(c.n, 0);
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visit_refs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
IF TG_OP = 'TRUNCATE' THEN DELETE FROM visit_refs_due; UPDATE visit_uas SET refs = 0 WHERE refs <> 0; UPDATE visit_referers SET refs = 0 WHERE refs <> 0; UPDATE visit_ips SET refs = 0 WHERE refs <> 0; UPDATE visit_destinations SET refs = 0 WHERE refs <> 0; RETURN NULL; END IF
; IF TG_OP <> 'INSERT' THEN
INSERT INTO visit_refs_due (d, id, n) SELECT d, id, -COUNT(*) FROM (SELECT 1 AS d, ua_id AS id FROM qrt_old UNION ALL SELECT 2, ref_id FROM qrt_old WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_old WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_old WHERE dest_id IS NOT NULL) o GROUP BY 1, 2
; END IF
; IF TG_OP <> 'DELETE' THEN
INSERT INTO visit_refs_due (d, id, n) SELECT d, id, COUNT(*) FROM (SELECT 1 AS d, ua_id AS id FROM qrt_new UNION ALL SELECT 2, ref_id FROM qrt_new WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_new WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_new WHERE dest_id IS NOT NULL) o GROUP BY 1, 2
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
