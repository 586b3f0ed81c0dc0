-- mod_qrtrack schema, version 66 (PostgreSQL; SQLite only takes the number): the
-- dictionaries' searched copies (schema 19: col_lc) fold ASCII letters alone, as a search
-- does (case-insensitive for ASCII letters, as SQLite's LIKE). lower() folded every letter
-- of the stored strings (by the database's LC_CTYPE) while the search's text is folded for
-- ASCII alone, so text with an upper-case letter beyond ASCII ("ÄRGER", "İstanbul") was not
-- found even as written. The columns are made again (each dictionary rewritten once).
{{PGSQL}}ALTER TABLE visit_uas DROP COLUMN IF EXISTS user_agent_lc, DROP COLUMN IF EXISTS browser_lc, DROP COLUMN IF EXISTS os_lc, DROP COLUMN IF EXISTS device_lc, ADD COLUMN user_agent_lc TEXT GENERATED ALWAYS AS (translate(user_agent, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED, ADD COLUMN browser_lc TEXT GENERATED ALWAYS AS (translate(browser, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED, ADD COLUMN os_lc TEXT GENERATED ALWAYS AS (translate(os, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED, ADD COLUMN device_lc TEXT GENERATED ALWAYS AS (translate(device, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED;
{{PGSQL}}ALTER TABLE visit_places DROP COLUMN IF EXISTS country_lc, DROP COLUMN IF EXISTS city_lc, ADD COLUMN country_lc TEXT GENERATED ALWAYS AS (translate(country, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED, ADD COLUMN city_lc TEXT GENERATED ALWAYS AS (translate(city, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED;
{{PGSQL}}ALTER TABLE visit_referers DROP COLUMN IF EXISTS referer_lc, ADD COLUMN referer_lc TEXT GENERATED ALWAYS AS (translate(referer, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) STORED;
-- (no statistics on them, as schema 19 says why)
{{PGSQL}}ALTER TABLE visit_uas ALTER COLUMN user_agent_lc SET STATISTICS 0, ALTER COLUMN browser_lc SET STATISTICS 0, ALTER COLUMN os_lc SET STATISTICS 0, ALTER COLUMN device_lc SET STATISTICS 0;
{{PGSQL}}ALTER TABLE visit_places ALTER COLUMN country_lc SET STATISTICS 0, ALTER COLUMN city_lc SET STATISTICS 0;
{{PGSQL}}ALTER TABLE visit_referers ALTER COLUMN referer_lc SET STATISTICS 0;
UPDATE qrt_schema SET version = 66;
