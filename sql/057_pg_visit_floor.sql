-- mod_qrtrack schema, version 57 (PostgreSQL; SQLite only takes the number): visits_tracker_id
-- goes, as SQLite's did in schema 14 (31.6 bytes a visit on the reports bench, and one index
-- fewer for every visit written). It served a tracker's newest id and the polls (the visits
-- above an id). PostgreSQL now keeps what SQLite keeps:
-- - trackers.last_visit_id, a tracker's newest id: raised by the writers with the counters;
-- - visit_floor, per bucket of 4,096 ids (id >> 12), the earliest visit_start of the ids in
--   it. A poll reads the tracker's window from the earliest floor of the buckets from its
--   since_id up, along visits_tracker_visitor. Ids are handed out under the write lock, so
--   in commit order; a floor is lowered in the transaction that writes its visits.
-- The view's trigger keeps both for SQL that writes through the view (the copy between
-- databases). Both are computed here from the visits, again when the migration runs again.
{{PGSQL}}{{UNLESS_TABLE:visit_floor}}CREATE TABLE visit_floor (bucket BIGINT PRIMARY KEY, min_start BIGINT NOT NULL);
{{PGSQL}}INSERT INTO visit_floor (bucket, min_start) SELECT id >> 12, MIN(visit_start) FROM visit_rows GROUP BY 1 ON CONFLICT (bucket) DO UPDATE SET min_start = excluded.min_start WHERE excluded.min_start < visit_floor.min_start;
{{PGSQL}}ALTER TABLE trackers ADD COLUMN IF NOT EXISTS last_visit_id BIGINT NOT NULL DEFAULT 0;
{{PGSQL}}UPDATE trackers SET last_visit_id = COALESCE((SELECT MAX(v.id) FROM visit_rows v WHERE v.tracker_id = trackers.id), 0);
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_visits_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE u BIGINT; g BIGINT; r BIGINT; a BIGINT; n BIGINT; i BIGINT; ku TEXT; kg TEXT
; BEGIN
IF TG_OP = 'DELETE' THEN DELETE FROM visit_rows WHERE id = OLD.id; RETURN OLD; END IF
; ku := COALESCE(octet_length(NEW.user_agent) || ':' || NEW.user_agent, '-') || COALESCE(octet_length(NEW.browser) || ':' || NEW.browser, '-') || COALESCE(octet_length(NEW.browser_version) || ':' || NEW.browser_version, '-') || COALESCE(octet_length(NEW.os) || ':' || NEW.os, '-') || COALESCE(octet_length(NEW.device) || ':' || NEW.device, '-')
; kg := COALESCE(octet_length(NEW.country) || ':' || NEW.country, '-') || COALESCE(octet_length(NEW.city) || ':' || NEW.city, '-')
; INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device) VALUES (ku, NEW.user_agent, NEW.browser, NEW.browser_version, NEW.os, NEW.device) ON CONFLICT (k) DO NOTHING
; SELECT id INTO u FROM visit_uas WHERE k = ku
; INSERT INTO visit_places (k, country, city) VALUES (kg, NEW.country, NEW.city) ON CONFLICT (k) DO NOTHING
; SELECT id INTO g FROM visit_places WHERE k = kg
; IF NEW.referer IS NOT NULL THEN INSERT INTO visit_referers (referer) VALUES (NEW.referer) ON CONFLICT (referer) DO NOTHING; SELECT id INTO r FROM visit_referers WHERE referer = NEW.referer; END IF
; IF NEW.ip IS NOT NULL THEN INSERT INTO visit_ips (ip) VALUES (NEW.ip) ON CONFLICT (ip) DO NOTHING; SELECT id INTO a FROM visit_ips WHERE ip = NEW.ip; END IF
; IF NEW.destination IS NOT NULL THEN INSERT INTO visit_destinations (url) VALUES (NEW.destination) ON CONFLICT (url) DO NOTHING; SELECT id INTO n FROM visit_destinations WHERE url = NEW.destination; END IF
; i := CASE WHEN TG_OP = 'INSERT' THEN COALESCE(NEW.id, nextval(pg_get_serial_sequence('visit_rows', 'id'))) ELSE NEW.id END
; IF TG_OP = 'INSERT' THEN INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id, dest_id) VALUES (i, NEW.tracker_id, NEW.visit_start, CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, COALESCE(NEW.bot, 0), qrt_visitor_bigint(NEW.visitor), u, g, r, a, n)
; ELSE UPDATE visit_rows SET id = NEW.id, tracker_id = NEW.tracker_id, visit_start = NEW.visit_start, click = CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, bot = NEW.bot, visitor = qrt_visitor_bigint(NEW.visitor), ua_id = u, place_id = g, ref_id = r, ip_id = a, dest_id = n WHERE id = OLD.id
; END IF
; INSERT INTO visit_floor (bucket, min_start) VALUES (i >> 12, NEW.visit_start) ON CONFLICT (bucket) DO UPDATE SET min_start = excluded.min_start WHERE excluded.min_start < visit_floor.min_start
; UPDATE trackers SET last_visit_id = i WHERE id = NEW.tracker_id AND last_visit_id < i
; RETURN NEW
; END $$;
{{PGSQL}}DROP INDEX IF EXISTS visits_tracker_id;
UPDATE qrt_schema SET version = 57;
