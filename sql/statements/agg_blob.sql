-- Statements of mod_qrtrack/qrt_store_agg_blob.c (see docs/design.md, "The SQL statements").

-- name: agg_blob_fetch
SELECT bucket, data, seal
    FROM agg_blob
    WHERE account_id = %lld AND level = %lld AND bucket BETWEEN %lld AND %lld AND kind = %lld
    ORDER BY bucket
    LIMIT %lld

-- name: agg_blob_put
INSERT INTO agg_blob (account_id, level, bucket, kind, data, seal)
    VALUES (%lld, %lld, %lld, %lld, %s, %lld)
    ON CONFLICT (account_id, level, bucket, kind) DO UPDATE
    SET data = excluded.data, seal = excluded.seal

-- The seals of a window's values, from the index agg_blob_seals alone (their text is
-- read only for those the process does not hold: qrt_aggcache.h).
-- name: agg_blob_seals
SELECT bucket, seal
    FROM agg_blob
    WHERE account_id = %lld AND level = %lld AND kind = %lld AND bucket BETWEEN %lld AND %lld
    ORDER BY bucket

-- Values whose seal is not known yet (sealed before schema 48), a few at a time.
-- name: agg_blob_unhashed
SELECT account_id, level, bucket, kind, data
    FROM agg_blob
    WHERE seal IS NULL
    LIMIT %lld

-- (the text it was hashed from: a value replaced meanwhile keeps its own)
-- name: agg_blob_hash
UPDATE agg_blob SET seal = %lld
    WHERE account_id = %lld AND level = %lld AND bucket = %lld AND kind = %lld AND seal IS NULL
        AND data = %s

-- name: agg_blob_inval
DELETE
    FROM agg_blob
    WHERE account_id = %lld AND ((level = 1 AND bucket = %lld) OR (level = 2 AND bucket = %lld) OR
        (level = 3 AND bucket = %lld))

-- name: agg_blob_drop_unit
DELETE
    FROM agg_blob
    WHERE account_id = %lld AND level = %lld AND bucket = %lld

-- name: agg_blob_clear
DELETE
    FROM agg_blob

-- name: agg_blob_unsealed_all
INSERT INTO agg_unsealed (account_id, day)
    SELECT account_id, bucket
    FROM agg_cnt
    WHERE kind = 2 AND level = 1 AND bucket > %lld
    ON CONFLICT (account_id, day) DO NOTHING

-- the work list: days whose rows changed since they were sealed (or ever)
-- name: agg_blob_unsealed_add
INSERT INTO agg_unsealed (account_id, day)
    VALUES (%lld, %lld)
    ON CONFLICT (account_id, day) DO NOTHING

-- agg_blob_inval then agg_blob_unsealed_add in one round trip (a commit of scans
-- runs them each time); the arguments: account, day, 16-day and 256-day buckets,
-- account, day.
-- name: agg_blob_inval_unsealed [pgsql-only]
WITH gone AS (
    DELETE
        FROM agg_blob
        WHERE account_id = %lld AND ((level = 1 AND bucket = %lld) OR (level = 2 AND bucket = %lld) OR
            (level = 3 AND bucket = %lld))
)
INSERT INTO agg_unsealed (account_id, day)
    VALUES (%lld, %lld)
    ON CONFLICT (account_id, day) DO NOTHING

-- name: agg_blob_unsealed
SELECT account_id, day
    FROM agg_unsealed
    ORDER BY account_id, day

-- name: agg_blob_relist
INSERT INTO agg_unsealed (account_id, day)
    SELECT c.account_id, c.bucket * CASE c.level WHEN 1 THEN 1 WHEN 2 THEN 16 ELSE 256 END
    FROM agg_cnt c
    WHERE c.kind = 2 AND NOT EXISTS (SELECT 1
    FROM agg_blob x
    WHERE x.account_id = c.account_id AND x.level = c.level AND x.bucket = c.bucket AND x.kind = 2)
    ON CONFLICT (account_id, day) DO NOTHING

-- name: agg_blob_unsealed_del
DELETE
    FROM agg_unsealed
    WHERE account_id = %lld AND day = %lld

-- name: agg_blob_has_day
SELECT COUNT(*)
    FROM agg_cnt
    WHERE kind = 2 AND account_id = %lld AND level = 1 AND bucket = %lld

-- name: agg_blob_sealed
SELECT COUNT(*)
    FROM agg_blob
    WHERE account_id = %lld AND level = %lld AND bucket = %lld AND kind = 2

