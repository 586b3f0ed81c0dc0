-- mod_qrtrack schema, version 58. agg_day.last_start: the latest visit_start of the visits
-- a row counted (raised with its counters, never lowered: deletions leave it above the
-- visits left). A report's window that ends inside a day not sealed yet (the last 24
-- hours, the last 30 days) reads that day as its counters less the rest of the day after
-- the window; with nothing after the window's end in the rest's quarter-hours, as through
-- now, the rest is not read at all (it was a probe per tracker of the account). Rows
-- from before this schema have none (NULL): their quarter-hour's last second stands in.
{{SQLITE}}{{UNLESS_COLUMN:agg_day.last_start}}ALTER TABLE agg_day ADD COLUMN last_start BIGINT;
{{PGSQL}}ALTER TABLE agg_day ADD COLUMN IF NOT EXISTS last_start BIGINT;
UPDATE qrt_schema SET version = 58;
