-- mod_qrtrack schema, version 21: visits a node spooled while the database could not
-- be reached are replayed into it exactly once. Each node names its spooled visits by
-- its own id and a sequence number; the replay of a node's visits raises its mark in
-- the transaction that records them, so visits up to the mark are never recorded
-- again, whatever happened to the node's spool after that commit. And the nodes'
-- snapshots of codes follow changes by trackers.updated_at (a deletion raises it too).
CREATE TABLE IF NOT EXISTS spool_marks (
    node VARCHAR(64) PRIMARY KEY,
    seq BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS trackers_updated ON trackers (updated_at);
UPDATE qrt_schema SET version = 21;
