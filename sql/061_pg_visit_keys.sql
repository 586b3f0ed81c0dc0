-- mod_qrtrack schema, version 61 (PostgreSQL; SQLite only takes the number): one GIN index,
-- visits_keys, instead of the B-trees visits_ua, visits_place, visits_ref and visits_by_ip.
-- Each visit gives it up to four keys (qrt_visit_keys): its tracker with its user agent, its
-- place and its referer entry, and its address entry alone. A search's picks and counts
-- find a tracker's visits that name matched entries by those keys (qrt_visit_keys_of), and
-- the retention's sweep of addresses whether any visit still names one. GIN keeps a key's
-- visits as a compressed list and takes new entries into a pending list that it merges in
-- bulk: a B-tree entry a visit and dictionary cost the writers most of their inserts (an
-- import of 1,000,000 varied visits spent about a third of its time there).
-- A key packs the tracker and entry (tracker above bit 34, entry from bit 3, the kind in
-- bits 0-2); entries beyond 2^31 may share a key, so each statement tests the columns too.
-- visits_ip (tracker, address entry) stays: a search reads a tracker's own addresses from it.
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visit_keys(t BIGINT, u BIGINT, g BIGINT, r BIGINT, a BIGINT) RETURNS BIGINT[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT array_remove(ARRAY[(t << 34) # (u << 3) # 1, (t << 34) # (g << 3) # 2, (t << 34) # (r << 3) # 3, (a << 3) # 4], NULL) $$;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visit_keys_of(t BIGINT, d INTEGER, ids BIGINT[]) RETURNS BIGINT[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY(SELECT CASE WHEN d = 4 THEN (x << 3) # 4 ELSE (t << 34) # (x << 3) # d END FROM unnest(ids) AS x) $$;
{{PGSQL}}CREATE INDEX IF NOT EXISTS visits_keys ON visit_rows USING gin (qrt_visit_keys(tracker_id, ua_id, place_id, ref_id, ip_id));
{{PGSQL}}DROP INDEX IF EXISTS visits_ua;
{{PGSQL}}DROP INDEX IF EXISTS visits_place;
{{PGSQL}}DROP INDEX IF EXISTS visits_ref;
{{PGSQL}}DROP INDEX IF EXISTS visits_by_ip;
UPDATE qrt_schema SET version = 61;
