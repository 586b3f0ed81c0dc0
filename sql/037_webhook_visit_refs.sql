-- mod_qrtrack schema, version 37: a visit's outbox row (scan.created, click.created) holds
-- the visit's id, not its rendered body (body ''): the delivery worker renders the body
-- from visit_rows, its dictionaries and the tracker when it takes the event. Rows of other
-- events, and those written before this version, keep their body and a NULL visit_id.
{{UNLESS_COLUMN:webhook_events.visit_id}}ALTER TABLE webhook_events ADD COLUMN visit_id BIGINT;
UPDATE qrt_schema SET version = 37;
