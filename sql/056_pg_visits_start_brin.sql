-- mod_qrtrack schema, version 56 (PostgreSQL; SQLite only takes the number): a BRIN index of
-- visit_rows' times. A report's partial days (a window's first and last day, and days not
-- yet sealed: today's) are read from the visits themselves; with no index led by the time,
-- that was one probe of visits_tracker_visitor per tracker of the account, 1,000 probes for
-- an hour of a day that had no visit. Visits arrive in time order, so a block range's times
-- are narrow and the BRIN index (a few KB for a million visits) finds the blocks of an hour
-- directly; where imports of old visits have mixed the order, PostgreSQL's statistics (the
-- column's correlation) keep the planner on the per-tracker probes.
{{PGSQL}}CREATE INDEX IF NOT EXISTS visits_start_brin ON visit_rows USING brin (visit_start) WITH (pages_per_range = 16, autosummarize = on);
UPDATE qrt_schema SET version = 56;
