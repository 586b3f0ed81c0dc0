"""The session's throwaway PostgreSQL cluster."""
import atexit
import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections import OrderedDict

import jsonschema
import psycopg2
import psycopg2.extensions
import pytest
import requests

from lib.env import (TOP, BUILD, ADMIN, MODULE, REPORTS, OPENAPI, BACKEND, PG_BIN, CRASH,  # noqa: F401
                     HTTPD, apxs, sanitizer_reports, free_port, sqlite_only)
from lib.env import PG_BIN, PSQL, as_user, free_port
from lib.wait import wait_until


def _as_postgres(cmd, **kw):
    """Runs cmd as the postgres user when we are root (initdb refuses root)."""
    if os.geteuid() == 0:
        cmd = as_user("postgres") + cmd
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


_initdb_dir = None


def _initdb_made():
    """A data directory that initdb made, made on first use in this process: each new
    cluster's is a copy of it (a copy takes a tenth of initdb's time; the tests that stop
    and start a cluster of their own make one each)."""
    global _initdb_dir
    if _initdb_dir is None:
        d = tempfile.mkdtemp(prefix="qrtrack-initdb-")
        os.chmod(d, 0o755)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(d, pw.pw_uid, pw.pw_gid)
        data = os.path.join(d, "data")
        p = _as_postgres([os.path.join(PG_BIN, "initdb"), "-D", data, "-U", "postgres",
                          "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8"])
        if p.returncode != 0:
            raise AssertionError("initdb failed: %s%s" % (p.stdout, p.stderr))
        atexit.register(shutil.rmtree, d, True)
        _initdb_dir = data
    return _initdb_dir


