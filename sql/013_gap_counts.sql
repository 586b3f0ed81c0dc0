-- mod_qrtrack schema, version 13: the gaps counted, with their group's value as a number
-- (issue 12, item 4). agg_gap held one row per gap, with an id, the same columns again
-- in agg_gap_t, and the value (a browser, country, city or tag) as text in both. The
-- gaps are now agg_gaps: one row per distinct gap with its count n, keyed by itself
-- (WITHOUT ROWID on SQLite), its value an id into agg_vals, and agg_gaps_p by the
-- previous visit's time with n. (A database that says an older version than it is has
-- agg_vals already: nothing is done again.)
{{UNLESS_TABLE:agg_vals}}CREATE TABLE agg_vals (id {{ID}}, val VARCHAR(255) NOT NULL UNIQUE);
{{UNLESS_TABLE:agg_vals}}INSERT INTO agg_vals (val) SELECT DISTINCT val FROM agg_gap ORDER BY val;
{{UNLESS_TABLE:agg_vals}}CREATE TABLE agg_gaps (kind SMALLINT NOT NULL, account_id BIGINT NOT NULL, t BIGINT NOT NULL, p BIGINT NOT NULL, grp BIGINT NOT NULL, vid BIGINT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (kind, account_id, t, p, grp, vid)){{WITHOUT_ROWID}};
{{UNLESS_TABLE:agg_vals}}INSERT INTO agg_gaps (kind, account_id, t, p, grp, vid, n) SELECT g.kind, g.account_id, g.t, g.p, g.grp, v.id, COUNT(*) FROM agg_gap g JOIN agg_vals v ON v.val = g.val GROUP BY g.kind, g.account_id, g.t, g.p, g.grp, v.id ORDER BY g.kind, g.account_id, g.t, g.p, g.grp, v.id;
{{UNLESS_TABLE:agg_vals}}CREATE INDEX agg_gaps_p ON agg_gaps (kind, account_id, p, n);
DROP TABLE IF EXISTS agg_gap;
UPDATE qrt_schema SET version = 13;
