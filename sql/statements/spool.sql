-- Statements of mod_qrtrack/qrt_store_spool.c (see docs/design.md, "The SQL statements").

-- trackers changed (made, changed, deleted) since a time: trackers_updated
-- name: snap_changed
SELECT code, id, redirect_url, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END, updated_at
    FROM trackers
    WHERE updated_at >= %lld

-- the live trackers, a page at a time in id order
-- name: snap_page
SELECT code, id, redirect_url, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END, updated_at
    FROM trackers
    WHERE id > %lld AND deleted_at IS NULL
    ORDER BY id
    LIMIT %lld

-- name: spool_mark
SELECT seq
    FROM spool_marks
    WHERE node = %s

-- name: spool_mark_set
INSERT INTO spool_marks (node, seq)
    VALUES (%s, %lld)
    ON CONFLICT (node) DO UPDATE
    SET seq = excluded.seq