class PgCluster:
    """A throwaway PostgreSQL cluster on a free loopback port, stopped by PID."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="qrtrack-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        self.user = "qrtrack"
        self.proc = None
        self.ndb = 0
        self.made = {}
        self.conns = OrderedDict()      # (database, user): a kept connection (_query)
        self.conns_lock = threading.Lock()  # (a test's threads may read at once)
        p = _as_postgres(["cp", "-a", _initdb_made(), self.data])
        if p.returncode != 0:
            raise AssertionError("copying the initdb directory failed: %s" % p.stderr)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            # Loopback only; a socket directory of its own. Throwaway test data needs
            # no fsync; benchmarks (QRT_PG_DURABLE=1) keep PostgreSQL's durable defaults.
            f.write("listen_addresses = '127.0.0.1'\nport = %d\n"
                    "unix_socket_directories = '%s'\nmax_connections = 300\n"
                    "shared_buffers = 256MB\n" % (self.port, self.dir))
            if os.environ.get("QRT_PG_DURABLE") != "1":
                f.write("fsync = off\nfull_page_writes = off\n")
                # The tests' backends live a test or less, and most of them fire the
                # visits' PL/pgSQL triggers: loaded once in the postmaster, not each time.
                f.write("shared_preload_libraries = 'plpgsql'\n")
            # More settings for a diagnosis, e.g. pg_stat_statements.
            f.write(os.environ.get("QRT_PG_CONF", "").replace(";", "\n") + "\n")
        self.log = open(os.path.join(self.dir, "postgres.log"), "w")
        self.start()
        self.psql("postgres", "CREATE ROLE %s LOGIN CREATEDB" % self.user, user="postgres")

    def start(self):
        """(Re)starts the postmaster on the same data and port."""
        self.forget()
        cmd = [os.path.join(PG_BIN, "postgres"), "-D", self.data]
        if os.geteuid() == 0:
            cmd = as_user("postgres") + cmd
        if os.environ.get("QRT_TEST_PG_CGROUP"):
            # (tools/api_run.sh's group of the shared passes' clusters: the postmaster
            # joins it, and every process it starts is in it)
            cmd = ["sh", "-c", 'echo $$ > "$1/cgroup.procs" || exit 1; shift; exec "$@"',
                   "sh", os.environ["QRT_TEST_PG_CGROUP"]] + cmd
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_until(self._ready, timeout=30, interval=0.1,
                   what=lambda: "postgres to come up:\n" + self.logtext())

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("postgres exited:\n" + self.logtext())
        return subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-h", "127.0.0.1",
                               "-p", str(self.port)], capture_output=True).returncode == 0

    def halt(self):
        """Stops the postmaster (fast shutdown, by its PID), keeping its files."""
        self.forget()
        pid = self.postmaster_pid()
        if self.proc and self.proc.poll() is None:
            os.kill(pid or self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=30)

    def logtext(self):
        with open(os.path.join(self.dir, "postgres.log"), errors="replace") as f:
            return f.read()

    def psql(self, db, query, user=None, then=None):
        """query's rows in db (as user, else the tests' role), as `psql -At -F '|'` prints
        them; then: (another database, a query run there as the tests' role next).

        One statement runs on a connection kept for its database and role (_query): a
        psql costs a process and a backend's start, as much CPU as a test's requests.
        Several statements in one string go to psql, which prints each one's rows."""
        if ";" not in query.strip().rstrip(";"):
            out = self._query(db, user or self.user, query)
            if then:
                out += self.psql(then[0], then[1])
            return out
        cmd = [PSQL, "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1",
               "-h", "127.0.0.1", "-p", str(self.port), "-U", user or self.user,
               "-d", db, "-c", query]
        if then:
            cmd += ["-c", "\\connect %s %s" % (then[0], self.user), "-c", then[1]]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("psql %s: %s" % (query, p.stderr))
        return p.stdout

    @contextlib.contextmanager
    def holding(self, db, statements):
        """A psql session of its own in db (as the tests' role) that has been given
        statements (a lock taken, a transaction left open: the caller waits for what
        they do) and holds what they took until the block ends, when its input closes
        and it exits."""
        holder = subprocess.Popen(
            [PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
             str(self.port), "-U", self.user, "-d", db],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        try:
            holder.stdin.write(statements)
            holder.stdin.flush()
            yield holder
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)

    # Every type's text as PostgreSQL sends it, as psql prints it (t/f, timestamps...).
    RAW = psycopg2.extensions.new_type(tuple(psycopg2.extensions.string_types),
                                       "QRT_RAW", lambda value, cur: value)
    KEEP = 4

    def _query(self, db, user, query):
        with self.conns_lock:
            return self._query_locked(db, user, query)

    def _query_locked(self, db, user, query):
        key = (db, user)
        conn = self.conns.pop(key, None)
        if conn is None or conn.closed:
            try:
                conn = psycopg2.connect(host="127.0.0.1", port=self.port, dbname=db, user=user)
            except psycopg2.Error as e:
                raise AssertionError("psql %s: %s" % (query, e))
            conn.autocommit = True
            psycopg2.extensions.register_type(self.RAW, conn)
        self.conns[key] = conn
        while len(self.conns) > self.KEEP:
            self.conns.popitem(last=False)[1].close()
        try:
            with conn.cursor() as cur:
                cur.execute(query)
                rows = cur.fetchall() if cur.description is not None else []
        except psycopg2.Error as e:
            raise AssertionError("psql %s: %s" % (query, e))
        return "".join("|".join("" if v is None else v for v in row) + "\n" for row in rows)

    def forget(self, db=None):
        """Closes the kept connections (to db only, if given): before a restart, or
        before something needs a database no one is connected to."""
        with self.conns_lock:
            for key in [k for k in self.conns if db is None or k[0] == db]:
                self.conns.pop(key).close()

    def new_database(self, template=None):
        """A fresh database, empty or a copy of template (one that initialized made,
        with a visitor key of its own, as init draws one): (its name, its DBDParams)."""
        self.ndb += 1
        name = "qrt_%d_%d" % (os.getpid(), self.ndb)
        if template is None:
            self.psql("postgres", "CREATE DATABASE %s OWNER %s" % (name, self.user),
                      user="postgres")
        else:
            visitor_key = secrets.token_hex(32)
            self.psql("postgres", "CREATE DATABASE %s TEMPLATE %s OWNER %s"
                      % (name, template, self.user), user="postgres",
                      then=(name, "UPDATE qrt_settings SET value = '%s' "
                                  "WHERE name = 'visitor_key'" % visitor_key))
        return name, self.params(name)

    def initialized(self, admin_tool):
        """The name of a database that admin_tool's `init` made, made on first use: new
        databases copy it rather than run some sixty migrations each (CREATE DATABASE
        ... TEMPLATE; no session ever connects to it but init's)."""
        name = self.made.get(admin_tool)
        if name is None:
            name = "qrt_made_%d_%d" % (os.getpid(), len(self.made))
            self.psql("postgres", "CREATE DATABASE %s OWNER %s" % (name, self.user),
                      user="postgres")
            p = subprocess.run([admin_tool, "--driver", "pgsql", "--params",
                                self.params(name), "init"], capture_output=True, text=True)
            if p.returncode != 0:
                raise AssertionError("qrtrack-admin init failed: " + p.stderr)
            self.made[admin_tool] = name
        return name

    def params(self, name):
        return "host=127.0.0.1 port=%d dbname=%s user=%s" % (self.port, name, self.user)

    def postmaster_pid(self):
        """The postmaster's PID (from its pid file)."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        """Fast shutdown (SIGINT to the postmaster, by its PID), then the files go."""
        self.forget()
        if self.proc and self.proc.poll() is None:
            pid = self.postmaster_pid()
            try:
                os.kill(pid or self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                if pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.log.close()
        remove_detached(self.dir)


def remove_detached(path):
    """Removes path in a process of its own that outlives the caller. A cluster that served
    a pass's hundreds of databases takes longer to delete than pytest-xdist waits for a
    worker to exit at the end of a run (10 s, then it kills it), which left most of the
    files behind in /tmp after every run."""
    subprocess.run(["sh", "-c", 'rm -rf -- "$1" </dev/null >/dev/null 2>&1 &', "sh", path],
                   start_new_session=True, check=True)


_pg = None


def pg_cluster():
    """The session's PostgreSQL cluster, started on first use."""
    global _pg
    if _pg is None:
        _pg = PgCluster()
        atexit.register(_pg.stop)
    return _pg


@contextlib.contextmanager
def own_cluster():
    """A PostgreSQL cluster of the caller's own, to stop and start: the servers started
    meanwhile use it instead of the session's (which stays up for the other tests)."""
    global _pg
    saved = _pg
    _pg = own = PgCluster()
    try:
        yield own
    finally:
        own.stop()
        _pg = saved
