-- mod_qrtrack schema, version 64 (PostgreSQL; SQLite only takes the number): the entries of
-- one dictionary that a tracker's visits name, read by skipping from one to the next.
-- - qrt_own_ids(t, col, cap) returns the distinct ua_id, place_id, ref_id or ip_id (col 'ua',
--   'place', 'ref', 'ip') of tracker t's visits: one descent of the tracker's index
--   (visits_ua, visits_place, visits_ref, visits_ip) per entry, up to cap entries, then the
--   rest of the index in one pass. A large tracker of few distinct strings costs a few
--   descents instead of a read of every one of its index entries; one of many distinct
--   strings costs at most cap descents more than that read (the caller sets cap from the
--   tracker's visits).
-- - Its statements are planned once per connection (PL/pgSQL keeps their plans), where a
--   recursive statement would be planned at every search.
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_own_ids(t BIGINT, col TEXT, cap BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$ DECLARE cur BIGINT := -9223372036854775808; nxt BIGINT; i BIGINT := 0; BEGIN
LOOP
IF i >= cap THEN
IF col = 'ua' THEN RETURN QUERY SELECT DISTINCT ua_id FROM visit_rows WHERE tracker_id = t AND ua_id > cur
; ELSIF col = 'place' THEN RETURN QUERY SELECT DISTINCT place_id FROM visit_rows WHERE tracker_id = t AND place_id > cur
; ELSIF col = 'ref' THEN RETURN QUERY SELECT DISTINCT ref_id FROM visit_rows WHERE tracker_id = t AND ref_id > cur
; ELSIF col = 'ip' THEN RETURN QUERY SELECT DISTINCT ip_id FROM visit_rows WHERE tracker_id = t AND ip_id > cur
; END IF
; RETURN
; END IF
; IF col = 'ua' THEN SELECT ua_id INTO nxt FROM visit_rows WHERE tracker_id = t AND ua_id > cur ORDER BY ua_id LIMIT 1
; ELSIF col = 'place' THEN SELECT place_id INTO nxt FROM visit_rows WHERE tracker_id = t AND place_id > cur ORDER BY place_id LIMIT 1
; ELSIF col = 'ref' THEN SELECT ref_id INTO nxt FROM visit_rows WHERE tracker_id = t AND ref_id > cur ORDER BY ref_id LIMIT 1
; ELSIF col = 'ip' THEN SELECT ip_id INTO nxt FROM visit_rows WHERE tracker_id = t AND ip_id > cur ORDER BY ip_id LIMIT 1
; ELSE RAISE EXCEPTION 'qrt_own_ids: no dictionary %', col
; END IF
; EXIT WHEN nxt IS NULL
; RETURN NEXT nxt
; cur := nxt
; i := i + 1
; END LOOP
; RETURN
; END $$;
UPDATE qrt_schema SET version = 64;
