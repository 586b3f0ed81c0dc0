-- Statements of mod_qrtrack/qrt_store_purge.c (see docs/design.md, "The SQL statements").

-- name: purge_next_tracker
SELECT MIN(id)
    FROM trackers
    WHERE id > %lld

-- name: purge_step_end
SELECT visit_start, id
    FROM visit_rows
    WHERE tracker_id = %lld AND visit_start >= %lld AND visit_start < %lld AND (visit_start > %lld
        OR id > %lld)
    ORDER BY visit_start, id
    LIMIT 1 OFFSET %lld

-- name: purge_stubs
INSERT OR IGNORE INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    SELECT DISTINCT '-' || COALESCE(length(CAST(u.browser AS BLOB)) || ':' || u.browser, '-') ||
        '---', NULL, u.browser, NULL, NULL, NULL
    FROM visit_rows v
    JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start < %lld AND (v.visit_start
        > %lld OR v.id > %lld) AND (v.visit_start < %lld OR (v.visit_start = %lld AND v.id <= %lld))
        AND (u.user_agent IS NOT NULL OR u.browser_version IS NOT NULL OR u.os IS NOT NULL OR
        u.device IS NOT NULL)

-- name: purge_erase
UPDATE visit_rows
    SET ua_id = (SELECT s.id
    FROM visit_uas u
    JOIN visit_uas s ON s.k = '-' || COALESCE(length(CAST(u.browser AS BLOB)) || ':' || u.browser,
        '-') || '---'
    WHERE u.id = visit_rows.ua_id), ref_id = NULL, ip_id = NULL, dest_id = NULL
    WHERE tracker_id = %lld AND visit_start >= %lld AND visit_start < %lld AND (visit_start > %lld
        OR id > %lld) AND (visit_start < %lld OR (visit_start = %lld AND id <= %lld)) AND (ref_id IS
        NOT NULL OR ip_id IS NOT NULL OR dest_id IS NOT NULL OR EXISTS (SELECT 1 FROM visit_uas u WHERE u.id =
        visit_rows.ua_id AND (u.user_agent IS NOT NULL OR u.browser_version IS NOT NULL OR u.os IS
        NOT NULL OR u.device IS NOT NULL)))

-- name: purge_ua_end
SELECT MAX(id)
    FROM (SELECT id
    FROM visit_uas
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld) s

-- name: purge_ua_del
DELETE
    FROM visit_uas
    WHERE id > %lld AND id <= %lld AND (visit_uas.user_agent IS NOT NULL OR
        visit_uas.browser_version IS NOT NULL OR visit_uas.os IS NOT NULL OR visit_uas.device IS NOT
        NULL) AND visit_uas.refs = 0

-- name: purge_ref_end
SELECT MAX(id)
    FROM (SELECT id
    FROM visit_referers
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld) s

-- name: purge_ref_del
DELETE
    FROM visit_referers
    WHERE id > %lld AND id <= %lld AND visit_referers.refs = 0

-- name: purge_ip_end
SELECT MAX(id)
    FROM (SELECT id
    FROM visit_ips
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld) s

-- name: purge_ip_del
DELETE
    FROM visit_ips
    WHERE id > %lld AND id <= %lld AND visit_ips.refs = 0

-- (schema 25: where visits went)
-- name: purge_dest_end
SELECT MAX(id)
    FROM (SELECT id
    FROM visit_destinations
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld) s

-- name: purge_dest_del
DELETE
    FROM visit_destinations
    WHERE id > %lld AND id <= %lld AND visit_destinations.refs = 0

-- name: purge_gen
UPDATE visit_dict_gen
    SET gen = gen + 1

-- name: purge_stubs [pgsql]
INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    SELECT DISTINCT '-' || COALESCE(octet_length(u.browser) || ':' || u.browser, '-') || '---',
        NULL, u.browser, NULL, NULL, NULL
    FROM visit_rows v
    JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start < %lld AND (v.visit_start
        > %lld OR v.id > %lld) AND (v.visit_start < %lld OR (v.visit_start = %lld AND v.id <= %lld))
        AND (u.user_agent IS NOT NULL OR u.browser_version IS NOT NULL OR u.os IS NOT NULL OR
        u.device IS NOT NULL)
    ON CONFLICT (k) DO NOTHING

