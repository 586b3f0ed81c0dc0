-- Statements of mod_qrtrack/qrt_store_agg_read.c (see docs/design.md, "The SQL statements").
-- Links (agg_link) find their strings in agg_bcy by browser_country_city_id (schema 12); gaps
-- (agg_gaps) their value in agg_vals by value_id (schema 13).
-- Links by time (visit_time) of days not sealed read the rows with unsealed = 1 alone
-- (agg_link_u, schema 17); links of a sealed day whose sealed value is gone without the
-- store's knowing (deleted by hand) read its rows with unsealed = 0 along every link of the
-- account.
-- A "+" before a column (+previous_time, +visit_time, +v.tracker_id) keeps the planner off that
-- column's index so that the index the statement is written for is the one used; "CROSS JOIN"
-- fixes the order of the join (SQLite never reorders it): the reports' speed depends on both.
-- The IN lists hold 64 tracker ids: listed trackers are read that many at a time.

-- reads: counters over full days (at most 5 bucket ranges)
-- name: report_counters_sum
SELECT tracker_id, value, SUM(scans), SUM(clicks), SUM(first_visits), SUM(followed_visits)
    FROM (SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld) x
    GROUP BY tracker_id, value

-- The same for a list of trackers (a few listed: one statement, not one a tracker, each a
-- round trip on PostgreSQL): the ids first, as a JSON array.
-- name: report_counters_sum_of_groups
WITH ids (id) AS (SELECT value
    FROM json_each(%s))
SELECT tracker_id, value, SUM(scans), SUM(clicks), SUM(first_visits), SUM(followed_visits)
    FROM (SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (SELECT id
    FROM ids) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (SELECT id
    FROM ids) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (SELECT id
    FROM ids) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (SELECT id
    FROM ids) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (SELECT id
    FROM ids) AND level = %lld AND bucket BETWEEN %lld AND %lld
    ) x
    GROUP BY tracker_id, value

-- name: report_counters_sum_of_groups [pgsql]
WITH ids (a) AS MATERIALIZED (SELECT ARRAY(SELECT unnest(CAST(%s AS BIGINT[]))))
SELECT tracker_id, value, SUM(scans), SUM(clicks), SUM(first_visits), SUM(followed_visits)
    FROM (SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id = ANY (CAST((SELECT a
    FROM ids) AS BIGINT[])) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id = ANY (CAST((SELECT a
    FROM ids) AS BIGINT[])) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id = ANY (CAST((SELECT a
    FROM ids) AS BIGINT[])) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id = ANY (CAST((SELECT a
    FROM ids) AS BIGINT[])) AND level = %lld AND bucket BETWEEN %lld AND %lld
    UNION ALL
    SELECT tracker_id, value, scans, clicks, first_visits, followed_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id = ANY (CAST((SELECT a
    FROM ids) AS BIGINT[])) AND level = %lld AND bucket BETWEEN %lld AND %lld
    ) x
    GROUP BY tracker_id, value

-- name: report_counters_by_day
SELECT bucket, tracker_id, SUM(scans), SUM(clicks)
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = 1 AND bucket BETWEEN %lld AND %lld
    GROUP BY bucket, tracker_id

-- The same summed over up to 64 listed trackers a day (unused ids 0), for a dashboard
-- over them: a row a day, not a row a tracker and day.
-- (SQLite: by the index of trackers, which its planner passes over for the key's range of
-- every tracker's days)
-- name: report_counters_by_day_listed
SELECT bucket, 0, SUM(scans), SUM(clicks)
    FROM agg_cnt INDEXED BY agg_cnt_grp
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (%lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)
        AND level = 1 AND bucket BETWEEN %lld AND %lld
    GROUP BY bucket

-- name: report_counters_by_day_listed [pgsql]
SELECT bucket, 0, SUM(scans), SUM(clicks)
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND tracker_id IN (%lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)
        AND level = 1 AND bucket BETWEEN %lld AND %lld
    GROUP BY bucket

-- reads: visits of the partial days at a window's edges, per kind. By tracker and raw
-- (below): the trackers probed are those with counters on the days (a tracker's visits of
-- a day all add to its kind-1 counter of that day), not every tracker of the account.
-- name: report_edge_visits_tracker
SELECT v.tracker_id, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1
        THEN 1 ELSE 0 END)
    FROM agg_trk k
    CROSS JOIN visit_rows v
    WHERE k.account_id = %lld AND k.tracker_id IN (SELECT tracker_id
        FROM agg_cnt
        WHERE kind = 1 AND account_id = %lld AND level = 1 AND bucket BETWEEN %lld AND %lld) AND
        v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0
    GROUP BY v.tracker_id

