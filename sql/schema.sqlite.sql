-- The schema of mod_qrtrack on SQLite, version 67: what the migrations
-- sql/0NN_*.sql make (they are what runs; this file is for reading). Generated from a
-- freshly migrated database by `make schema-files`; test/api/test_schema.py checks it.

CREATE TABLE qrt_schema (
    version INTEGER NOT NULL
);

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    name VARCHAR(64) NOT NULL UNIQUE,
    plan VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    name VARCHAR(128) NOT NULL,
    prefix VARCHAR(16) NOT NULL,
    digest CHAR(64) NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    scope VARCHAR(8) NOT NULL DEFAULT 'write', expires_at BIGINT
);

CREATE INDEX tokens_account ON tokens (account_id);

CREATE TABLE trackers (
    id INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    code VARCHAR(32) NOT NULL UNIQUE,
    name VARCHAR(255) NOT NULL,
    type VARCHAR(16) NOT NULL,
    redirect_url VARCHAR(2048) NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT,
    total_scans BIGINT NOT NULL DEFAULT 0,
    total_clicks BIGINT NOT NULL DEFAULT 0,
    total_bots BIGINT NOT NULL DEFAULT 0,
    unique_visitors BIGINT NOT NULL DEFAULT 0,
    last_visit BIGINT,
    last_visit_id BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX trackers_account ON trackers (account_id, id);

CREATE TRIGGER trackers_version_ins AFTER INSERT ON trackers BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER trackers_version_upd AFTER UPDATE OF account_id, name, type, deleted_at ON trackers BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER trackers_version_del AFTER DELETE ON trackers BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE INDEX trackers_updated ON trackers (updated_at);

CREATE TABLE tracker_tags (
    tracker_id BIGINT NOT NULL REFERENCES trackers (id),
    tag VARCHAR(64) NOT NULL,
    dimension VARCHAR(64),
    value VARCHAR(64) NOT NULL,
    PRIMARY KEY (tracker_id, tag)
);

CREATE TRIGGER tracker_tags_version_ins AFTER INSERT ON tracker_tags BEGIN
INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = NEW.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER tracker_tags_version_upd AFTER UPDATE ON tracker_tags BEGIN
INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id IN (OLD.tracker_id, NEW.tracker_id) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER tracker_tags_version_del AFTER DELETE ON tracker_tags BEGIN
INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = OLD.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TABLE agg_trk (
    tracker_id BIGINT NOT NULL PRIMARY KEY,
    account_id BIGINT NOT NULL,
    type VARCHAR(16) NOT NULL
);

CREATE INDEX agg_trk_account ON agg_trk (account_id, tracker_id);

CREATE TRIGGER agg_trk_version_ins AFTER INSERT ON agg_trk BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER agg_trk_version_upd AFTER UPDATE ON agg_trk BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER agg_trk_version_del AFTER DELETE ON agg_trk BEGIN
INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TABLE agg_tag (
    tracker_id BIGINT NOT NULL,
    tag VARCHAR(64) NOT NULL,
    PRIMARY KEY (tracker_id, tag)
);

CREATE TRIGGER agg_tag_version_ins AFTER INSERT ON agg_tag BEGIN
INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = NEW.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER agg_tag_version_del AFTER DELETE ON agg_tag BEGIN
INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = OLD.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1;
END;

CREATE TABLE agg_cnt (
    kind SMALLINT NOT NULL,
    account_id BIGINT NOT NULL,
    level SMALLINT NOT NULL,
    bucket BIGINT NOT NULL,
    tracker_id BIGINT NOT NULL,
    value VARCHAR(255) NOT NULL,
    scans BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    first_visits BIGINT NOT NULL,
    followed_visits BIGINT NOT NULL,
    PRIMARY KEY (kind, account_id, level, bucket, tracker_id, value)
);

CREATE INDEX agg_cnt_grp ON agg_cnt (kind, account_id, tracker_id, level, bucket);

CREATE TABLE agg_day (
    account_id BIGINT NOT NULL,
    quarter_hour BIGINT NOT NULL,
    quarters_since_previous SMALLINT NOT NULL,
    scans BIGINT NOT NULL,
    clicks BIGINT NOT NULL, last_start BIGINT,
    PRIMARY KEY (account_id, quarter_hour, quarters_since_previous)
);

CREATE TABLE qrt_settings (
    name VARCHAR(64) PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE visit_uas (
    id INTEGER PRIMARY KEY,
    k TEXT NOT NULL UNIQUE,
    user_agent VARCHAR(1024),
    browser VARCHAR(64),
    browser_version VARCHAR(32),
    os VARCHAR(64),
    device VARCHAR(16),
    refs BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE visit_places (
    id INTEGER PRIMARY KEY,
    k TEXT NOT NULL UNIQUE,
    country VARCHAR(8),
    city VARCHAR(128)
);

CREATE TABLE visit_referers (
    id INTEGER PRIMARY KEY,
    referer VARCHAR(2048) NOT NULL UNIQUE,
    refs BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE visit_ips (
    id INTEGER PRIMARY KEY,
    ip VARCHAR(64) NOT NULL UNIQUE,
    refs BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE agg_blob (
    account_id BIGINT NOT NULL,
    level SMALLINT NOT NULL,
    bucket BIGINT NOT NULL,
    kind SMALLINT NOT NULL,
    data TEXT NOT NULL, seal BIGINT,
    PRIMARY KEY (account_id, level, bucket, kind)
);

CREATE INDEX agg_blob_seals ON agg_blob (account_id, level, kind, bucket, seal);

CREATE INDEX agg_blob_unhashed ON agg_blob (account_id, level, kind, bucket) WHERE seal IS NULL;

CREATE TRIGGER agg_blob_seal_kept AFTER UPDATE OF data ON agg_blob WHEN new.seal IS old.seal AND new.data IS NOT old.data BEGIN UPDATE agg_blob SET seal = NULL WHERE rowid = new.rowid; END;

CREATE TABLE agg_unsealed (
    account_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    PRIMARY KEY (account_id, day)
);

CREATE TABLE visit_seq (last BIGINT NOT NULL);

CREATE TABLE "visit_rows" (
    id BIGINT NOT NULL,
    tracker_id BIGINT NOT NULL,
    visit_start BIGINT NOT NULL,
    click SMALLINT NOT NULL,
    bot SMALLINT NOT NULL,
    visitor BIGINT NOT NULL,
    ua_id BIGINT NOT NULL,
    place_id BIGINT NOT NULL,
    ref_id BIGINT,
    ip_id BIGINT, dest_id BIGINT,
    PRIMARY KEY (tracker_id, visit_start, id)
) WITHOUT ROWID;

CREATE INDEX visits_ua ON visit_rows (tracker_id, ua_id, visit_start);

CREATE INDEX visits_place ON visit_rows (tracker_id, place_id, visit_start);

CREATE INDEX visits_ref ON visit_rows (tracker_id, ref_id, visit_start) WHERE ref_id IS NOT NULL;

CREATE INDEX visits_ip ON visit_rows (tracker_id, ip_id, visit_start) WHERE ip_id IS NOT NULL;

CREATE INDEX visits_visitor ON visit_rows (visitor, visit_start, id) WHERE bot = 0;

CREATE TRIGGER visit_refs_del AFTER DELETE ON visit_rows BEGIN
UPDATE visit_uas SET refs = refs - 1 WHERE id = OLD.ua_id;
UPDATE visit_referers SET refs = refs - 1 WHERE id = OLD.ref_id;
UPDATE visit_ips SET refs = refs - 1 WHERE id = OLD.ip_id;
UPDATE visit_destinations SET refs = refs - 1 WHERE id = OLD.dest_id;
END;

CREATE TRIGGER visit_refs_upd AFTER UPDATE OF ua_id, ref_id, ip_id, dest_id ON visit_rows BEGIN
UPDATE visit_uas SET refs = refs + (id = NEW.ua_id) - (id = OLD.ua_id) WHERE id IN (OLD.ua_id, NEW.ua_id) AND NEW.ua_id IS NOT OLD.ua_id;
UPDATE visit_referers SET refs = refs + (id IS NEW.ref_id) - (id IS OLD.ref_id) WHERE id IN (OLD.ref_id, NEW.ref_id) AND NEW.ref_id IS NOT OLD.ref_id;
UPDATE visit_ips SET refs = refs + (id IS NEW.ip_id) - (id IS OLD.ip_id) WHERE id IN (OLD.ip_id, NEW.ip_id) AND NEW.ip_id IS NOT OLD.ip_id;
UPDATE visit_destinations SET refs = refs + (id IS NEW.dest_id) - (id IS OLD.dest_id) WHERE id IN (OLD.dest_id, NEW.dest_id) AND NEW.dest_id IS NOT OLD.dest_id;
END;

CREATE TRIGGER visit_refs_ins AFTER INSERT ON visit_rows WHEN NOT EXISTS (SELECT 1 FROM visit_refs_batch WHERE first <= NEW.id AND last >= NEW.id) BEGIN
UPDATE visit_uas SET refs = refs + 1 WHERE id = NEW.ua_id;
UPDATE visit_referers SET refs = refs + 1 WHERE id = NEW.ref_id;
UPDATE visit_ips SET refs = refs + 1 WHERE id = NEW.ip_id;
UPDATE visit_destinations SET refs = refs + 1 WHERE id = NEW.dest_id;
END;

CREATE INDEX visits_dest ON visit_rows (visit_start) WHERE dest_id IS NOT NULL;

CREATE INDEX visits_tracker_dest ON visit_rows (tracker_id, visit_start) WHERE dest_id IS NOT NULL;

CREATE TABLE agg_bcy (id INTEGER PRIMARY KEY, browser VARCHAR(64) NOT NULL, country VARCHAR(8) NOT NULL, city VARCHAR(128) NOT NULL, UNIQUE (browser, country, city) );

CREATE TABLE agg_vals (id INTEGER PRIMARY KEY, value VARCHAR(255) NOT NULL UNIQUE);

CREATE TABLE visit_floor (bucket INTEGER PRIMARY KEY, min_start BIGINT NOT NULL);

CREATE TABLE "tracker_visitors" (tracker_id BIGINT NOT NULL, visitor BIGINT NOT NULL, first_visit BIGINT NOT NULL, PRIMARY KEY (tracker_id, visitor)) WITHOUT ROWID;

CREATE TABLE "agg_link" (account_id BIGINT NOT NULL, previous_time BIGINT NOT NULL, visit_time BIGINT NOT NULL, flags SMALLINT NOT NULL, tracker_id BIGINT NOT NULL, browser_country_city_id BIGINT NOT NULL, visit_count BIGINT NOT NULL, unsealed SMALLINT NOT NULL DEFAULT 1, PRIMARY KEY (account_id, previous_time, visit_time, flags, tracker_id, browser_country_city_id)) WITHOUT ROWID;

CREATE INDEX agg_link_u ON agg_link (account_id, visit_time, visit_count, unsealed) WHERE unsealed = 1;

CREATE TABLE "agg_gaps" (kind SMALLINT NOT NULL, account_id BIGINT NOT NULL, previous_time BIGINT NOT NULL, visit_time BIGINT NOT NULL, tracker_id BIGINT NOT NULL, value_id BIGINT NOT NULL, visit_count BIGINT NOT NULL, unsealed SMALLINT NOT NULL DEFAULT 1, PRIMARY KEY (kind, account_id, previous_time, visit_time, tracker_id, value_id)) WITHOUT ROWID;

CREATE INDEX agg_gaps_u ON agg_gaps (kind, account_id, visit_time, visit_count, unsealed) WHERE unsealed = 1;

CREATE TABLE trackers_version (
    account_id BIGINT PRIMARY KEY,
    version BIGINT NOT NULL
);

CREATE TABLE spool_marks (
    node VARCHAR(64) PRIMARY KEY,
    seq BIGINT NOT NULL
);

CREATE TABLE visit_dict_gen (gen BIGINT NOT NULL);

CREATE TABLE tracker_routing (
    tracker_id BIGINT PRIMARY KEY REFERENCES trackers (id),
    rules TEXT,
    valid_from BIGINT,
    valid_until BIGINT,
    max_scans BIGINT,
    expired_url VARCHAR(2048),
    password_hash VARCHAR(255),
    redirected BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE visit_destinations (
    id INTEGER PRIMARY KEY,
    url VARCHAR(2048) NOT NULL UNIQUE,
    refs BIGINT NOT NULL DEFAULT 0
);

CREATE VIEW visits AS SELECT v.id AS id, v.tracker_id AS tracker_id, v.visit_start AS visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END AS source, i.ip AS ip, g.country AS country, g.city AS city, u.browser AS browser, u.browser_version AS browser_version, u.os AS os, u.device AS device, r.referer AS referer, u.user_agent AS user_agent, v.bot AS bot, CASE WHEN typeof(v.visitor) = 'integer' THEN printf('%016x', v.visitor) ELSE v.visitor END AS visitor, d.url AS destination FROM visit_rows v LEFT JOIN visit_ips i ON i.id = v.ip_id LEFT JOIN visit_places g ON g.id = v.place_id LEFT JOIN visit_uas u ON u.id = v.ua_id LEFT JOIN visit_referers r ON r.id = v.ref_id LEFT JOIN visit_destinations d ON d.id = v.dest_id;

CREATE TRIGGER visits_insert INSTEAD OF INSERT ON visits BEGIN
INSERT OR IGNORE INTO visit_uas (k, user_agent, browser, browser_version, os, device) VALUES (COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-'), NEW.user_agent, NEW.browser, NEW.browser_version, NEW.os, NEW.device);
INSERT OR IGNORE INTO visit_places (k, country, city) VALUES (COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-'), NEW.country, NEW.city);
INSERT OR IGNORE INTO visit_referers (referer) SELECT NEW.referer WHERE NEW.referer IS NOT NULL;
INSERT OR IGNORE INTO visit_ips (ip) SELECT NEW.ip WHERE NEW.ip IS NOT NULL;
INSERT OR IGNORE INTO visit_destinations (url) SELECT NEW.destination WHERE NEW.destination IS NOT NULL;
UPDATE visit_seq SET last = MAX(last, COALESCE(NEW.id, last + 1));
INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id, ip_id, dest_id) VALUES (COALESCE(NEW.id, (SELECT last FROM visit_seq)), NEW.tracker_id, NEW.visit_start, CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, COALESCE(NEW.bot, 0), (CASE WHEN typeof(NEW.visitor) = 'integer' THEN NEW.visitor WHEN length(NEW.visitor) = 16 AND NEW.visitor NOT GLOB '*[^0-9a-f]*' THEN (((instr('0123456789abcdef', substr(NEW.visitor, 1, 1)) - 1) << 60) | ((instr('0123456789abcdef', substr(NEW.visitor, 2, 1)) - 1) << 56) | ((instr('0123456789abcdef', substr(NEW.visitor, 3, 1)) - 1) << 52) | ((instr('0123456789abcdef', substr(NEW.visitor, 4, 1)) - 1) << 48) | ((instr('0123456789abcdef', substr(NEW.visitor, 5, 1)) - 1) << 44) | ((instr('0123456789abcdef', substr(NEW.visitor, 6, 1)) - 1) << 40) | ((instr('0123456789abcdef', substr(NEW.visitor, 7, 1)) - 1) << 36) | ((instr('0123456789abcdef', substr(NEW.visitor, 8, 1)) - 1) << 32) | ((instr('0123456789abcdef', substr(NEW.visitor, 9, 1)) - 1) << 28) | ((instr('0123456789abcdef', substr(NEW.visitor, 10, 1)) - 1) << 24) | ((instr('0123456789abcdef', substr(NEW.visitor, 11, 1)) - 1) << 20) | ((instr('0123456789abcdef', substr(NEW.visitor, 12, 1)) - 1) << 16) | ((instr('0123456789abcdef', substr(NEW.visitor, 13, 1)) - 1) << 12) | ((instr('0123456789abcdef', substr(NEW.visitor, 14, 1)) - 1) << 8) | ((instr('0123456789abcdef', substr(NEW.visitor, 15, 1)) - 1) << 4) | ((instr('0123456789abcdef', substr(NEW.visitor, 16, 1)) - 1) << 0)) ELSE (((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 1, 1)) - 1) << 60) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 2, 1)) - 1) << 56) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 3, 1)) - 1) << 52) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 4, 1)) - 1) << 48) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 5, 1)) - 1) << 44) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 6, 1)) - 1) << 40) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 7, 1)) - 1) << 36) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 8, 1)) - 1) << 32) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 9, 1)) - 1) << 28) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 10, 1)) - 1) << 24) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 11, 1)) - 1) << 20) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 12, 1)) - 1) << 16) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 13, 1)) - 1) << 12) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 14, 1)) - 1) << 8) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 15, 1)) - 1) << 4) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 16, 1)) - 1) << 0)) END), (SELECT id FROM visit_uas WHERE k = COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-')), (SELECT id FROM visit_places WHERE k = COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-')), (SELECT id FROM visit_referers WHERE referer = NEW.referer), (SELECT id FROM visit_ips WHERE ip = NEW.ip), (SELECT id FROM visit_destinations WHERE url = NEW.destination));
INSERT INTO visit_floor (bucket, min_start) VALUES (COALESCE(NEW.id, (SELECT last FROM visit_seq)) >> 12, NEW.visit_start) ON CONFLICT (bucket) DO UPDATE SET min_start = excluded.min_start WHERE excluded.min_start < visit_floor.min_start;
UPDATE trackers SET last_visit_id = COALESCE(NEW.id, (SELECT last FROM visit_seq)) WHERE id = NEW.tracker_id AND last_visit_id < COALESCE(NEW.id, (SELECT last FROM visit_seq));
END;