-- name: purge_erase [pgsql]
UPDATE visit_rows
    SET ua_id = (SELECT s.id
    FROM visit_uas u
    JOIN visit_uas s ON s.k = '-' || COALESCE(octet_length(u.browser) || ':' || u.browser, '-') ||
        '---'
    WHERE u.id = visit_rows.ua_id), ref_id = NULL, ip_id = NULL, dest_id = NULL
    WHERE tracker_id = %lld AND visit_start >= %lld AND visit_start < %lld AND (visit_start > %lld
        OR id > %lld) AND (visit_start < %lld OR (visit_start = %lld AND id <= %lld)) AND (ref_id IS
        NOT NULL OR ip_id IS NOT NULL OR dest_id IS NOT NULL OR EXISTS (SELECT 1 FROM visit_uas u WHERE u.id =
        visit_rows.ua_id AND (u.user_agent IS NOT NULL OR u.browser_version IS NOT NULL OR u.os IS
        NOT NULL OR u.device IS NOT NULL)))

-- PostgreSQL (schema 63): the counts are in visit_refs, a row per entry named or once named;
-- the range's rows at 0 go with the entries nobody names (one statement: the bounds once)
-- name: purge_ua_del [pgsql]
WITH b AS (SELECT CAST(%lld AS BIGINT) AS lo, CAST(%lld AS BIGINT) AS hi),
gone AS (DELETE FROM visit_refs r
    USING b
    WHERE r.d = 1 AND r.id > b.lo AND r.id <= b.hi AND r.n = 0)
DELETE
    FROM visit_uas
    USING b
    WHERE visit_uas.id > b.lo AND visit_uas.id <= b.hi AND (visit_uas.user_agent IS NOT NULL OR
        visit_uas.browser_version IS NOT NULL OR visit_uas.os IS NOT NULL OR visit_uas.device IS NOT
        NULL) AND NOT EXISTS (SELECT 1
    FROM visit_refs r
    WHERE r.d = 1 AND r.id = visit_uas.id AND r.n <> 0)

-- name: purge_ref_del [pgsql]
WITH b AS (SELECT CAST(%lld AS BIGINT) AS lo, CAST(%lld AS BIGINT) AS hi),
gone AS (DELETE FROM visit_refs r
    USING b
    WHERE r.d = 2 AND r.id > b.lo AND r.id <= b.hi AND r.n = 0)
DELETE
    FROM visit_referers
    USING b
    WHERE visit_referers.id > b.lo AND visit_referers.id <= b.hi AND NOT EXISTS (SELECT 1
    FROM visit_refs r
    WHERE r.d = 2 AND r.id = visit_referers.id AND r.n <> 0)

-- name: purge_ip_del [pgsql]
WITH b AS (SELECT CAST(%lld AS BIGINT) AS lo, CAST(%lld AS BIGINT) AS hi),
gone AS (DELETE FROM visit_refs r
    USING b
    WHERE r.d = 3 AND r.id > b.lo AND r.id <= b.hi AND r.n = 0)
DELETE
    FROM visit_ips
    USING b
    WHERE visit_ips.id > b.lo AND visit_ips.id <= b.hi AND NOT EXISTS (SELECT 1
    FROM visit_refs r
    WHERE r.d = 3 AND r.id = visit_ips.id AND r.n <> 0)

-- name: purge_dest_del [pgsql]
WITH b AS (SELECT CAST(%lld AS BIGINT) AS lo, CAST(%lld AS BIGINT) AS hi),
gone AS (DELETE FROM visit_refs r
    USING b
    WHERE r.d = 4 AND r.id > b.lo AND r.id <= b.hi AND r.n = 0)
DELETE
    FROM visit_destinations
    USING b
    WHERE visit_destinations.id > b.lo AND visit_destinations.id <= b.hi AND NOT EXISTS (SELECT 1
    FROM visit_refs r
    WHERE r.d = 4 AND r.id = visit_destinations.id AND r.n <> 0)
