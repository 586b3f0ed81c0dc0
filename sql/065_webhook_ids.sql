-- mod_qrtrack schema, version 65: a deleted webhook's id is never given again, and no event
-- is left waiting for a webhook that is gone or disabled.
-- - SQLite: webhooks made again with AUTOINCREMENT. An INTEGER PRIMARY KEY alone gave the
--   highest id again once its webhook was deleted, and the events, attempts and drops that
--   name the deleted webhook (kept a week) then showed under a new webhook, possibly another
--   account's. The sequence starts past every id those rows name, so an id already reused
--   before this version is not given a third time. PostgreSQL's ids come from a sequence
--   (BIGSERIAL) that never gives one again.
-- - Both: the events left waiting for a deleted or disabled webhook by writes that raced
--   its DELETE or its disable (neither delivered nor swept) are dropped, as the DELETE and
--   the disable drop theirs (state 3, body emptied).
{{SQLITE}}CREATE TABLE webhooks65 (id INTEGER PRIMARY KEY AUTOINCREMENT, account_id BIGINT NOT NULL REFERENCES accounts (id), url VARCHAR(2048) NOT NULL, events INTEGER NOT NULL, secret VARCHAR(128) NOT NULL, created_at BIGINT NOT NULL, failures INTEGER NOT NULL DEFAULT 0, disabled_at BIGINT, disabled_reason VARCHAR(255));
{{SQLITE}}INSERT INTO webhooks65 (id, account_id, url, events, secret, created_at, failures, disabled_at, disabled_reason) SELECT id, account_id, url, events, secret, created_at, failures, disabled_at, disabled_reason FROM webhooks ORDER BY id;
{{SQLITE}}DROP TABLE webhooks;
{{SQLITE}}ALTER TABLE webhooks65 RENAME TO webhooks;
{{SQLITE}}CREATE INDEX webhooks_account ON webhooks (account_id);
{{SQLITE}}INSERT INTO sqlite_sequence (name, seq) SELECT 'webhooks', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'webhooks');
{{SQLITE}}UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT MAX(id) FROM webhooks), 0), COALESCE((SELECT MAX(webhook_id) FROM webhook_events), 0), COALESCE((SELECT MAX(webhook_id) FROM webhook_attempts), 0), COALESCE((SELECT MAX(webhook_id) FROM webhook_drops), 0)) WHERE name = 'webhooks';
UPDATE webhook_events SET state = 3, body = '' WHERE state = 0 AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NULL);
UPDATE qrt_schema SET version = 65;
