-- Statements of mod_qrtrack/qrt_store_visit.c (see docs/design.md, "The SQL statements").
-- first_visit is no longer kept (schema 15): 0, which SQLite stores in its record header
-- alone, so that a database re-running migration 009 still finds the column.
-- A dictionary row: added, or, when it is there already (the insert adds nothing), found by
-- its key. The added row's id: SQLite's last rowid (qrt_store_dict_id; a RETURNING clause
-- would make SQLite open an ephemeral table for each row), PostgreSQL's RETURNING.
-- The *_many statements (PostgreSQL) take each column as an array: many rows a round trip.

-- qrt_store_write_lock: SQLite never runs it
-- name: write_lock
SELECT %lld

-- name: visit_add
INSERT INTO visit_rows (tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id,
        ip_id, dest_id)
    VALUES (%lld, %lld, %d, %d, %lld, %lld, %lld, %lld, %lld, %lld)

-- SQLite (schema 11): a batch's ids, taken from visit_seq (the last one is then read back with
-- agg_max_id: a RETURNING clause makes SQLite keep a statement journal and a table of the
-- rows returned, a cost on every scan batch's commit), then its rows with them.
-- name: visit_ids
UPDATE visit_seq
    SET last = last + %lld

-- name: visit_add_id
INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id,
        ip_id, dest_id)
    VALUES (%lld, %lld, %lld, %d, %d, %lld, %lld, %lld, %lld, %lld, %lld)

-- SQLite (schema 43): a large batch's dictionary references, counted once per distinct entry
-- while its id range is in visit_refs_batch (visit_refs_ins skips those rows); PostgreSQL
-- counts in its own triggers and never runs these.
-- name: visit_refs_batch_add
INSERT INTO visit_refs_batch (first, last)
    VALUES (%lld, %lld)

-- name: visit_refs_batch_add [pgsql]
SELECT %lld, %lld

-- name: visit_refs_batch_end
DELETE FROM visit_refs_batch
    WHERE first = %lld

-- name: visit_refs_batch_end [pgsql]
SELECT %lld

-- SQLite (schema 62): the scan writer's batch counts, added to refs later by
-- visit_refs_settle_* (qrt_store_refs_settle) with visit_refs_settle_end. PostgreSQL counts
-- in its own triggers (schema 63: visit_refs) and never settles anything.
-- name: visit_refs_due_add
INSERT INTO visit_refs_due (d, id, n)
    VALUES (%lld, %lld, %lld)

-- name: visit_refs_due_add [pgsql]
SELECT %lld, %lld, %lld

-- name: visit_refs_settle_ua
UPDATE visit_uas
    SET refs = refs + s.n
    FROM (SELECT id, SUM(n) AS n
    FROM visit_refs_due
    WHERE d = 1
    GROUP BY id) s
    WHERE visit_uas.id = s.id

-- name: visit_refs_settle_ua [pgsql]
SELECT 1

-- name: visit_refs_settle_referer
UPDATE visit_referers
    SET refs = refs + s.n
    FROM (SELECT id, SUM(n) AS n
    FROM visit_refs_due
    WHERE d = 2
    GROUP BY id) s
    WHERE visit_referers.id = s.id

-- name: visit_refs_settle_referer [pgsql]
SELECT 1

-- name: visit_refs_settle_ip
UPDATE visit_ips
    SET refs = refs + s.n
    FROM (SELECT id, SUM(n) AS n
    FROM visit_refs_due
    WHERE d = 3
    GROUP BY id) s
    WHERE visit_ips.id = s.id

-- name: visit_refs_settle_ip [pgsql]
SELECT 1

-- name: visit_refs_settle_dest
UPDATE visit_destinations
    SET refs = refs + s.n
    FROM (SELECT id, SUM(n) AS n
    FROM visit_refs_due
    WHERE d = 4
    GROUP BY id) s
    WHERE visit_destinations.id = s.id

-- name: visit_refs_settle_dest [pgsql]
SELECT 1

-- name: visit_refs_settle_end
DELETE FROM visit_refs_due

-- name: visit_refs_settle_end [pgsql]
SELECT 1

