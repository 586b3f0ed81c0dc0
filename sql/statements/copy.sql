-- Statements of mod_qrtrack/qrt_store_copy.c (see docs/design.md, "The SQL statements").

-- name: copy_nonempty
SELECT 'accounts'
    FROM (SELECT 1
    FROM accounts
    LIMIT 1) x_accounts
    UNION ALL
    SELECT 'tokens'
    FROM (SELECT 1
    FROM tokens
    LIMIT 1) x_tokens
    UNION ALL
    SELECT 'trackers'
    FROM (SELECT 1
    FROM trackers
    LIMIT 1) x_trackers
    UNION ALL
    SELECT 'tracker_tags'
    FROM (SELECT 1
    FROM tracker_tags
    LIMIT 1) x_tracker_tags
    UNION ALL
    SELECT 'tracker_routing'
    FROM (SELECT 1
    FROM tracker_routing
    LIMIT 1) x_tracker_routing
    UNION ALL
    SELECT 'visits'
    FROM (SELECT 1
    FROM visits
    LIMIT 1) x_visits
    UNION ALL
    SELECT 'tracker_visitors'
    FROM (SELECT 1
    FROM tracker_visitors
    LIMIT 1) x_tracker_visitors
    UNION ALL
    SELECT 'tracker_history'
    FROM (SELECT 1
    FROM tracker_history
    LIMIT 1) x_tracker_history
    UNION ALL
    SELECT 'styles'
    FROM (SELECT 1
    FROM styles
    LIMIT 1) x_styles
    UNION ALL
    SELECT 'webhooks'
    FROM (SELECT 1
    FROM webhooks
    LIMIT 1) x_webhooks

-- name: copy_accounts_page
SELECT id, name, plan, created_at
    FROM accounts
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_accounts_add
INSERT INTO accounts (id, name, plan, created_at)
    VALUES (%lld, %s, %s, %lld)

-- name: copy_tokens_page
SELECT id, account_id, name, prefix, digest, created_at, revoked_at, scope, expires_at
    FROM tokens
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_tokens_add
INSERT INTO tokens (id, account_id, name, prefix, digest, created_at, revoked_at, scope,
        expires_at)
    VALUES (%lld, %lld, %s, %s, %s, %lld, %lld, %s, %lld)

-- name: copy_trackers_page
SELECT id, account_id, code, name, type, redirect_url, created_at, updated_at, deleted_at,
        total_scans, total_clicks, total_bots, unique_visitors, last_visit
    FROM trackers
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_trackers_add
INSERT INTO trackers (id, account_id, code, name, type, redirect_url, created_at, updated_at,
        deleted_at, total_scans, total_clicks, total_bots, unique_visitors, last_visit)
    VALUES (%lld, %lld, %s, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)

-- name: copy_tags_page
SELECT tracker_id, tag, dimension, value
    FROM tracker_tags
    WHERE (tracker_id, tag) > (%lld, %s)
    ORDER BY tracker_id, tag
    LIMIT %lld

-- name: copy_tags_add
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    VALUES (%lld, %s, %s, %s)

-- name: copy_routing_page
SELECT tracker_id, rules, valid_from, valid_until, max_scans, expired_url, password_hash,
        redirected
    FROM tracker_routing
    WHERE tracker_id > %lld
    ORDER BY tracker_id
    LIMIT %lld

-- name: copy_routing_add
INSERT INTO tracker_routing (tracker_id, rules, valid_from, valid_until, max_scans, expired_url,
        password_hash, redirected)
    VALUES (%lld, %s, %lld, %lld, %lld, %s, %s, %lld)

-- name: copy_history_page
SELECT id, tracker_id, account_id, at, token_label, kind, changes
    FROM tracker_history
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_history_add
INSERT INTO tracker_history (id, tracker_id, account_id, at, token_label, kind, changes)
    VALUES (%lld, %lld, %lld, %lld, %s, %s, %s)

-- (schema 27) the logo travels as hex and is written back as a blob, the last column
-- name: copy_styles_page
SELECT id, account_id, name, fg, bg, ecc, margin, logo_width, logo_height, created_at, updated_at,
        version, hex(logo)
    FROM styles
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_styles_page [pgsql]
SELECT id, account_id, name, fg, bg, ecc, margin, logo_width, logo_height, created_at, updated_at,
        version, encode(logo, 'hex')
    FROM styles
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_styles_add
INSERT INTO styles (id, account_id, name, fg, bg, ecc, margin, logo_width, logo_height, created_at,
        updated_at, version, logo)
    VALUES (%lld, %lld, %s, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, %pDb)

