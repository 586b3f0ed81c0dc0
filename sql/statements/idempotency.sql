-- Statements of mod_qrtrack/qrt_store_bulk.c (see docs/design.md, "The SQL statements").

-- name: idem_get
SELECT request_hash, status, content_type, body, tracker_id
    FROM idempotency_keys
    WHERE token_id = %lld AND idem_key = %s AND created_at >= %lld

-- name: idem_add
INSERT INTO idempotency_keys (token_id, idem_key, request_hash, status, content_type, body,
        tracker_id, created_at)
    VALUES (%lld, %s, %s, %lld, %s, %s, %lld, %lld)

-- name: idem_purge
DELETE
    FROM idempotency_keys
    WHERE created_at < %lld
