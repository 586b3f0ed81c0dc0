-- mod_qrtrack schema, version 8: sealed report aggregates (issue 12, qrt_aggblob.h).
-- Once no visit is expected in a day any more, its aggregate rows are also kept as a
-- few text values, which a report reads in one fetch each and decodes in C instead of
-- reading thousands of rows through SQL: per account and bucket (lvl 1 a day, 2 16
-- days, 3 256 days, b the bucket number) the counters of each kind (kind 1-6), and
-- for a day its links and gaps (kind 10) and its visits (kind 11). They are a cache:
-- a transaction that changes a day's rows deletes that day's values first, and the
-- scan writers seal them again when idle. A database upgraded to this version starts
-- with none and is read from its rows until then. (IF NOT EXISTS: a database that
-- says an older version than it is keeps its table.)
CREATE TABLE IF NOT EXISTS agg_blob (
    account_id BIGINT NOT NULL,
    lvl SMALLINT NOT NULL,
    b BIGINT NOT NULL,
    kind SMALLINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (account_id, lvl, b, kind)
);
-- The days to seal: every transaction that changes a day's aggregate rows puts the
-- day here (and drops its sealed values); the writers seal the settled ones and take
-- them off. An upgraded database starts with every day that has counters. (Not when
-- agg_cnt has the names of version 23: a database that says an older version than it
-- is, whose days are listed already.)
CREATE TABLE IF NOT EXISTS agg_unsealed (
    account_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    PRIMARY KEY (account_id, day)
);
{{SQLITE}}{{UNLESS_COLUMN:agg_cnt.bucket}}INSERT OR IGNORE INTO agg_unsealed (account_id, day) SELECT account_id, b FROM agg_cnt WHERE kind = 2 AND lvl = 1;
{{PGSQL}}{{UNLESS_COLUMN:agg_cnt.bucket}}INSERT INTO agg_unsealed (account_id, day) SELECT account_id, b FROM agg_cnt WHERE kind = 2 AND lvl = 1 ON CONFLICT DO NOTHING;
-- The reports over a few listed trackers group those trackers' visits with their
-- distinct visitors; the index they read now also holds the source and the
-- dictionary ids of browser and place, so that no visit row is read for them.
DROP INDEX IF EXISTS visits_tracker_visitor;
CREATE INDEX visits_tracker_visitor ON visit_rows (tracker_id, visit_start, id, visitor, bot, click, ua_id, place_id);
UPDATE qrt_schema SET version = 8;
