"""One throwaway httpd with mod_qrtrack."""
import atexit
import contextlib
import json
import os
import pwd
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import jsonschema
import pytest
import requests

from lib.env import (TOP, BUILD, ADMIN, MODULE, REPORTS, OPENAPI, BACKEND, PG_BIN, CRASH,  # noqa: F401
                     HTTPD, apxs, sanitizer_reports, free_port, sqlite_only)
from lib.env import as_user
from lib.memcached import Memcached
from lib.env import CRASH, sanitizer_reports
from lib.pg import pg_cluster
from lib.wait import wait_until


# The servers of the running test process, and the module's log lines of those cleaned up
# during the current test: a failing test's report shows them (conftest's
# pytest_runtest_makereport), so that a failure seen only in CI says what the servers saw.
LIVE = []
CLEANED = []
MODULE_LINE = re.compile(r"\] \[qrtrack:(?!debug|info|trace)")


def module_lines(srv, keep=40):
    """The last keep lines that the module logged at notice level or above, as text."""
    lines = [l for l in srv.error_log().splitlines() if MODULE_LINE.search(l)]
    return "%s (port %d, %s): %d module lines%s" % (
        srv.dir, srv.port, srv.backend, len(lines),
        "".join("\n  " + l[:400] for l in lines[-keep:]))


def log_digest():
    """What the live servers and those cleaned up during this test logged."""
    return "\n".join(CLEANED + [module_lines(srv) for srv in LIVE])


def child_pids(parent, httpd_only=False, listed=False):
    """The pids of parent's children; with httpd_only, those that run httpd itself (not
    piped loggers). listed: from the kernel's list of the children that parent's main
    thread forked (httpd's parent forks from that thread), not a walk through every
    process's stat; it may miss a child forked while it is read (none is, once the
    server stops)."""
    pids = None
    if listed:
        try:
            with open("/proc/%d/task/%d/children" % (parent, parent)) as f:
                pids = f.read().split()
        except OSError:
            pass
    if pids is None:
        pids = os.listdir("/proc")
    out = []
    for d in pids:
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            if int(stat[stat.rindex(")") + 2:].split()[1]) != parent:
                continue
            if httpd_only and os.path.basename(os.readlink("/proc/%s/exe" % d)) \
                    != os.path.basename(HTTPD):
                continue
        except OSError:
            continue
        out.append(int(d))
    return out


