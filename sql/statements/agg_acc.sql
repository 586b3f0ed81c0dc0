-- Statements of mod_qrtrack/qrt_store_agg_acc.c (see docs/design.md, "The SQL statements").

-- write path the account of an aggregated tracker, once per tag of its snapshot (or once with a
-- NULL tag)
-- name: agg_trk_get
SELECT k.account_id, g.tag
    FROM agg_trk k
    LEFT JOIN agg_tag g ON g.tracker_id = k.tracker_id
    WHERE k.tracker_id = %lld

-- name: agg_trk_add
INSERT INTO agg_trk (tracker_id, account_id, type)
    SELECT id, account_id, type
    FROM trackers
    WHERE id = %lld

-- name: agg_tag_snap
INSERT INTO agg_tag (tracker_id, tag)
    SELECT tracker_id, tag
    FROM tracker_tags
    WHERE tracker_id = %lld

-- name: agg_counter_add
INSERT INTO agg_cnt (kind, account_id, level, bucket, tracker_id, value, scans, clicks,
        first_visits, followed_visits)
    VALUES (%lld, %lld, %lld, %lld, %lld, %s, %lld, %lld, %lld, %lld)
    ON CONFLICT (kind, account_id, level, bucket, tracker_id, value) DO UPDATE
    SET scans = agg_cnt.scans + excluded.scans, clicks = agg_cnt.clicks + excluded.clicks,
        first_visits = agg_cnt.first_visits + excluded.first_visits, followed_visits =
        agg_cnt.followed_visits + excluded.followed_visits

-- (last_start, schema 58: the latest time added; a row from before that schema keeps none,
-- its quarter-hour's end bounds its visits)
-- name: agg_day_add
INSERT INTO agg_day (account_id, quarter_hour, quarters_since_previous, scans, clicks,
        last_start)
    VALUES (%lld, %lld, %lld, %lld, %lld, %lld)
    ON CONFLICT (account_id, quarter_hour, quarters_since_previous) DO UPDATE
    SET scans = agg_day.scans + excluded.scans, clicks = agg_day.clicks + excluded.clicks,
        last_start = CASE WHEN agg_day.last_start IS NULL OR excluded.last_start <
        agg_day.last_start THEN agg_day.last_start ELSE excluded.last_start END

-- name: agg_link_add
INSERT INTO agg_link (account_id, visit_time, previous_time, flags, tracker_id,
        browser_country_city_id, visit_count)
    VALUES (%lld, %lld, %lld, %lld, %lld, %lld, %lld)
    ON CONFLICT (account_id, visit_time, previous_time, flags, tracker_id, browser_country_city_id)
        DO UPDATE
    SET visit_count = agg_link.visit_count + excluded.visit_count

-- name: agg_link_drop
DELETE
    FROM agg_link
    WHERE account_id = %lld AND visit_time = %lld AND previous_time = %lld AND flags = %lld AND
        tracker_id = %lld AND browser_country_city_id = %lld AND visit_count <= 0

-- a link's (browser, country, city): added, else found (qrt_store_dict_id)
-- name: agg_bcy_add
INSERT INTO agg_bcy (browser, country, city)
    VALUES (%s, %s, %s)
    ON CONFLICT (browser, country, city) DO NOTHING

-- name: agg_bcy_get
SELECT id
    FROM agg_bcy
    WHERE browser = %s AND country = %s AND city = %s

-- name: agg_gap_add
INSERT INTO agg_gaps (kind, account_id, visit_time, previous_time, tracker_id, value_id,
        visit_count)
    VALUES (%lld, %lld, %lld, %lld, %lld, %lld, %lld)
    ON CONFLICT (kind, account_id, visit_time, previous_time, tracker_id, value_id) DO UPDATE
    SET visit_count = agg_gaps.visit_count + excluded.visit_count

-- name: agg_gap_drop
DELETE
    FROM agg_gaps
    WHERE kind = %lld AND account_id = %lld AND visit_time = %lld AND previous_time = %lld AND
        tracker_id = %lld AND value_id = %lld AND visit_count <= 0

-- a gap's value: added, else found
-- name: agg_val_add
INSERT INTO agg_vals (value)
    VALUES (%s)
    ON CONFLICT (value) DO NOTHING

-- name: agg_val_get
SELECT id
    FROM agg_vals
    WHERE value = %s

-- (the added row's id comes back: qrt_store_dict_id)
-- name: agg_bcy_add [pgsql]
INSERT INTO agg_bcy (browser, country, city)
    VALUES (%s, %s, %s)
    ON CONFLICT (browser, country, city) DO NOTHING
    RETURNING id

-- many names at once (acc_names_many): those added come back, then the others are found
-- name: agg_bcy_add_many [pgsql-only]
INSERT INTO agg_bcy (browser, country, city)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]))
    ON CONFLICT (browser, country, city) DO NOTHING
    RETURNING browser, country, city, id

