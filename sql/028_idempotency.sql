-- mod_qrtrack schema, version 28: custom codes and idempotent creates (CONTRACT
-- section 7, "Bulk, migration and custom codes").
-- trackers.code: a code a client chooses is 3 to 64 characters (SQLite does not hold
-- a VARCHAR to its length; PostgreSQL does).
-- idempotency_keys: the first answer to a create sent with an Idempotency-Key, per
-- token and key, written in the transaction that made what it reports, so a retry
-- gets it again and creates nothing. request_hash tells the same request from another
-- sent under the same key; body is the answer's bytes (base64 for an image);
-- tracker_id the X-Tracker-Id of an image answer. created_at is epoch seconds; rows
-- older than a day are deleted before each insert.
{{PGSQL}}ALTER TABLE trackers ALTER COLUMN code TYPE VARCHAR(64);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    token_id BIGINT NOT NULL,
    idem_key VARCHAR(255) NOT NULL,
    request_hash VARCHAR(64) NOT NULL,
    status INTEGER NOT NULL,
    content_type VARCHAR(100) NOT NULL,
    body TEXT NOT NULL,
    tracker_id BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (token_id, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
UPDATE qrt_schema SET version = 28;
