-- Statements of mod_qrtrack/qrt_store_agg_write.c (see docs/design.md, "The SQL statements").
-- In the seeks that join agg_trk, "v.tracker_id + 0" keeps the visitor's index first: with
-- statistics, PostgreSQL may otherwise take the account's trackers first and read each one's
-- visits for the visitor. The write path's common seek has no join at all (agg_seek_visitor,
-- agg_seek_visitor_many).
-- agg_seek_visitor_many (PostgreSQL): the previous visits of a batch's visitors in one statement,
-- as agg_seek_visitor finds each (the latest anywhere, kept when its tracker is in the account),
-- with their strings. Without a join on agg_trk, the walk backwards along the visitor's
-- index (over the visits that are not bots alone, schema 20) is the plan whatever the
-- statistics say.

-- the highest visit id handed out (SQLite: visit_seq, schema 11)
-- name: agg_max_id
SELECT last
    FROM visit_seq

-- (its dictionary ids: the strings are read only where they may differ from the new visit's,
-- agg_last_names)
-- name: agg_seek_visitor_in_account
SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id
    FROM visit_rows v
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- the same anywhere: most visitors' latest visit is in the account (no join)
-- name: agg_seek_visitor
SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.visitor = %lld AND v.bot = 0 AND v.id < %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- the same with the visits before it, latest first (SQLite's write path): where the previous
-- visit on a tracker, browser, country or city is among them, no seek of its own is made
-- name: agg_seek_visitor_recent
SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.visitor = %lld AND v.bot = 0 AND v.id < %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld

-- name: agg_ua_browser
SELECT COALESCE(browser, '')
    FROM visit_uas
    WHERE id = %lld

-- name: agg_place_names
SELECT COALESCE(country, ''), COALESCE(city, '')
    FROM visit_places
    WHERE id = %lld

-- (the '+': by the visitor's index, not along the whole tracker, on both backends; PostgreSQL's
-- visits_visitor_id carries the tracker: agg_seek_visitor_on_tracker_many)
-- name: agg_seek_visitor_on_tracker
SELECT v.visit_start
    FROM visit_rows v
    WHERE v.visitor = %lld AND +v.tracker_id = %lld AND v.bot = 0 AND v.id < %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- SQLite: agg_seek_visitor_on_tracker walked from both ends at once (qrt_store_agg_write.c,
-- agg_seek_tracker_sqlite), a chunk of each in turn: the visitor's visits before a
-- (time, id), newest first, and the tracker's. A visitor with many visits elsewhere (one
-- address and user agent behind a proxy) made the walk along its own visits long; the
-- tracker's visits reach the same visit first then, and each chunk is bounded.
-- name: agg_seek_visitor_chunk
SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE v.visitor = %lld AND v.bot = 0 AND v.id < %lld AND (v.visit_start, v.id) < (%lld, %lld)
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld

-- name: agg_seek_visitor_chunk [pgsql]
SELECT %lld, %lld, %lld, %lld, %lld

-- name: agg_seek_tracker_chunk
SELECT v.visitor, v.bot, v.visit_start, v.id
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND (v.visit_start, v.id) < (%lld, %lld)
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld

-- name: agg_seek_tracker_chunk [pgsql]
SELECT %lld, %lld, %lld, %lld

-- name: agg_seek_visitor_browser
SELECT v.visit_start, v.id, v.tracker_id, COALESCE(vu.browser, ''), COALESCE(vp.country, ''),
        COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND COALESCE(vu.browser, '') = %s
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- name: agg_seek_visitor_country
SELECT v.visit_start, v.id, v.tracker_id, COALESCE(vu.browser, ''), COALESCE(vp.country, ''),
        COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND COALESCE(vp.country, '') = %s
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- name: agg_seek_visitor_city
SELECT v.visit_start, v.id, v.tracker_id, COALESCE(vu.browser, ''), COALESCE(vp.country, ''),
        COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND COALESCE(vp.city, '') = %s
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- name: agg_seek_visitor_tag
SELECT v.visit_start, v.id, v.tracker_id, COALESCE(vu.browser, ''), COALESCE(vp.country, ''),
        COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND EXISTS (SELECT 1
    FROM agg_tag g
    WHERE g.tracker_id = v.tracker_id AND g.tag = %s)
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1

-- name: agg_visitor
SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id <= %lld
    ORDER BY v.visit_start, v.id

-- a visit out of order: the visitor's visits from its time on, and the latest ones before it, or
-- all of them (agg_recompute)
-- name: agg_visitor_from
SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id <= %lld AND v.visit_start >= %lld
    ORDER BY v.visit_start, v.id

-- name: agg_visitor_before_of_kind
SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND v.visit_start <= %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld

-- name: agg_visitor_before_any
SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = %lld AND k.tracker_id = v.tracker_id + 0 AND k.account_id = %lld AND v.bot = 0
        AND v.id < %lld AND v.visit_start <= %lld
    ORDER BY v.visit_start, v.id

-- a tracker deleted or retagged
-- name: agg_trk_now
SELECT account_id, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END
    FROM trackers
    WHERE id = %lld

-- name: agg_tags_now
SELECT tag
    FROM tracker_tags
    WHERE tracker_id = %lld

-- its visitors, from its visits (SQLite keeps no tracker_visitors: schema 16); counted up to a
-- bound (beyond it the tracker is not repaired in place)
-- name: agg_trk_visitors
SELECT DISTINCT visitor
    FROM visit_rows
    WHERE tracker_id = %lld AND bot = 0

-- name: agg_trk_visitor_count
SELECT COUNT(*)
    FROM (SELECT DISTINCT visitor
    FROM visit_rows
    WHERE tracker_id = %lld AND bot = 0
    LIMIT %lld) x

