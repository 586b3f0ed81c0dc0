-- Statements of mod_qrtrack/qrt_store_tracker.c (see docs/design.md, "The SQL statements").

-- name: tracker_add
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
    VALUES (%lld, %s, %s, %s, %s, %lld, %lld)
    RETURNING id

-- name: tracker_code_taken
SELECT 1
    FROM trackers
    WHERE code = %s

-- name: tracker_tag_add
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    VALUES (%lld, %s, %s, %s)

-- name: tracker_tags_clear
DELETE
    FROM tracker_tags
    WHERE tracker_id = %lld

-- name: tracker_get
SELECT t.id, t.account_id, t.code, t.name, t.type, t.redirect_url, t.created_at, t.updated_at,
        t.total_scans, t.total_clicks, t.total_bots, t.unique_visitors, t.last_visit,
        r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        CASE WHEN r.password_hash IS NULL THEN 0 ELSE 1 END, COALESCE(r.redirected, 0)
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.id = %lld AND t.deleted_at IS NULL

-- name: tracker_tags
SELECT tag
    FROM tracker_tags
    WHERE tracker_id = %lld
    ORDER BY tag

-- name: tracker_count
SELECT COUNT(*)
    FROM trackers
    WHERE account_id = %lld AND deleted_at IS NULL

-- name: tracker_page
SELECT t.id, t.account_id, t.code, t.name, t.type, t.redirect_url, t.created_at, t.updated_at,
        t.total_scans, t.total_clicks, t.total_bots, t.unique_visitors, t.last_visit,
        r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        CASE WHEN r.password_hash IS NULL THEN 0 ELSE 1 END, COALESCE(r.redirected, 0)
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.account_id = %lld AND t.deleted_at IS NULL
    ORDER BY t.id
    LIMIT %lld OFFSET %lld

-- name: tracker_page_tags
SELECT g.tracker_id, g.tag
    FROM tracker_tags g
    WHERE g.tracker_id IN (SELECT t.id
    FROM trackers t
    WHERE t.account_id = %lld AND t.deleted_at IS NULL
    ORDER BY t.id
    LIMIT %lld OFFSET %lld)
    ORDER BY g.tracker_id, g.tag

-- name: tracker_update
UPDATE trackers
    SET name = %s, redirect_url = %s, updated_at = %lld
    WHERE id = %lld AND deleted_at IS NULL

-- name: tracker_delete
UPDATE trackers
    SET deleted_at = %lld, updated_at = %lld
    WHERE id = %lld AND deleted_at IS NULL

-- name: tracker_by_code
SELECT t.id, t.redirect_url, r.rules, r.valid_from, r.valid_until, r.max_scans, r.expired_url,
        r.password_hash
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.code = %s AND t.deleted_at IS NULL

-- name: tracker_owner
SELECT account_id
    FROM trackers
    WHERE id = %lld AND deleted_at IS NULL

-- how many of the ids listed (a JSON array; PostgreSQL: an array of them) are the account's
-- live trackers: a report's list checked in one statement, not a round trip an id
-- name: tracker_owned_count
SELECT COUNT(*)
    FROM trackers
    WHERE id IN (SELECT value
    FROM json_each(%s)) AND account_id = %lld AND deleted_at IS NULL

-- (PostgreSQL: the array made once, in a subquery; cast in the condition itself, a plan that
-- scans the table cast the text to an array again for each row)
-- name: tracker_owned_count [pgsql]
SELECT COUNT(*)
    FROM trackers
    WHERE id = ANY (ARRAY(SELECT unnest(CAST(%s AS BIGINT[])))) AND account_id = %lld AND
        deleted_at IS NULL

-- which of the ids listed (as tracker_owned_count takes them) are live trackers: the scan
-- writer's check, under the write lock, that no tracker of its batch was deleted while the
-- batch's scans waited for their commit
-- name: trackers_live
SELECT id
    FROM trackers
    WHERE id IN (SELECT value
    FROM json_each(%s)) AND deleted_at IS NULL

-- name: trackers_live [pgsql]
SELECT id
    FROM trackers
    WHERE id = ANY (ARRAY(SELECT unnest(CAST(%s AS BIGINT[])))) AND deleted_at IS NULL

-- name: tracker_ids
SELECT id
    FROM trackers
    WHERE account_id = %lld AND deleted_at IS NULL
    ORDER BY id

-- the version of an account's trackers as reports see them (schema 18: raised by triggers)
-- name: trackers_version
SELECT version
    FROM trackers_version
    WHERE account_id = %lld

-- what a scan does beyond redirect_url (schema 24); redirected is left as it is
-- name: tracker_routing_put
INSERT INTO tracker_routing (tracker_id, rules, valid_from, valid_until, max_scans, expired_url,
        password_hash)
    VALUES (%lld, %s, %lld, %lld, %lld, %s, %s)
    ON CONFLICT (tracker_id) DO UPDATE
    SET rules = excluded.rules, valid_from = excluded.valid_from,
        valid_until = excluded.valid_until, max_scans = excluded.max_scans,
        expired_url = excluded.expired_url, password_hash = excluded.password_hash

-- a change of a tracker's routing locks its row first, before the write lock, as the scan
-- writer's tracker_cap_take does; a row not there yet is made (as the change's
-- tracker_routing_put would): two changes at once must not both find none, then take the
-- write lock one after the other and wait there for each other's new row
-- name: tracker_routing_lock [pgsql-only]
INSERT INTO tracker_routing (tracker_id)
    VALUES (%lld)
    ON CONFLICT (tracker_id) DO UPDATE
    SET redirected = tracker_routing.redirected

-- the password hash of a tracker (kept by a PATCH that does not change it)
-- name: tracker_password_hash
SELECT password_hash
    FROM tracker_routing
    WHERE tracker_id = %lld

-- a capped scan, in the scan writer's transaction: 1 row when it is sent on (and
-- counted when n = 1 and a cap is set: a node's cache may still hold a cap just removed),
-- 0 when max_scans were sent on already; its row lock comes before the write lock (so does
-- tracker_routing_lock's)
-- name: tracker_cap_take
UPDATE tracker_routing
    SET redirected = redirected + CASE WHEN max_scans IS NULL THEN 0 ELSE %lld END
    WHERE tracker_id = %lld AND (max_scans IS NULL OR redirected < max_scans)

-- whether a capped tracker would send a scan on now (1 row) or max_scans were sent on
-- already (none): a HEAD's answer, read without the writer and without counting
-- name: tracker_cap_open
SELECT 1
    FROM tracker_routing
    WHERE tracker_id = %lld AND (max_scans IS NULL OR redirected < max_scans)

-- qrtrack-admin trackers import: which of a batch's codes are taken (deleted trackers' too)
-- name: tracker_import_taken
SELECT code
    FROM trackers
    WHERE code = %s

-- name: tracker_import_taken_many [pgsql-only]
SELECT t.code
    FROM unnest(CAST(%s AS TEXT[])) AS u(code)
    JOIN trackers t ON t.code = u.code

-- an imported tracker, its code and creation time kept; updated_at is the import's time, so
-- that every node's snapshot of codes takes it (snap_changed)
-- name: tracker_import_add
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
    VALUES (%lld, %s, %s, %s, %s, %lld, %lld)
    RETURNING id, code

-- name: tracker_import_add_many [pgsql-only]
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]),
        CAST(%s AS TEXT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    RETURNING id, code

-- name: tracker_import_tag_add
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    VALUES (%lld, %s, %s, %s)

-- name: tracker_import_tag_add_many [pgsql-only]
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]))
