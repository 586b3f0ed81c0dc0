-- mod_qrtrack schema, version 26: webhooks (CONTRACT section 7, "Webhooks").
-- webhooks: an account's subscriptions. events is a bit mask of event types
-- (qrt_webhook.h); secret the whsec_ signing secret; failures counts events that failed
-- in a row (the webhook is disabled past a bound); disabled_at/disabled_reason say why
-- deliveries stopped (410, repeated failure).
-- webhook_events: the outbox. A row per event and subscribing webhook, written in the
-- transaction that makes what it reports (a visit, a tracker change), so a crash loses
-- none; msg_id is the webhook-id header, the same on every retry; body the JSON sent and
-- signed. state 0 pending, 1 delivered, 2 failed, 3 dropped (the outbox bound);
-- claimed_until leases a pending row to one delivery worker.
-- webhook_attempts: one row per delivery attempt, what GET /webhook/<id>/deliveries lists.
-- Times are epoch seconds.
CREATE TABLE IF NOT EXISTS webhooks (
    id {{ID}},
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    url VARCHAR(2048) NOT NULL,
    events INTEGER NOT NULL,
    secret VARCHAR(128) NOT NULL,
    created_at BIGINT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    disabled_at BIGINT,
    disabled_reason VARCHAR(255)
);
CREATE INDEX IF NOT EXISTS webhooks_account ON webhooks (account_id);
CREATE TABLE IF NOT EXISTS webhook_events (
    id {{ID}},
    webhook_id BIGINT NOT NULL,
    msg_id VARCHAR(64) NOT NULL,
    event_type VARCHAR(32) NOT NULL,
    tracker_id BIGINT,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    state SMALLINT NOT NULL DEFAULT 0,
    claimed_until BIGINT
);
CREATE INDEX IF NOT EXISTS webhook_events_due ON webhook_events (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_events_order ON webhook_events (webhook_id, tracker_id, id);
CREATE TABLE IF NOT EXISTS webhook_attempts (
    id {{ID}},
    event_id BIGINT NOT NULL,
    webhook_id BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    http_status INTEGER,
    error VARCHAR(255),
    at BIGINT NOT NULL,
    next_attempt_at BIGINT
);
CREATE INDEX IF NOT EXISTS webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
UPDATE qrt_schema SET version = 26;
