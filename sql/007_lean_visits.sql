-- mod_qrtrack schema, version 7: leaner visits (issue 12).
-- The strings that repeat from visit to visit live once in dictionaries, and a visit
-- row holds their small integer ids: visit_uas (a user agent with what was derived
-- from it: browser, browser_version, os, device), visit_places (country, city),
-- visit_referers, visit_ips. A dictionary row whose value has NULLs is keyed by k,
-- each field written as its length in bytes, ':' and the bytes, or '-' for NULL
-- (qrt_dict_key). The rows are visit_rows; "visits" is a view with the columns of
-- versions 1-6, which every reader keeps using; writes to the view (INSERT, UPDATE,
-- DELETE) go through its INSTEAD OF triggers, the module's own writes straight to
-- visit_rows. Search reads the dictionaries first, then the visits of the matched
-- ids through the indexes visits_ua, visits_place, visits_ref and visits_ip.
-- {{UNLESS_TABLE:visit_rows}} (every statement but the last): a database that
-- already has visit_rows (one that says an older version than it is) keeps it.
{{UNLESS_TABLE:visit_rows}}CREATE TABLE visit_uas (
    id {{ID}},
    k TEXT NOT NULL UNIQUE,
    user_agent VARCHAR(1024),
    browser VARCHAR(64),
    browser_version VARCHAR(32),
    os VARCHAR(64),
    device VARCHAR(16)
);
{{UNLESS_TABLE:visit_rows}}CREATE TABLE visit_places (
    id {{ID}},
    k TEXT NOT NULL UNIQUE,
    country VARCHAR(8),
    city VARCHAR(128)
);
{{UNLESS_TABLE:visit_rows}}CREATE TABLE visit_referers (
    id {{ID}},
    referer VARCHAR(2048) NOT NULL UNIQUE
);
{{UNLESS_TABLE:visit_rows}}CREATE TABLE visit_ips (
    id {{ID}},
    ip VARCHAR(64) NOT NULL UNIQUE
);
{{UNLESS_TABLE:visit_rows}}CREATE TABLE visit_rows (
    id {{ID}},
    tracker_id BIGINT NOT NULL,
    visit_start BIGINT NOT NULL,
    click SMALLINT NOT NULL,
    bot SMALLINT NOT NULL,
    visitor CHAR(16) NOT NULL,
    ua_id BIGINT NOT NULL,
    place_id BIGINT NOT NULL,
    ref_id BIGINT,
    ip_id BIGINT
);
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device) SELECT DISTINCT COALESCE(length(CAST(user_agent AS BLOB)) || ':' || user_agent, '-') || COALESCE(length(CAST(browser AS BLOB)) || ':' || browser, '-') || COALESCE(length(CAST(browser_version AS BLOB)) || ':' || browser_version, '-') || COALESCE(length(CAST(os AS BLOB)) || ':' || os, '-') || COALESCE(length(CAST(device AS BLOB)) || ':' || device, '-'), user_agent, browser, browser_version, os, device FROM visits;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device) SELECT DISTINCT COALESCE(octet_length(user_agent) || ':' || user_agent, '-') || COALESCE(octet_length(browser) || ':' || browser, '-') || COALESCE(octet_length(browser_version) || ':' || browser_version, '-') || COALESCE(octet_length(os) || ':' || os, '-') || COALESCE(octet_length(device) || ':' || device, '-'), user_agent, browser, browser_version, os, device FROM visits;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_places (k, country, city) SELECT DISTINCT COALESCE(length(CAST(country AS BLOB)) || ':' || country, '-') || COALESCE(length(CAST(city AS BLOB)) || ':' || city, '-'), country, city FROM visits;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_places (k, country, city) SELECT DISTINCT COALESCE(octet_length(country) || ':' || country, '-') || COALESCE(octet_length(city) || ':' || city, '-'), country, city FROM visits;
{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_referers (referer) SELECT DISTINCT referer FROM visits WHERE referer IS NOT NULL;
{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_ips (ip) SELECT DISTINCT ip FROM visits WHERE ip IS NOT NULL;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id) SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.source = 'click' THEN 1 ELSE 0 END, v.bot, v.visitor, (SELECT u.id FROM visit_uas u WHERE u.k = COALESCE(length(CAST(v.user_agent AS BLOB)) || ':' || v.user_agent, '-') || COALESCE(length(CAST(v.browser AS BLOB)) || ':' || v.browser, '-') || COALESCE(length(CAST(v.browser_version AS BLOB)) || ':' || v.browser_version, '-') || COALESCE(length(CAST(v.os AS BLOB)) || ':' || v.os, '-') || COALESCE(length(CAST(v.device AS BLOB)) || ':' || v.device, '-')), (SELECT g.id FROM visit_places g WHERE g.k = COALESCE(length(CAST(v.country AS BLOB)) || ':' || v.country, '-') || COALESCE(length(CAST(v.city AS BLOB)) || ':' || v.city, '-')), (SELECT r.id FROM visit_referers r WHERE r.referer = v.referer), (SELECT i.id FROM visit_ips i WHERE i.ip = v.ip) FROM visits v ORDER BY v.id;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id) SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.source = 'click' THEN 1 ELSE 0 END, v.bot, v.visitor, u.id, g.id, r.id, i.id FROM visits v JOIN visit_uas u ON u.k = COALESCE(octet_length(v.user_agent) || ':' || v.user_agent, '-') || COALESCE(octet_length(v.browser) || ':' || v.browser, '-') || COALESCE(octet_length(v.browser_version) || ':' || v.browser_version, '-') || COALESCE(octet_length(v.os) || ':' || v.os, '-') || COALESCE(octet_length(v.device) || ':' || v.device, '-') JOIN visit_places g ON g.k = COALESCE(octet_length(v.country) || ':' || v.country, '-') || COALESCE(octet_length(v.city) || ':' || v.city, '-') LEFT JOIN visit_referers r ON r.referer = v.referer LEFT JOIN visit_ips i ON i.ip = v.ip ORDER BY v.id;
{{UNLESS_TABLE:visit_rows}}DROP TABLE visits;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}DO $$BEGIN PERFORM setval(pg_get_serial_sequence('visit_rows', 'id'), COALESCE((SELECT MAX(id) FROM visit_rows), 0) + 1, false); END$$;
{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_tracker_id ON visit_rows (tracker_id, id);
{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_tracker_visitor ON visit_rows (tracker_id, visit_start, id, visitor, bot);
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_visitor ON visit_rows (visitor, visit_start);
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_visitor_id ON visit_rows (visitor, visit_start, id);
-- Search: a tracker's visits of a dictionary id, newest first (SQLite's rowid is the
-- id at the end of each key; PostgreSQL's indexes name it).
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id, visit_start);
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_place ON visit_rows (tracker_id, place_id, visit_start);
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id, visit_start) WHERE ref_id IS NOT NULL;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id, visit_start) WHERE ip_id IS NOT NULL;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id, visit_start, id);
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_place ON visit_rows (tracker_id, place_id, visit_start, id);
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id, visit_start, id) WHERE ref_id IS NOT NULL;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id, visit_start, id) WHERE ip_id IS NOT NULL;
{{UNLESS_TABLE:visit_rows}}CREATE VIEW visits AS SELECT v.id AS id, v.tracker_id AS tracker_id, v.visit_start AS visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END AS source, i.ip AS ip, g.country AS country, g.city AS city, u.browser AS browser, u.browser_version AS browser_version, u.os AS os, u.device AS device, r.referer AS referer, u.user_agent AS user_agent, v.bot AS bot, v.visitor AS visitor FROM visit_rows v LEFT JOIN visit_ips i ON i.id = v.ip_id LEFT JOIN visit_places g ON g.id = v.place_id LEFT JOIN visit_uas u ON u.id = v.ua_id LEFT JOIN visit_referers r ON r.id = v.ref_id;
-- Writes to the view (by hand, by older tools): the dictionaries get what they lack.
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE TRIGGER visits_insert INSTEAD OF INSERT ON visits BEGIN
{{SQLITE}}INSERT OR IGNORE INTO visit_uas (k, user_agent, browser, browser_version, os, device) VALUES (COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-'), NEW.user_agent, NEW.browser, NEW.browser_version, NEW.os, NEW.device)
{{SQLITE}}; INSERT OR IGNORE INTO visit_places (k, country, city) VALUES (COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-'), NEW.country, NEW.city)
{{SQLITE}}; INSERT OR IGNORE INTO visit_referers (referer) SELECT NEW.referer WHERE NEW.referer IS NOT NULL
{{SQLITE}}; INSERT OR IGNORE INTO visit_ips (ip) SELECT NEW.ip WHERE NEW.ip IS NOT NULL
{{SQLITE}}; INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id) VALUES (NEW.id, NEW.tracker_id, NEW.visit_start, CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, COALESCE(NEW.bot, 0), NEW.visitor, (SELECT id FROM visit_uas WHERE k = COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-')), (SELECT id FROM visit_places WHERE k = COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-')), (SELECT id FROM visit_referers WHERE referer = NEW.referer), (SELECT id FROM visit_ips WHERE ip = NEW.ip))
{{SQLITE}}; END;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE TRIGGER visits_update INSTEAD OF UPDATE ON visits BEGIN
{{SQLITE}}INSERT OR IGNORE INTO visit_uas (k, user_agent, browser, browser_version, os, device) VALUES (COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-'), NEW.user_agent, NEW.browser, NEW.browser_version, NEW.os, NEW.device)
{{SQLITE}}; INSERT OR IGNORE INTO visit_places (k, country, city) VALUES (COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-'), NEW.country, NEW.city)
{{SQLITE}}; INSERT OR IGNORE INTO visit_referers (referer) SELECT NEW.referer WHERE NEW.referer IS NOT NULL
{{SQLITE}}; INSERT OR IGNORE INTO visit_ips (ip) SELECT NEW.ip WHERE NEW.ip IS NOT NULL
{{SQLITE}}; UPDATE visit_rows SET id = NEW.id, tracker_id = NEW.tracker_id, visit_start = NEW.visit_start, click = CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, bot = NEW.bot, visitor = NEW.visitor, ua_id = (SELECT id FROM visit_uas WHERE k = COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-')), place_id = (SELECT id FROM visit_places WHERE k = COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-')), ref_id = (SELECT id FROM visit_referers WHERE referer = NEW.referer), ip_id = (SELECT id FROM visit_ips WHERE ip = NEW.ip) WHERE id = OLD.id
{{SQLITE}}; END;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE TRIGGER visits_delete INSTEAD OF DELETE ON visits BEGIN DELETE FROM visit_rows WHERE id = OLD.id; END;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE OR REPLACE FUNCTION qrt_visits_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE u BIGINT; g BIGINT; r BIGINT; a BIGINT; ku TEXT; kg TEXT
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
; IF TG_OP = 'INSERT' THEN INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id) VALUES (COALESCE(NEW.id, nextval(pg_get_serial_sequence('visit_rows', 'id'))), NEW.tracker_id, NEW.visit_start, CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, COALESCE(NEW.bot, 0), NEW.visitor, u, g, r, a)
; ELSE UPDATE visit_rows SET id = NEW.id, tracker_id = NEW.tracker_id, visit_start = NEW.visit_start, click = CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, bot = NEW.bot, visitor = NEW.visitor, ua_id = u, place_id = g, ref_id = r, ip_id = a WHERE id = OLD.id
; END IF
; RETURN NEW
; END $$;
{{PGSQL}}{{UNLESS_TABLE:visit_rows}}CREATE TRIGGER visits_write INSTEAD OF INSERT OR UPDATE OR DELETE ON visits FOR EACH ROW EXECUTE FUNCTION qrt_visits_write();
-- SQLite: a tracker's visitors in one b-tree ordered by its key (the table and its
-- primary key's index were two, each holding the visitor).
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}CREATE TABLE tracker_visitors7 (tracker_id BIGINT NOT NULL, visitor CHAR(16) NOT NULL, first_visit BIGINT NOT NULL, PRIMARY KEY (tracker_id, visitor)) WITHOUT ROWID;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}INSERT INTO tracker_visitors7 (tracker_id, visitor, first_visit) SELECT tracker_id, visitor, first_visit FROM tracker_visitors ORDER BY tracker_id, visitor;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}DROP TABLE tracker_visitors;
{{SQLITE}}{{UNLESS_TABLE:visit_rows}}ALTER TABLE tracker_visitors7 RENAME TO tracker_visitors;
UPDATE qrt_schema SET version = 7;
