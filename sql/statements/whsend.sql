-- Statements of mod_qrtrack/qrt_store_whsend.c, the webhook delivery worker (see
-- docs/design.md, "Webhook deliveries"). Times are epoch seconds.

-- The due events a worker may take, oldest first: pending, due, not leased to a worker
-- (or leased past its end), of a webhook that is not disabled, and the oldest pending
-- event of its (webhook, tracker) pair, so that a tracker's events arrive in order.
-- SQLite finds those oldest events by seeking in webhook_events_pending from one
-- (webhook, tracker) pair to the next: a step per pair, however many events wait behind
-- each (a GROUP BY would read them all). Every event carries a tracker id (0 for one of no
-- tracker, as webhook.test): a NULL one would sort first on SQLite but last on PostgreSQL,
-- where no step from a pair reaches it.
-- name: whsend_due
WITH RECURSIVE heads (id, w, t) AS (SELECT id, webhook_id, tracker_id
    FROM (SELECT id, webhook_id, tracker_id
        FROM webhook_events
        WHERE state = 0
        ORDER BY webhook_id, tracker_id, id
        LIMIT 1)
    UNION ALL
    SELECT n.id, n.webhook_id, n.tracker_id
    FROM heads h
    JOIN webhook_events n ON n.id = COALESCE((SELECT id
        FROM webhook_events
        WHERE state = 0 AND webhook_id = h.w AND tracker_id > COALESCE(h.t,
            -9223372036854775807)
        ORDER BY tracker_id, id
        LIMIT 1), (SELECT id
        FROM webhook_events
        WHERE state = 0 AND webhook_id > h.w
        ORDER BY webhook_id, tracker_id, id
        LIMIT 1)))
SELECT e.id, e.webhook_id, e.msg_id, e.body, e.attempts, w.url, w.secret, e.visit_id,
        e.tracker_id, e.event_type, e.created_at, e.visit_start, w.secret_prev,
        w.secret_prev_until
    FROM heads h
    CROSS JOIN webhook_events e ON e.id = h.id
    JOIN webhooks w ON w.id = e.webhook_id
    WHERE e.next_attempt_at <= %lld AND (e.claimed_until IS NULL OR e.claimed_until <= %lld) AND
        w.disabled_at IS NULL
    ORDER BY e.next_attempt_at, e.id
    LIMIT %lld

-- Several nodes share PostgreSQL's outbox: rows another worker is claiming are skipped.
-- The oldest pending event of each (webhook, tracker) pair is found by seeking from one
-- pair to the next, as on SQLite: a claim costs a step per pair, not a read of every
-- waiting event (which the anti-join it replaces did, and a busy tracker's backlog of
-- waiting events made each claim slow).
-- name: whsend_due [pgsql]
WITH RECURSIVE heads (id, w, t) AS ((SELECT id, webhook_id, tracker_id
        FROM webhook_events
        WHERE state = 0
        ORDER BY webhook_id, tracker_id, id
        LIMIT 1)
    UNION ALL
    SELECT n.id, n.webhook_id, n.tracker_id
    FROM heads h
    JOIN webhook_events n ON n.id = COALESCE((SELECT id
        FROM webhook_events
        WHERE state = 0 AND webhook_id = h.w AND tracker_id > COALESCE(h.t,
            -9223372036854775807)
        ORDER BY tracker_id, id
        LIMIT 1), (SELECT id
        FROM webhook_events
        WHERE state = 0 AND webhook_id > h.w
        ORDER BY webhook_id, tracker_id, id
        LIMIT 1)))
SELECT e.id, e.webhook_id, e.msg_id, e.body, e.attempts, w.url, w.secret, e.visit_id,
        e.tracker_id, e.event_type, e.created_at, e.visit_start, w.secret_prev,
        w.secret_prev_until
    FROM heads h
    JOIN webhook_events e ON e.id = h.id
    JOIN webhooks w ON w.id = e.webhook_id
    WHERE e.state = 0 AND e.next_attempt_at <= %lld AND (e.claimed_until IS NULL OR
        e.claimed_until <= %lld) AND w.disabled_at IS NULL
    ORDER BY e.next_attempt_at, e.id
    LIMIT %lld
    FOR UPDATE OF e SKIP LOCKED

