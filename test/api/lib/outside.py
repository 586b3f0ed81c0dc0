"""The database's write lock held by another program (an administrator's open transaction,
VACUUM FULL, CREATE INDEX), and what such a program may change while it holds it."""
import sqlite3
import subprocess
import threading
import time

from lib.env import PSQL
from lib.pg import pg_cluster
from lib.wait import wait_until

# The scan writers' and the API's write lock on PostgreSQL (qrt_store_write_lock)
WRITE_LOCK_KEY = 0x71727472


class OutsideLock:
    """Holds srv's database's write lock from another program for `seconds` from the
    moment it has it, then commits what `sql` (one statement, or None) changed under it;
    the constructor returns once it has it (self.held, monotonic). PostgreSQL: by default
    the visits table locked in EXCLUSIVE mode (every writer of visits waits for it);
    advisory=True takes the module's own write lock instead (what the API's writes and
    the scan writers take first)."""

    def __init__(self, srv, seconds, sql=None, advisory=False):
        self.held = None
        if srv.backend == "pgsql":
            pg = pg_cluster()
            lock = ("SELECT pg_advisory_xact_lock(%d)" % WRITE_LOCK_KEY if advisory
                    else "LOCK TABLE visits IN EXCLUSIVE MODE")
            self.proc = subprocess.Popen(
                [PSQL, "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user,
                 "-d", srv.dbname, "-v", "ON_ERROR_STOP=1", "-c",
                 "BEGIN; %s; %sSELECT pg_sleep(%g); COMMIT;"
                 % (lock, sql + "; " if sql else "", seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.thread = None
            if advisory:
                query = ("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                         "objid = %d AND granted" % WRITE_LOCK_KEY)
            else:
                query = ("SELECT COUNT(*) FROM pg_locks l JOIN pg_class c "
                         "ON l.relation = c.oid WHERE c.relname = 'visits' "
                         "AND l.database = (SELECT oid FROM pg_database WHERE "
                         "datname = current_database()) "
                         "AND l.mode = 'ExclusiveLock' AND l.granted")
            wait_until(lambda: pg.psql(srv.dbname, query).strip() == "1", timeout=30,
                       what="the outside lock to be granted")
            self.held = time.monotonic()
        else:
            self.proc = None
            got = threading.Event()
            self.thread = threading.Thread(target=self._sqlite,
                                           args=(srv.db, seconds, sql, got))
            self.thread.start()
            assert got.wait(30), "the outside lock was never granted"
            self.held = time.monotonic()

    @staticmethod
    def _sqlite(path, seconds, sql, got):
        con = sqlite3.connect(path, isolation_level=None, timeout=10)
        con.execute("BEGIN IMMEDIATE")
        if sql:
            con.execute(sql)
        got.set()
        # Holding the lock for a set time is the fault under test.
        time.sleep(seconds)
        con.execute("COMMIT")
        con.close()

    def wait(self):
        if self.proc:
            _, err = self.proc.communicate(timeout=60)
            assert self.proc.returncode == 0, err
        else:
            self.thread.join()
