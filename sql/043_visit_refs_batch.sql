-- mod_qrtrack schema, version 43 (SQLite): a large batch of visits written through
-- qrt_store_visit.c counts its dictionary references once per distinct entry, not four
-- UPDATEs per row in visit_refs_ins. While the batch's id range is a row of
-- visit_refs_batch (inside the batch's transaction only: added before its rows, deleted
-- after its counts), the trigger skips those rows; every other insert still counts in it.
{{SQLITE}}CREATE TABLE IF NOT EXISTS visit_refs_batch (first INTEGER PRIMARY KEY, last BIGINT NOT NULL);
{{SQLITE}}DROP TRIGGER IF EXISTS visit_refs_ins;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS visit_refs_ins AFTER INSERT ON visit_rows WHEN NOT EXISTS (SELECT 1 FROM visit_refs_batch WHERE first <= NEW.id AND last >= NEW.id) BEGIN
{{SQLITE}}UPDATE visit_uas SET refs = refs + 1 WHERE id = NEW.ua_id
{{SQLITE}}; UPDATE visit_referers SET refs = refs + 1 WHERE id = NEW.ref_id
{{SQLITE}}; UPDATE visit_ips SET refs = refs + 1 WHERE id = NEW.ip_id
{{SQLITE}}; UPDATE visit_destinations SET refs = refs + 1 WHERE id = NEW.dest_id
{{SQLITE}}; END;
UPDATE qrt_schema SET version = 43;
