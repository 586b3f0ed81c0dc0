-- mod_qrtrack schema, version 6: visitor ids keyed with this installation's secret.
-- A visitor id is an HMAC-SHA-256 of the address as stored and the user agent under
-- visitor_key (32 random bytes, hex), and, when visitor_rotation is 'daily', of the
-- visit's UTC day too (README "What is stored about a visitor"). A database that
-- already holds visits keeps unkeyed ids (visitor_key ''), so that unique visitors
-- stay exact across the upgrade: `qrtrack-admin visitor-key new` gives it a key.
-- {{SQLITE}} marks a statement that is SQLite's only, {{PGSQL}} PostgreSQL's.
CREATE TABLE qrt_settings (
    name VARCHAR(64) PRIMARY KEY,
    value TEXT NOT NULL
);
{{SQLITE}}INSERT INTO qrt_settings (name, value) SELECT 'visitor_key', CASE WHEN EXISTS (SELECT 1 FROM visits) THEN '' ELSE lower(hex(randomblob(32))) END;
{{PGSQL}}INSERT INTO qrt_settings (name, value) SELECT 'visitor_key', CASE WHEN EXISTS (SELECT 1 FROM visits) THEN '' ELSE replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '') END;
INSERT INTO qrt_settings (name, value) VALUES ('visitor_rotation', 'none');
UPDATE qrt_schema SET version = 6;