-- name: agg_trk_del
DELETE
    FROM agg_trk
    WHERE tracker_id = %lld

-- name: agg_tag_del
DELETE
    FROM agg_tag
    WHERE tracker_id = %lld

-- name: agg_seek_visitor_many [pgsql-only]
SELECT u.n, p.visit_start, p.id, p.tracker_id, p.ua_id, p.place_id, COALESCE(vu.browser, ''),
        COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[])) AS u(n, visitor,
        before)
    CROSS JOIN LATERAL (SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.visitor = u.visitor AND v.bot = 0 AND v.id < u.before
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1) p
    LEFT JOIN visit_uas vu ON vu.id = p.ua_id
    LEFT JOIN visit_places vp ON vp.id = p.place_id

-- the same with up to 8 visits a visitor (AGG_RECENT), in no order (qrt_store_agg_write.c
-- sorts them): an import's batch looks for the previous visit on a tracker, browser, country
-- or city among them and the batch's own before it seeks it
-- name: agg_seek_visitor_recent_many [pgsql-only]
SELECT u.n, p.visit_start, p.id, p.tracker_id, p.ua_id, p.place_id, COALESCE(vu.browser, ''),
        COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[])) AS u(n, visitor,
        before)
    CROSS JOIN LATERAL (SELECT v.visit_start, v.id, v.tracker_id, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.visitor = u.visitor AND v.bot = 0 AND v.id < u.before
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 8) p
    LEFT JOIN visit_uas vu ON vu.id = p.ua_id
    LEFT JOIN visit_places vp ON vp.id = p.place_id

-- along visits_visitor_id, whose entries carry the tracker (schema 53): the visitor's visits
-- newest first, to the first on the tracker (the '+': not along the tracker's visits, which
-- the planner may take for as few as the visitor's)
-- The seeks of a batch's visits that come back to a visitor (PostgreSQL): the time of the
-- visitor's latest visit before each on its tracker, or with its browser, country or city,
-- in one statement each, as agg_seek_visitor_on_tracker and agg_seek_visitor_browser,
-- _country, _city find them one at a time
-- name: agg_seek_visitor_on_tracker_many [pgsql-only]
SELECT u.n, p.visit_start
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[])) AS u(n, visitor, tracker, before)
    CROSS JOIN LATERAL (SELECT v.visit_start
    FROM visit_rows v
    WHERE v.visitor = u.visitor AND +v.tracker_id = u.tracker AND v.bot = 0 AND v.id < u.before
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1) p

-- name: agg_seek_visitor_browser_many [pgsql-only]
SELECT u.n, p.visit_start
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS TEXT[])) AS u(n, visitor, account, before, val)
    CROSS JOIN LATERAL (SELECT v.visit_start
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = u.visitor AND k.tracker_id = v.tracker_id + 0 AND k.account_id = u.account
        AND v.bot = 0 AND v.id < u.before AND COALESCE(vu.browser, '') = u.val
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1) p

-- name: agg_seek_visitor_country_many [pgsql-only]
SELECT u.n, p.visit_start
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS TEXT[])) AS u(n, visitor, account, before, val)
    CROSS JOIN LATERAL (SELECT v.visit_start
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = u.visitor AND k.tracker_id = v.tracker_id + 0 AND k.account_id = u.account
        AND v.bot = 0 AND v.id < u.before AND COALESCE(vp.country, '') = u.val
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1) p

-- name: agg_seek_visitor_city_many [pgsql-only]
SELECT u.n, p.visit_start
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS TEXT[])) AS u(n, visitor, account, before, val)
    CROSS JOIN LATERAL (SELECT v.visit_start
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = u.visitor AND k.tracker_id = v.tracker_id + 0 AND k.account_id = u.account
        AND v.bot = 0 AND v.id < u.before AND COALESCE(vp.city, '') = u.val
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT 1) p

-- a batch's visits out of order (PostgreSQL): agg_visitor_from and agg_visitor_before_of_kind of
-- each, in one statement each, the rows of each visit together (u.n) in the order the one
-- visit's statement gives them
-- name: agg_visitor_from_many [pgsql-only]
SELECT u.n, p.id, p.visit_start, p.tracker_id, p.source, p.browser, p.country, p.city
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[])) AS u(n, visitor, account, upto, since)
    CROSS JOIN LATERAL (SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN
        'click' ELSE 'scan' END AS source, COALESCE(vu.browser, '') AS browser,
        COALESCE(vp.country, '') AS country, COALESCE(vp.city, '') AS city
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = u.visitor AND k.tracker_id = v.tracker_id + 0 AND k.account_id = u.account
        AND v.bot = 0 AND v.id <= u.upto AND v.visit_start >= u.since) p
    ORDER BY u.n, p.visit_start, p.id

-- name: agg_visitor_before_of_kind_many [pgsql-only]
SELECT u.n, p.id, p.visit_start, p.tracker_id, p.source, p.browser, p.country, p.city
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[])) AS u(n, visitor, account, below,
        upto, lim)
    CROSS JOIN LATERAL (SELECT v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN
        'click' ELSE 'scan' END AS source, COALESCE(vu.browser, '') AS browser,
        COALESCE(vp.country, '') AS country, COALESCE(vp.city, '') AS city
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    CROSS JOIN agg_trk k
    WHERE v.visitor = u.visitor AND k.tracker_id = v.tracker_id + 0 AND k.account_id = u.account
        AND v.bot = 0 AND v.id < u.below AND v.visit_start <= u.upto
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT u.lim) p
    ORDER BY u.n, p.visit_start DESC, p.id DESC
