-- Statements of mod_qrtrack/qrt_store_qrcodes.c: the codes a ZIP of QR images is made of.

-- name: qrcodes_code
SELECT code
    FROM trackers
    WHERE id = %lld AND account_id = %lld AND deleted_at IS NULL

-- name: qrcodes_by_tag
SELECT t.id, t.code
    FROM trackers t
    JOIN tracker_tags g ON g.tracker_id = t.id
    WHERE t.account_id = %lld AND t.deleted_at IS NULL AND g.tag = %s
    ORDER BY t.id
    LIMIT %lld
