-- Statements of mod_qrtrack/qrt_store_history.c (see docs/design.md, "The SQL statements").
-- A tracker's history (schema 29): one row per create, change and delete, newest first by id.

-- name: history_add
INSERT INTO tracker_history (tracker_id, account_id, at, token_label, kind, changes)
    VALUES (%lld, %lld, %lld, %s, %s, %s)

-- name: history_count
SELECT COUNT(*)
    FROM tracker_history
    WHERE tracker_id = %lld

-- name: history_page
SELECT id, at, token_label, kind, changes
    FROM tracker_history
    WHERE tracker_id = %lld
    ORDER BY id DESC
    LIMIT %lld OFFSET %lld

-- the account of a tracker, deleted or not: its history outlives it
-- name: history_tracker_account
SELECT account_id
    FROM trackers
    WHERE id = %lld
