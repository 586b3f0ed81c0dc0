-- Statements of mod_qrtrack/qrt_store_compact.c (see docs/design.md, "The SQL statements").
-- (The compaction's own statements are the dialect's, qrt_dialect_t.compact: REINDEX
-- CONCURRENTLY and VACUUM cannot be prepared.)

-- the database's size in bytes
-- name: compact_db_bytes
SELECT c.page_count * s.page_size
    FROM pragma_page_count() c, pragma_page_size() s

-- name: compact_db_bytes [pgsql]
SELECT pg_database_size(current_database())
