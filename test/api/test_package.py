"""The Debian package: built with dpkg-buildpackage in a copy of the checkout, its
contents and control fields read from the .deb, then installed for real (as root):
a2enmod, apache2ctl -t and -M, /var/lib/qrtrack, qrtrack-admin reading the Apache
config, the packaged config serving the API, and purge.

Runs in the SQLite pass of `make api` only (the build and the installation once per
`make test`). It never leaves a system apache2 running: a policy-rc.d that denies
service starts is put in place while it installs (unless one is there), and an
apache2 that appears anyway is stopped by the PID in its pid file. What it changes
in /etc/apache2 is undone (mod_dbd is disabled again if it was off before).
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest
import requests

from conftest import TOP, free_port, sqlite_only
from lib.wait import wait_until

PKG = "libapache2-mod-qrtrack"
POLICY = "/usr/sbin/policy-rc.d"
PIDFILE = "/var/run/apache2/apache2.pid"
STATE = "/var/lib/qrtrack"
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]
ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="installs a package: needs root")


def run(cmd, check=True, **kw):
    kw.setdefault("env", ENV)
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode,
                                                       p.stdout[-4000:], p.stderr[-4000:]))
    return p


def source_version():
    with open(os.path.join(TOP, "mod_qrtrack", "qrt_version.h")) as f:
        return re.search(r'#define QRTRACK_VERSION "([^"]+)"', f.read()).group(1)


def test_changelog_carries_the_module_version():
    """debian/changelog's upstream version is qrt_version.h's QRTRACK_VERSION."""
    v = run(["dpkg-parsechangelog", "-l", os.path.join(TOP, "debian", "changelog"),
             "-S", "Version"]).stdout.strip()
    assert v.rsplit("-", 1)[0] == source_version(), (v, source_version())


# -- build -------------------------------------------------------------------

@pytest.fixture(scope="module")
def deb():
    """Builds the package in a copy of the checkout's files (tracked and new, not
    ignored: never build/) and yields the .deb's path."""
    tmp = tempfile.mkdtemp(prefix="qrtrack-deb-")
    src = os.path.join(tmp, "src")
    try:
        files = run(["git", "-C", TOP, "ls-files", "-z", "-c", "-o", "--exclude-standard"]) \
            .stdout.split("\0")
        for f in filter(None, files):
            path = os.path.join(TOP, f)
            if os.path.lexists(path) and not os.path.isdir(path):
                os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
                shutil.copy2(path, os.path.join(src, f), follow_symlinks=False)
        assert not os.path.exists(os.path.join(src, "build", "mod_qrtrack.so"))
        p = run(["dpkg-buildpackage", "-us", "-uc", "-b"], check=False, cwd=src)
        assert p.returncode == 0, "dpkg-buildpackage failed:\n" + (p.stdout + p.stderr)[-6000:]
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        path = os.path.join(tmp, "%s_%s-1_%s.deb" % (PKG, source_version(), arch))
        assert os.path.exists(path), os.listdir(tmp)
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_deb_contents_and_fields(deb):
    listing = run(["dpkg-deb", "-c", deb]).stdout
    entries = {}
    for line in listing.splitlines():
        parts = line.split()
        entries[parts[-1].lstrip(".").rstrip("/") or "/"] = parts[0]
    for path in ("/usr/lib/apache2/modules/mod_qrtrack.so",
                 "/etc/apache2/mods-available/qrtrack.load",
                 "/etc/apache2/mods-available/qrtrack.conf",
                 "/usr/share/doc/%s/examples/qrtrack-site.conf" % PKG,
                 "/usr/share/doc/%s/copyright" % PKG):
        assert entries.get(path, "").startswith("-"), (path, listing)
    assert entries["/usr/sbin/qrtrack-admin"].startswith("-rwxr-xr-x")
    assert entries[STATE].startswith("d")
    # nothing of the developer's build tree, no test or bench files
    assert not [p for p in entries if "/build/" in p or "/test" in p or p.endswith(".o")]

    fields = {k: run(["dpkg-deb", "-f", deb, k]).stdout.strip()
              for k in ("Package", "Version", "Depends", "Suggests", "Section")}
    assert fields["Package"] == PKG
    assert fields["Version"] == source_version() + "-1"
    depends = [d.strip().split()[0] for d in fields["Depends"].split(",")]
    for need in ("apache2-api-20120211", "libaprutil1-dbd-sqlite3", "uap-core",
                 "libjansson4", "libqrencode4", "libc6"):
        assert need in depends, fields["Depends"]
    assert "libaprutil1-dbd-pgsql" in fields["Suggests"]
    assert fields["Section"] == "httpd"

    with tempfile.TemporaryDirectory() as x:
        run(["dpkg-deb", "-x", deb, x])
        with open(os.path.join(x, "etc/apache2/mods-available/qrtrack.load")) as f:
            load = f.read()
        assert re.search(r"^# Depends: dbd$", load, re.M), load
        assert "LoadModule qrtrack_module /usr/lib/apache2/modules/mod_qrtrack.so" in load
        with open(os.path.join(x, "etc/apache2/mods-available/qrtrack.conf")) as f:
            conf = f.read()
        # global settings only: no URL claimed; comments on lines of their own
        assert not re.search(r"^\s*<Location", conf, re.M), conf
        assert re.search(r"^\s*DBDParams /var/lib/qrtrack/qrtrack.db$", conf, re.M)
        for name in ("qrtrack.conf", "qrtrack.load"):
            with open(os.path.join(x, "etc/apache2/mods-available", name)) as f:
                for line in f:
                    s = line.strip()
                    assert s.startswith("#") or "#" not in s, (name, line)
        # the installed qrtrack-admin's defaults
        out = run([os.path.join(x, "usr/sbin/qrtrack-admin"), "--help"]).stdout
        assert "/etc/apache2/apache2.conf" in out and "/var/lib/qrtrack/qrtrack.db" in out


