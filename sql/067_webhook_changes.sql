-- mod_qrtrack schema, version 67: a webhook changes in place (PATCH /webhook/<id>: its url,
-- its events, disabled or enabled again) and its secret is made anew
-- (POST /webhook/<id>/secret).
-- - rev: raised by every such change, from a sequence (PostgreSQL) or past the highest
--   (SQLite, whose writes take turns): the scan writers' fingerprint of the webhooks
--   follows its highest value, which moves with each change. The counts and the sum of
--   the events it read before stay the same when one webhook's events are traded for
--   another's, or one is enabled as another is disabled.
-- - secret_prev, secret_prev_until: the secret a new one replaced, with which deliveries
--   are signed too (a second signature) until that time.
{{SQLITE}}{{UNLESS_COLUMN:webhooks.rev}}ALTER TABLE webhooks ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;
{{SQLITE}}{{UNLESS_COLUMN:webhooks.secret_prev}}ALTER TABLE webhooks ADD COLUMN secret_prev VARCHAR(128);
{{SQLITE}}{{UNLESS_COLUMN:webhooks.secret_prev_until}}ALTER TABLE webhooks ADD COLUMN secret_prev_until BIGINT;
{{PGSQL}}ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS rev BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS secret_prev VARCHAR(128), ADD COLUMN IF NOT EXISTS secret_prev_until BIGINT;
{{PGSQL}}CREATE SEQUENCE IF NOT EXISTS webhooks_rev;
UPDATE qrt_schema SET version = 67;
