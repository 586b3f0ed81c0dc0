"""Running a migration again on a test server's database: the upgrade tests put the schema
back as it was before a migration, start the server (whose start runs it), and check the
result; then run it once more over its own result, as after a migration stopped half way."""
import glob
import os

from lib.env import SQL_DIR


def migration_version(name):
    """The number of the migration file sql/NNN_<name>.sql."""
    path = glob.glob(os.path.join(SQL_DIR, "[0-9][0-9][0-9]_%s.sql" % name))[0]
    return int(os.path.basename(path)[:3])


def _migration_pgsql(name):
    """The PostgreSQL statements of migration sql/NNN_<name>.sql, its markers taken off."""
    path = glob.glob(os.path.join(SQL_DIR, "[0-9][0-9][0-9]_%s.sql" % name))[0]
    out, stmt = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not stmt and (not line.startswith("{{PGSQL}}")):
                continue
            stmt.append(line.replace("{{PGSQL}}", "", 1))
            if line.endswith(";"):
                out.append("\n".join(stmt))
                stmt = []
    return out


def before_dict_refs(srv):
    """PostgreSQL: puts back what schema 62 had and 63 (pg_visit_refs) replaced: the
    per-tracker counts visit_dict_counts (as schema 52 made them, filled from the
    visits, with their triggers and their index by entry) and the indexes visits_by_ip
    and visits_by_dest, without 63's visit_refs and its triggers. Nothing on
    SQLite, or when it is there already."""
    if srv.backend != "pgsql" or srv.sql("SELECT to_regclass('visit_dict_counts')").strip():
        return
    fn = [s for s in _migration_pgsql("search_counts")
          if s.startswith("CREATE OR REPLACE FUNCTION qrt_visit_dict_counts()")]
    assert len(fn) == 1, fn
    sql = ["DROP TRIGGER IF EXISTS visit_refs_%s ON visit_rows;" % t
           for t in ("ins", "upd", "del", "trunc")]
    sql += ["DROP FUNCTION IF EXISTS qrt_visit_refs();", "DROP TABLE IF EXISTS visit_refs;"]
    sql += fn + [
        "CREATE TABLE visit_dict_counts (n BIGINT NOT NULL, id BIGINT NOT NULL, "
        "tracker_id INTEGER NOT NULL, d SMALLINT NOT NULL);",
        "INSERT INTO visit_dict_counts (tracker_id, d, id, n) SELECT tracker_id, d, id, "
        "COUNT(*) FROM (SELECT tracker_id, 1 AS d, ua_id AS id FROM visit_rows UNION ALL "
        "SELECT tracker_id, 2, place_id FROM visit_rows UNION ALL SELECT tracker_id, 3, ref_id "
        "FROM visit_rows WHERE ref_id IS NOT NULL) o GROUP BY 1, 2, 3;",
        "ALTER TABLE visit_dict_counts ADD CONSTRAINT visit_dict_counts_pkey "
        "PRIMARY KEY (tracker_id, d, id);",
        "CREATE INDEX visit_dict_counts_by_id ON visit_dict_counts (d, id);",
        "CREATE INDEX visits_by_ip ON visit_rows (ip_id) WHERE ip_id IS NOT NULL;",
        "CREATE INDEX visits_by_dest ON visit_rows (dest_id) WHERE dest_id IS NOT NULL;"]
    for t, when, tables in (("ins", "INSERT", "NEW TABLE AS qrt_new"),
                            ("upd", "UPDATE", "OLD TABLE AS qrt_old NEW TABLE AS qrt_new"),
                            ("del", "DELETE", "OLD TABLE AS qrt_old")):
        sql.append("CREATE TRIGGER visit_dict_counts_%s AFTER %s ON visit_rows REFERENCING %s "
                   "FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();"
                   % (t, when, tables))
    sql.append("CREATE TRIGGER visit_dict_counts_trunc AFTER TRUNCATE ON visit_rows "
               "FOR EACH STATEMENT EXECUTE FUNCTION qrt_visit_dict_counts();")
    srv.sql("\n".join(sql))


def rewind(srv, version, sql=""):
    """Stops srv and runs sql (say, the schema as it was) in its database, then sets the
    schema version just below version: srv's next start runs that migration again (a
    version before 63 on PostgreSQL: from what schema 62 had, before_dict_refs)."""
    srv.stop()
    if version < migration_version("pg_visit_refs"):
        before_dict_refs(srv)
    srv.sql(sql + " UPDATE qrt_schema SET version = %d;" % (version - 1))


def migrated(srv, version):
    """Whether srv's database is at version or later."""
    return int(srv.sql("SELECT MAX(version) FROM qrt_schema").strip()) >= version


def upgrade_twice(srv, version, old_sql, check, check_old=None):
    """The schema before (old_sql run, check_old() on it), the server started (the
    migration runs), check(); then the migration once more over its own result, check()."""
    rewind(srv, version, old_sql)
    if check_old:
        check_old()
    srv.start()
    assert migrated(srv, version)
    check()
    rewind(srv, version)
    srv.start()
    check()


def column_types(srv, tables):
    """PostgreSQL: each column of tables, "table.column", by its type's name."""
    out = srv.sql("SELECT table_name || '.' || column_name || '=' || udt_name FROM "
                  "information_schema.columns WHERE table_name IN (%s) ORDER BY 1"
                  % ", ".join("'%s'" % t for t in tables)).split()
    return dict(x.split("=", 1) for x in out)


def index_keys(srv, tables):
    """PostgreSQL: each index of tables by name, as what it keys (from USING btree on;
    other methods' with their name first, "brin (visit_start) ...")."""
    out = srv.sql("SELECT indexname || '=' || indexdef FROM pg_indexes WHERE tablename IN (%s)"
                  % ", ".join("'%s'" % t for t in tables)).splitlines()
    return dict((x.split("=", 1)[0], x.split(" USING ", 1)[1].replace("btree ", "", 1))
                for x in out)
