-- mod_qrtrack schema, version 4: a link row carries how many links it stands for.
-- Links alike in every column (a visitor coming back within the same second, or two
-- visitors alike in everything) are one row with a count n, so a burst of visits
-- adds to a row instead of adding a row and its index entries each. The table is
-- ordered by the key of the former agg_link_t index, so the reads by time read it
-- directly; the reads by previous time have agg_link_p, which holds n.
CREATE TABLE agg_link4 (
    account_id BIGINT NOT NULL,
    t BIGINT NOT NULL,
    p BIGINT NOT NULL,
    flags SMALLINT NOT NULL,
    tracker_id BIGINT NOT NULL,
    browser VARCHAR(64) NOT NULL,
    country VARCHAR(8) NOT NULL,
    city VARCHAR(128) NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (account_id, t, p, flags, tracker_id, browser, country, city)
){{WITHOUT_ROWID}};
INSERT INTO agg_link4 (account_id, t, p, flags, tracker_id, browser, country, city, n)
SELECT account_id, t, p, flags, tracker_id, browser, country, city, COUNT(*)
FROM agg_link GROUP BY account_id, t, p, flags, tracker_id, browser, country, city;
DROP TABLE agg_link;
ALTER TABLE agg_link4 RENAME TO agg_link;
CREATE INDEX agg_link_p ON agg_link (account_id, p, n);
UPDATE qrt_schema SET version = 4;
