-- mod_qrtrack schema, version 44. SQLite: the outbox's events by webhook, state and id.
-- The bound (the newest waiting events of a webhook, by id) and the per-state counts walk
-- it in order, where (webhook, tracker, id) made them sort every waiting event once a
-- second. SQLite finds each tracker's oldest waiting event by seeking from one tracker
-- to the next in webhook_events_pending (whsend_due), so nothing reads webhook_events_due
-- or webhook_events_order there: a scan's event row costs two index entries, not three.
-- PostgreSQL keeps its indexes: its worker reads due events in the order of
-- webhook_events_due, and an index by (webhook, state, id) would offer its planner, before
-- the table has statistics, a walk of every waiting event for each event it takes.
-- webhook_drops: the events the bound dropped, counted per webhook and minute (at, epoch
-- seconds, a multiple of 60). The bound deletes the dropped events it never tried, where
-- it kept each as a row of state 3 for a week; what GET /webhook/<id> says was dropped in
-- the last week is this count plus the rows of state 3 (tried events, visits gone,
-- webhooks disabled or deleted).
-- webhook_events.claimed_by: the server whose worker leased the event (a random id of the
-- server's parent process), so that the worker taking over from one that died gives its
-- leases back at once instead of when they end.
-- webhook_events.visit_start: a visit's event names its visit by its key (tracker, time,
-- id), which SQLite's visit_rows is ordered by: the worker reads it with one seek, where
-- (tracker, id) walked the tracker's visits. Events written before leave it NULL.
{{UNLESS_COLUMN:webhook_events.visit_start}}ALTER TABLE webhook_events ADD COLUMN visit_start BIGINT;
{{UNLESS_COLUMN:webhook_events.claimed_by}}ALTER TABLE webhook_events ADD COLUMN claimed_by BIGINT;
CREATE INDEX IF NOT EXISTS webhook_events_leased ON webhook_events (claimed_by) WHERE claimed_until IS NOT NULL;
{{SQLITE}}CREATE INDEX IF NOT EXISTS webhook_events_state ON webhook_events (webhook_id, state, id);
{{SQLITE}}DROP INDEX IF EXISTS webhook_events_order;
{{SQLITE}}DROP INDEX IF EXISTS webhook_events_due;
CREATE TABLE IF NOT EXISTS webhook_drops (
    id {{ID}},
    webhook_id BIGINT NOT NULL,
    at BIGINT NOT NULL,
    n BIGINT NOT NULL,
    UNIQUE (webhook_id, at)
);
UPDATE qrt_schema SET version = 44;
