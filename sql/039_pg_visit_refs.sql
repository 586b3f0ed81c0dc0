-- mod_qrtrack schema, version 39 (PostgreSQL): the retention's sweep (qrt_store_purge.c)
-- finds whether any visit still names a user agent or referer entry in visit_dict_counts
-- (d 1 and 3, kept by the triggers of version 19), looked up by entry through a small
-- index on (d, id), so the indexes visits_by_ua and visits_by_ref of version 22 (an entry
-- per visit each, read by that sweep only) are dropped. visits_by_ip and visits_by_dest
-- stay: no count keeps those entries (one per address would be as large as the index).
-- (run again on a database that schema 63 left, which has no visit_dict_counts: nothing)
{{PGSQL}}DO $$ BEGIN IF to_regclass('visit_dict_counts') IS NOT NULL THEN CREATE INDEX IF NOT EXISTS visit_dict_counts_by_id ON visit_dict_counts (d, id); END IF; END $$;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_ua;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_ref;
UPDATE qrt_schema SET version = 39;