class Server:
    """One throwaway httpd with mod_qrtrack, its data in a fresh directory.

    backend: "sqlite" or "pgsql" (default QRT_TEST_BACKEND); shared_db: another
    Server whose database this one uses too (a second node of one cluster); build:
    another build directory's module and admin tool (bench_scan.py's reference); mpm:
    "event" (conf/httpd.conf.in's), "worker" or "prefork" (two one-request children);
    initialized: a new database is a copy of one that `qrtrack-admin init` made (with a
    visitor key of its own), else it is empty (init() brings either to the schema)."""

    def __init__(self, extra="", loglevel="warn", backend=None, shared_db=None, build=None,
                 mpm="event", initialized=False):
        # Not pytest's tmp_path: it is 0700 and the children run as www-data.
        self.dir = tempfile.mkdtemp(prefix="qrtrack-test-")
        os.chmod(self.dir, 0o755)
        LIVE.append(self)
        for sub in ("run", "logs", "cores"):
            os.makedirs(os.path.join(self.dir, sub))
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.api_base = self.base + "/api"
        self.backend = shared_db.backend if shared_db else (backend or BACKEND)
        self.copied = False
        self.initialized = initialized
        self.module = os.path.join(build, "mod_qrtrack.so") if build else MODULE
        self.admin_tool = os.path.join(build, "qrtrack-admin") if build else ADMIN
        self.as_user = []
        user = ""
        if os.geteuid() == 0:
            pw = pwd.getpwnam("www-data")
            for root, dirs, files in os.walk(self.dir):
                for name in [root] + [os.path.join(root, d) for d in dirs]:
                    os.chown(name, pw.pw_uid, pw.pw_gid)
            user = "User www-data\nGroup www-data"
            # The admin tool writes as the server's user, so every database
            # file (WAL included) stays the children's.
            self.as_user = as_user("www-data")
        if shared_db:
            self.driver, self.db, self.dbname = shared_db.driver, shared_db.db, shared_db.dbname
        elif self.backend == "pgsql":
            self.driver = "pgsql"
            self.copied = initialized
            self.dbname, self.db = pg_cluster().new_database(
                template=pg_cluster().initialized(self.admin_tool) if initialized else None)
        else:
            self.driver, self.dbname = "sqlite3", None
            self.db = os.path.join(self.dir, "qrtrack.db")
        with open(os.path.join(TOP, "conf", "httpd.conf.in")) as f:
            conf = f.read()
        conf = (conf.replace("@DATA@", self.dir).replace("@PORT@", str(self.port))
                .replace("@LIBEXEC@", apxs("LIBEXECDIR")).replace("@MODULE@", self.module)
                .replace("@LOGLEVEL@", loglevel).replace("@USER@", user)
                .replace("@DBDRIVER@", self.driver).replace("@DBDPARAMS@", self.db)
                .replace("@EXTRA@", extra))
        # A child that crashes leaves its core here (cleanup prints its backtrace).
        conf += '\nCoreDumpDirectory "%s"\n' % os.path.join(self.dir, "cores")
        conf = mpm_conf(conf, mpm)
        self.mpm = mpm
        self.conf = os.path.join(self.dir, "httpd.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.proc = None
        self.tokens = []
        self.unused = {}        # account: tokens made, not yet handed out (unused_token)

    # -- administration ---------------------------------------------------
    def admin(self, *args, check=True, input=None):
        """qrtrack-admin args (input: text on its standard input)."""
        cmd = self.as_user + [self.admin_tool, "--driver", self.driver, "--params", self.db] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, input=input)
        if check and p.returncode != 0:
            raise AssertionError("qrtrack-admin %s failed: %s" % (args, p.stderr))
        return p

    def init(self):
        """The database brought to this build's schema: `qrtrack-admin init`, unless it is
        a copy of a database that init made."""
        if self.copied:
            return
        if self.initialized and self.driver == "sqlite3" and not os.path.exists(self.db):
            sqlite_copy(sqlite_initialized(self.admin_tool), self.db)
            return
        self.admin("init")

    def account(self, name, plan="professional"):
        return int(self.admin("account", "add", name, "--plan", plan).stdout.strip())

    def token(self, account="acme", *options):
        """A new token of account; options as `token add` takes them (--scope read)."""
        tok = self.admin("token", "add", account, *options).stdout.strip()
        self.tokens.append(tok)
        return tok

    def unused_token(self, account="acme"):
        """A write token of account that no request has used yet, from a batch that one
        `token add --count` made (a run of qrtrack-admin a token costs as much as a test
        of a few requests): not necessarily the newest of `token list`."""
        pool = self.unused.setdefault(account, [])
        if not pool:
            made = self.admin("token", "add", account, "--count", "16").stdout.split()
            assert len(made) == 16 and len(set(made)) == 16, made
            self.tokens += made
            pool += made
        return pool.pop(0)

    # -- life cycle ----------------------------------------------------------
    def start(self, env=None, timeout=20):
        """env: more environment for httpd (its children inherit it); timeout: the seconds
        it may take to answer (a start that migrates a big database first takes longer:
        httpd answers once the migration is done). The port free_port()
        found may be taken before httpd binds it (by any process's outgoing connection:
        free ports are drawn from the same range): httpd is then started again on another
        (twice at most)."""
        for attempt in range(3):
            self.proc = subprocess.Popen([HTTPD,
                                          "-f", self.conf, "-DFOREGROUND"],
                                         env=dict(os.environ, **env) if env else None,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         # prefork signals its whole process group when
                                         # it stops: not the tests'
                                         start_new_session=self.mpm == "prefork",
                                         preexec_fn=allow_cores)
            try:
                wait_until(self._up, timeout=timeout,
                           ignore=(requests.ConnectionError, requests.Timeout),
                           what=lambda: "httpd to come up:\n" + self.error_log())
                return self
            except AssertionError as e:
                taken = "could not bind to address 127.0.0.1:%d" % self.port in str(e)
                if attempt == 2 or not taken or self.proc.poll() is None:
                    # (an httpd too slow to answer was left running: nobody holds the
                    # Server whose start raised, so nothing else would stop it)
                    self._halt_started()
                    raise
                self._move_to(free_port())
        return self

    def _kill(self):
        """SIGKILL to httpd's parent and to its children, by their PIDs: a child whose
        parent is killed alone never notices (httpd's children take no signal and the
        parent's end of their pipe stays open in each of them), and runs on for good."""
        kids = child_pids(self.proc.pid)
        self.proc.kill()
        self.proc.wait(timeout=10)
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _halt_started(self):
        """Stops the httpd start() ran, by its PID: SIGTERM, then SIGKILL (to its
        children too) after 10 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()

    def _move_to(self, port):
        """The server's own address moved to port (its configuration and URLs)."""
        with open(self.conf) as f:
            conf = f.read()
        with open(self.conf, "w") as f:
            f.write(conf.replace("127.0.0.1:%d" % self.port, "127.0.0.1:%d" % port))
        self.port = port
        self.base = "http://127.0.0.1:%d" % port
        self.api_base = self.base + "/api"

    def _up(self):
        if self.proc.poll() is not None:
            raise AssertionError("httpd exited: %s\n%s" % (
                self.proc.stderr.read().decode(), self.error_log()))
        requests.get(self.base + "/api/account", timeout=5)
        return True

    def stop(self):
        """graceful-stop (SIGWINCH), as Debian's apache2.service stops the server:
        children finish their requests, then exit (an immediate stop is tested in
        test_faults.py)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGWINCH)
            try:
                # httpd's parent looks for exited children once a second: once they
                # have all finished, SIGTERM ends its wait (the stop stays graceful).
                deadline = time.time() + 30
                while self.proc.poll() is None and time.time() < deadline:
                    if not child_pids(self.proc.pid, httpd_only=True, listed=True):
                        self.proc.send_signal(signal.SIGTERM)
                        break
                    time.sleep(0.02)
                self.proc.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self._kill()

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "logs", "error.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def access_log(self):
        try:
            with open(os.path.join(self.dir, "logs", "access.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def crash_lines(self):
        return [l for l in self.error_log().splitlines() if CRASH.search(l)] \
            + sanitizer_reports()

    def backtraces(self):
        """The crashing thread's backtrace from each core a child left (gdb), as text."""
        out = []
        cores = os.path.join(self.dir, "cores")
        for name in sorted(os.listdir(cores)) if os.path.isdir(cores) else []:
            try:
                p = subprocess.run(["gdb", "-batch", "-ex", "bt 30", HTTPD,
                                    os.path.join(cores, name)],
                                   capture_output=True, text=True, timeout=120)
                out.append("%s:\n%s" % (name, "\n".join(
                    l for l in p.stdout.splitlines() if l.startswith("#"))))
            except (OSError, subprocess.TimeoutExpired) as e:
                out.append("%s: no backtrace (%s)" % (name, e))
        return "\n".join(out)

    def cleanup(self):
        """Stops the server and removes its files; fails on any crash line."""
        self.stop()
        crashes = self.crash_lines()
        traces = self.backtraces() if crashes else ""
        if self in LIVE:
            LIVE.remove(self)
            CLEANED.append(module_lines(self))
        shutil.rmtree(self.dir, ignore_errors=True)
        assert not crashes, "crash lines in the error log:\n" + "\n".join(crashes) \
            + ("\n" + traces if traces else "")

    def sql(self, query):
        """Reads the database directly (tests only: checks what was stored);
        rows as lines, columns joined by '|', as sqlite3 prints them."""
        if self.backend == "pgsql":
            return pg_cluster().psql(self.dbname, query)
        p = subprocess.run(self.as_user + ["sqlite3", "-cmd", ".timeout 10000",
                                           self.db, query],
                           capture_output=True, text=True, check=True)
        return p.stdout


