-- The schema of mod_qrtrack on PostgreSQL, version 67: what the migrations
-- sql/0NN_*.sql make (they are what runs; this file is for reading). Generated from a
-- freshly migrated database by `make schema-files`; test/api/test_schema.py checks it.

-- (the functions are made before the tables that their bodies name)
SET check_function_bodies = false;

CREATE FUNCTION qrt_agg_blob_seal_kept() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN IF NEW.seal IS NOT DISTINCT FROM OLD.seal AND NEW.data IS DISTINCT FROM OLD.data THEN NEW.seal := NULL; END IF; RETURN NEW; END $$;

CREATE FUNCTION qrt_own_ids(t bigint, col text, cap bigint) RETURNS SETOF bigint
    LANGUAGE plpgsql STABLE
    AS $$ DECLARE cur BIGINT := -9223372036854775808; nxt BIGINT; i BIGINT := 0; BEGIN
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

CREATE FUNCTION qrt_trackers_version_acct() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN IF TG_OP <> 'INSERT' THEN PERFORM qrt_trackers_version_up(OLD.account_id); END IF; IF TG_OP <> 'DELETE' THEN PERFORM qrt_trackers_version_up(NEW.account_id); END IF; RETURN NULL; END $$;

CREATE FUNCTION qrt_trackers_version_trk() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN IF TG_OP <> 'INSERT' THEN PERFORM qrt_trackers_version_up((SELECT account_id FROM trackers WHERE id = OLD.tracker_id)); END IF; IF TG_OP <> 'DELETE' THEN PERFORM qrt_trackers_version_up((SELECT account_id FROM trackers WHERE id = NEW.tracker_id)); END IF; RETURN NULL; END $$;

CREATE FUNCTION qrt_trackers_version_up(acct bigint) RETURNS void
    LANGUAGE sql
    AS $$ INSERT INTO trackers_version (account_id, version) SELECT acct, 1 WHERE acct IS NOT NULL ON CONFLICT (account_id) DO UPDATE SET version = trackers_version.version + 1 WHERE trackers_version.xmin::text::bigint <> txid_current() % 4294967296 $$;

CREATE FUNCTION qrt_visit_refs() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN
IF TG_OP = 'TRUNCATE' THEN DELETE FROM visit_refs; RETURN NULL; END IF
; IF TG_OP <> 'INSERT' THEN
UPDATE visit_refs k SET n = k.n - c.n FROM (SELECT d, id, COUNT(*) AS n FROM (SELECT 1 AS d, ua_id AS id FROM qrt_old UNION ALL SELECT 2, ref_id FROM qrt_old WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_old WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_old WHERE dest_id IS NOT NULL) o GROUP BY 1, 2) c WHERE k.d = c.d AND k.id = c.id
; END IF
; IF TG_OP <> 'DELETE' THEN
INSERT INTO visit_refs (d, id, n) SELECT d, id, COUNT(*) FROM (SELECT 1 AS d, ua_id AS id FROM qrt_new UNION ALL SELECT 2, ref_id FROM qrt_new WHERE ref_id IS NOT NULL UNION ALL SELECT 3, ip_id FROM qrt_new WHERE ip_id IS NOT NULL UNION ALL SELECT 4, dest_id FROM qrt_new WHERE dest_id IS NOT NULL) o GROUP BY 1, 2 ORDER BY 1, 2 ON CONFLICT (d, id) DO UPDATE SET n = visit_refs.n + excluded.n
; END IF
; RETURN NULL
; END $$;