-- name: report_edge_visits_one_tracker
SELECT v.tracker_id, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1
        THEN 1 ELSE 0 END)
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0
    GROUP BY v.tracker_id

-- name: report_edge_visits_browser
SELECT 0, COALESCE(vu.browser, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
        v.click = 1 THEN 1 ELSE 0 END)
    FROM agg_trk k
    CROSS JOIN visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    WHERE k.account_id = %lld AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND
        %lld AND v.bot = 0
    GROUP BY COALESCE(vu.browser, '')

-- name: report_edge_visits_country
SELECT 0, COALESCE(vp.country, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
        v.click = 1 THEN 1 ELSE 0 END)
    FROM agg_trk k
    CROSS JOIN visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE k.account_id = %lld AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND
        %lld AND v.bot = 0
    GROUP BY COALESCE(vp.country, '')

-- name: report_edge_visits_city
SELECT 0, COALESCE(vp.city, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click
        = 1 THEN 1 ELSE 0 END)
    FROM agg_trk k
    CROSS JOIN visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE k.account_id = %lld AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND
        %lld AND v.bot = 0
    GROUP BY COALESCE(vp.city, '')

-- SQLite: a partial day's visits with their dictionary ids as they are, counted and named
-- in C (win_partial_raw): grouped through the join, the rows went through a temporary
-- B-tree keyed by the strings
-- name: report_edge_visits_raw_ua
SELECT v.ua_id, v.click
    FROM agg_trk k
    CROSS JOIN visit_rows v
    WHERE k.account_id = %lld AND k.tracker_id IN (SELECT tracker_id
        FROM agg_cnt
        WHERE kind = 1 AND account_id = %lld AND level = 1 AND bucket BETWEEN %lld AND %lld) AND
        v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- name: report_edge_visits_raw_place
SELECT v.place_id, v.click
    FROM agg_trk k
    CROSS JOIN visit_rows v
    WHERE k.account_id = %lld AND k.tracker_id IN (SELECT tracker_id
        FROM agg_cnt
        WHERE kind = 1 AND account_id = %lld AND level = 1 AND bucket BETWEEN %lld AND %lld) AND
        v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- the browsers of the user agents listed (a JSON array), and of a range of ids
-- name: report_ua_browsers
SELECT id, browser
    FROM visit_uas
    WHERE id IN (SELECT value
    FROM json_each(%s))

-- name: report_ua_browsers [pgsql]
SELECT id, browser
    FROM visit_uas
    WHERE id = ANY (CAST(%s AS BIGINT[]))

-- name: report_ua_browsers_range
SELECT id, browser
    FROM visit_uas
    WHERE id BETWEEN %lld AND %lld

-- the countries and cities of the places listed, and of a range of ids
-- name: report_place_names
SELECT id, country, city
    FROM visit_places
    WHERE id IN (SELECT value
    FROM json_each(%s))

-- name: report_place_names [pgsql]
SELECT id, country, city
    FROM visit_places
    WHERE id = ANY (CAST(%s AS BIGINT[]))

-- name: report_place_names_range
SELECT id, country, city
    FROM visit_places
    WHERE id BETWEEN %lld AND %lld

-- reads: links by time (visit_time) and by previous time (previous_time), per kind
-- name: report_links_by_time_tracker
SELECT tracker_id, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & 1) <> 0
    GROUP BY tracker_id

-- name: report_links_by_time_account
SELECT 0, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1

-- name: report_links_by_time_browser
SELECT 0, k.browser, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & 2) <> 0
    GROUP BY k.browser

-- name: report_links_by_time_country
SELECT 0, k.country, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & 4) <> 0
    GROUP BY k.country

-- name: report_links_by_time_city
SELECT 0, k.city, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & 8) <> 0
    GROUP BY k.city

-- The same rows as they are, of the kind whose flag is given, by agg_bcy entry or by
-- tracker: SQLite adds them up itself (win_links_raw)
-- name: report_links_by_time_raw_entries
SELECT browser_country_city_id, visit_count
    FROM agg_link
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & %lld) <> 0

-- name: report_links_by_time_raw_trackers
SELECT tracker_id, visit_count
    FROM agg_link
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld AND
        %lld AND unsealed = 1 AND (flags & %lld) <> 0

