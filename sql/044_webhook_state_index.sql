-- mod_qrtrack schema, version 44: the outbox's events by webhook, state and id. The bound
-- (the newest waiting events of a webhook, by id) and the per-state counts walk it in
-- order, where (webhook, tracker, id) made them sort every waiting event once a second.
-- SQLite finds each tracker's oldest waiting event by seeking from one tracker to the
-- next in webhook_events_pending (whsend_due), so nothing reads webhook_events_due there:
-- a scan's event row costs two index entries instead of three. PostgreSQL's worker reads
-- its due events in the order of webhook_events_due, which stays there.
CREATE INDEX IF NOT EXISTS webhook_events_state ON webhook_events (webhook_id, state, id);
DROP INDEX IF EXISTS webhook_events_order;
{{SQLITE}}DROP INDEX IF EXISTS webhook_events_due;
UPDATE qrt_schema SET version = 44;
