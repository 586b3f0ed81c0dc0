"""A database that refuses one tracker's visits for good, for the spool's tests."""
import sqlite3
import threading

import psycopg2

from lib.pg import pg_cluster


class RefusingLock:
    """Another program holds the database's write lock and, in the same transaction,
    makes the database refuse every new visit of one tracker (a constraint, enforced by a
    trigger, as an administrator's rule might be); release() commits it."""

    def __init__(self, srv, tracker):
        self.release_ev = threading.Event()
        got = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(srv, tracker, got))
        self.thread.start()
        assert got.wait(30), "the outside lock was never granted: %s" % self.error

    def _run(self, srv, tracker, got):
        try:
            if srv.backend == "pgsql":
                pg = pg_cluster()
                con = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user,
                                       dbname=srv.dbname)
                cur = con.cursor()
                cur.execute("LOCK TABLE visit_rows IN EXCLUSIVE MODE")
                cur.execute("CREATE FUNCTION refuse_tracker() RETURNS trigger LANGUAGE plpgsql "
                            "AS $$ BEGIN IF NEW.tracker_id = %d THEN RAISE EXCEPTION "
                            "'no visits of tracker %%', NEW.tracker_id USING ERRCODE = "
                            "'check_violation'; END IF; RETURN NEW; END $$" % tracker)
                cur.execute("CREATE TRIGGER refuse_tracker BEFORE INSERT ON visit_rows FOR "
                            "EACH ROW EXECUTE FUNCTION refuse_tracker()")
            else:
                con = sqlite3.connect(srv.db, isolation_level=None, timeout=10)
                cur = con.cursor()
                cur.execute("BEGIN IMMEDIATE")
                cur.execute("CREATE TABLE refuse_seven (x INTEGER CHECK (x <> 7))")
                cur.execute("CREATE TRIGGER refuse_tracker BEFORE INSERT ON visit_rows WHEN "
                            "NEW.tracker_id = %d BEGIN INSERT INTO refuse_seven VALUES (7); "
                            "END" % tracker)
            got.set()
            self.release_ev.wait(120)
            con.commit() if srv.backend == "pgsql" else cur.execute("COMMIT")
            con.close()
        except Exception as e:  # (said by the constructor's assertion)
            self.error = e
            got.set()

    def release(self):
        self.release_ev.set()
        self.thread.join(60)
        assert self.error is None, self.error