-- (schema 26) webhooks with their outbox and attempts: pending events are delivered from
-- the copy
-- name: copy_webhooks_page
SELECT id, account_id, url, events, secret, created_at, failures, disabled_at, disabled_reason,
        secret_prev, secret_prev_until
    FROM webhooks
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_webhooks_add
INSERT INTO webhooks (id, account_id, url, events, secret, created_at, failures, disabled_at,
        disabled_reason, secret_prev, secret_prev_until)
    VALUES (%lld, %lld, %s, %lld, %s, %lld, %lld, %lld, %s, %s, %lld)

-- name: copy_webhook_events_page
SELECT id, webhook_id, msg_id, event_type, tracker_id, body, created_at, attempts,
        next_attempt_at, state, claimed_until, visit_id, visit_start
    FROM webhook_events
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_webhook_events_add
INSERT INTO webhook_events (id, webhook_id, msg_id, event_type, tracker_id, body, created_at,
        attempts, next_attempt_at, state, claimed_until, visit_id, visit_start)
    VALUES (%lld, %lld, %s, %s, %lld, %s, %lld, %lld, %lld, %lld, %lld, %lld, %lld)

-- name: copy_webhook_attempts_page
SELECT id, event_id, webhook_id, attempt, http_status, error, at, next_attempt_at
    FROM webhook_attempts
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_webhook_attempts_add
INSERT INTO webhook_attempts (id, event_id, webhook_id, attempt, http_status, error, at,
        next_attempt_at)
    VALUES (%lld, %lld, %lld, %lld, %lld, %s, %lld, %lld)

-- name: copy_webhook_drops_page
SELECT id, webhook_id, at, n
    FROM webhook_drops
    WHERE id > %lld
    ORDER BY id
    LIMIT %lld

-- name: copy_webhook_drops_add
INSERT INTO webhook_drops (id, webhook_id, at, n)
    VALUES (%lld, %lld, %lld, %lld)

-- by tracker, time and id: SQLite's key (schema 11), PostgreSQL's visits_tracker_time
-- name: copy_visits_page
SELECT tracker_id, id, visit_start, source, ip, country, city, browser, browser_version, os, device,
        referer, user_agent, bot, visitor, destination
    FROM visits
    WHERE (tracker_id, visit_start, id) > (%lld, %lld, %lld)
    ORDER BY tracker_id, visit_start, id
    LIMIT %lld

-- name: copy_visits_add
INSERT INTO visits (tracker_id, id, visit_start, source, ip, country, city, browser,
        browser_version, os, device, referer, user_agent, bot, visitor, destination)
    VALUES (%lld, %lld, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %s, %s)

-- a tracker's visitors, from its visits (schema 16 on SQLite, 47 on PostgreSQL)
-- name: copy_visitors_count
SELECT COUNT(*)
    FROM (SELECT DISTINCT tracker_id, visitor
    FROM visit_rows
    WHERE bot = 0) x

-- name: copy_pg_sequences [pgsql-only]
SELECT setval(pg_get_serial_sequence('accounts', 'id'), COALESCE((SELECT MAX(id) FROM accounts), 0)
        + 1, false), setval(pg_get_serial_sequence('tokens', 'id'), COALESCE((SELECT MAX(id) FROM
        tokens), 0) + 1, false), setval(pg_get_serial_sequence('trackers', 'id'), COALESCE((SELECT
        MAX(id) FROM trackers), 0) + 1, false), setval(pg_get_serial_sequence('visit_rows', 'id'),
        COALESCE((SELECT MAX(id) FROM visit_rows), 0) + 1, false),
        setval(pg_get_serial_sequence('tracker_history', 'id'), COALESCE((SELECT MAX(id) FROM
        tracker_history), 0) + 1, false), setval(pg_get_serial_sequence('styles', 'id'),
        COALESCE((SELECT MAX(id) FROM styles), 0) + 1, false),
        setval(pg_get_serial_sequence('webhooks', 'id'), COALESCE((SELECT MAX(id) FROM webhooks),
        0) + 1, false), setval(pg_get_serial_sequence('webhook_events', 'id'), COALESCE((SELECT
        MAX(id) FROM webhook_events), 0) + 1, false),
        setval(pg_get_serial_sequence('webhook_attempts', 'id'), COALESCE((SELECT MAX(id) FROM
        webhook_attempts), 0) + 1, false), setval(pg_get_serial_sequence('webhook_drops', 'id'),
        COALESCE((SELECT MAX(id) FROM webhook_drops), 0) + 1, false)