CREATE TRIGGER visits_update INSTEAD OF UPDATE ON visits BEGIN
INSERT OR IGNORE INTO visit_uas (k, user_agent, browser, browser_version, os, device) VALUES (COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-'), NEW.user_agent, NEW.browser, NEW.browser_version, NEW.os, NEW.device);
INSERT OR IGNORE INTO visit_places (k, country, city) VALUES (COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-'), NEW.country, NEW.city);
INSERT OR IGNORE INTO visit_referers (referer) SELECT NEW.referer WHERE NEW.referer IS NOT NULL;
INSERT OR IGNORE INTO visit_ips (ip) SELECT NEW.ip WHERE NEW.ip IS NOT NULL;
INSERT OR IGNORE INTO visit_destinations (url) SELECT NEW.destination WHERE NEW.destination IS NOT NULL;
UPDATE visit_seq SET last = MAX(last, NEW.id);
UPDATE visit_rows SET id = NEW.id, tracker_id = NEW.tracker_id, visit_start = NEW.visit_start, click = CASE WHEN NEW.source = 'click' THEN 1 ELSE 0 END, bot = NEW.bot, visitor = (CASE WHEN typeof(NEW.visitor) = 'integer' THEN NEW.visitor WHEN length(NEW.visitor) = 16 AND NEW.visitor NOT GLOB '*[^0-9a-f]*' THEN (((instr('0123456789abcdef', substr(NEW.visitor, 1, 1)) - 1) << 60) | ((instr('0123456789abcdef', substr(NEW.visitor, 2, 1)) - 1) << 56) | ((instr('0123456789abcdef', substr(NEW.visitor, 3, 1)) - 1) << 52) | ((instr('0123456789abcdef', substr(NEW.visitor, 4, 1)) - 1) << 48) | ((instr('0123456789abcdef', substr(NEW.visitor, 5, 1)) - 1) << 44) | ((instr('0123456789abcdef', substr(NEW.visitor, 6, 1)) - 1) << 40) | ((instr('0123456789abcdef', substr(NEW.visitor, 7, 1)) - 1) << 36) | ((instr('0123456789abcdef', substr(NEW.visitor, 8, 1)) - 1) << 32) | ((instr('0123456789abcdef', substr(NEW.visitor, 9, 1)) - 1) << 28) | ((instr('0123456789abcdef', substr(NEW.visitor, 10, 1)) - 1) << 24) | ((instr('0123456789abcdef', substr(NEW.visitor, 11, 1)) - 1) << 20) | ((instr('0123456789abcdef', substr(NEW.visitor, 12, 1)) - 1) << 16) | ((instr('0123456789abcdef', substr(NEW.visitor, 13, 1)) - 1) << 12) | ((instr('0123456789abcdef', substr(NEW.visitor, 14, 1)) - 1) << 8) | ((instr('0123456789abcdef', substr(NEW.visitor, 15, 1)) - 1) << 4) | ((instr('0123456789abcdef', substr(NEW.visitor, 16, 1)) - 1) << 0)) ELSE (((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 1, 1)) - 1) << 60) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 2, 1)) - 1) << 56) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 3, 1)) - 1) << 52) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 4, 1)) - 1) << 48) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 5, 1)) - 1) << 44) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 6, 1)) - 1) << 40) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 7, 1)) - 1) << 36) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 8, 1)) - 1) << 32) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 9, 1)) - 1) << 28) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 10, 1)) - 1) << 24) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 11, 1)) - 1) << 20) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 12, 1)) - 1) << 16) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 13, 1)) - 1) << 12) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 14, 1)) - 1) << 8) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 15, 1)) - 1) << 4) | ((instr('0123456789abcdef', substr(substr(lower(hex(NEW.visitor)) || '0000000000000000', 1, 16), 16, 1)) - 1) << 0)) END), ua_id = (SELECT id FROM visit_uas WHERE k = COALESCE(length(CAST(NEW.user_agent AS BLOB)) || ':' || NEW.user_agent, '-') || COALESCE(length(CAST(NEW.browser AS BLOB)) || ':' || NEW.browser, '-') || COALESCE(length(CAST(NEW.browser_version AS BLOB)) || ':' || NEW.browser_version, '-') || COALESCE(length(CAST(NEW.os AS BLOB)) || ':' || NEW.os, '-') || COALESCE(length(CAST(NEW.device AS BLOB)) || ':' || NEW.device, '-')), place_id = (SELECT id FROM visit_places WHERE k = COALESCE(length(CAST(NEW.country AS BLOB)) || ':' || NEW.country, '-') || COALESCE(length(CAST(NEW.city AS BLOB)) || ':' || NEW.city, '-')), ref_id = (SELECT id FROM visit_referers WHERE referer = NEW.referer), ip_id = (SELECT id FROM visit_ips WHERE ip = NEW.ip), dest_id = (SELECT id FROM visit_destinations WHERE url = NEW.destination) WHERE tracker_id = OLD.tracker_id AND visit_start = OLD.visit_start AND id = OLD.id;
INSERT INTO visit_floor (bucket, min_start) VALUES (NEW.id >> 12, NEW.visit_start) ON CONFLICT (bucket) DO UPDATE SET min_start = excluded.min_start WHERE excluded.min_start < visit_floor.min_start;
UPDATE trackers SET last_visit_id = NEW.id WHERE id = NEW.tracker_id AND last_visit_id < NEW.id;
END;

