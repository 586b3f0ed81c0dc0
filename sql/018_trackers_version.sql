-- mod_qrtrack schema, version 18: a version of each account's trackers as reports see
-- them (issue 12, item 2). Triggers raise it in the transaction of every change that
-- can change a report's scope, whoever makes it (the store, or SQL written by hand):
-- a tracker made, renamed, retyped, deleted or moved, its tags, and the report
-- aggregates' snapshot of them (agg_trk, agg_tag: a tracker's first aggregated visit,
-- a repair, a rebuild). Not the counters the scans update. A server keeps the scope
-- it read last (the trackers with their tags, and whether the aggregates still match
-- them: qrt_report_cache.h) under the version it read first, and reuses it while the
-- version stays. A table of its own rather than a column of accounts, and triggers made
-- only when missing: a database that says an older version than it is runs this again.
CREATE TABLE IF NOT EXISTS trackers_version (
    account_id BIGINT PRIMARY KEY,
    version BIGINT NOT NULL
);
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS trackers_version_ins AFTER INSERT ON trackers BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS trackers_version_upd AFTER UPDATE OF account_id, name, type, deleted_at ON trackers BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS trackers_version_del AFTER DELETE ON trackers BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS tracker_tags_version_ins AFTER INSERT ON tracker_tags BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = NEW.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS tracker_tags_version_upd AFTER UPDATE ON tracker_tags BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id IN (OLD.tracker_id, NEW.tracker_id) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS tracker_tags_version_del AFTER DELETE ON tracker_tags BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = OLD.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_trk_version_ins AFTER INSERT ON agg_trk BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_trk_version_upd AFTER UPDATE ON agg_trk BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; INSERT INTO trackers_version (account_id, version) VALUES (NEW.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_trk_version_del AFTER DELETE ON agg_trk BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) VALUES (OLD.account_id, 1) ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_tag_version_ins AFTER INSERT ON agg_tag BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = NEW.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{SQLITE}}CREATE TRIGGER IF NOT EXISTS agg_tag_version_del AFTER DELETE ON agg_tag BEGIN
{{SQLITE}}INSERT INTO trackers_version (account_id, version) SELECT account_id, 1 FROM trackers WHERE id = OLD.tracker_id ON CONFLICT (account_id) DO UPDATE SET version = version + 1
{{SQLITE}}; END;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_trackers_version_up(acct BIGINT) RETURNS void LANGUAGE sql AS $$ INSERT INTO trackers_version (account_id, version) SELECT acct, 1 WHERE acct IS NOT NULL ON CONFLICT (account_id) DO UPDATE SET version = trackers_version.version + 1 $$;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_trackers_version_acct() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF TG_OP <> 'INSERT' THEN PERFORM qrt_trackers_version_up(OLD.account_id); END IF; IF TG_OP <> 'DELETE' THEN PERFORM qrt_trackers_version_up(NEW.account_id); END IF; RETURN NULL; END $$;
{{PGSQL}}CREATE OR REPLACE FUNCTION qrt_trackers_version_trk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF TG_OP <> 'INSERT' THEN PERFORM qrt_trackers_version_up((SELECT account_id FROM trackers WHERE id = OLD.tracker_id)); END IF; IF TG_OP <> 'DELETE' THEN PERFORM qrt_trackers_version_up((SELECT account_id FROM trackers WHERE id = NEW.tracker_id)); END IF; RETURN NULL; END $$;
{{PGSQL}}DROP TRIGGER IF EXISTS trackers_version_ins ON trackers;
{{PGSQL}}CREATE TRIGGER trackers_version_ins AFTER INSERT OR DELETE ON trackers FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();
{{PGSQL}}DROP TRIGGER IF EXISTS trackers_version_upd ON trackers;
{{PGSQL}}CREATE TRIGGER trackers_version_upd AFTER UPDATE OF account_id, name, type, deleted_at ON trackers FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();
{{PGSQL}}DROP TRIGGER IF EXISTS tracker_tags_version ON tracker_tags;
{{PGSQL}}CREATE TRIGGER tracker_tags_version AFTER INSERT OR UPDATE OR DELETE ON tracker_tags FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_trk();
{{PGSQL}}DROP TRIGGER IF EXISTS agg_trk_version ON agg_trk;
{{PGSQL}}CREATE TRIGGER agg_trk_version AFTER INSERT OR UPDATE OR DELETE ON agg_trk FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_acct();
{{PGSQL}}DROP TRIGGER IF EXISTS agg_tag_version ON agg_tag;
{{PGSQL}}CREATE TRIGGER agg_tag_version AFTER INSERT OR UPDATE OR DELETE ON agg_tag FOR EACH ROW EXECUTE FUNCTION qrt_trackers_version_trk();
UPDATE qrt_schema SET version = 18;
