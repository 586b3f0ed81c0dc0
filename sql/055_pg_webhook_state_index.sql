-- mod_qrtrack schema, version 55 (PostgreSQL; SQLite only takes the number): the outbox's
-- events by webhook, state and id, as SQLite's since schema 44. Nothing reads
-- webhook_events_due or webhook_events_order any more: the claim seeks from one (webhook,
-- tracker) pair to the next in webhook_events_pending, as SQLite's does, and the bound's
-- id-ordered walks of a webhook's waiting events (and the per-state counts) read
-- webhook_events_state in order, where they walked the primary key filtering every other
-- webhook's events. A scan's event row costs three index entries, not four.
{{PGSQL}}CREATE INDEX IF NOT EXISTS webhook_events_state ON webhook_events (webhook_id, state, id);
{{PGSQL}}DROP INDEX IF EXISTS webhook_events_due;
{{PGSQL}}DROP INDEX IF EXISTS webhook_events_order;
UPDATE qrt_schema SET version = 55;
