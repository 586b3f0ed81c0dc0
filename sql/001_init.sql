-- mod_qrtrack schema, version 1: accounts, tokens, trackers, tags, visits.
-- Portable SQL (SQLite and PostgreSQL); {{ID}} is the driver's auto-increment key:
-- "INTEGER PRIMARY KEY" in SQLite, "BIGSERIAL PRIMARY KEY" in PostgreSQL.
-- Times are epoch seconds (UTC).
CREATE TABLE qrt_schema (
    version INTEGER NOT NULL
);
CREATE TABLE accounts (
    id {{ID}},
    name VARCHAR(64) NOT NULL UNIQUE,
    plan VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE tokens (
    id {{ID}},
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    name VARCHAR(128) NOT NULL,
    prefix VARCHAR(16) NOT NULL,
    digest CHAR(64) NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX tokens_account ON tokens (account_id);
CREATE TABLE trackers (
    id {{ID}},
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
    last_visit BIGINT
);
CREATE INDEX trackers_account ON trackers (account_id, id);
CREATE TABLE tracker_tags (
    tracker_id BIGINT NOT NULL REFERENCES trackers (id),
    tag VARCHAR(64) NOT NULL,
    dimension VARCHAR(64),
    value VARCHAR(64) NOT NULL,
    PRIMARY KEY (tracker_id, tag)
);
CREATE TABLE visits (
    id {{ID}},
    tracker_id BIGINT NOT NULL,
    visit_start BIGINT NOT NULL,
    source VARCHAR(8) NOT NULL,
    ip VARCHAR(64),
    country VARCHAR(8),
    city VARCHAR(128),
    browser VARCHAR(64),
    browser_version VARCHAR(32),
    os VARCHAR(64),
    device VARCHAR(16),
    referer VARCHAR(2048),
    user_agent VARCHAR(1024),
    bot SMALLINT NOT NULL DEFAULT 0,
    visitor CHAR(16) NOT NULL
);
CREATE INDEX visits_tracker_id ON visits (tracker_id, id);
CREATE INDEX visits_tracker_time ON visits (tracker_id, visit_start);
CREATE TABLE tracker_visitors (
    tracker_id BIGINT NOT NULL,
    visitor CHAR(16) NOT NULL,
    first_visit BIGINT NOT NULL,
    PRIMARY KEY (tracker_id, visitor)
);
INSERT INTO qrt_schema (version) VALUES (1);
