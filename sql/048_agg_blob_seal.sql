-- mod_qrtrack schema, version 48. agg_blob.seal: a hash of the sealed value's text (its
-- top bits 01, so never 0), written with it, so that a report lists a window's values by
-- (bucket, seal) from an index and takes those it holds in memory from its process's
-- cache (qrt_aggcache.h) instead of reading their text again (a long window reads a
-- value a day). NULL: not known (values sealed before, or written by hand), read from
-- the table; the scan writers' idle time and "qrtrack-admin aggregates seal" hash them
-- (agg_blob_unhashed). A change of data that keeps the seal (SQL by hand) clears it.
{{UNLESS_COLUMN:agg_blob.seal}}ALTER TABLE agg_blob ADD COLUMN seal BIGINT;
CREATE INDEX IF NOT EXISTS agg_blob_seals ON agg_blob (account_id, level, kind, bucket, seal);
CREATE INDEX IF NOT EXISTS agg_blob_unhashed ON agg_blob (account_id, level, kind, bucket) WHERE seal IS NULL;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_blob_seal_kept AFTER UPDATE OF data ON agg_blob WHEN new.seal IS old.seal AND new.data IS NOT old.data BEGIN UPDATE agg_blob SET seal = NULL WHERE rowid = new.rowid; END;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_agg_blob_seal_kept() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.seal IS NOT DISTINCT FROM OLD.seal AND NEW.data IS DISTINCT FROM OLD.data THEN NEW.seal := NULL; END IF; RETURN NEW; END $$;
{{PGSQL}}DROP TRIGGER IF EXISTS agg_blob_seal_kept ON agg_blob;
{{PGSQL}}CREATE TRIGGER agg_blob_seal_kept BEFORE UPDATE OF data ON agg_blob FOR EACH ROW EXECUTE FUNCTION qrt_agg_blob_seal_kept();
UPDATE qrt_schema SET version = 48;