-- the browser, country and city of the agg_bcy entries listed (SQLite: a JSON array)
-- name: report_bcy_names
SELECT id, browser, country, city
    FROM agg_bcy
    WHERE id IN (SELECT value
    FROM json_each(%s))

-- name: report_bcy_names [pgsql]
SELECT id, browser, country, city
    FROM agg_bcy
    WHERE id = ANY (CAST(%s AS BIGINT[]))

-- the same over an id range, for a list that fills most of it (names_of in
-- qrt_store_agg_read.c): the rows of ids not listed are skipped in C
-- name: report_bcy_names_range
SELECT id, browser, country, city
    FROM agg_bcy
    WHERE id BETWEEN %lld AND %lld

-- the tags of the trackers listed (SQLite: a JSON array)
-- name: report_tags_of
SELECT tracker_id, tag
    FROM agg_tag
    WHERE tracker_id IN (SELECT value
    FROM json_each(%s))

-- name: report_tags_of [pgsql]
SELECT tracker_id, tag
    FROM agg_tag
    WHERE tracker_id = ANY (CAST(%s AS BIGINT[]))

-- name: report_tags_of_range
SELECT tracker_id, tag
    FROM agg_tag
    WHERE tracker_id BETWEEN %lld AND %lld

-- name: report_links_by_time_tag
SELECT 0, g.tag, SUM(l.visit_count)
    FROM agg_link l
    CROSS JOIN agg_tag g
    WHERE l.account_id = %lld AND l.visit_time BETWEEN %lld AND %lld AND +l.previous_time BETWEEN
        %lld AND %lld AND l.unsealed = 1 AND (l.flags & 16) <> 0 AND g.tracker_id = l.tracker_id
    GROUP BY g.tag

-- name: report_links_of_lost_seals_tracker
SELECT tracker_id, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld
        AND %lld AND unsealed = 0 AND (flags & 1) <> 0
    GROUP BY tracker_id

-- name: report_links_of_lost_seals_account
SELECT 0, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld
        AND %lld AND unsealed = 0

-- name: report_links_of_lost_seals_browser
SELECT 0, k.browser, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld
        AND %lld AND unsealed = 0 AND (flags & 2) <> 0
    GROUP BY k.browser

-- name: report_links_of_lost_seals_country
SELECT 0, k.country, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld
        AND %lld AND unsealed = 0 AND (flags & 4) <> 0
    GROUP BY k.country

-- name: report_links_of_lost_seals_city
SELECT 0, k.city, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time BETWEEN %lld
        AND %lld AND unsealed = 0 AND (flags & 8) <> 0
    GROUP BY k.city

-- name: report_links_of_lost_seals_tag
SELECT 0, g.tag, SUM(l.visit_count)
    FROM agg_link l
    CROSS JOIN agg_tag g
    WHERE l.account_id = %lld AND +l.visit_time BETWEEN %lld AND %lld AND +l.previous_time BETWEEN
        %lld AND %lld AND l.unsealed = 0 AND (l.flags & 16) <> 0 AND g.tracker_id = l.tracker_id
    GROUP BY g.tag

-- name: report_links_by_previous_time_tracker
SELECT tracker_id, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & 1) <> 0
    GROUP BY tracker_id

-- name: report_links_by_previous_time_account
SELECT 0, '', SUM(visit_count)
    FROM agg_link
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld

-- name: report_links_by_previous_time_browser
SELECT 0, k.browser, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & 2) <> 0
    GROUP BY k.browser

-- name: report_links_by_previous_time_country
SELECT 0, k.country, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & 4) <> 0
    GROUP BY k.country

-- name: report_links_by_previous_time_city
SELECT 0, k.city, SUM(visit_count)
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & 8) <> 0
    GROUP BY k.city

-- name: report_links_by_previous_time_tag
SELECT 0, g.tag, SUM(l.visit_count)
    FROM agg_link l
    CROSS JOIN agg_tag g
    WHERE l.account_id = %lld AND l.previous_time BETWEEN %lld AND %lld AND +l.visit_time BETWEEN
        %lld AND %lld AND (l.flags & 16) <> 0 AND g.tracker_id = l.tracker_id
    GROUP BY g.tag

-- name: report_gaps_by_time
SELECT tracker_id, v.value, SUM(visit_count)
    FROM agg_gaps
    JOIN agg_vals v ON v.id = value_id
    WHERE kind = %lld AND account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time
        BETWEEN %lld AND %lld AND unsealed = 1
    GROUP BY tracker_id, v.value

