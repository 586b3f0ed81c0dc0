-- Statements of mod_qrtrack/qrt_store_webhook.c (see docs/design.md, "The SQL statements").
-- webhooks, webhook_events (the outbox) and webhook_attempts are schema 26's.

-- name: webhook_add
INSERT INTO webhooks (account_id, url, events, secret, created_at)
    VALUES (%lld, %s, %d, %s, %lld)
    RETURNING id

-- name: webhook_count
SELECT COUNT(*)
    FROM webhooks
    WHERE account_id = %lld

-- name: webhook_page
SELECT id, account_id, url, events, created_at, failures, disabled_at, disabled_reason
    FROM webhooks
    WHERE account_id = %lld
    ORDER BY id
    LIMIT %lld OFFSET %lld

-- name: webhook_get
SELECT id, account_id, url, events, created_at, failures, disabled_at, disabled_reason
    FROM webhooks
    WHERE id = %lld

-- name: webhook_delete
DELETE
    FROM webhooks
    WHERE id = %lld AND account_id = %lld

-- a deleted webhook's pending events, and the oldest of a webhook past its outbox bound: done
-- with, their bodies emptied (the sweep deletes the rows after a week)
-- name: webhook_events_drop_all
UPDATE webhook_events
    SET state = 3, body = ''
    WHERE webhook_id = %lld AND state = 0

-- name: webhook_events_state_count
SELECT COUNT(*)
    FROM webhook_events
    WHERE webhook_id = %lld AND state = %d

-- the events the bound dropped since a time (schema 44), beside the rows of state 3
-- name: webhook_drops_count
SELECT COALESCE(SUM(n), 0)
    FROM webhook_drops
    WHERE webhook_id = %lld AND at >= %lld

-- name: webhook_attempt_count
SELECT COUNT(*)
    FROM webhook_attempts
    WHERE webhook_id = %lld

-- newest first
-- name: webhook_attempt_page
SELECT a.id, e.msg_id, e.event_type, a.attempt, a.http_status, a.error, a.at, a.next_attempt_at
    FROM webhook_attempts a
    LEFT JOIN webhook_events e ON e.id = a.event_id
    WHERE a.webhook_id = %lld
    ORDER BY a.id DESC
    LIMIT %lld OFFSET %lld

-- what the writers' cache of enabled webhooks follows: any webhook made, deleted, disabled or
-- enabled again changes one of these, and a change through the API raises rev (schema 67)
-- name: webhook_fingerprint
SELECT COUNT(*), COALESCE(MAX(id), 0), COUNT(disabled_at), COALESCE(SUM(events), 0),
        COALESCE(MAX(rev), 0)
    FROM webhooks

-- A change of an account's webhook through the API (PATCH /webhook/<id>): its url and
-- events, and whether it is disabled (disabled_at given: set unless it was; none: enabled
-- again, its count of failures in a row started over), each raising rev past every
-- webhook's (SQLite's writes take turns; PostgreSQL's come from a sequence, as two
-- changes at once would read the same highest).
-- name: webhook_change
UPDATE webhooks
    SET url = %s, events = %d, rev = (SELECT COALESCE(MAX(rev), 0) + 1 FROM webhooks)
    WHERE id = %lld AND account_id = %lld

-- name: webhook_change [pgsql]
UPDATE webhooks
    SET url = %s, events = %d, rev = nextval('webhooks_rev')
    WHERE id = %lld AND account_id = %lld

-- name: webhook_disable
UPDATE webhooks
    SET disabled_at = %lld, disabled_reason = %s,
        rev = (SELECT COALESCE(MAX(rev), 0) + 1 FROM webhooks)
    WHERE id = %lld AND account_id = %lld AND disabled_at IS NULL

-- name: webhook_disable [pgsql]
UPDATE webhooks
    SET disabled_at = %lld, disabled_reason = %s, rev = nextval('webhooks_rev')
    WHERE id = %lld AND account_id = %lld AND disabled_at IS NULL

-- name: webhook_enable
UPDATE webhooks
    SET disabled_at = NULL, disabled_reason = NULL, failures = 0,
        rev = (SELECT COALESCE(MAX(rev), 0) + 1 FROM webhooks)
    WHERE id = %lld AND account_id = %lld AND disabled_at IS NOT NULL

-- name: webhook_enable [pgsql]
UPDATE webhooks
    SET disabled_at = NULL, disabled_reason = NULL, failures = 0, rev = nextval('webhooks_rev')
    WHERE id = %lld AND account_id = %lld AND disabled_at IS NOT NULL

-- A new secret (POST /webhook/<id>/secret); the one it replaces signs deliveries too until
-- the time given, or (none) no more: forgotten.
-- name: webhook_secret_new
UPDATE webhooks
    SET secret_prev = secret, secret_prev_until = %lld, secret = %s
    WHERE id = %lld AND account_id = %lld

-- name: webhook_secret_only
UPDATE webhooks
    SET secret_prev = NULL, secret_prev_until = NULL, secret = %s
    WHERE id = %lld AND account_id = %lld

-- POST /webhook/<id>/recover and /test: the webhook, read (PostgreSQL: locked against a
-- disable or a DELETE until the transaction commits) before its failed events are queued
-- again or its test event is written
-- name: webhook_row_shared
SELECT disabled_at
    FROM webhooks
    WHERE id = %lld AND account_id = %lld

-- name: webhook_row_shared [pgsql]
SELECT disabled_at
    FROM webhooks
    WHERE id = %lld AND account_id = %lld
    FOR SHARE

-- its events that failed every attempt, made since a time: waiting again, due now, their
-- attempts started over (the body of each is kept when it fails: state 2)
-- name: webhook_events_recover
UPDATE webhook_events
    SET state = 0, attempts = 0, next_attempt_at = %lld, claimed_until = NULL
    WHERE webhook_id = %lld AND state = 2 AND created_at >= %lld