CREATE FUNCTION qrt_visitor_bigint(v bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT v $$;

CREATE FUNCTION qrt_visitor_bigint(v text) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $_$ SELECT CASE WHEN v ~ '^[0-9a-f]{16}$' THEN ('x' || v)::bit(64)::bigint ELSE ('x' || substr(md5(v), 1, 16))::bit(64)::bigint END $_$;

CREATE FUNCTION qrt_visits_write() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE TABLE accounts (
    id bigint NOT NULL,
    name character varying(64) NOT NULL,
    plan character varying(16) NOT NULL,
    created_at bigint NOT NULL
);

CREATE SEQUENCE accounts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE accounts_id_seq OWNED BY accounts.id;

CREATE TABLE agg_bcy (
    id bigint NOT NULL,
    browser character varying(64) NOT NULL,
    country character varying(8) NOT NULL,
    city character varying(128) NOT NULL
);

CREATE SEQUENCE agg_bcy_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE agg_bcy_id_seq OWNED BY agg_bcy.id;

CREATE TABLE agg_blob (
    account_id bigint NOT NULL,
    level smallint NOT NULL,
    bucket bigint NOT NULL,
    kind smallint NOT NULL,
    data text NOT NULL,
    seal bigint
);

CREATE TABLE agg_cnt (
    scans bigint NOT NULL,
    clicks bigint NOT NULL,
    first_visits bigint NOT NULL,
    followed_visits bigint NOT NULL,
    account_id integer NOT NULL,
    bucket integer NOT NULL,
    tracker_id integer NOT NULL,
    kind smallint NOT NULL,
    level smallint NOT NULL,
    value character varying(255) NOT NULL
);

CREATE TABLE agg_day (
    account_id bigint NOT NULL,
    quarter_hour bigint NOT NULL,
    quarters_since_previous smallint NOT NULL,
    scans bigint NOT NULL,
    clicks bigint NOT NULL,
    last_start bigint
);

CREATE TABLE agg_gaps (
    visit_time bigint NOT NULL,
    previous_time bigint NOT NULL,
    value_id bigint NOT NULL,
    account_id integer NOT NULL,
    tracker_id integer NOT NULL,
    visit_count integer NOT NULL,
    kind smallint NOT NULL,
    unsealed smallint DEFAULT 1 NOT NULL
);

CREATE TABLE agg_link (
    visit_time bigint NOT NULL,
    previous_time bigint NOT NULL,
    browser_country_city_id bigint NOT NULL,
    account_id integer NOT NULL,
    tracker_id integer NOT NULL,
    visit_count integer NOT NULL,
    flags smallint NOT NULL,
    unsealed smallint DEFAULT 1 NOT NULL
);

CREATE TABLE agg_tag (
    tracker_id bigint NOT NULL,
    tag character varying(64) NOT NULL
);

CREATE TABLE agg_trk (
    tracker_id bigint NOT NULL,
    account_id bigint NOT NULL,
    type character varying(16) NOT NULL
);

CREATE TABLE agg_unsealed (
    account_id bigint NOT NULL,
    day bigint NOT NULL
);

CREATE TABLE agg_vals (
    id bigint NOT NULL,
    value character varying(255) NOT NULL
);

CREATE SEQUENCE agg_vals_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE agg_vals_id_seq OWNED BY agg_vals.id;

CREATE TABLE idempotency_keys (
    token_id bigint NOT NULL,
    idem_key character varying(255) NOT NULL,
    request_hash character varying(64) NOT NULL,
    status integer NOT NULL,
    content_type character varying(100) NOT NULL,
    body text NOT NULL,
    tracker_id bigint,
    created_at bigint NOT NULL
);

CREATE TABLE qrt_schema (
    version integer NOT NULL
);

CREATE TABLE qrt_settings (
    name character varying(64) NOT NULL,
    value text NOT NULL
);

CREATE TABLE spool_marks (
    node character varying(64) NOT NULL,
    seq bigint NOT NULL
);

CREATE TABLE styles (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    name character varying(64) NOT NULL,
    fg character varying(7) NOT NULL,
    bg character varying(7) NOT NULL,
    ecc character varying(1) NOT NULL,
    margin integer NOT NULL,
    logo bytea,
    logo_width integer,
    logo_height integer,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    version integer DEFAULT 1 NOT NULL
);

CREATE SEQUENCE styles_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE styles_id_seq OWNED BY styles.id;

CREATE TABLE tokens (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    name character varying(128) NOT NULL,
    prefix character varying(16) NOT NULL,
    digest character(64) NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint,
    scope character varying(8) DEFAULT 'write'::character varying NOT NULL,
    expires_at bigint
);

CREATE SEQUENCE tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE tokens_id_seq OWNED BY tokens.id;

CREATE TABLE tracker_history (
    id bigint NOT NULL,
    tracker_id bigint NOT NULL,
    account_id bigint NOT NULL,
    at bigint NOT NULL,
    token_label character varying(128),
    kind character varying(8) NOT NULL,
    changes text NOT NULL
);

CREATE SEQUENCE tracker_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE tracker_history_id_seq OWNED BY tracker_history.id;

CREATE TABLE tracker_routing (
    tracker_id bigint NOT NULL,
    rules text,
    valid_from bigint,
    valid_until bigint,
    max_scans bigint,
    expired_url character varying(2048),
    password_hash character varying(255),
    redirected bigint DEFAULT 0 NOT NULL
);

CREATE TABLE tracker_tags (
    tracker_id bigint NOT NULL,
    tag character varying(64) NOT NULL,
    dimension character varying(64),
    value character varying(64) NOT NULL
);

CREATE TABLE tracker_visitors (
    tracker_id bigint NOT NULL,
    visitor bigint NOT NULL,
    first_visit bigint NOT NULL
);

CREATE TABLE trackers (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    code character varying(64) NOT NULL,
    name character varying(255) NOT NULL,
    type character varying(16) NOT NULL,
    redirect_url character varying(2048) NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    deleted_at bigint,
    total_scans bigint DEFAULT 0 NOT NULL,
    total_clicks bigint DEFAULT 0 NOT NULL,
    total_bots bigint DEFAULT 0 NOT NULL,
    unique_visitors bigint DEFAULT 0 NOT NULL,
    last_visit bigint,
    last_visit_id bigint DEFAULT 0 NOT NULL
);

CREATE SEQUENCE trackers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE trackers_id_seq OWNED BY trackers.id;

CREATE TABLE trackers_version (
    account_id bigint NOT NULL,
    version bigint NOT NULL
);

CREATE TABLE visit_destinations (
    id bigint NOT NULL,
    url character varying(2048) NOT NULL
);

CREATE SEQUENCE visit_destinations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_destinations_id_seq OWNED BY visit_destinations.id;

CREATE TABLE visit_dict_gen (
    gen bigint NOT NULL
);

CREATE TABLE visit_floor (
    bucket bigint NOT NULL,
    min_start bigint NOT NULL
);

CREATE TABLE visit_ips (
    id bigint NOT NULL,
    ip character varying(64) NOT NULL
);

CREATE SEQUENCE visit_ips_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_ips_id_seq OWNED BY visit_ips.id;

CREATE TABLE visit_places (
    id bigint NOT NULL,
    k text NOT NULL,
    country character varying(8),
    city character varying(128),
    country_lc text GENERATED ALWAYS AS (translate((country)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED,
    city_lc text GENERATED ALWAYS AS (translate((city)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED
);
ALTER TABLE ONLY visit_places ALTER COLUMN country_lc SET STATISTICS 0;
ALTER TABLE ONLY visit_places ALTER COLUMN city_lc SET STATISTICS 0;

CREATE SEQUENCE visit_places_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_places_id_seq OWNED BY visit_places.id;

CREATE TABLE visit_referers (
    id bigint NOT NULL,
    referer character varying(2048) NOT NULL,
    referer_lc text GENERATED ALWAYS AS (translate((referer)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED
);
ALTER TABLE ONLY visit_referers ALTER COLUMN referer_lc SET STATISTICS 0;

CREATE SEQUENCE visit_referers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_referers_id_seq OWNED BY visit_referers.id;

CREATE TABLE visit_refs (
    n bigint NOT NULL,
    id bigint NOT NULL,
    d smallint NOT NULL
)
WITH (fillfactor='50');

CREATE TABLE visit_rows (
    id bigint NOT NULL,
    visit_start bigint NOT NULL,
    visitor bigint NOT NULL,
    ua_id bigint NOT NULL,
    place_id bigint NOT NULL,
    ref_id bigint,
    ip_id bigint,
    dest_id bigint,
    tracker_id integer NOT NULL,
    click smallint NOT NULL,
    bot smallint NOT NULL
);

CREATE SEQUENCE visit_rows_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_rows_id_seq OWNED BY visit_rows.id;

CREATE TABLE visit_uas (
    id bigint NOT NULL,
    k text NOT NULL,
    user_agent character varying(1024),
    browser character varying(64),
    browser_version character varying(32),
    os character varying(64),
    device character varying(16),
    user_agent_lc text GENERATED ALWAYS AS (translate((user_agent)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED,
    browser_lc text GENERATED ALWAYS AS (translate((browser)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED,
    os_lc text GENERATED ALWAYS AS (translate((os)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED,
    device_lc text GENERATED ALWAYS AS (translate((device)::text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text, 'abcdefghijklmnopqrstuvwxyz'::text)) STORED
);
ALTER TABLE ONLY visit_uas ALTER COLUMN user_agent_lc SET STATISTICS 0;
ALTER TABLE ONLY visit_uas ALTER COLUMN browser_lc SET STATISTICS 0;
ALTER TABLE ONLY visit_uas ALTER COLUMN os_lc SET STATISTICS 0;
ALTER TABLE ONLY visit_uas ALTER COLUMN device_lc SET STATISTICS 0;

CREATE SEQUENCE visit_uas_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE visit_uas_id_seq OWNED BY visit_uas.id;

CREATE VIEW visits AS
 SELECT v.id,
    v.tracker_id,
    v.visit_start,
        CASE
            WHEN (v.click = 1) THEN 'click'::text
            ELSE 'scan'::text
        END AS source,
    i.ip,
    g.country,
    g.city,
    u.browser,
    u.browser_version,
    u.os,
    u.device,
    r.referer,
    u.user_agent,
    v.bot,
    lpad(to_hex(v.visitor), 16, '0'::text) AS visitor,
    d.url AS destination
   FROM (((((visit_rows v
     LEFT JOIN visit_ips i ON ((i.id = v.ip_id)))
     LEFT JOIN visit_places g ON ((g.id = v.place_id)))
     LEFT JOIN visit_uas u ON ((u.id = v.ua_id)))
     LEFT JOIN visit_referers r ON ((r.id = v.ref_id)))
     LEFT JOIN visit_destinations d ON ((d.id = v.dest_id)));

CREATE TABLE webhook_attempts (
    id bigint NOT NULL,
    event_id bigint NOT NULL,
    webhook_id bigint NOT NULL,
    attempt integer NOT NULL,
    http_status integer,
    error character varying(255),
    at bigint NOT NULL,
    next_attempt_at bigint
);

CREATE SEQUENCE webhook_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhook_attempts_id_seq OWNED BY webhook_attempts.id;

CREATE TABLE webhook_drops (
    id bigint NOT NULL,
    webhook_id bigint NOT NULL,
    at bigint NOT NULL,
    n bigint NOT NULL
);

CREATE SEQUENCE webhook_drops_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhook_drops_id_seq OWNED BY webhook_drops.id;

CREATE TABLE webhook_events (
    id bigint NOT NULL,
    webhook_id bigint NOT NULL,
    msg_id character varying(64) NOT NULL,
    event_type character varying(32) NOT NULL,
    tracker_id bigint,
    body text NOT NULL,
    created_at bigint NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at bigint NOT NULL,
    state smallint DEFAULT 0 NOT NULL,
    claimed_until bigint,
    visit_id bigint,
    visit_start bigint,
    claimed_by bigint
);

CREATE SEQUENCE webhook_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhook_events_id_seq OWNED BY webhook_events.id;

CREATE TABLE webhooks (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    url character varying(2048) NOT NULL,
    events integer NOT NULL,
    secret character varying(128) NOT NULL,
    created_at bigint NOT NULL,
    failures integer DEFAULT 0 NOT NULL,
    disabled_at bigint,
    disabled_reason character varying(255),
    rev bigint DEFAULT 0 NOT NULL,
    secret_prev character varying(128),
    secret_prev_until bigint
);

CREATE SEQUENCE webhooks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhooks_id_seq OWNED BY webhooks.id;

CREATE SEQUENCE webhooks_rev
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE ONLY accounts ALTER COLUMN id SET DEFAULT nextval('accounts_id_seq'::regclass);

ALTER TABLE ONLY agg_bcy ALTER COLUMN id SET DEFAULT nextval('agg_bcy_id_seq'::regclass);

ALTER TABLE ONLY agg_vals ALTER COLUMN id SET DEFAULT nextval('agg_vals_id_seq'::regclass);

ALTER TABLE ONLY styles ALTER COLUMN id SET DEFAULT nextval('styles_id_seq'::regclass);

ALTER TABLE ONLY tokens ALTER COLUMN id SET DEFAULT nextval('tokens_id_seq'::regclass);

ALTER TABLE ONLY tracker_history ALTER COLUMN id SET DEFAULT nextval('tracker_history_id_seq'::regclass);

ALTER TABLE ONLY trackers ALTER COLUMN id SET DEFAULT nextval('trackers_id_seq'::regclass);

ALTER TABLE ONLY visit_destinations ALTER COLUMN id SET DEFAULT nextval('visit_destinations_id_seq'::regclass);

ALTER TABLE ONLY visit_ips ALTER COLUMN id SET DEFAULT nextval('visit_ips_id_seq'::regclass);

ALTER TABLE ONLY visit_places ALTER COLUMN id SET DEFAULT nextval('visit_places_id_seq'::regclass);

ALTER TABLE ONLY visit_referers ALTER COLUMN id SET DEFAULT nextval('visit_referers_id_seq'::regclass);

ALTER TABLE ONLY visit_rows ALTER COLUMN id SET DEFAULT nextval('visit_rows_id_seq'::regclass);

ALTER TABLE ONLY visit_uas ALTER COLUMN id SET DEFAULT nextval('visit_uas_id_seq'::regclass);

ALTER TABLE ONLY webhook_attempts ALTER COLUMN id SET DEFAULT nextval('webhook_attempts_id_seq'::regclass);

ALTER TABLE ONLY webhook_drops ALTER COLUMN id SET DEFAULT nextval('webhook_drops_id_seq'::regclass);

ALTER TABLE ONLY webhook_events ALTER COLUMN id SET DEFAULT nextval('webhook_events_id_seq'::regclass);

ALTER TABLE ONLY webhooks ALTER COLUMN id SET DEFAULT nextval('webhooks_id_seq'::regclass);

ALTER TABLE ONLY accounts
    ADD CONSTRAINT accounts_name_key UNIQUE (name);

ALTER TABLE ONLY accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agg_bcy
    ADD CONSTRAINT agg_bcy_browser_country_city_key UNIQUE (browser, country, city);

ALTER TABLE ONLY agg_bcy
    ADD CONSTRAINT agg_bcy_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agg_blob
    ADD CONSTRAINT agg_blob_pkey PRIMARY KEY (account_id, level, bucket, kind);

ALTER TABLE ONLY agg_cnt
    ADD CONSTRAINT agg_cnt_pkey PRIMARY KEY (account_id, kind, level, bucket, tracker_id, value);

ALTER TABLE ONLY agg_day
    ADD CONSTRAINT agg_day_pkey PRIMARY KEY (account_id, quarter_hour, quarters_since_previous);

ALTER TABLE ONLY agg_gaps
    ADD CONSTRAINT agg_gaps_pkey PRIMARY KEY (kind, account_id, visit_time, previous_time, tracker_id, value_id);

ALTER TABLE ONLY agg_link
    ADD CONSTRAINT agg_link12_pkey PRIMARY KEY (account_id, visit_time, previous_time, flags, tracker_id, browser_country_city_id);

ALTER TABLE ONLY agg_tag
    ADD CONSTRAINT agg_tag_pkey PRIMARY KEY (tracker_id, tag);

ALTER TABLE ONLY agg_trk
    ADD CONSTRAINT agg_trk_pkey PRIMARY KEY (tracker_id);

ALTER TABLE ONLY agg_unsealed
    ADD CONSTRAINT agg_unsealed_pkey PRIMARY KEY (account_id, day);

ALTER TABLE ONLY agg_vals
    ADD CONSTRAINT agg_vals_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agg_vals
    ADD CONSTRAINT agg_vals_val_key UNIQUE (value);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (token_id, idem_key);

ALTER TABLE ONLY qrt_settings
    ADD CONSTRAINT qrt_settings_pkey PRIMARY KEY (name);

ALTER TABLE ONLY spool_marks
    ADD CONSTRAINT spool_marks_pkey PRIMARY KEY (node);

ALTER TABLE ONLY styles
    ADD CONSTRAINT styles_account_id_name_key UNIQUE (account_id, name);

ALTER TABLE ONLY styles
    ADD CONSTRAINT styles_pkey PRIMARY KEY (id);

ALTER TABLE ONLY tokens
    ADD CONSTRAINT tokens_digest_key UNIQUE (digest);

ALTER TABLE ONLY tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY tracker_history
    ADD CONSTRAINT tracker_history_pkey PRIMARY KEY (id);

ALTER TABLE ONLY tracker_routing
    ADD CONSTRAINT tracker_routing_pkey PRIMARY KEY (tracker_id);

ALTER TABLE ONLY tracker_tags
    ADD CONSTRAINT tracker_tags_pkey PRIMARY KEY (tracker_id, tag);

ALTER TABLE ONLY tracker_visitors
    ADD CONSTRAINT tracker_visitors_pkey PRIMARY KEY (tracker_id, visitor);

ALTER TABLE ONLY trackers
    ADD CONSTRAINT trackers_code_key UNIQUE (code);

ALTER TABLE ONLY trackers
    ADD CONSTRAINT trackers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY trackers_version
    ADD CONSTRAINT trackers_version_pkey PRIMARY KEY (account_id);

ALTER TABLE ONLY visit_destinations
    ADD CONSTRAINT visit_destinations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY visit_destinations
    ADD CONSTRAINT visit_destinations_url_key UNIQUE (url);

ALTER TABLE ONLY visit_floor
    ADD CONSTRAINT visit_floor_pkey PRIMARY KEY (bucket);

ALTER TABLE ONLY visit_ips
    ADD CONSTRAINT visit_ips_ip_key UNIQUE (ip);

ALTER TABLE ONLY visit_ips
    ADD CONSTRAINT visit_ips_pkey PRIMARY KEY (id);

ALTER TABLE ONLY visit_places
    ADD CONSTRAINT visit_places_k_key UNIQUE (k);

ALTER TABLE ONLY visit_places
    ADD CONSTRAINT visit_places_pkey PRIMARY KEY (id);

ALTER TABLE ONLY visit_referers
    ADD CONSTRAINT visit_referers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY visit_referers
    ADD CONSTRAINT visit_referers_referer_key UNIQUE (referer);

ALTER TABLE ONLY visit_refs
    ADD CONSTRAINT visit_refs_pkey PRIMARY KEY (d, id);

ALTER TABLE ONLY visit_rows
    ADD CONSTRAINT visit_rows_pkey PRIMARY KEY (id) WITH (fillfactor='100');

ALTER TABLE ONLY visit_uas
    ADD CONSTRAINT visit_uas_k_key UNIQUE (k);

ALTER TABLE ONLY visit_uas
    ADD CONSTRAINT visit_uas_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_attempts
    ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_drops
    ADD CONSTRAINT webhook_drops_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_drops
    ADD CONSTRAINT webhook_drops_webhook_id_at_key UNIQUE (webhook_id, at);

ALTER TABLE ONLY webhook_events
    ADD CONSTRAINT webhook_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhooks
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);

CREATE INDEX agg_blob_seals ON agg_blob USING btree (account_id, level, kind, bucket, seal);

CREATE INDEX agg_blob_unhashed ON agg_blob USING btree (account_id, level, kind, bucket) WHERE (seal IS NULL);

CREATE INDEX agg_cnt_account_days ON agg_cnt USING btree (level, bucket, account_id) WHERE (kind = 2);

CREATE INDEX agg_cnt_grp ON agg_cnt USING btree (account_id, tracker_id, kind, level, bucket);

CREATE INDEX agg_gaps_p ON agg_gaps USING btree (kind, account_id, previous_time);

CREATE INDEX agg_link_p ON agg_link USING btree (account_id, previous_time);

CREATE INDEX agg_trk_account ON agg_trk USING btree (account_id, tracker_id);

CREATE INDEX idempotency_keys_created ON idempotency_keys USING btree (created_at);

CREATE INDEX tokens_account ON tokens USING btree (account_id);

CREATE INDEX tracker_history_by_tracker ON tracker_history USING btree (tracker_id, id);

CREATE INDEX trackers_account ON trackers USING btree (account_id, id);

CREATE INDEX trackers_updated ON trackers USING btree (updated_at);

CREATE INDEX visits_dest ON visit_rows USING btree (visit_start) WHERE (dest_id IS NOT NULL);

CREATE INDEX visits_ip ON visit_rows USING btree (tracker_id, ip_id) WHERE (ip_id IS NOT NULL);

CREATE INDEX visits_place ON visit_rows USING btree (tracker_id, place_id);

CREATE INDEX visits_ref ON visit_rows USING btree (tracker_id, ref_id) WHERE (ref_id IS NOT NULL);

CREATE INDEX visits_start_brin ON visit_rows USING brin (visit_start) WITH (pages_per_range='16', autosummarize='on');

CREATE INDEX visits_tracker_dest ON visit_rows USING btree (tracker_id, visit_start) WHERE (dest_id IS NOT NULL);

CREATE INDEX visits_tracker_time ON visit_rows USING btree (tracker_id, visit_start, id);

CREATE INDEX visits_ua ON visit_rows USING btree (tracker_id, ua_id);

CREATE INDEX visits_visitor_id ON visit_rows USING btree (visitor, visit_start, id) INCLUDE (tracker_id) WHERE (bot = 0);

CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts USING btree (webhook_id, id);

CREATE INDEX webhook_events_leased ON webhook_events USING btree (claimed_by) WHERE (claimed_until IS NOT NULL);

CREATE INDEX webhook_events_pending ON webhook_events USING btree (webhook_id, tracker_id, id) WHERE (state = 0);

CREATE INDEX webhook_events_state ON webhook_events USING btree (webhook_id, state, id);

CREATE INDEX webhooks_account ON webhooks USING btree (account_id);

CREATE TRIGGER agg_blob_seal_kept BEFORE UPDATE OF data ON agg_blob FOR EACH ROW EXECUTE FUNCTION qrt_agg_blob_seal_kept();

CREATE TRIGGER agg_tag_version AFTER INSERT OR DELETE OR UPDATE ON agg_tag FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_trk();

CREATE TRIGGER agg_trk_version AFTER INSERT OR DELETE OR UPDATE ON agg_trk FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();

CREATE TRIGGER tracker_tags_version AFTER INSERT OR DELETE OR UPDATE ON tracker_tags FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_trk();

CREATE TRIGGER trackers_version_ins AFTER INSERT OR DELETE ON trackers FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();

CREATE TRIGGER trackers_version_upd AFTER UPDATE OF account_id, name, type, deleted_at ON trackers FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();

CREATE TRIGGER visit_refs_del AFTER DELETE ON visit_rows REFERENCING OLD TABLE AS qrt_old FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();

CREATE TRIGGER visit_refs_ins AFTER INSERT ON visit_rows REFERENCING NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();

CREATE TRIGGER visit_refs_trunc AFTER TRUNCATE ON visit_rows FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();

CREATE TRIGGER visit_refs_upd AFTER UPDATE ON visit_rows REFERENCING OLD TABLE AS qrt_old NEW TABLE AS qrt_new FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_refs();

CREATE TRIGGER visits_write INSTEAD OF INSERT OR DELETE OR UPDATE ON visits FOR EACH ROW EXECUTE FUNCTION qrt_visits_write();

ALTER TABLE ONLY styles
    ADD CONSTRAINT styles_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY tokens
    ADD CONSTRAINT tokens_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY tracker_history
    ADD CONSTRAINT tracker_history_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY tracker_history
    ADD CONSTRAINT tracker_history_tracker_id_fkey FOREIGN KEY (tracker_id) REFERENCES trackers(id);

ALTER TABLE ONLY tracker_routing
    ADD CONSTRAINT tracker_routing_tracker_id_fkey FOREIGN KEY (tracker_id) REFERENCES trackers(id);

ALTER TABLE ONLY tracker_tags
    ADD CONSTRAINT tracker_tags_tracker_id_fkey FOREIGN KEY (tracker_id) REFERENCES trackers(id);

ALTER TABLE ONLY trackers
    ADD CONSTRAINT trackers_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY webhooks
    ADD CONSTRAINT webhooks_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);