-- The same rows as they are: SQLite adds them up itself (win_gaps_raw)
-- name: report_gaps_by_time_raw
SELECT tracker_id, value_id, visit_count
    FROM agg_gaps
    WHERE kind = %lld AND account_id = %lld AND visit_time BETWEEN %lld AND %lld AND +previous_time
        BETWEEN %lld AND %lld AND unsealed = 1

-- the values of the agg_vals entries listed (SQLite: a JSON array)
-- name: report_vals_names
SELECT id, value
    FROM agg_vals
    WHERE id IN (SELECT value
    FROM json_each(%s))

-- name: report_vals_names [pgsql]
SELECT id, value
    FROM agg_vals
    WHERE id = ANY (CAST(%s AS BIGINT[]))

-- name: report_vals_names_range
SELECT id, value
    FROM agg_vals
    WHERE id BETWEEN %lld AND %lld

-- name: report_gaps_of_lost_seals
SELECT tracker_id, v.value, SUM(visit_count)
    FROM agg_gaps
    JOIN agg_vals v ON v.id = value_id
    WHERE kind = %lld AND account_id = %lld AND +visit_time BETWEEN %lld AND %lld AND +previous_time
        BETWEEN %lld AND %lld AND unsealed = 0
    GROUP BY tracker_id, v.value

-- the days of [b0, b1] that should be sealed and were not read sealed: with counters, not on the
-- work list (SQLite: their rows have unsealed = 0)
-- name: agg_orphans
SELECT c.bucket
    FROM agg_cnt c
    WHERE c.kind = 2 AND c.account_id = %lld AND c.level = 1 AND c.bucket BETWEEN %lld AND %lld AND
        NOT EXISTS (SELECT 1
    FROM agg_unsealed x
    WHERE x.account_id = c.account_id AND x.day = c.bucket)
    ORDER BY c.bucket

-- The links and gaps by previous time as they are (SQLite adds them up itself:
-- win_links_raw and win_gaps_raw, as by time)
-- name: report_links_by_previous_time_raw_entries
SELECT browser_country_city_id, visit_count
    FROM agg_link
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & %lld) <> 0

-- name: report_links_by_previous_time_raw_trackers
SELECT tracker_id, visit_count
    FROM agg_link
    WHERE account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time BETWEEN %lld AND
        %lld AND (flags & %lld) <> 0

-- name: report_gaps_by_previous_time_raw
SELECT tracker_id, value_id, visit_count
    FROM agg_gaps
    WHERE kind = %lld AND account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time
        BETWEEN %lld AND %lld

-- name: report_gaps_by_previous_time
SELECT tracker_id, v.value, SUM(visit_count)
    FROM agg_gaps
    JOIN agg_vals v ON v.id = value_id
    WHERE kind = %lld AND account_id = %lld AND previous_time BETWEEN %lld AND %lld AND +visit_time
        BETWEEN %lld AND %lld
    GROUP BY tracker_id, v.value

-- reads: local days (quarter-hours, k = quarter-hour of the local day)
-- name: agg_day_sum
SELECT d, SUM(scans), SUM(clicks), SUM(CASE WHEN quarters_since_previous > k THEN scans + clicks
        ELSE 0 END)
    FROM (SELECT (quarter_hour * 900 + %lld) / 86400 AS d, (quarter_hour * 900 + %lld -
        ((quarter_hour * 900 + %lld) / 86400) * 86400) / 900 AS k, quarters_since_previous, scans,
        clicks
    FROM agg_day
    WHERE account_id = %lld AND quarter_hour BETWEEN %lld AND %lld) x
    GROUP BY d

-- reads: state and trackers
-- name: agg_deleted
SELECT COUNT(*)
    FROM agg_trk k
    LEFT JOIN trackers t ON t.id = k.tracker_id
    WHERE k.account_id = %lld AND (t.id IS NULL OR t.deleted_at IS NOT NULL OR t.account_id <>
        k.account_id)

-- name: agg_dirty_tags
SELECT a.tag
    FROM agg_tag a
    JOIN agg_trk k ON k.tracker_id = a.tracker_id
    WHERE k.account_id = %lld AND NOT EXISTS (SELECT 1
    FROM tracker_tags c
    WHERE c.tracker_id = a.tracker_id AND c.tag = a.tag) UNION
    SELECT c.tag
    FROM tracker_tags c
    JOIN agg_trk k ON k.tracker_id = c.tracker_id
    WHERE k.account_id = %lld AND NOT EXISTS (SELECT 1
    FROM agg_tag a
    WHERE a.tracker_id = c.tracker_id AND a.tag = c.tag)

