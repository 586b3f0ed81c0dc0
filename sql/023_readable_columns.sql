-- mod_qrtrack schema, version 23: the report aggregates' columns named for what they
-- hold (issue 34). Only names change: no row, type, key or index does (the indexes
-- follow the renamed columns and keep their names).
-- agg_cnt, counters per group and bucket:
--   lvl -> level (1 a day, 2 16 days, 3 256 days), b -> bucket (the bucket number at
--   that level), grp -> tracker_id (the tracker of kind 1, else 0), val -> value (the
--   browser, country, city or tag, else ''), firsts -> first_visits (visits that are
--   their visitor's first in the group), rets -> followed_visits (visits followed by a
--   later one of the same visitor in the group).
-- agg_blob, sealed values: lvl -> level, b -> bucket.
-- agg_day, per account and quarter-hour: q -> quarter_hour (seconds / 900), g ->
--   quarters_since_previous (since the visitor's previous visit in the account, 96
--   for a day or more, or none).
-- agg_link and agg_gaps, a visit and the visitor's previous visit in a group: t ->
--   visit_time, p -> previous_time, n -> visit_count, u -> unsealed (1 while the day
--   of visit_time has no sealed value); agg_link's bcy -> browser_country_city_id (into
--   agg_bcy); agg_gaps's grp -> tracker_id (kind 1, else 0), vid -> value_id (into
--   agg_vals, whose val -> value).
-- RENAME COLUMN changes the schema only (SQLite rewrites the text of the table and of
-- the indexes that name the column; PostgreSQL its catalog): no table is rewritten.
-- No trigger, view or function names these columns. Each rename runs unless its new
-- name is there already (a database that says an older version than it is).
{{UNLESS_COLUMN:agg_cnt.level}}ALTER TABLE agg_cnt RENAME COLUMN lvl TO level;
{{UNLESS_COLUMN:agg_cnt.bucket}}ALTER TABLE agg_cnt RENAME COLUMN b TO bucket;
{{UNLESS_COLUMN:agg_cnt.tracker_id}}ALTER TABLE agg_cnt RENAME COLUMN grp TO tracker_id;
{{UNLESS_COLUMN:agg_cnt.value}}ALTER TABLE agg_cnt RENAME COLUMN val TO value;
{{UNLESS_COLUMN:agg_cnt.first_visits}}ALTER TABLE agg_cnt RENAME COLUMN firsts TO first_visits;
{{UNLESS_COLUMN:agg_cnt.followed_visits}}ALTER TABLE agg_cnt RENAME COLUMN rets TO followed_visits;
{{UNLESS_COLUMN:agg_blob.level}}ALTER TABLE agg_blob RENAME COLUMN lvl TO level;
{{UNLESS_COLUMN:agg_blob.bucket}}ALTER TABLE agg_blob RENAME COLUMN b TO bucket;
{{UNLESS_COLUMN:agg_day.quarter_hour}}ALTER TABLE agg_day RENAME COLUMN q TO quarter_hour;
{{UNLESS_COLUMN:agg_day.quarters_since_previous}}ALTER TABLE agg_day RENAME COLUMN g TO quarters_since_previous;
{{UNLESS_COLUMN:agg_link.visit_time}}ALTER TABLE agg_link RENAME COLUMN t TO visit_time;
{{UNLESS_COLUMN:agg_link.previous_time}}ALTER TABLE agg_link RENAME COLUMN p TO previous_time;
{{UNLESS_COLUMN:agg_link.browser_country_city_id}}ALTER TABLE agg_link RENAME COLUMN bcy TO browser_country_city_id;
{{UNLESS_COLUMN:agg_link.visit_count}}ALTER TABLE agg_link RENAME COLUMN n TO visit_count;
{{UNLESS_COLUMN:agg_link.unsealed}}ALTER TABLE agg_link RENAME COLUMN u TO unsealed;
{{UNLESS_COLUMN:agg_gaps.visit_time}}ALTER TABLE agg_gaps RENAME COLUMN t TO visit_time;
{{UNLESS_COLUMN:agg_gaps.previous_time}}ALTER TABLE agg_gaps RENAME COLUMN p TO previous_time;
{{UNLESS_COLUMN:agg_gaps.tracker_id}}ALTER TABLE agg_gaps RENAME COLUMN grp TO tracker_id;
{{UNLESS_COLUMN:agg_gaps.value_id}}ALTER TABLE agg_gaps RENAME COLUMN vid TO value_id;
{{UNLESS_COLUMN:agg_gaps.visit_count}}ALTER TABLE agg_gaps RENAME COLUMN n TO visit_count;
{{UNLESS_COLUMN:agg_gaps.unsealed}}ALTER TABLE agg_gaps RENAME COLUMN u TO unsealed;
{{UNLESS_COLUMN:agg_vals.value}}ALTER TABLE agg_vals RENAME COLUMN val TO value;
UPDATE qrt_schema SET version = 23;