-- name: agg_bcy_get_many [pgsql-only]
SELECT k.browser, k.country, k.city, k.id
    FROM unnest(CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[])) AS u(b, c, t)
    JOIN agg_bcy k ON k.browser = u.b AND k.country = u.c AND k.city = u.t

-- name: agg_val_add [pgsql]
INSERT INTO agg_vals (value)
    VALUES (%s)
    ON CONFLICT (value) DO NOTHING
    RETURNING id

-- name: agg_counter_add_many [pgsql-only]
INSERT INTO agg_cnt (kind, account_id, level, bucket, tracker_id, value, scans, clicks,
        first_visits, followed_visits)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    ON CONFLICT (kind, account_id, level, bucket, tracker_id, value) DO UPDATE
    SET scans = agg_cnt.scans + excluded.scans, clicks = agg_cnt.clicks + excluded.clicks,
        first_visits = agg_cnt.first_visits + excluded.first_visits, followed_visits =
        agg_cnt.followed_visits + excluded.followed_visits

-- name: agg_day_add_many [pgsql-only]
INSERT INTO agg_day (account_id, quarter_hour, quarters_since_previous, scans, clicks,
        last_start)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS SMALLINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    ON CONFLICT (account_id, quarter_hour, quarters_since_previous) DO UPDATE
    SET scans = agg_day.scans + excluded.scans, clicks = agg_day.clicks + excluded.clicks,
        last_start = CASE WHEN agg_day.last_start IS NULL OR excluded.last_start <
        agg_day.last_start THEN agg_day.last_start ELSE excluded.last_start END

-- agg_counter_add_many and agg_day_add_many in one round trip (a commit of scans
-- writes both): the counters' ten arrays, then the days' six.
-- name: agg_counter_day_add [pgsql-only]
WITH counters AS (
    INSERT INTO agg_cnt (kind, account_id, level, bucket, tracker_id, value, scans, clicks,
            first_visits, followed_visits)
        SELECT *
        FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
            BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS TEXT[]), CAST(%s AS BIGINT[]), CAST(%s AS
            BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
        ON CONFLICT (kind, account_id, level, bucket, tracker_id, value) DO UPDATE
        SET scans = agg_cnt.scans + excluded.scans, clicks = agg_cnt.clicks + excluded.clicks,
            first_visits = agg_cnt.first_visits + excluded.first_visits, followed_visits =
            agg_cnt.followed_visits + excluded.followed_visits
)
INSERT INTO agg_day (account_id, quarter_hour, quarters_since_previous, scans, clicks,
        last_start)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS SMALLINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    ON CONFLICT (account_id, quarter_hour, quarters_since_previous) DO UPDATE
    SET scans = agg_day.scans + excluded.scans, clicks = agg_day.clicks + excluded.clicks,
        last_start = CASE WHEN agg_day.last_start IS NULL OR excluded.last_start <
        agg_day.last_start THEN agg_day.last_start ELSE excluded.last_start END

-- name: agg_link_add_many [pgsql-only]
INSERT INTO agg_link (account_id, visit_time, previous_time, flags, tracker_id,
        browser_country_city_id, visit_count)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    ON CONFLICT (account_id, visit_time, previous_time, flags, tracker_id, browser_country_city_id)
        DO UPDATE
    SET visit_count = agg_link.visit_count + excluded.visit_count

-- name: agg_gap_add_many [pgsql-only]
INSERT INTO agg_gaps (kind, account_id, visit_time, previous_time, tracker_id, value_id,
        visit_count)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    ON CONFLICT (kind, account_id, visit_time, previous_time, tracker_id, value_id) DO UPDATE
    SET visit_count = agg_gaps.visit_count + excluded.visit_count