CREATE TRIGGER visits_delete INSTEAD OF DELETE ON visits BEGIN DELETE FROM visit_rows WHERE tracker_id = OLD.tracker_id AND visit_start = OLD.visit_start AND id = OLD.id; END;

CREATE TABLE webhook_events (
    id INTEGER PRIMARY KEY,
    webhook_id BIGINT NOT NULL,
    msg_id VARCHAR(64) NOT NULL,
    event_type VARCHAR(32) NOT NULL,
    tracker_id BIGINT,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    state SMALLINT NOT NULL DEFAULT 0,
    claimed_until BIGINT,
    visit_id BIGINT, visit_start BIGINT, claimed_by BIGINT
);

CREATE INDEX webhook_events_pending ON webhook_events (webhook_id, tracker_id, id) WHERE state = 0;

CREATE INDEX webhook_events_leased ON webhook_events (claimed_by) WHERE claimed_until IS NOT NULL;

CREATE INDEX webhook_events_state ON webhook_events (webhook_id, state, id);

CREATE TABLE webhook_attempts (
    id INTEGER PRIMARY KEY,
    event_id BIGINT NOT NULL,
    webhook_id BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    http_status INTEGER,
    error VARCHAR(255),
    at BIGINT NOT NULL,
    next_attempt_at BIGINT
);

CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);

CREATE TABLE styles (
    id INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    name VARCHAR(64) NOT NULL,
    fg VARCHAR(7) NOT NULL,
    bg VARCHAR(7) NOT NULL,
    ecc VARCHAR(1) NOT NULL,
    margin INTEGER NOT NULL,
    logo BLOB,
    logo_width INTEGER,
    logo_height INTEGER,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (account_id, name)
);

CREATE TABLE idempotency_keys (
    token_id BIGINT NOT NULL,
    idem_key VARCHAR(255) NOT NULL,
    request_hash VARCHAR(64) NOT NULL,
    status INTEGER NOT NULL,
    content_type VARCHAR(100) NOT NULL,
    body TEXT NOT NULL,
    tracker_id BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (token_id, idem_key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE tracker_history (
    id INTEGER PRIMARY KEY,
    tracker_id BIGINT NOT NULL REFERENCES trackers (id),
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    at BIGINT NOT NULL,
    token_label VARCHAR(128),
    kind VARCHAR(8) NOT NULL,
    changes TEXT NOT NULL
);

CREATE INDEX tracker_history_by_tracker ON tracker_history (tracker_id, id);

CREATE TABLE visit_refs_batch (first INTEGER PRIMARY KEY, last BIGINT NOT NULL);

CREATE TABLE webhook_drops (
    id INTEGER PRIMARY KEY,
    webhook_id BIGINT NOT NULL,
    at BIGINT NOT NULL,
    n BIGINT NOT NULL,
    UNIQUE (webhook_id, at)
);

CREATE TABLE visit_refs_due (d SMALLINT NOT NULL, id BIGINT NOT NULL, n BIGINT NOT NULL);

CREATE TABLE "webhooks" (id INTEGER PRIMARY KEY AUTOINCREMENT, account_id BIGINT NOT NULL REFERENCES accounts (id), url VARCHAR(2048) NOT NULL, events INTEGER NOT NULL, secret VARCHAR(128) NOT NULL, created_at BIGINT NOT NULL, failures INTEGER NOT NULL DEFAULT 0, disabled_at BIGINT, disabled_reason VARCHAR(255), rev BIGINT NOT NULL DEFAULT 0, secret_prev VARCHAR(128), secret_prev_until BIGINT);

CREATE INDEX webhooks_account ON webhooks (account_id);
