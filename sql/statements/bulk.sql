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

-- The *_many statements (PostgreSQL) take each column as an array: many rows a round trip.

-- name: bulk_tracker_add
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
    VALUES (%lld, %s, %s, %s, %s, %lld, %lld)
    RETURNING id, code

-- name: bulk_tracker_add_many [pgsql-only]
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS
        TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    RETURNING id, code

-- name: bulk_tag_add
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    VALUES (%lld, %s, %s, %s)

-- name: bulk_tag_add_many [pgsql-only]
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS
        TEXT[]))
