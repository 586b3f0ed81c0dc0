-- mod_qrtrack schema, version 30 (PostgreSQL): trackers_version is raised once a
-- transaction, not once a changed row. A transaction that creates many trackers (a bulk
-- create, an import) fired the row triggers of schema 18 once per tracker and tag, each
-- updating the same row again: every update walks the row's versions made earlier in the
-- same transaction, so the cost grew with the square of the rows. Readers compare the
-- version across transactions, which one raise a transaction still tells apart.
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_trackers_version_up(acct BIGINT) RETURNS void LANGUAGE sql AS $$ INSERT INTO trackers_version (account_id, version) SELECT acct, 1 WHERE acct IS NOT NULL ON CONFLICT (account_id) DO UPDATE SET version = trackers_version.version + 1 WHERE trackers_version.xmin::text::bigint <> txid_current() % 4294967296 $$;
UPDATE qrt_schema SET version = 30;
