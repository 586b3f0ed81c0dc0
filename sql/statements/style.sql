-- Statements of mod_qrtrack/qrt_store_style.c (named image styles, schema 27).
-- The logo is written as a blob (%pDb) and read as hex. The blob is the last placeholder:
-- apr_dbd reads a blob as four arguments (data, size, table, column) but a NULL as one.

-- the version is the installation's next (style_version_next): a name deleted and made
-- again never has a version it had before, which a child's cache may still hold
-- name: style_put
INSERT INTO styles (account_id, name, fg, bg, ecc, margin, logo_width, logo_height,
                    created_at, updated_at, version, logo)
    VALUES (%lld, %s, %s, %s, %s, %d, %d, %d, %lld, %lld, %lld, %pDb)
    ON CONFLICT (account_id, name) DO UPDATE
    SET fg = excluded.fg, bg = excluded.bg, ecc = excluded.ecc, margin = excluded.margin,
        logo_width = excluded.logo_width, logo_height = excluded.logo_height,
        updated_at = excluded.updated_at, logo = excluded.logo,
        version = excluded.version

-- read back in the transaction that wrote it (a delete after its commit cannot hide it)
-- name: style_stored
SELECT created_at, updated_at, version
    FROM styles
    WHERE account_id = %lld AND name = %s

-- The styles' versions: one count for the installation, the setting style_version, one
-- more at each write of a style, so that a version is never given twice (a style deleted
-- and made again under its name included). The setting is made at the first write or
-- delete from the greatest version stored then (0 without styles: a database made or
-- copied before it, whose children may hold any version still stored).
-- name: style_version_started
SELECT COUNT(*)
    FROM qrt_settings
    WHERE name = 'style_version'

-- (WHERE true: SQLite's INSERT ... SELECT reads ON CONFLICT as the upsert only after a
-- WHERE; the conflict: another transaction started it first, PostgreSQL)
-- name: style_version_start
INSERT INTO qrt_settings (name, value)
    SELECT 'style_version', CAST(COALESCE(MAX(version), 0) AS TEXT)
    FROM styles
    WHERE true
    ON CONFLICT (name) DO NOTHING

-- (the setting's row stays locked until the transaction ends, PostgreSQL)
-- name: style_version_next
UPDATE qrt_settings
    SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT)
    WHERE name = 'style_version'

-- name: style_version_last
SELECT CAST(value AS BIGINT)
    FROM qrt_settings
    WHERE name = 'style_version'

-- name: style_list
SELECT name, fg, bg, ecc, margin, logo_width, logo_height, length(logo), created_at,
       updated_at, version
    FROM styles
    WHERE account_id = %lld
    ORDER BY name

-- name: style_list [pgsql]
SELECT name, fg, bg, ecc, margin, logo_width, logo_height, octet_length(logo), created_at,
       updated_at, version
    FROM styles
    WHERE account_id = %lld
    ORDER BY name

-- name: style_get
SELECT name, fg, bg, ecc, margin, logo_width, logo_height, length(logo), created_at,
       updated_at, version, hex(logo)
    FROM styles
    WHERE account_id = %lld AND name = %s

-- name: style_get [pgsql]
SELECT name, fg, bg, ecc, margin, logo_width, logo_height, octet_length(logo), created_at,
       updated_at, version, encode(logo, 'hex')
    FROM styles
    WHERE account_id = %lld AND name = %s

-- name: style_version
SELECT version
    FROM styles
    WHERE account_id = %lld AND name = %s

-- name: style_count
SELECT COUNT(*)
    FROM styles
    WHERE account_id = %lld

-- name: style_delete
DELETE FROM styles
    WHERE account_id = %lld AND name = %s