def allow_cores():
    """In the server's process before it runs: cores as large as the hard limit allows."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def mpm_conf(conf, mpm):
    """conf (made from conf/httpd.conf.in) with the MPM mpm loaded instead of event's."""
    if mpm == "event":
        return conf
    assert mpm in ("worker", "prefork"), mpm
    conf = conf.replace("mpm_event_module", "mpm_%s_module" % mpm).replace(
        "mod_mpm_event.so", "mod_mpm_%s.so" % mpm)
    if mpm == "prefork":
        # prefork knows no thread directives: two children of one request each.
        conf = re.sub(r"(?m)^(ThreadsPerChild|MinSpareThreads|MaxSpareThreads)\b.*\n", "", conf)
        conf = re.sub(r"(?m)^MaxRequestWorkers .*$",
                      "MaxRequestWorkers 2\nMinSpareServers 1\nMaxSpareServers 2", conf)
    return conf


def configtest(extra):
    """apache2 -t on a generated config with extra lines: (exit status, output)."""
    srv = Server(extra=extra)
    try:
        p = subprocess.run([HTTPD, "-t", "-f", srv.conf],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr
    finally:
        srv.cleanup()


_sqlite_made = {}


def sqlite_initialized(admin_tool):
    """A SQLite database that admin_tool's `init` made, made on first use in this process:
    new servers' databases copy it rather than run some sixty migrations each."""
    path = _sqlite_made.get(admin_tool)
    if path is None:
        d = tempfile.mkdtemp(prefix="qrtrack-made-")
        atexit.register(shutil.rmtree, d, True)
        path = os.path.join(d, "qrtrack.db")
        p = subprocess.run([admin_tool, "--driver", "sqlite3", "--params", path, "init"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("qrtrack-admin init failed: " + p.stderr)
        for suffix in ("-wal", "-shm", "-journal"):
            assert not os.path.exists(path + suffix), suffix
        _sqlite_made[admin_tool] = path
    return path


def sqlite_copy(made, path):
    """A copy of made at path with a visitor key of its own (init draws one), the
    server's user's, mode 0640 as the module and init make it."""
    import sqlite3
    shutil.copyfile(made, path)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("UPDATE qrt_settings SET value = ? WHERE name = 'visitor_key'",
                    (secrets.token_hex(32),))
    finally:
        con.close()
    for suffix in ("-wal", "-shm", "-journal"):
        assert not os.path.exists(path + suffix), suffix
    os.chmod(path, 0o640)
    if os.geteuid() == 0:
        pw = pwd.getpwnam("www-data")
        os.chown(path, pw.pw_uid, pw.pw_gid)


def start_server(extra="", accounts=(), **kw):
    srv = Server(extra=extra, initialized=True, **kw)
    srv.init()
    for name, plan in accounts:
        srv.account(name, plan)
    return srv.start()


def started(extra="", account="acme", **kw):
    """A new server with account `account` (professional) and a token of it, started:
    (server, token). A server that fails to start is cleaned up before the error goes on."""
    srv = Server(extra=extra, initialized=True, **kw)
    try:
        srv.init()
        srv.account(account)
        tok = srv.token(account)
        srv.start()
    except BaseException:
        srv.cleanup()
        raise
    return srv, tok


def qrtrack_status(srv):
    """The module's lines of mod_status (/server-status?auto, when the server's config
    has it): {"QRTrackSpoolVisits": "0", ...}."""
    r = requests.get(srv.base + "/server-status?auto", timeout=10)
    return dict(l.split(": ", 1) for l in r.text.splitlines() if l.startswith("QRTrack"))


def snapshot_codes(srv):
    """The codes in the node's snapshot (qrtrack-snapshot.db beside its state), which
    scans answer from while the database cannot be reached."""
    p = subprocess.run(["sqlite3", os.path.join(srv.dir, "qrtrack-snapshot.db"),
                        "SELECT code FROM codes"], capture_output=True, text=True)
    return set(p.stdout.split())


@contextlib.contextmanager
def two_nodes():
    """Two nodes on one PostgreSQL database, rate limits counted in one memcached, with
    the account acme: (a, b)."""
    mc = Memcached()
    conf = "QRTrackRateLimitStore memcache %s\n" % mc.addr
    a = b = None
    try:
        a = Server(extra=conf)
        a.admin("init")
        a.account("acme")
        a.start()
        b = Server(extra=conf, shared_db=a)
        b.start()
        yield a, b
    finally:
        for srv in (b, a):
            if srv:
                srv.cleanup()
        mc.stop()
