-- mod_qrtrack schema, version 36 (SQLite): each dictionary row counts the visit rows that
-- name it, kept by triggers on visit_rows in the transaction of every change (the scan
-- writer, imports, the retention's erasure, deletions, SQL by hand). The retention's sweep
-- (qrt_store_purge.c) deletes the rows whose count is 0, so the four indexes of version 22
-- and 25 that found whether any visit still names an id (visits_by_ua, _ref, _ip, _dest:
-- an entry per visit each) are dropped. PostgreSQL keeps its indexes.
{{SQLITE}}{{UNLESS_COLUMN:visit_uas.refs}}ALTER TABLE visit_uas ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
{{SQLITE}}{{UNLESS_COLUMN:visit_referers.refs}}ALTER TABLE visit_referers ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
{{SQLITE}}{{UNLESS_COLUMN:visit_ips.refs}}ALTER TABLE visit_ips ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
{{SQLITE}}{{UNLESS_COLUMN:visit_destinations.refs}}ALTER TABLE visit_destinations ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
{{SQLITE}}UPDATE visit_uas SET refs = 0 WHERE refs <> 0;
{{SQLITE}}UPDATE visit_uas SET refs = c.n FROM (SELECT ua_id AS id, COUNT(*) AS n FROM visit_rows WHERE ua_id IS NOT NULL GROUP BY ua_id) c WHERE c.id = visit_uas.id;
{{SQLITE}}UPDATE visit_referers SET refs = 0 WHERE refs <> 0;
{{SQLITE}}UPDATE visit_referers SET refs = c.n FROM (SELECT ref_id AS id, COUNT(*) AS n FROM visit_rows WHERE ref_id IS NOT NULL GROUP BY ref_id) c WHERE c.id = visit_referers.id;
{{SQLITE}}UPDATE visit_ips SET refs = 0 WHERE refs <> 0;
{{SQLITE}}UPDATE visit_ips SET refs = c.n FROM (SELECT ip_id AS id, COUNT(*) AS n FROM visit_rows WHERE ip_id IS NOT NULL GROUP BY ip_id) c WHERE c.id = visit_ips.id;
{{SQLITE}}UPDATE visit_destinations SET refs = 0 WHERE refs <> 0;
{{SQLITE}}UPDATE visit_destinations SET refs = c.n FROM (SELECT dest_id AS id, COUNT(*) AS n FROM visit_rows WHERE dest_id IS NOT NULL GROUP BY dest_id) c WHERE c.id = visit_destinations.id;
{{SQLITE}}DROP INDEX IF EXISTS visits_by_ua;
{{SQLITE}}DROP INDEX IF EXISTS visits_by_ref;
{{SQLITE}}DROP INDEX IF EXISTS visits_by_ip;
{{SQLITE}}DROP INDEX IF EXISTS visits_by_dest;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS visit_refs_ins AFTER INSERT ON visit_rows BEGIN
{{SQLITE}}UPDATE visit_uas SET refs = refs + 1 WHERE id = NEW.ua_id
{{SQLITE}}; UPDATE visit_referers SET refs = refs + 1 WHERE id = NEW.ref_id
{{SQLITE}}; UPDATE visit_ips SET refs = refs + 1 WHERE id = NEW.ip_id
{{SQLITE}}; UPDATE visit_destinations SET refs = refs + 1 WHERE id = NEW.dest_id
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS visit_refs_del AFTER DELETE ON visit_rows BEGIN
{{SQLITE}}UPDATE visit_uas SET refs = refs - 1 WHERE id = OLD.ua_id
{{SQLITE}}; UPDATE visit_referers SET refs = refs - 1 WHERE id = OLD.ref_id
{{SQLITE}}; UPDATE visit_ips SET refs = refs - 1 WHERE id = OLD.ip_id
{{SQLITE}}; UPDATE visit_destinations SET refs = refs - 1 WHERE id = OLD.dest_id
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS visit_refs_upd AFTER UPDATE OF ua_id, ref_id, ip_id, dest_id ON visit_rows BEGIN
{{SQLITE}}UPDATE visit_uas SET refs = refs + (id = NEW.ua_id) - (id = OLD.ua_id) WHERE id IN (OLD.ua_id, NEW.ua_id) AND NEW.ua_id IS NOT OLD.ua_id
{{SQLITE}}; UPDATE visit_referers SET refs = refs + (id IS NEW.ref_id) - (id IS OLD.ref_id) WHERE id IN (OLD.ref_id, NEW.ref_id) AND NEW.ref_id IS NOT OLD.ref_id
{{SQLITE}}; UPDATE visit_ips SET refs = refs + (id IS NEW.ip_id) - (id IS OLD.ip_id) WHERE id IN (OLD.ip_id, NEW.ip_id) AND NEW.ip_id IS NOT OLD.ip_id
{{SQLITE}}; UPDATE visit_destinations SET refs = refs + (id IS NEW.dest_id) - (id IS OLD.dest_id) WHERE id IN (OLD.dest_id, NEW.dest_id) AND NEW.dest_id IS NOT OLD.dest_id
{{SQLITE}}; END;
UPDATE qrt_schema SET version = 36;
