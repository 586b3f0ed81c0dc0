-- Statements of mod_qrtrack/qrt_store_visits_read.c (see docs/design.md, "The SQL statements").
-- A visit row comes with its dictionaries' strings (schema 7) and its destination (schema 25:
-- NULL for none).
-- The filter of a tracker, a window and since_id bounds (tracker_id, visit_start), which
-- also gives the order without a sort; the "+" keeps SQLite off the id index, which would
-- read the whole tracker. Polls (since_id > 0) walk the time order from the floor of their
-- ids (visits_floor).
-- Searches (_s: SQLite and PostgreSQL, _ci: PostgreSQL's case-insensitive columns) either
-- walk the visits testing each on its own strings, or pick the matched visits through the
-- indexes visits_ua, visits_place, visits_ref, visits_ip (tracker, then the dictionary's
-- id). A visit found again from an index: by its key in SQLite's table (schema 11: WITHOUT
-- ROWID, key (tracker_id, visit_start, id), which every index ends with), by its id in
-- PostgreSQL's. SQLite gets the matched keys as a table (UNION: once each) and reads the
-- rows by key: an IN list would draw it to walking the table in order. In the picks, the
-- "+"s keep the window off v.visit_start, which would make SQLite walk the tracker's window
-- for each match instead of seeking its key.
-- The *_sizes statement gives the tracker's size and each dictionary's (its highest id):
-- which way a search's matched entries are read.
-- PostgreSQL plans most executions afresh (custom plans), and each join adds to the join
-- search: the statements it runs read a visit's address, referer and destination by scalar
-- subqueries, and its picks sort and cut the matched rows before joining their strings.

-- name: visits_count
SELECT COUNT(*)
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld

-- (a search's count in a window walked: SQLite's polls, from their floor, and searches that
-- match too many entries of the tracker to list them)
-- name: visits_count_s
SELECT COUNT(*)
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND (u.browser LIKE %s ESCAPE '\' OR u.os LIKE %s ESCAPE '\' OR u.device LIKE %s ESCAPE '\'
        OR u.user_agent LIKE %s ESCAPE '\' OR g.country LIKE %s ESCAPE '\' OR g.city LIKE %s ESCAPE
        '\' OR r.referer LIKE %s ESCAPE '\' OR i.ip LIKE %s ESCAPE '\')

-- The first rows (offset 0: the first page, each chunk of an export): along the index with their
-- strings, no ids first and no sort.
-- name: visits_first
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld

-- name: visits_first [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld

-- name: visits_first_s
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND (u.browser LIKE %s ESCAPE '\' OR u.os LIKE %s ESCAPE '\' OR u.device LIKE %s ESCAPE '\'
        OR u.user_agent LIKE %s ESCAPE '\' OR g.country LIKE %s ESCAPE '\' OR g.city LIKE %s ESCAPE
        '\' OR r.referer LIKE %s ESCAPE '\' OR i.ip LIKE %s ESCAPE '\')
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld

-- name: visits_page
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE (v.tracker_id, v.visit_start, v.id) IN (SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld)
    ORDER BY v.visit_start DESC, v.id DESC

-- name: visits_page_s
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE (v.tracker_id, v.visit_start, v.id) IN (SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND (u.browser LIKE %s ESCAPE '\' OR u.os LIKE %s ESCAPE '\' OR u.device LIKE %s ESCAPE '\'
        OR u.user_agent LIKE %s ESCAPE '\' OR g.country LIKE %s ESCAPE '\' OR g.city LIKE %s ESCAPE
        '\' OR r.referer LIKE %s ESCAPE '\' OR i.ip LIKE %s ESCAPE '\')
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld)
    ORDER BY v.visit_start DESC, v.id DESC

-- The earliest visit_start of the ids from a bucket up, how many buckets say
-- so, and the highest id handed out
-- name: visits_floor
SELECT COUNT(*), COALESCE(MIN(min_start), 0), (SELECT last
    FROM visit_seq)
    FROM visit_floor
    WHERE bucket >= %lld

-- name: visits_same
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE v.tracker_id = %lld AND v.visit_start = %lld AND v.id > %lld AND v.id < %lld
    ORDER BY v.id DESC
    LIMIT %lld

-- name: visits_same [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start = %lld AND v.id > %lld AND v.id < %lld
    ORDER BY v.id DESC
    LIMIT %lld

-- name: visits_same_s
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE v.tracker_id = %lld AND v.visit_start = %lld AND v.id > %lld AND v.id < %lld AND
        (u.browser LIKE %s ESCAPE '\' OR u.os LIKE %s ESCAPE '\' OR u.device LIKE %s ESCAPE '\' OR
        u.user_agent LIKE %s ESCAPE '\' OR g.country LIKE %s ESCAPE '\' OR g.city LIKE %s ESCAPE '\'
        OR r.referer LIKE %s ESCAPE '\' OR i.ip LIKE %s ESCAPE '\')
    ORDER BY v.id DESC
    LIMIT %lld

-- (SQLite: schema 14, PostgreSQL: schema 57; kept by the writer and the view's triggers)
-- name: visits_max_id
SELECT last_visit_id
    FROM trackers
    WHERE id = %lld

-- search without since_id: the matched entries, then the visits that name them
-- name: visits_sizes
SELECT (SELECT total_scans + total_clicks + total_bots
    FROM trackers
    WHERE id = %lld), (SELECT COALESCE(MAX(id), 0)
    FROM visit_uas), (SELECT COALESCE(MAX(id), 0)
    FROM visit_places), (SELECT COALESCE(MAX(id), 0)
    FROM visit_referers), (SELECT COALESCE(MAX(id), 0)
    FROM visit_ips)

-- name: visits_ids_ua_all_s
SELECT id
    FROM visit_uas
    WHERE browser LIKE %s ESCAPE '\' OR os LIKE %s ESCAPE '\' OR device LIKE %s ESCAPE '\' OR
        user_agent LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_place_all_s
SELECT id
    FROM visit_places
    WHERE country LIKE %s ESCAPE '\' OR city LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_ref_all_s
SELECT id
    FROM visit_referers
    WHERE referer LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_ip_all_s
SELECT id
    FROM visit_ips
    WHERE ip LIKE %s ESCAPE '\'
    LIMIT 10001

-- The entries the tracker's visits name, found by skipping from one to the next (a seek of
-- the tracker's index each) for up to the second argument's count, then the rest of the
-- index in one pass (the same walk as PostgreSQL's qrt_own_ids): p holds the tracker and
-- the count, s the entries found by seeks, k every entry.
-- name: visits_ids_ua_own_s
WITH RECURSIVE p(t, cap) AS (SELECT %lld, %lld),
    s(id, n) AS (SELECT (SELECT v.ua_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ua_id IS NOT NULL
    ORDER BY v.ua_id
    LIMIT 1), 1
UNION ALL
SELECT (SELECT v.ua_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ua_id > s.id
    ORDER BY v.ua_id
    LIMIT 1), s.n + 1
    FROM s
    WHERE s.id IS NOT NULL AND s.n < (SELECT cap FROM p)),
    k(id) AS (SELECT id
    FROM s
    WHERE id IS NOT NULL
UNION ALL
SELECT DISTINCT v.ua_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ua_id > (SELECT MAX(id) FROM s) AND (SELECT MAX(n)
    FROM s) >= (SELECT cap FROM p))
SELECT id
    FROM visit_uas
    WHERE id IN (SELECT id FROM k) AND (browser LIKE %s ESCAPE '\' OR os LIKE %s
        ESCAPE '\' OR device LIKE %s ESCAPE '\' OR user_agent LIKE %s ESCAPE '\')
    LIMIT 10001

-- name: visits_ids_place_own_s
WITH RECURSIVE p(t, cap) AS (SELECT %lld, %lld),
    s(id, n) AS (SELECT (SELECT v.place_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.place_id IS NOT NULL
    ORDER BY v.place_id
    LIMIT 1), 1
UNION ALL
SELECT (SELECT v.place_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.place_id > s.id
    ORDER BY v.place_id
    LIMIT 1), s.n + 1
    FROM s
    WHERE s.id IS NOT NULL AND s.n < (SELECT cap FROM p)),
    k(id) AS (SELECT id
    FROM s
    WHERE id IS NOT NULL
UNION ALL
SELECT DISTINCT v.place_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.place_id > (SELECT MAX(id) FROM s) AND (SELECT MAX(n)
    FROM s) >= (SELECT cap FROM p))
SELECT id
    FROM visit_places
    WHERE id IN (SELECT id FROM k) AND (country LIKE %s ESCAPE '\' OR city LIKE
        %s ESCAPE '\')
    LIMIT 10001

-- name: visits_ids_ref_own_s
WITH RECURSIVE p(t, cap) AS (SELECT %lld, %lld),
    s(id, n) AS (SELECT (SELECT v.ref_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ref_id IS NOT NULL
    ORDER BY v.ref_id
    LIMIT 1), 1
UNION ALL
SELECT (SELECT v.ref_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ref_id > s.id
    ORDER BY v.ref_id
    LIMIT 1), s.n + 1
    FROM s
    WHERE s.id IS NOT NULL AND s.n < (SELECT cap FROM p)),
    k(id) AS (SELECT id
    FROM s
    WHERE id IS NOT NULL
UNION ALL
SELECT DISTINCT v.ref_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ref_id > (SELECT MAX(id) FROM s) AND (SELECT MAX(n)
    FROM s) >= (SELECT cap FROM p))
SELECT id
    FROM visit_referers
    WHERE id IN (SELECT id FROM k) AND (referer LIKE %s ESCAPE '\')
    LIMIT 10001

-- name: visits_ids_ip_own_s
WITH RECURSIVE p(t, cap) AS (SELECT %lld, %lld),
    s(id, n) AS (SELECT (SELECT v.ip_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ip_id IS NOT NULL
    ORDER BY v.ip_id
    LIMIT 1), 1
UNION ALL
SELECT (SELECT v.ip_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ip_id > s.id
    ORDER BY v.ip_id
    LIMIT 1), s.n + 1
    FROM s
    WHERE s.id IS NOT NULL AND s.n < (SELECT cap FROM p)),
    k(id) AS (SELECT id
    FROM s
    WHERE id IS NOT NULL
UNION ALL
SELECT DISTINCT v.ip_id
    FROM visit_rows v
    WHERE v.tracker_id = (SELECT t FROM p) AND v.ip_id > (SELECT MAX(id) FROM s) AND (SELECT MAX(n)
    FROM s) >= (SELECT cap FROM p))
SELECT id
    FROM visit_ips
    WHERE id IN (SELECT id FROM k) AND (ip LIKE %s ESCAPE '\')
    LIMIT 10001

-- name: visits_count_ua_s
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ua_id IN (SELECT value
    FROM json_each(%s)) AND visit_start >= %lld AND visit_start <= %lld

-- name: visits_count_place_s
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND place_id IN (SELECT value
    FROM json_each(%s)) AND visit_start >= %lld AND visit_start <= %lld

-- name: visits_count_ref_s
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ref_id IN (SELECT value
    FROM json_each(%s)) AND visit_start >= %lld AND visit_start <= %lld

-- name: visits_count_ip_s
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ip_id IN (SELECT value
    FROM json_each(%s)) AND visit_start >= %lld AND visit_start <= %lld

-- name: visits_count_pick_s
SELECT COUNT(*)
    FROM (SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id IN (SELECT value FROM json_each(%s))) m
    WHERE +m.visit_start >= %lld AND +m.visit_start <= %lld

-- name: visits_page_pick_s
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip,
        g.country, g.city, u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent,
        v.bot, dn.url
    FROM (SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id IN (SELECT value FROM json_each(%s)) UNION
    SELECT v.tracker_id, v.visit_start, v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id IN (SELECT value FROM json_each(%s))) m
    CROSS JOIN visit_rows v ON v.tracker_id = m.tracker_id AND v.visit_start = m.visit_start AND
        v.id = m.id
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    LEFT JOIN visit_destinations dn ON dn.id = v.dest_id
    WHERE +m.visit_start >= %lld AND +m.visit_start <= %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld

-- report=destination (schema 25): a tracker's visits that are no bots in a window, in keyed
-- pages along its time order, with their destination ids; then each id's URL
-- name: visits_dest_page
SELECT v.visit_start, v.id, v.dest_id, v.click, v.visitor
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 AND
        (v.visit_start > %lld OR v.id > %lld)
    ORDER BY v.visit_start, v.id
    LIMIT %lld

-- name: visits_dest_url
SELECT url
    FROM visit_destinations
    WHERE id = %lld

-- name: visits_page [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE (v.id) IN (SELECT v.id
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld)
    ORDER BY v.visit_start DESC, v.id DESC

-- name: visits_page_s [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE (v.id) IN (SELECT v.id
    FROM visit_rows v
    LEFT JOIN visit_ips i ON i.id = v.ip_id
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    LEFT JOIN visit_referers r ON r.id = v.ref_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND (u.browser LIKE %s ESCAPE '\' OR u.os LIKE %s ESCAPE '\' OR u.device LIKE %s ESCAPE '\'
        OR u.user_agent LIKE %s ESCAPE '\' OR g.country LIKE %s ESCAPE '\' OR g.city LIKE %s ESCAPE
        '\' OR r.referer LIKE %s ESCAPE '\' OR i.ip LIKE %s ESCAPE '\')
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld)
    ORDER BY v.visit_start DESC, v.id DESC

-- name: visits_page_ci [pgsql-only]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE (v.id) IN (SELECT v.id
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND ((SELECT browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s ESCAPE '\' OR device_lc LIKE %s
        ESCAPE '\' OR user_agent_lc LIKE %s ESCAPE '\' FROM visit_uas x WHERE x.id = v.ua_id) OR
        (SELECT country_lc LIKE %s ESCAPE '\' OR city_lc LIKE %s ESCAPE '\' FROM visit_places x
        WHERE x.id = v.place_id) OR (SELECT referer_lc LIKE %s ESCAPE '\' FROM visit_referers x
        WHERE x.id = v.ref_id) OR (SELECT lower(ip) LIKE %s ESCAPE '\' FROM visit_ips x WHERE x.id =
        v.ip_id))
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld)
    ORDER BY v.visit_start DESC, v.id DESC

-- (PostgreSQL, schema 57: the highest id is the sequence's, taken or not: a bucket of ids
-- that were all rolled back is missing, and the poll reads its whole window)
-- name: visits_floor [pgsql]
SELECT COUNT(*), COALESCE(MIN(min_start), 0), (SELECT CASE WHEN is_called THEN last_value ELSE
        last_value - 1 END
    FROM visit_rows_id_seq)
    FROM visit_floor
    WHERE bucket >= %lld

-- the time of a tracker's first and last visit (two probes of visits_tracker_time), -1 for
-- the last when it has none
-- name: visits_span [pgsql-only]
SELECT COALESCE(MIN(visit_start), 0), COALESCE(MAX(visit_start), -1)
    FROM visit_rows
    WHERE tracker_id = %lld

-- name: visits_total_ua_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[]))

-- name: visits_total_place_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[]))

-- name: visits_total_ref_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[]))

-- (SQLite's forms read a JSON array: these are prepared here too, as arrays)
-- name: visits_count_ua_s [pgsql]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_place_s [pgsql]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_ref_s [pgsql]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_ip_s [pgsql]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_pick_s [pgsql]
SELECT COUNT(*)
    FROM visit_rows v
    WHERE v.id IN (SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[]))) AND v.visit_start >= %lld AND
        v.visit_start <= %lld

-- name: visits_page_pick_s [pgsql]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM (SELECT v.*
    FROM visit_rows v
    WHERE v.id IN (SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[]))) AND v.visit_start >= %lld AND
        v.visit_start <= %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld) v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    ORDER BY v.visit_start DESC, v.id DESC

-- name: visits_count_pick_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows v
    WHERE v.id IN (SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[]))) AND v.visit_start >= %lld AND
        v.visit_start <= %lld

-- name: visits_page_pick_ci [pgsql-only]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM (SELECT v.*
    FROM visit_rows v
    WHERE v.id IN (SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[]))
    UNION ALL
    SELECT v.id
    FROM visit_rows v
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[]))) AND v.visit_start >= %lld AND
        v.visit_start <= %lld
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld) v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    ORDER BY v.visit_start DESC, v.id DESC

-- the search forms (SQLite has its _s forms)
-- name: visits_count_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND ((SELECT browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s ESCAPE '\' OR device_lc LIKE %s
        ESCAPE '\' OR user_agent_lc LIKE %s ESCAPE '\' FROM visit_uas x WHERE x.id = v.ua_id) OR
        (SELECT country_lc LIKE %s ESCAPE '\' OR city_lc LIKE %s ESCAPE '\' FROM visit_places x
        WHERE x.id = v.place_id) OR (SELECT referer_lc LIKE %s ESCAPE '\' FROM visit_referers x
        WHERE x.id = v.ref_id) OR (SELECT lower(ip) LIKE %s ESCAPE '\' FROM visit_ips x WHERE x.id =
        v.ip_id))

-- name: visits_first_ci [pgsql-only]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start >= %lld AND v.visit_start <= %lld AND +v.id > %lld
        AND ((SELECT browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s ESCAPE '\' OR device_lc LIKE %s
        ESCAPE '\' OR user_agent_lc LIKE %s ESCAPE '\' FROM visit_uas x WHERE x.id = v.ua_id) OR
        (SELECT country_lc LIKE %s ESCAPE '\' OR city_lc LIKE %s ESCAPE '\' FROM visit_places x
        WHERE x.id = v.place_id) OR (SELECT referer_lc LIKE %s ESCAPE '\' FROM visit_referers x
        WHERE x.id = v.ref_id) OR (SELECT lower(ip) LIKE %s ESCAPE '\' FROM visit_ips x WHERE x.id =
        v.ip_id))
    ORDER BY v.visit_start DESC, v.id DESC
    LIMIT %lld OFFSET %lld

-- name: visits_same_ci [pgsql-only]
SELECT v.id, v.tracker_id, v.visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        (SELECT ip FROM visit_ips i WHERE i.id = v.ip_id), g.country, g.city, u.browser,
        u.browser_version, u.os, u.device, (SELECT referer FROM visit_referers r WHERE r.id =
        v.ref_id), u.user_agent, v.bot, (SELECT url FROM visit_destinations dn WHERE dn.id =
        v.dest_id)
    FROM visit_rows v
    LEFT JOIN visit_places g ON g.id = v.place_id
    LEFT JOIN visit_uas u ON u.id = v.ua_id
    WHERE v.tracker_id = %lld AND v.visit_start = %lld AND v.id > %lld AND v.id < %lld AND ((SELECT
        browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s ESCAPE '\' OR device_lc LIKE %s ESCAPE '\' OR
        user_agent_lc LIKE %s ESCAPE '\' FROM visit_uas x WHERE x.id = v.ua_id) OR (SELECT
        country_lc LIKE %s ESCAPE '\' OR city_lc LIKE %s ESCAPE '\' FROM visit_places x WHERE x.id =
        v.place_id) OR (SELECT referer_lc LIKE %s ESCAPE '\' FROM visit_referers x WHERE x.id =
        v.ref_id) OR (SELECT lower(ip) LIKE %s ESCAPE '\' FROM visit_ips x WHERE x.id = v.ip_id))
    ORDER BY v.id DESC
    LIMIT %lld

-- name: visits_ids_ua_all_ci [pgsql-only]
SELECT id
    FROM visit_uas
    WHERE browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s ESCAPE '\' OR device_lc LIKE %s ESCAPE '\'
        OR user_agent_lc LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_place_all_ci [pgsql-only]
SELECT id
    FROM visit_places
    WHERE country_lc LIKE %s ESCAPE '\' OR city_lc LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_ref_all_ci [pgsql-only]
SELECT id
    FROM visit_referers
    WHERE referer_lc LIKE %s ESCAPE '\'
    LIMIT 10001

-- name: visits_ids_ip_all_ci [pgsql-only]
SELECT id
    FROM visit_ips
    WHERE lower(ip) LIKE %s ESCAPE '\'
    LIMIT 10001

-- The entries the tracker's visits name (qrt_own_ids, schema 64: a descent of the tracker's
-- index per entry, up to the second argument's count, then the rest of it in one pass).
-- name: visits_ids_ua_own_ci [pgsql-only]
SELECT k.id
    FROM qrt_own_ids(%lld, 'ua', %lld) AS k (id)
    WHERE (SELECT browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s
        ESCAPE '\' OR device_lc LIKE %s ESCAPE '\' OR user_agent_lc LIKE %s ESCAPE '\'
    FROM visit_uas x
    WHERE x.id = k.id)
    LIMIT 10001

-- name: visits_ids_place_own_ci [pgsql-only]
SELECT k.id
    FROM qrt_own_ids(%lld, 'place', %lld) AS k (id)
    WHERE (SELECT country_lc LIKE %s ESCAPE '\' OR city_lc LIKE
        %s ESCAPE '\'
    FROM visit_places x
    WHERE x.id = k.id)
    LIMIT 10001

-- name: visits_ids_ref_own_ci [pgsql-only]
SELECT k.id
    FROM qrt_own_ids(%lld, 'ref', %lld) AS k (id)
    WHERE (SELECT referer_lc LIKE %s ESCAPE '\'
    FROM visit_referers x
    WHERE x.id = k.id)
    LIMIT 10001

-- name: visits_ids_ip_own_ci [pgsql-only]
SELECT k.id
    FROM qrt_own_ids(%lld, 'ip', %lld) AS k (id)
    WHERE (SELECT lower(ip) LIKE %s ESCAPE '\'
    FROM visit_ips x
    WHERE x.id = k.id)
    LIMIT 10001

-- The four above in one statement, when PostgreSQL reads the ips from the tracker's visits too
-- (one round trip instead of four): the dictionary (0 user agents to 3 ips), then the id.
-- name: visits_ids_own4_ci [pgsql-only]
(SELECT 0, k.id
    FROM qrt_own_ids(%lld, 'ua', %lld) AS k (id)
    WHERE (SELECT browser_lc LIKE %s ESCAPE '\' OR os_lc LIKE %s
        ESCAPE '\' OR device_lc LIKE %s ESCAPE '\' OR user_agent_lc LIKE %s ESCAPE '\'
    FROM visit_uas x
    WHERE x.id = k.id)
    LIMIT 10001)
UNION ALL
(SELECT 1, k.id
    FROM qrt_own_ids(%lld, 'place', %lld) AS k (id)
    WHERE (SELECT country_lc LIKE %s ESCAPE '\' OR city_lc LIKE
        %s ESCAPE '\'
    FROM visit_places x
    WHERE x.id = k.id)
    LIMIT 10001)
UNION ALL
(SELECT 2, k.id
    FROM qrt_own_ids(%lld, 'ref', %lld) AS k (id)
    WHERE (SELECT referer_lc LIKE %s ESCAPE '\'
    FROM visit_referers x
    WHERE x.id = k.id)
    LIMIT 10001)
UNION ALL
(SELECT 3, k.id
    FROM qrt_own_ids(%lld, 'ip', %lld) AS k (id)
    WHERE (SELECT lower(ip) LIKE %s ESCAPE '\'
    FROM visit_ips x
    WHERE x.id = k.id)
    LIMIT 10001)

-- name: visits_count_ua_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ua_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_place_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND place_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_ref_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ref_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- name: visits_count_ip_ci [pgsql-only]
SELECT COUNT(*)
    FROM visit_rows
    WHERE tracker_id = %lld AND ip_id = ANY (CAST(%s AS BIGINT[])) AND visit_start >= %lld AND
        visit_start <= %lld

-- report=destination over all of an account's live trackers (schema 50): the visits with a
-- destination in the window, along visits_dest (CROSS JOIN: the visits first, not the
-- account's trackers, whose windows would be read whole), grouped by destination; and
-- how many of their visitors have no visit without a destination in the window (each
-- looked up along visits_visitor: those not among the visitors of "none").
-- name: report_dest_groups
SELECT v.dest_id, SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1
        ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    CROSS JOIN trackers t
    WHERE v.dest_id IS NOT NULL AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 AND t.id =
        v.tracker_id AND t.account_id = %lld AND t.deleted_at IS NULL
    GROUP BY v.dest_id

-- name: report_dest_only_visitors
SELECT COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    CROSS JOIN trackers t
    WHERE v.dest_id IS NOT NULL AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 AND t.id =
        v.tracker_id AND t.account_id = %lld AND t.deleted_at IS NULL AND NOT EXISTS (SELECT 1
    FROM visit_rows n
    CROSS JOIN trackers u
    WHERE n.visitor = v.visitor AND n.visit_start BETWEEN %lld AND %lld AND n.bot = 0 AND n.dest_id
        IS NULL AND u.id = n.tracker_id AND u.account_id = %lld AND u.deleted_at IS NULL)

-- report=destination over listed trackers (schema 61): up to 64 of the trackers' visits with
-- a destination in the window (unused ids 0), along visits_tracker_dest, at most as many as
-- the last value says (the caller reads the visits themselves past that).
-- (SQLite: by the index named, which its planner, unaware of how few rows it has, passes
-- over for the table's own ranges of the trackers' visits)
-- name: report_dest_trackers
SELECT v.dest_id, v.click, v.visitor
    FROM visit_rows v INDEXED BY visits_tracker_dest
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.dest_id IS NOT NULL AND
        v.visit_start BETWEEN %lld AND %lld AND v.bot = 0
    LIMIT %lld

-- name: report_dest_trackers [pgsql]
SELECT v.dest_id, v.click, v.visitor
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.dest_id IS NOT NULL AND
        v.visit_start BETWEEN %lld AND %lld AND v.bot = 0
    LIMIT %lld

-- The trackers of a visitor's visits without a destination in the window, along
-- visits_visitor: is one of them listed?
-- name: report_dest_visitor_rest
SELECT DISTINCT v.tracker_id
    FROM visit_rows v
    WHERE v.visitor = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 AND v.dest_id IS
        NULL
