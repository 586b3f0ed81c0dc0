"""Files private to the server: the SQLite database and the -wal and -shm files SQLite
makes beside it are 0640 whoever creates them (the module at start-up, qrtrack-admin),
even under umask 000; `make install`'s state directory and `make run`'s data
directory are 0750. SQLite-only by nature: each test makes its own SQLite server
whichever backend the pass is for."""
import os
import shutil
import stat
import subprocess
import tempfile

import requests

from conftest import BUILD, TOP, Api, Server
from lib.wait import wait_until

FILES = ("", "-wal", "-shm")


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


class umask:
    """The process's umask for a block (the servers and tools started in it inherit it)."""

    def __init__(self, mask):
        self.mask = mask

    def __enter__(self):
        self.old = os.umask(self.mask)

    def __exit__(self, *exc):
        os.umask(self.old)


def scans(srv, n=5):
    with Api(srv, srv.token("acme")) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/p"}).json()
    for i in range(n):
        r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                         headers={"User-Agent": "UA %d" % i}, timeout=10)
        assert r.status_code == 302


def wait_for_files(srv):
    wait_until(lambda: all(os.path.exists(srv.db + s) for s in FILES), timeout=20,
               what=lambda: "the database files: %s" % os.listdir(srv.dir))


def test_a_database_the_module_creates_is_0640_with_its_wal_under_umask_000():
    srv = Server(backend="sqlite")
    try:
        with umask(0):
            srv.start()                       # no `init`: the module creates it
        srv.account("acme")
        scans(srv)
        wait_for_files(srv)
        for s in FILES:
            assert mode(srv.db + s) == 0o640, (s, oct(mode(srv.db + s)))
    finally:
        srv.cleanup()


def test_qrtrack_admin_init_under_umask_000_makes_the_files_0640():
    srv = Server(backend="sqlite")
    try:
        with umask(0):
            srv.admin("init")
            srv.account("acme")
        assert mode(srv.db) == 0o640
        for s in FILES[1:]:
            if os.path.exists(srv.db + s):
                assert mode(srv.db + s) == 0o640, s
        # and the server then writes its WAL with the same mode
        with umask(0):
            srv.start()
        scans(srv)
        wait_for_files(srv)
        for s in FILES:
            assert mode(srv.db + s) == 0o640, (s, oct(mode(srv.db + s)))
    finally:
        srv.cleanup()


def test_a_database_from_before_is_made_private_at_start_up():
    srv = Server(backend="sqlite")
    try:
        srv.admin("init")
        srv.account("acme")
        for s in FILES:
            if os.path.exists(srv.db + s):
                os.chmod(srv.db + s, 0o644)
        os.chmod(srv.db, 0o666)
        srv.start()
        scans(srv)
        wait_for_files(srv)
        for s in FILES:
            assert mode(srv.db + s) == 0o640, (s, oct(mode(srv.db + s)))
        # what it holds is intact: the account still answers
        with Api(srv, srv.token("acme")) as a:
            assert a.get("/account").status_code == 200
    finally:
        srv.cleanup()


def test_make_install_makes_the_state_directory_0750():
    dest = tempfile.mkdtemp(prefix="qrtrack-install-")
    try:
        with umask(0):
            # (make test-asan's build links with its sanitizer flags: QRT_TEST_OPT)
            p = subprocess.run(["make", "-C", TOP, "-s", "install", "DESTDIR=" + dest,
                                "B=" + os.path.relpath(BUILD, TOP)]
                               + (["OPT=" + os.environ["QRT_TEST_OPT"]]
                                  if os.environ.get("QRT_TEST_OPT") else []),
                               capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert mode(os.path.join(dest, "var/lib/qrtrack")) == 0o750
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_make_run_makes_its_data_directory_0750():
    """conf/run.sh up to the server's start (its last line execs apache2: replaced by
    `true` here), under umask 000."""
    data = tempfile.mkdtemp(prefix="qrtrack-run-")
    os.rmdir(data)
    script = os.path.join(TOP, "conf", "run.sh")
    with open(script) as f:
        text = f.read()
    assert text.rstrip().splitlines()[-1].startswith("exec ")
    text = "\n".join(text.rstrip().splitlines()[:-1]) + "\ntrue\n"
    env = dict(os.environ, PATH=os.path.dirname(os.path.realpath(shutil.which("apxs")))
               + os.pathsep + os.environ["PATH"])
    try:
        with umask(0):
            p = subprocess.run(["sh", "-c", text, script, "0", data], capture_output=True,
                               text=True, cwd=TOP, env=env)
        assert p.returncode == 0, p.stderr
        for d in ("", "run", "logs"):
            assert mode(os.path.join(data, d)) == 0o750, d
        db = os.path.join(data, "qrtrack.db")
        assert mode(db) == 0o640
        for s in FILES[1:]:
            if os.path.exists(db + s):
                assert mode(db + s) == 0o640, s
    finally:
        shutil.rmtree(data, ignore_errors=True)