# -- installation ------------------------------------------------------------

def apache_pid():
    """The system apache2's PID when its pid file names a live process."""
    try:
        with open(PIDFILE) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


class System:
    """Installs the package with services held back, and undoes what it did."""

    def __init__(self):
        self.policy = False
        self.apache_before = apache_pid()
        self.dbd_before = run(["a2query", "-m", "dbd"], check=False).returncode == 0

    def hold_services(self):
        if not os.path.lexists(POLICY):
            with open(POLICY, "w") as f:
                f.write("#!/bin/sh\n# mod_qrtrack test_package.py: no service starts\nexit 101\n")
            os.chmod(POLICY, 0o755)
            self.policy = True

    def stop_started_apache(self):
        pid = apache_pid()
        if pid and pid != self.apache_before:
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: apache_pid() != pid, timeout=20, interval=0.1,
                       what="the started apache2 (%d) to stop" % pid)
        return pid

    def installed(self):
        p = run(["dpkg-query", "-W", "-f", "${Status}", PKG], check=False)
        return p.returncode == 0 and "installed" in p.stdout and "not-installed" not in p.stdout

    def restore(self):
        try:
            if self.installed():
                run(APT + ["purge", PKG], check=False)
            if not self.dbd_before and run(["a2query", "-m", "dbd"], check=False).returncode == 0:
                run(["a2dismod", "-q", "dbd"], check=False)
        finally:
            try:
                self.stop_started_apache()
            finally:
                if self.policy:
                    os.unlink(POLICY)


@pytest.fixture(scope="module")
def system(deb):
    if System().installed() or glob.glob(STATE + "/*"):
        pytest.fail("%s is installed, or %s holds files, on this machine already: this test "
                    "installs and purges the package; remove them first" % (PKG, STATE))
    sys_ = System()
    sys_.hold_services()
    try:
        run(APT + ["install", "--no-install-recommends", deb])
        assert sys_.stop_started_apache() in (None, sys_.apache_before), \
            "installing started apache2"
        yield sys_
    finally:
        for f in glob.glob(STATE + "/qrtrack.db*"):
            os.unlink(f)
        sys_.restore()


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_installed_not_enabled_and_state_dir(system):
    assert system.installed()
    assert os.path.exists("/usr/lib/apache2/modules/mod_qrtrack.so")
    assert run(["a2query", "-m", "qrtrack"], check=False).returncode != 0, \
        "the package enabled the module by itself"
    st = os.stat(STATE)
    assert (st.st_uid, st.st_gid) == (33, 33) or \
        (run(["stat", "-c", "%U:%G", STATE]).stdout.strip() == "www-data:www-data")
    assert oct(st.st_mode & 0o777) == "0o750"


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_a2enmod_configtest_and_modules(system):
    p = run(["a2enmod", "qrtrack"])
    assert os.path.islink("/etc/apache2/mods-enabled/qrtrack.load")
    assert os.path.islink("/etc/apache2/mods-enabled/qrtrack.conf")
    assert os.path.islink("/etc/apache2/mods-enabled/dbd.load"), p.stdout
    t = run(["apache2ctl", "-t"], check=False)
    assert t.returncode == 0 and "Syntax OK" in t.stderr + t.stdout, t.stdout + t.stderr
    m = run(["apache2ctl", "-M"])
    assert re.search(r"^\s*qrtrack_module \(shared\)", m.stdout, re.M), m.stdout
    assert re.search(r"^\s*dbd_module \(shared\)", m.stdout, re.M), m.stdout
    assert system.stop_started_apache() in (None, system.apache_before)


