-- mod_qrtrack schema, version 31: the waiting events of each webhook and tracker by id, so
-- the delivery worker finds each one's oldest (the only one it may send, for the order per
-- tracker) by walking this index once, however many wait behind a receiver that is down.
CREATE INDEX IF NOT EXISTS webhook_events_pending ON webhook_events (webhook_id, tracker_id, id) WHERE state = 0;
UPDATE qrt_schema SET version = 31;
