-- mod_qrtrack schema, version 62 (SQLite): the scan writer's dictionary references, added
-- later. Each batch of scans appends its counts, one row per distinct entry (dictionary d:
-- 1 user agents, 2 referers, 3 addresses, 4 destinations), in the batch's transaction,
-- instead of updating each entry's refs: scans from many visitors name other entries each,
-- and those updates were a sixth of the writer's time. The writer adds the rows to the
-- dictionaries' refs and deletes them every so many rows, and so does each step of the
-- retention's sweep before it looks at refs, in its own transaction. A dictionary entry's
-- references are its refs plus its rows here.
{{SQLITE}}CREATE TABLE IF NOT EXISTS visit_refs_due (d SMALLINT NOT NULL, id BIGINT NOT NULL, n BIGINT NOT NULL);
UPDATE qrt_schema SET version = 62;
