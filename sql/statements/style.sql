-- Statements of mod_qrtrack/qrt_store_style.c (named image styles, schema 27).
-- The logo is written as a blob (%pDb) and read as hex. The blob is the last placeholder:
-- apr_dbd reads a blob as four arguments (data, size, table, column) but a NULL as one.

-- name: style_put
INSERT INTO styles (account_id, name, fg, bg, ecc, margin, logo_width, logo_height,
                    created_at, updated_at, logo)
    VALUES (%lld, %s, %s, %s, %s, %d, %d, %d, %lld, %lld, %pDb)
    ON CONFLICT (account_id, name) DO UPDATE
    SET fg = excluded.fg, bg = excluded.bg, ecc = excluded.ecc, margin = excluded.margin,
        logo_width = excluded.logo_width, logo_height = excluded.logo_height,
        updated_at = excluded.updated_at, logo = excluded.logo,
        version = styles.version + 1

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