-- name: visit_refs_ua
UPDATE visit_uas
    SET refs = refs + %lld
    WHERE id = %lld

-- name: visit_refs_ua [pgsql]
SELECT %lld, %lld

-- name: visit_refs_referer
UPDATE visit_referers
    SET refs = refs + %lld
    WHERE id = %lld

-- name: visit_refs_referer [pgsql]
SELECT %lld, %lld

-- name: visit_refs_ip
UPDATE visit_ips
    SET refs = refs + %lld
    WHERE id = %lld

-- name: visit_refs_ip [pgsql]
SELECT %lld, %lld

-- name: visit_refs_dest
UPDATE visit_destinations
    SET refs = refs + %lld
    WHERE id = %lld

-- name: visit_refs_dest [pgsql]
SELECT %lld, %lld

-- The earliest time of a bucket of ids (id >> 12), once per batch (SQLite: schema 14,
-- PostgreSQL: schema 57; the view's triggers do the same, and keep trackers.last_visit_id)
-- name: visit_floor
INSERT INTO visit_floor (bucket, min_start)
    VALUES (%lld, %lld)
    ON CONFLICT (bucket) DO UPDATE
    SET min_start = excluded.min_start
    WHERE excluded.min_start < visit_floor.min_start

-- a batch's counters of one tracker, and its newest id (SQLite: schema 14, PostgreSQL: 57)
-- name: tracker_counters
UPDATE trackers
    SET total_scans = total_scans + %lld, total_clicks = total_clicks + %lld, total_bots =
        total_bots + %lld, unique_visitors = unique_visitors + %lld, last_visit = CASE WHEN %lld >
        COALESCE(last_visit, 0) THEN %lld ELSE last_visit END, last_visit_id = CASE WHEN %lld >
        last_visit_id THEN %lld ELSE last_visit_id END
    WHERE id = %lld

-- name: dict_ua_get
SELECT id
    FROM visit_uas
    WHERE k = %s

-- name: dict_ua_add
INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    VALUES (%s, %s, %s, %s, %s, %s)
    ON CONFLICT (k) DO NOTHING

-- name: dict_place_get
SELECT id
    FROM visit_places
    WHERE k = %s

-- name: dict_place_add
INSERT INTO visit_places (k, country, city)
    VALUES (%s, %s, %s)
    ON CONFLICT (k) DO NOTHING

-- name: dict_ref_get
SELECT id
    FROM visit_referers
    WHERE referer = %s

-- name: dict_ref_add
INSERT INTO visit_referers (referer)
    VALUES (%s)
    ON CONFLICT (referer) DO NOTHING

-- name: dict_ip_get
SELECT id
    FROM visit_ips
    WHERE ip = %s

-- name: dict_ip_add
INSERT INTO visit_ips (ip)
    VALUES (%s)
    ON CONFLICT (ip) DO NOTHING

-- (schema 25: the URL a visit was sent to)
-- name: dict_dest_get
SELECT id
    FROM visit_destinations
    WHERE url = %s

-- name: dict_dest_add
INSERT INTO visit_destinations (url)
    VALUES (%s)
    ON CONFLICT (url) DO NOTHING

-- the dictionaries' generation (schema 22; dict_cache_generation), with
-- qrt_store_write_lock_gen's key, unused here
-- name: write_lock_gen
SELECT MAX(gen)
    FROM visit_dict_gen
    WHERE %lld <> 0

-- name: write_lock [pgsql]
SELECT pg_advisory_xact_lock(%lld)

-- qrt_store_write_trylock: 1 when taken, 0 when another transaction holds it (SQLite never
-- runs it)
-- name: write_trylock
SELECT %lld

-- name: write_trylock [pgsql]
SELECT CASE WHEN pg_try_advisory_xact_lock(%lld) THEN 1 ELSE 0 END

-- name: write_lock_gen [pgsql]
SELECT (SELECT MAX(gen)
    FROM visit_dict_gen)
    FROM (SELECT pg_advisory_xact_lock(%lld)) l

-- (SQLite's alone: PostgreSQL's ids come from the sequence)
-- name: visit_ids [pgsql]
SELECT %lld

-- name: visit_add_id [pgsql]
SELECT %lld, %lld, %lld, %d, %d, %lld, %lld, %lld, %lld, %lld, %lld

-- name: dict_ua_add [pgsql]
INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    VALUES (%s, %s, %s, %s, %s, %s)
    ON CONFLICT (k) DO NOTHING
    RETURNING id

-- name: dict_place_add [pgsql]
INSERT INTO visit_places (k, country, city)
    VALUES (%s, %s, %s)
    ON CONFLICT (k) DO NOTHING
    RETURNING id

-- name: dict_ref_add [pgsql]
INSERT INTO visit_referers (referer)
    VALUES (%s)
    ON CONFLICT (referer) DO NOTHING
    RETURNING id

-- name: dict_ip_add [pgsql]
INSERT INTO visit_ips (ip)
    VALUES (%s)
    ON CONFLICT (ip) DO NOTHING
    RETURNING id

-- name: dict_dest_add [pgsql]
INSERT INTO visit_destinations (url)
    VALUES (%s)
    ON CONFLICT (url) DO NOTHING
    RETURNING id

-- (qrt_store_agg_write.c's highest visit id: SQLite reads visit_seq)
-- name: agg_max_id [pgsql]
SELECT MAX(id)
    FROM visit_rows

-- name: visit_add_many [pgsql-only]
INSERT INTO visit_rows (tracker_id, visit_start, click, bot, visitor, ua_id, place_id, ref_id,
        ip_id, dest_id)
    SELECT *
    FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS SMALLINT[]), CAST(%s AS
        SMALLINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS
        BIGINT[]), CAST(%s AS BIGINT[]), CAST(%s AS BIGINT[]))
    RETURNING id

