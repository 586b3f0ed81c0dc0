-- mod_qrtrack schema, version 5: a visitor's visits in full order on PostgreSQL.
-- The write path looks for a visitor's latest earlier visit (ORDER BY visit_start DESC,
-- id DESC LIMIT 1). SQLite's visits_visitor index already ends with the rowid, which
-- is the id; PostgreSQL's does not, and sorted every visit of the visitor instead of
-- reading the index backwards until the first match. {{PGSQL}} marks a statement
-- that only PostgreSQL runs.
{{PGSQL}}CREATE INDEX visits_visitor_id ON visits (visitor, visit_start, id);
{{PGSQL}}DROP INDEX visits_visitor;
UPDATE qrt_schema SET version = 5;
