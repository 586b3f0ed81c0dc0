-- mod_qrtrack schema, version 22: a purge erases the strings of the visits it purged.
-- After the retention's purge has dropped a visit's user agent, referer and address
-- ids (qrt_store_purge.c), the dictionary rows that no visit refers to any more are
-- deleted, a bounded range of ids at a time: these indexes find whether any visit
-- still refers to an id (those of version 7 begin with the tracker). visit_dict_gen
-- counts the deletions: a writer that keeps dictionary ids across its commits
-- (qrt_dict.h) reads it in each transaction and forgets them when it has moved, so
-- no new visit refers to a deleted (or reused) id.
CREATE INDEX IF NOT EXISTS visits_by_ua ON visit_rows (ua_id);
CREATE INDEX IF NOT EXISTS visits_by_ref ON visit_rows (ref_id) WHERE ref_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS visits_by_ip ON visit_rows (ip_id) WHERE ip_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS visit_dict_gen (gen BIGINT NOT NULL);
INSERT INTO visit_dict_gen (gen) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM visit_dict_gen);
UPDATE qrt_schema SET version = 22;