-- what a unit holds
-- name: agg_blob_counts
SELECT tracker_id, value, scans, clicks, first_visits
    FROM agg_cnt
    WHERE kind = %lld AND account_id = %lld AND level = %lld AND bucket = %lld

-- name: agg_blob_quarters
SELECT quarter_hour, '', scans, clicks, quarters_since_previous
    FROM agg_day
    WHERE account_id = %lld AND quarter_hour BETWEEN %lld AND %lld

-- (a day not sealed: its links and gaps have unsealed = 1, schema 17)
-- name: agg_blob_pdays
SELECT previous_time, visit_count
    FROM agg_link
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 1

-- name: agg_blob_links
SELECT visit_time, previous_time, flags, tracker_id, k.browser, k.country, k.city, visit_count
    FROM agg_link
    JOIN agg_bcy k ON k.id = browser_country_city_id
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 1

-- name: agg_blob_gaps
SELECT visit_time, previous_time, tracker_id, v.value, SUM(visit_count)
    FROM agg_gaps
    JOIN agg_vals v ON v.id = value_id
    WHERE kind = %lld AND account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 1
    GROUP BY visit_time, previous_time, tracker_id, v.value

-- SQLite (schema 17): a day's links and gaps leave agg_link_u and agg_gaps_u when it is sealed,
-- and come back, one (previous_time, visit_time) at a time as its sealed value lists them, when
-- that value goes; by the day's whole range of visit_time (every row of the account read) when
-- the value cannot be read
-- name: agg_blob_link_sealed
UPDATE agg_link
    SET unsealed = 0
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 1

-- name: agg_blob_gap_sealed
UPDATE agg_gaps
    SET unsealed = 0
    WHERE kind = %lld AND account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 1

-- name: agg_blob_link_open
UPDATE agg_link
    SET unsealed = 1
    WHERE account_id = %lld AND previous_time = %lld AND visit_time = %lld AND unsealed = 0

-- name: agg_blob_gap_open
UPDATE agg_gaps
    SET unsealed = 1
    WHERE kind = %lld AND account_id = %lld AND previous_time = %lld AND visit_time = %lld AND
        unsealed = 0

-- name: agg_blob_link_open_every
UPDATE agg_link
    SET unsealed = 1
    WHERE unsealed = 0

-- name: agg_blob_gap_open_every
UPDATE agg_gaps
    SET unsealed = 1
    WHERE unsealed = 0

-- (qrtrack-admin aggregates seal: the rows of days whose links value is gone behind the store's
-- back, one pass over every row)
-- name: agg_blob_link_open_lost
UPDATE agg_link
    SET unsealed = 1
    WHERE unsealed = 0 AND NOT EXISTS (SELECT 1
    FROM agg_blob b
    WHERE b.account_id = agg_link.account_id AND b.level = 1 AND b.kind = 10 AND b.bucket =
        (agg_link.visit_time - ((agg_link.visit_time % 86400) + 86400) % 86400) / 86400)

-- name: agg_blob_gap_open_lost
UPDATE agg_gaps
    SET unsealed = 1
    WHERE unsealed = 0 AND NOT EXISTS (SELECT 1
    FROM agg_blob b
    WHERE b.account_id = agg_gaps.account_id AND b.level = 1 AND b.kind = 10 AND b.bucket =
        (agg_gaps.visit_time - ((agg_gaps.visit_time % 86400) + 86400) % 86400) / 86400)

-- a day with counters that is not on the work list: sealed (its rows unsealed = 0)
-- name: agg_blob_listed_or_empty
SELECT COUNT(*)
    FROM agg_cnt c
    WHERE c.kind = 2 AND c.account_id = %lld AND c.level = 1 AND c.bucket = %lld AND NOT EXISTS
        (SELECT 1
    FROM agg_unsealed x
    WHERE x.account_id = c.account_id AND x.day = c.bucket)

-- name: agg_blob_link_open_all
UPDATE agg_link
    SET unsealed = 1
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 0

-- name: agg_blob_gap_open_all
UPDATE agg_gaps
    SET unsealed = 1
    WHERE account_id = %lld AND visit_time BETWEEN %lld AND %lld AND unsealed = 0

-- name: agg_blob_visits
SELECT v.visit_start, CASE WHEN v.click = 1 THEN 1 ELSE 0 END, v.tracker_id, COALESCE(vu.browser,
        ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM agg_trk k
    CROSS JOIN visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE k.account_id = %lld AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND
        %lld AND v.bot = 0
