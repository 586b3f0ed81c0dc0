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


def rewind(srv, version, sql=""):
    """Stops srv and runs sql (say, the schema as it was) in its database, then sets the
    schema version just below version: srv's next start runs that migration again."""
    srv.stop()
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