-- a batch's dictionary values, added (those added come back), then found (joined to the array:
-- "k = ANY(array)" has PostgreSQL's generic plan read every row and compare it with every value)
-- name: dict_ua_add_many [pgsql-only]
INSERT INTO visit_uas (k, user_agent, browser, browser_version, os, device)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]),
        CAST(%s AS TEXT[]), CAST(%s AS TEXT[]))
    ON CONFLICT (k) DO NOTHING
    RETURNING k, id

-- name: dict_ua_get_many [pgsql-only]
SELECT d.k, d.id
    FROM unnest(CAST(%s AS TEXT[])) AS u(k)
    JOIN visit_uas d ON d.k = u.k

-- name: dict_place_add_many [pgsql-only]
INSERT INTO visit_places (k, country, city)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]), CAST(%s AS TEXT[]), CAST(%s AS TEXT[]))
    ON CONFLICT (k) DO NOTHING
    RETURNING k, id

-- name: dict_place_get_many [pgsql-only]
SELECT d.k, d.id
    FROM unnest(CAST(%s AS TEXT[])) AS u(k)
    JOIN visit_places d ON d.k = u.k

-- name: dict_ref_add_many [pgsql-only]
INSERT INTO visit_referers (referer)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]))
    ON CONFLICT (referer) DO NOTHING
    RETURNING referer, id

-- name: dict_ref_get_many [pgsql-only]
SELECT d.referer, d.id
    FROM unnest(CAST(%s AS TEXT[])) AS u(k)
    JOIN visit_referers d ON d.referer = u.k

-- name: dict_ip_add_many [pgsql-only]
INSERT INTO visit_ips (ip)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]))
    ON CONFLICT (ip) DO NOTHING
    RETURNING ip, id

-- name: dict_ip_get_many [pgsql-only]
SELECT d.ip, d.id
    FROM unnest(CAST(%s AS TEXT[])) AS u(k)
    JOIN visit_ips d ON d.ip = u.k

-- name: dict_dest_add_many [pgsql-only]
INSERT INTO visit_destinations (url)
    SELECT *
    FROM unnest(CAST(%s AS TEXT[]))
    ON CONFLICT (url) DO NOTHING
    RETURNING url, id

-- name: dict_dest_get_many [pgsql-only]
SELECT d.url, d.id
    FROM unnest(CAST(%s AS TEXT[])) AS u(k)
    JOIN visit_destinations d ON d.url = u.k
