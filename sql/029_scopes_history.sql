-- mod_qrtrack schema, version 29: token scopes and expiry, and each tracker's history
-- (CONTRACT section 7, "Token scopes and history").
-- tokens.scope: 'write' (every request) or 'read' (no request that changes something);
-- tokens.expires_at: epoch seconds after which the token is refused, NULL for never. The
-- tokens made before this version stay as they were: write, never expiring.
-- tracker_history: one row per create, change and delete of a tracker, written in the
-- transaction of that change. token_label is the name of the token that made it (NULL:
-- qrtrack-admin); kind 'created', 'updated' or 'deleted'; changes the JSON object
-- {"field": [old, new], ...} (passwords as "***"). Rows stay when the tracker is deleted:
-- they are the business record of it, readable by the tracker's id.
-- A database that says an older version than it is keeps its columns.
{{UNLESS_COLUMN:tokens.scope}}ALTER TABLE tokens ADD COLUMN scope VARCHAR(8) NOT NULL DEFAULT 'write';
{{UNLESS_COLUMN:tokens.expires_at}}ALTER TABLE tokens ADD COLUMN expires_at BIGINT;
CREATE TABLE IF NOT EXISTS tracker_history (
    id {{ID}},
    tracker_id BIGINT NOT NULL REFERENCES trackers (id),
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    at BIGINT NOT NULL,
    token_label VARCHAR(128),
    kind VARCHAR(8) NOT NULL,
    changes TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tracker_history_by_tracker ON tracker_history (tracker_id, id);
UPDATE qrt_schema SET version = 29;