-- A previous secret past its time is forgotten (the writers' sweep).
-- name: webhook_secret_prev_sweep
UPDATE webhooks
    SET secret_prev = NULL, secret_prev_until = NULL
    WHERE secret_prev_until <= %lld

-- name: webhook_enabled_all
SELECT id, account_id, events
    FROM webhooks
    WHERE disabled_at IS NULL
    ORDER BY account_id, id

-- an account's enabled webhooks that take an event type (a bit of events)
-- name: webhook_subscribers
SELECT id
    FROM webhooks
    WHERE account_id = %lld AND disabled_at IS NULL AND (events & %d) <> 0
    ORDER BY id

-- PostgreSQL: locked until the transaction that writes their events commits, so that a
-- DELETE or a disable of one of them waits for that commit and then drops those events, or
-- commits first and the webhook is not read here (FOR SHARE: a DELETE's and an UPDATE's
-- lock wait for it; other writers' FOR SHARE do not)
-- name: webhook_subscribers [pgsql]
SELECT id
    FROM webhooks
    WHERE account_id = %lld AND disabled_at IS NULL AND (events & %d) <> 0
    ORDER BY id
    FOR SHARE

-- of the webhooks a scan writer's batch has events for (a list of ids, qrt_db_id_list, from
-- its cache), those still there and enabled, with the events they take, read in the batch's
-- transaction: the cache may be older than a DELETE, a disable or a change of events
-- (SQLite: the transaction holds the write lock already)
-- name: webhook_live
SELECT id, events
    FROM webhooks
    WHERE id IN (SELECT value FROM json_each(%s)) AND disabled_at IS NULL

-- (locked as webhook_subscribers's, until the batch commits)
-- name: webhook_live [pgsql]
SELECT id, events
    FROM webhooks
    WHERE id = ANY (CAST(%s AS BIGINT[])) AND disabled_at IS NULL
    ORDER BY id
    FOR SHARE

-- name: webhook_tracker_owner
SELECT id, account_id, code
    FROM trackers
    WHERE id = %lld

-- what says whether a tracker has expired: its last visit before a batch, its validity and cap
-- name: webhook_tracker_expiry
SELECT t.last_visit, r.valid_until, r.max_scans, COALESCE(r.redirected, 0)
    FROM trackers t
    LEFT JOIN tracker_routing r ON r.tracker_id = t.id
    WHERE t.id = %lld

-- name: webhook_event_add
INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, body, created_at,
        next_attempt_at)
    VALUES (%lld, %s, %s, %lld, %s, %lld, %lld)

-- a visit's event: its reference, the body rendered at delivery (schema 37)
-- name: webhook_visit_event_add
INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, visit_id, body,
        created_at, next_attempt_at, visit_start)
    VALUES (%lld, %s, %s, %lld, %lld, '', %lld, %lld, %lld)

-- name: webhook_visit_event_add_many [pgsql-only]
INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, visit_id, body,
        created_at, next_attempt_at, visit_start)
    SELECT w, m, e, t, v, '', c, n, s
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[])) AS x (w, m, e, t, v, c, n, s)

-- name: webhook_event_add_many [pgsql-only]
INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, body, created_at,
        next_attempt_at)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))

-- the outbox bound: the id of the newest pending event of a webhook past the newest %lld
-- name: webhook_bound_cut
SELECT id
    FROM webhook_events
    WHERE webhook_id = %lld AND state = 0
    ORDER BY id DESC
    LIMIT 1 OFFSET %lld

-- the end of a slice of the bound (SQLite): the pending event %lld places after the oldest
-- name: webhook_bound_slice
SELECT id
    FROM webhook_events
    WHERE webhook_id = %lld AND state = 0
    ORDER BY id
    LIMIT 1 OFFSET %lld

-- the oldest pending events past the bound that were never tried nor taken: deleted,
-- counted in webhook_drops (schema 44); the others stay, dropped (their attempts name them)
-- name: webhook_bound_delete
DELETE
    FROM webhook_events
    WHERE webhook_id = %lld AND state = 0 AND id <= %lld AND attempts = 0 AND claimed_until IS
        NULL

-- name: webhook_bound_drop
UPDATE webhook_events
    SET state = 3, body = ''
    WHERE webhook_id = %lld AND state = 0 AND id <= %lld

-- name: webhook_drops_add
INSERT INTO webhook_drops (webhook_id, at, n)
    VALUES (%lld, %lld, %lld)
    ON CONFLICT (webhook_id, at) DO UPDATE
    SET n = webhook_drops.n + excluded.n

-- name: webhook_drops_delete
DELETE
    FROM webhook_drops
    WHERE webhook_id = %lld

-- name: webhook_sweep_drops
DELETE
    FROM webhook_drops
    WHERE at < %lld

-- the sweep walks each table by id, a bounded window at a time: the window's end (the row
-- %lld rows past the window's start) and its age, then the rows done with in the window that
-- are older than a time (delivered, failed, dropped events; attempts)
-- name: webhook_sweep_events_end
SELECT id, created_at
    FROM webhook_events
    WHERE id > %lld
    ORDER BY id
    LIMIT 1 OFFSET %lld

-- name: webhook_sweep_events
DELETE
    FROM webhook_events
    WHERE id > %lld AND id <= %lld AND state <> 0 AND created_at < %lld

-- name: webhook_sweep_attempts_end
SELECT id, at
    FROM webhook_attempts
    WHERE id > %lld
    ORDER BY id
    LIMIT 1 OFFSET %lld

-- name: webhook_sweep_attempts
DELETE
    FROM webhook_attempts
    WHERE id > %lld AND id <= %lld AND at < %lld