-- name: report_raw_visits
SELECT v.visit_start, v.id, v.visitor, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 AND
        (v.visit_start > %lld OR v.id > %lld)
    ORDER BY v.visit_start, v.id
    LIMIT %lld

-- The visits in [s, e] of the visitors listed (a JSON array; PostgreSQL: an array of them, made
-- once in a subquery), not bots, on any tracker (the caller keeps its account's): along the
-- visitors' index (schema 20).
-- name: report_visitors_visits
SELECT v.tracker_id, v.visit_start, v.visitor, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.visitor IN (SELECT value
    FROM json_each(%s)) AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- name: report_visitors_visits [pgsql]
SELECT v.tracker_id, v.visit_start, v.visitor, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END,
        COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.visitor = ANY (ARRAY(SELECT unnest(CAST(%s AS BIGINT[])))) AND v.visit_start BETWEEN
        %lld AND %lld AND v.bot = 0

-- One listed tracker's visits in [s, e] for the blocks of qrt_vcols (qrt_store_agg_read_listed):
-- along the primary key (tracker_id, visit_start, id), each with its strings.
-- name: report_listed_visits
SELECT v.visit_start, CASE WHEN v.click = 1 THEN 1 ELSE 0 END, v.visitor, COALESCE(vu.browser, ''),
        COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- The same with the ids of each visit's user agent and place, whose names are read after,
-- once an id (qrt_store_agg_read.c, lv_span_read_ids): no lookup of them a visit.
-- The source as stored (a click is 1), tested in C: a cold report's read of its blocks
-- costs a statement's work a row.
-- name: report_listed_visits_ids
SELECT v.visit_start, v.click, v.visitor, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- The same without the strings (reports by tracker, tag or date): time, source, visitor.
-- name: report_listed_visits_bare
SELECT v.visit_start, v.click, v.visitor
    FROM visit_rows v
    WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0

-- Up to 64 trackers at once (days no block holds: not sealed), with the tracker and the
-- dictionary ids, named after (qrt_store_agg_read.c, lv_unsealed_ids).
-- name: report_listed_visits_in_ids
SELECT v.tracker_id, v.visit_start, v.click, v.visitor, v.ua_id, v.place_id
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- The same without the strings (reports by tracker, tag or date).
-- name: report_listed_visits_in_bare
SELECT v.tracker_id, v.visit_start, v.click, v.visitor
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- report_listed_total and report_listed_by_*: a few listed trackers' visits in a window,
-- grouped, as one value in qrt_vgroups' text form (qrt_vgroups.h): SQLite counts them in C
-- as they come (the aggregate qrt_vgroups: no sort, no b-tree per group), PostgreSQL
-- groups them and writes the same form with string_agg.
-- name: report_listed_total
SELECT qrt_vgroups('', v.click, v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_type
SELECT qrt_vgroups(t.type, v.click, v.visitor)
    FROM visit_rows v
    JOIN trackers t ON t.id = v.tracker_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_tag
SELECT qrt_vgroups(g.tag, v.click, v.visitor)
    FROM visit_rows v
    JOIN tracker_tags g ON g.tracker_id = v.tracker_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_date
SELECT qrt_vgroups((v.visit_start + %lld) / 86400, v.click, v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_browser
SELECT qrt_vgroups(COALESCE(vu.browser, ''), v.click, v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_city
SELECT qrt_vgroups(COALESCE(vp.city, ''), v.click, v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_country
SELECT qrt_vgroups(COALESCE(vp.country, ''), v.click, v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_visitors
SELECT qrt_ndistinct(v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_total_exact
SELECT 0, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1 ELSE 0
        END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- name: report_listed_by_type_exact
SELECT 0, t.type, SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1
        ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    JOIN trackers t ON t.id = v.tracker_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY t.type

-- name: report_listed_by_tag_exact
SELECT 0, g.tag, SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1 ELSE
        0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    JOIN tracker_tags g ON g.tracker_id = v.tracker_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY g.tag

-- name: report_listed_by_date_exact
SELECT (v.visit_start + %lld) / 86400, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE
        WHEN v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY 1

-- name: report_listed_by_browser_exact
SELECT 0, COALESCE(vu.browser, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
        v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY COALESCE(vu.browser, '')

-- name: report_listed_by_city_exact
SELECT 0, COALESCE(vp.city, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click
        = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY COALESCE(vp.city, '')

-- name: report_listed_by_country_exact
SELECT 0, COALESCE(vp.country, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
        v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0
    GROUP BY COALESCE(vp.country, '')

-- name: report_listed_visitors_exact
SELECT COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- reads: the _exact statements group a few listed trackers' visits in the database, with
-- COUNT(DISTINCT) (SQLite, when qrt_vgroups or qrt_ndistinct would grow past their bound)
-- name: agg_tag_map
SELECT g.tracker_id, g.tag
    FROM agg_tag g
    JOIN agg_trk k ON k.tracker_id = g.tracker_id
    WHERE k.account_id = %lld

-- name: agg_rep_count
SELECT COUNT(*)
    FROM trackers
    WHERE account_id = %lld AND deleted_at IS NULL

-- name: agg_rep_trackers_in
SELECT id, name, type
    FROM trackers
    WHERE account_id = %lld AND deleted_at IS NULL AND id IN (%lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)
    ORDER BY id

-- name: agg_rep_tags_in
SELECT g.tracker_id, g.tag, g.dimension, g.value
    FROM tracker_tags g
    JOIN trackers t ON t.id = g.tracker_id
    WHERE t.account_id = %lld AND t.deleted_at IS NULL AND g.tracker_id IN (%lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)

-- name: agg_rep_trackers
SELECT id, name, type
    FROM trackers
    WHERE account_id = %lld AND deleted_at IS NULL
    ORDER BY id

-- name: agg_rep_tags
SELECT g.tracker_id, g.tag, g.dimension, g.value
    FROM tracker_tags g
    JOIN trackers t ON t.id = g.tracker_id
    WHERE t.account_id = %lld AND t.deleted_at IS NULL

-- name: report_listed_total [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1 ELSE 0
            END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0) AS x (g, k, s, c, u)

-- name: report_listed_by_type [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, t.type, SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1
            ELSE 0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        JOIN trackers t ON t.id = v.tracker_id
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY t.type) AS x (g, k, s, c, u)

-- name: report_listed_by_tag [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, g.tag, SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click = 1 THEN 1 ELSE
            0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        JOIN tracker_tags g ON g.tracker_id = v.tracker_id
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY g.tag) AS x (g, k, s, c, u)

-- name: report_listed_by_date [pgsql]
SELECT string_agg(octet_length(x.g::text) || ':' || x.g::text || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT (v.visit_start + %lld) / 86400, '', SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE
            WHEN v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY 1) AS x (g, k, s, c, u)

-- name: report_listed_by_browser [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, COALESCE(vu.browser, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
            v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        LEFT JOIN visit_uas vu ON vu.id = v.ua_id
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY COALESCE(vu.browser, '')) AS x (g, k, s, c, u)

-- name: report_listed_by_city [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, COALESCE(vp.city, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN v.click
            = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        LEFT JOIN visit_places vp ON vp.id = v.place_id
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY COALESCE(vp.city, '')) AS x (g, k, s, c, u)

-- name: report_listed_by_country [pgsql]
SELECT string_agg(octet_length(x.k) || ':' || x.k || ' ' || x.s || ' ' || x.c || ' ' ||
        x.u || chr(10), '')
    FROM (SELECT 0, COALESCE(vp.country, ''), SUM(CASE WHEN v.click = 1 THEN 0 ELSE 1 END), SUM(CASE WHEN
            v.click = 1 THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)
        FROM visit_rows v
        LEFT JOIN visit_places vp ON vp.id = v.place_id
        WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
            %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
            = 0
        GROUP BY COALESCE(vp.country, '')) AS x (g, k, s, c, u)

-- name: report_listed_visitors [pgsql]
SELECT COUNT(DISTINCT v.visitor)
    FROM visit_rows v
    WHERE v.tracker_id IN (%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,
        %lld, %lld, %lld, %lld, %lld, %lld, %lld) AND v.visit_start BETWEEN %lld AND %lld AND v.bot
        = 0

-- the account's visits in the quarter-hours of [a, b] (an estimate: which part of a day
-- not settled is read from its visits, qrt_store_agg_read.c's win_pieces), and a time no
-- visit of them is later than (schema 58; a row from before it: its quarter-hour's end)
-- name: report_day_visits
SELECT COALESCE(SUM(scans + clicks), 0), COALESCE(MAX(COALESCE(last_start, quarter_hour * 900 +
        899)), 0)
    FROM agg_day
    WHERE account_id = %lld AND quarter_hour BETWEEN %lld AND %lld
