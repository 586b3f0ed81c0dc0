-- mod_qrtrack schema, version 27: named image styles (CONTRACT section 7, "Print-grade images").
-- styles: an account's named styles. fg and bg are "#RRGGBB", ecc one of L M Q H (H when
-- there is a logo), margin the quiet zone in modules. logo holds the logo re-encoded as a
-- clean RGBA PNG (qrt_logo.c: pixels only), logo_width and logo_height its pixels; all
-- three NULL without a logo. Times are epoch seconds. version counts the replacements:
-- the children's caches of decoded logos are keyed by it (two may come in one second).
{{SQLITE}}CREATE TABLE IF NOT EXISTS styles (
    id {{ID}},
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
{{PGSQL}}CREATE TABLE IF NOT EXISTS styles (
    id {{ID}},
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    name VARCHAR(64) NOT NULL,
    fg VARCHAR(7) NOT NULL,
    bg VARCHAR(7) NOT NULL,
    ecc VARCHAR(1) NOT NULL,
    margin INTEGER NOT NULL,
    logo BYTEA,
    logo_width INTEGER,
    logo_height INTEGER,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (account_id, name)
);
UPDATE qrt_schema SET version = 27;
