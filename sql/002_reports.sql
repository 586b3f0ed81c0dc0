-- mod_qrtrack schema, version 2: report aggregates (see qrt_agg.h and qrt_store_report.c).
-- Kept as visits are committed (qrt_store_agg_record), recomputed from the visits by
-- "qrtrack-admin aggregates rebuild". Bots are never counted. Times are epoch seconds.
--
-- A visitor's visits in chronological order, ignoring time ties by id:
CREATE INDEX visits_visitor ON visits (visitor, visit_start);
-- The trackers whose visits the account-level aggregates hold, with their type and
-- their tags at that time (a tracker deleted or retagged since shows as a difference
-- with trackers / tracker_tags, and the reports then read the visits instead).
CREATE TABLE agg_trk (
    tracker_id BIGINT NOT NULL PRIMARY KEY,
    account_id BIGINT NOT NULL,
    type VARCHAR(16) NOT NULL
);
CREATE INDEX agg_trk_account ON agg_trk (account_id, tracker_id);
CREATE TABLE agg_tag (
    tracker_id BIGINT NOT NULL,
    tag VARCHAR(64) NOT NULL,
    PRIMARY KEY (tracker_id, tag)
);
-- Counters per group and bucket: kind 1 tracker (grp), 2 account, 3 browser, 4 country,
-- 5 city, 6 tag (val); lvl 1 day, 2 16 days, 3 256 days (b = bucket number).
CREATE TABLE agg_cnt (
    kind SMALLINT NOT NULL,
    account_id BIGINT NOT NULL,
    lvl SMALLINT NOT NULL,
    b BIGINT NOT NULL,
    grp BIGINT NOT NULL,
    val VARCHAR(255) NOT NULL,
    scans BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    firsts BIGINT NOT NULL,
    rets BIGINT NOT NULL,
    PRIMARY KEY (kind, account_id, lvl, b, grp, val)
);
-- One tracker's counters (reports over a few listed trackers).
CREATE INDEX agg_cnt_grp ON agg_cnt (kind, account_id, grp, lvl, b);
-- One row per visit that is not its visitor's first in the account: its time t, the
-- time p of the visitor's previous visit in the account, and flags saying in which of
-- its other groups that previous visit is also the previous one.
CREATE TABLE agg_link (
    id {{ID}},
    account_id BIGINT NOT NULL,
    t BIGINT NOT NULL,
    p BIGINT NOT NULL,
    flags SMALLINT NOT NULL,
    tracker_id BIGINT NOT NULL,
    browser VARCHAR(64) NOT NULL,
    country VARCHAR(8) NOT NULL,
    city VARCHAR(128) NOT NULL
);
CREATE INDEX agg_link_t ON agg_link (account_id, t, p, flags, tracker_id, browser, country, city);
CREATE INDEX agg_link_p ON agg_link (account_id, p);
-- The other links: previous visit in a tracker, browser, country, city or tag that is
-- not the previous visit in the account.
CREATE TABLE agg_gap (
    id {{ID}},
    kind SMALLINT NOT NULL,
    account_id BIGINT NOT NULL,
    t BIGINT NOT NULL,
    p BIGINT NOT NULL,
    grp BIGINT NOT NULL,
    val VARCHAR(255) NOT NULL
);
CREATE INDEX agg_gap_t ON agg_gap (kind, account_id, t, p, grp, val);
CREATE INDEX agg_gap_p ON agg_gap (kind, account_id, p);
-- Day-by-day uniques in any offset that is a multiple of 15 minutes: visits per
-- quarter-hour q and gap g in quarter-hours since the visitor's previous visit in the
-- account (96 = a day or more, or none).
CREATE TABLE agg_day (
    account_id BIGINT NOT NULL,
    q BIGINT NOT NULL,
    g SMALLINT NOT NULL,
    scans BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    PRIMARY KEY (account_id, q, g)
);
UPDATE qrt_schema SET version = 2;
