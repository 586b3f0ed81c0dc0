-- Statements of mod_qrtrack/qrt_store_spool.c (see docs/design.md, "The SQL statements").

-- trackers changed (made, changed, deleted) since a time: trackers_updated
-- name: snap_changed
SELECT t.code, t.id, t.redirect_url, CASE WHEN t.deleted_at IS NULL THEN 0 ELSE 1 END,
        t.updated_at, r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        r.password_hash
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.updated_at >= %lld

-- trackers changed within a span of times: trackers_updated
-- name: snap_changed_between
SELECT t.code, t.id, t.redirect_url, CASE WHEN t.deleted_at IS NULL THEN 0 ELSE 1 END,
        t.updated_at, r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        r.password_hash
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.updated_at >= %lld AND t.updated_at <= %lld

-- the live trackers, a page at a time in id order
-- name: snap_page
SELECT t.code, t.id, t.redirect_url, CASE WHEN t.deleted_at IS NULL THEN 0 ELSE 1 END,
        t.updated_at, r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        r.password_hash
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.id > %lld AND t.deleted_at IS NULL
    ORDER BY t.id
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

-- a node's row of its last live commit's token ("<node>+live", qrt_spool_live_key), made
-- when its scan writer connects, so that the row is there to be locked
-- name: spool_live_make
INSERT INTO spool_marks (node, seq)
    VALUES (%s, 0)
    ON CONFLICT (node) DO NOTHING

-- the token, read at the replay of visits spooled after a commit whose answer was lost:
-- PostgreSQL waits for that commit's transaction, should it still be running
-- name: spool_live
SELECT seq
    FROM spool_marks
    WHERE node = %s

-- name: spool_live [pgsql]
SELECT seq
    FROM spool_marks
    WHERE node = %s
    FOR UPDATE