def as_www_data(cmd, **kw):
    return run(["runuser", "-u", "www-data", "--"] + cmd, **kw)


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_admin_finds_the_database_in_the_apache_config(system):
    # qrtrack.conf (enabled above) names /var/lib/qrtrack/qrtrack.db
    assert as_www_data(["qrtrack-admin", "init"]).stdout.startswith("schema version")
    assert os.path.exists(STATE + "/qrtrack.db")
    assert as_www_data(["qrtrack-admin", "account", "add", "pkgtest"]).stdout.strip().isdigit()
    assert "pkgtest" in as_www_data(["qrtrack-admin", "account", "list"]).stdout
    # another config (APACHE_CONFDIR, as apache2ctl uses it) is followed instead
    d = tempfile.mkdtemp(prefix="qrtrack-apconf-")
    os.chmod(d, 0o755)
    try:
        os.makedirs(d + "/mods-enabled")
        with open(d + "/apache2.conf", "w") as f:
            f.write("IncludeOptional mods-enabled/*.conf\n")
        with open(d + "/mods-enabled/qrtrack.conf", "w") as f:
            f.write("<IfModule qrtrack_module>\n  DBDriver sqlite3\n  DBDParams \"%s/x.db\"\n"
                    "</IfModule>\n" % d)
        run(["qrtrack-admin", "init"], env=dict(ENV, APACHE_CONFDIR=d))
        assert os.path.exists(d + "/x.db")
        out = run(["qrtrack-admin", "--apache-config", d + "/apache2.conf", "account", "list"])
        assert "pkgtest" not in out.stdout
    finally:
        shutil.rmtree(d)


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_packaged_config_serves_the_example_site(system):
    """The enabled module's files and the example site, in a server of our own on a
    loopback port (the system's apache2 is never started)."""
    example = "/usr/share/doc/%s/examples/qrtrack-site.conf" % PKG
    if not os.path.exists(example):
        # dpkg may be told to skip /usr/share/doc (path-exclude)
        example = os.path.join(TOP, "conf", "qrtrack-site.conf")
    d = tempfile.mkdtemp(prefix="qrtrack-pkgsrv-")
    os.chmod(d, 0o755)
    port = free_port()
    lib = "/usr/lib/apache2/modules"
    with open(d + "/httpd.conf", "w") as f:
        f.write("ServerRoot /etc/apache2\nListen 127.0.0.1:%d\nServerName 127.0.0.1:%d\n"
                "PidFile %s/httpd.pid\nDefaultRuntimeDir %s\nErrorLog %s/error.log\n"
                "User www-data\nGroup www-data\n"
                "LoadModule mpm_event_module %s/mod_mpm_event.so\n"
                "LoadModule authz_core_module %s/mod_authz_core.so\n"
                "Include mods-enabled/dbd.load\nInclude mods-enabled/qrtrack.load\n"
                "Include mods-enabled/qrtrack.conf\nInclude %s\n"
                % (port, port, d, d, d, lib, lib, example))
    proc = subprocess.Popen(["/usr/sbin/apache2", "-f", d + "/httpd.conf", "-DFOREGROUND"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    base = "http://127.0.0.1:%d" % port
    try:
        def up():
            assert proc.poll() is None, open(d + "/error.log").read()
            return requests.get(base + "/api/openapi.json", timeout=2)
        # (its first answer may take more than a request's 2 s on a busy machine)
        r = wait_until(up, timeout=20, interval=0.1,
                       ignore=(requests.ConnectionError, requests.Timeout),
                       what="the packaged server to answer")
        assert r.status_code == 200 and r.json()["openapi"].startswith("3."), r.text[:300]
        token = as_www_data(["qrtrack-admin", "token", "add", "pkgtest"]).stdout.strip()
        r = requests.get(base + "/api/account", headers={"Authorization": "Bearer " + token},
                         timeout=5)
        assert r.status_code == 200 and r.json()["name"] == "pkgtest", r.text
        assert requests.get(base + "/api/account", timeout=5).status_code == 401
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


@sqlite_only("the package is built and installed once per make test")
@root_only
def test_purge_cleans_up(system):
    for f in glob.glob(STATE + "/qrtrack.db*"):
        os.unlink(f)
    # what a PostgreSQL node's parent notes of the database server's addresses (derived:
    # it goes with the package)
    with open(STATE + "/qrtrack-db-address", "w") as f:
        f.write("db.example.com 192.0.2.10\n")
    run(APT + ["purge", PKG])
    assert not system.installed()
    for path in ("/usr/lib/apache2/modules/mod_qrtrack.so", "/usr/sbin/qrtrack-admin",
                 "/etc/apache2/mods-available/qrtrack.load",
                 "/etc/apache2/mods-available/qrtrack.conf",
                 "/etc/apache2/mods-enabled/qrtrack.load", STATE):
        assert not os.path.lexists(path), path
    assert system.stop_started_apache() in (None, system.apache_before)
