-- mod_qrtrack schema, version 12: a link's browser, country and city as one number
-- (issue 12, item 4). agg_link held the three strings in its key, and agg_link_p held
-- them again (an index of a WITHOUT ROWID table ends with the whole key): about 25
-- bytes of each row, twice. They now live once in agg_bcy, one row per combination
-- seen, and a link names its id (bcy); the reports group by the id and read the
-- strings from agg_bcy. (A database that says an older version than it is has
-- agg_bcy already: nothing is done again.)
{{UNLESS_TABLE:agg_bcy}}CREATE TABLE agg_bcy (id {{ID}}, browser VARCHAR(64) NOT NULL, country VARCHAR(8) NOT NULL, city VARCHAR(128) NOT NULL, UNIQUE (browser, country, city) );
{{UNLESS_TABLE:agg_bcy}}INSERT INTO agg_bcy (browser, country, city) SELECT DISTINCT browser, country, city FROM agg_link ORDER BY browser, country, city;
{{UNLESS_TABLE:agg_bcy}}CREATE TABLE agg_link12 (account_id BIGINT NOT NULL, t BIGINT NOT NULL, p BIGINT NOT NULL, flags SMALLINT NOT NULL, tracker_id BIGINT NOT NULL, bcy BIGINT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (account_id, t, p, flags, tracker_id, bcy) ){{WITHOUT_ROWID}};
{{UNLESS_TABLE:agg_bcy}}INSERT INTO agg_link12 (account_id, t, p, flags, tracker_id, bcy, n) SELECT l.account_id, l.t, l.p, l.flags, l.tracker_id, k.id, l.n FROM agg_link l JOIN agg_bcy k ON k.browser = l.browser AND k.country = l.country AND k.city = l.city ORDER BY l.account_id, l.t, l.p, l.flags, l.tracker_id, k.id;
{{UNLESS_TABLE:agg_bcy}}DROP TABLE agg_link;
{{UNLESS_TABLE:agg_bcy}}ALTER TABLE agg_link12 RENAME TO agg_link;
{{UNLESS_TABLE:agg_bcy}}CREATE INDEX agg_link_p ON agg_link (account_id, p, n);
UPDATE qrt_schema SET version = 12;