-- The events after a due one of its (webhook, tracker) pair, in order, sent after it in
-- the same run when it is delivered; the last column says whether each may be taken now
-- (the run stops at the first that may not).
-- (SQLite: by the tracker's waiting events, not webhook_events_state, whose walk would
-- read every other tracker's waiting events too)
-- name: whsend_followers
SELECT e.id, e.webhook_id, e.msg_id, e.body, e.attempts, w.url, w.secret, e.visit_id,
        e.tracker_id, e.event_type, e.created_at, e.visit_start, w.secret_prev,
        w.secret_prev_until, CASE WHEN e.next_attempt_at
        <= %lld AND (e.claimed_until IS NULL OR e.claimed_until <= %lld) THEN 1 ELSE 0 END
    FROM webhook_events e INDEXED BY webhook_events_pending
    JOIN webhooks w ON w.id = e.webhook_id
    WHERE e.webhook_id = %lld AND e.tracker_id = %lld AND e.state = 0 AND e.id > %lld
    ORDER BY e.id
    LIMIT %lld

-- name: whsend_followers [pgsql]
SELECT e.id, e.webhook_id, e.msg_id, e.body, e.attempts, w.url, w.secret, e.visit_id,
        e.tracker_id, e.event_type, e.created_at, e.visit_start, w.secret_prev,
        w.secret_prev_until, CASE WHEN e.next_attempt_at
        <= %lld AND (e.claimed_until IS NULL OR e.claimed_until <= %lld) THEN 1 ELSE 0 END
    FROM webhook_events e
    JOIN webhooks w ON w.id = e.webhook_id
    WHERE e.webhook_id = %lld AND e.tracker_id = %lld AND e.state = 0 AND e.id > %lld
    ORDER BY e.id
    LIMIT %lld

-- The visits of the visit events taken (schema 37: body '', visit_id set), given as a JSON
-- array of [tracker, time, id]: each visit, its dictionaries' strings and its tracker's
-- code, from which the body is rendered. One statement for a claim's events; on SQLite
-- each is one seek, visit_rows being ordered by (tracker, time, id) (schema 44's time).
-- name: whsend_visits
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url, t.code
    FROM json_each(%s) k
    JOIN visit_rows v ON v.tracker_id = k.value ->> 0 AND v.visit_start = k.value ->> 1 AND v.id =
        k.value ->> 2
    JOIN trackers t ON t.id = v.tracker_id
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id

-- name: whsend_visits [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id), t.code
    FROM jsonb_array_elements(CAST(%s AS jsonb)) k
    JOIN visit_rows v ON v.id = CAST(k.value ->> 2 AS BIGINT)
    JOIN trackers t ON t.id = v.tracker_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = CAST(k.value ->> 0 AS BIGINT)

-- An event written before schema 44, without its visit's time: found among the tracker's
-- visits, then read by whsend_visits.
-- name: whsend_visit_time
SELECT visit_start
    FROM visit_rows
    WHERE tracker_id = %lld AND id = %lld

-- A visit's event whose visit is gone (retention, the tracker or account deleted): dropped.
-- name: whsend_visit_gone
UPDATE webhook_events
    SET state = 3, claimed_until = NULL
    WHERE id = %lld AND state = 0

-- The lease on the events taken: a JSON array of their ids.
-- (SQLite: the rows were read before this transaction; each is taken only if still waiting)
-- name: whsend_claim
UPDATE webhook_events
    SET claimed_until = %lld, claimed_by = %lld
    WHERE id IN (SELECT value FROM json_each(%s)) AND state = 0 AND (claimed_until IS NULL OR
        claimed_until <= %lld)

-- name: whsend_claim [pgsql]
UPDATE webhook_events
    SET claimed_until = %lld, claimed_by = %lld
    WHERE id IN (SELECT CAST(jsonb_array_elements_text(CAST(%s AS jsonb)) AS BIGINT)) AND
        state = 0 AND (claimed_until IS NULL OR claimed_until <= %lld)

-- The leases of a worker of this server that is gone (it died, or stopped without giving
-- them back), given back by the one taking over.
-- name: whsend_takeover
UPDATE webhook_events
    SET claimed_until = NULL, claimed_by = NULL
    WHERE claimed_until IS NOT NULL AND claimed_by = %lld AND state = 0

-- name: whsend_attempt_add
INSERT INTO webhook_attempts (event_id, webhook_id, attempt, http_status, error, at,
        next_attempt_at)
    VALUES (%lld, %lld, %lld, %lld, %s, %lld, %lld)

-- An event's outcome; a row no longer pending (dropped by the outbox bound meanwhile)
-- stays as it is.
-- name: whsend_delivered
UPDATE webhook_events
    SET state = 1, attempts = %lld, claimed_until = NULL
    WHERE id = %lld AND state = 0

-- name: whsend_retry
UPDATE webhook_events
    SET attempts = %lld, next_attempt_at = %lld, claimed_until = NULL
    WHERE id = %lld AND state = 0

-- name: whsend_failed
UPDATE webhook_events
    SET state = 2, attempts = %lld, claimed_until = NULL
    WHERE id = %lld AND state = 0

-- An event taken but not tried (the worker stopping): free for the next worker.
-- name: whsend_release
UPDATE webhook_events
    SET claimed_until = NULL
    WHERE id = %lld AND state = 0

-- name: whsend_failures_reset
UPDATE webhooks
    SET failures = 0
    WHERE id = %lld AND failures <> 0

-- name: whsend_failures_add
UPDATE webhooks
    SET failures = failures + 1
    WHERE id = %lld

-- Disables a webhook (410, or failures reaching the bound given).
-- name: whsend_disable
UPDATE webhooks
    SET disabled_at = %lld, disabled_reason = %s
    WHERE id = %lld AND disabled_at IS NULL AND failures >= %lld

-- A webhook just disabled: its pending events are dropped (counted as the webhook's
-- dropped), never to wait behind a webhook that delivers no more.
-- name: whsend_drop_pending
UPDATE webhook_events
    SET state = 3, body = '', claimed_until = NULL
    WHERE webhook_id = %lld AND state = 0

-- name: whsend_backlog
SELECT COUNT(*)
    FROM webhook_events
    WHERE state = 0
