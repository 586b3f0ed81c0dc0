"""The configuration across a graceful restart: a directive taken out of the config
goes back to its default, in the server-wide settings and per virtual host alike
(mod_qrtrack_config.c makes them afresh from their defaults each time the
configuration is read)."""
import subprocess

import requests

from conftest import apxs, started
from lib.env import HTTPD, free_port
from lib.wait import wait_until

STATUS = ("LoadModule status_module %s/mod_status.so\n<Location /server-status>\n"
          "    SetHandler server-status\n</Location>\n")

# Two name-based hosts on the server's address: a.example sets its own limit,
# b.example sets none and takes the main server's.
VHOSTS = """
<VirtualHost *:*>
    ServerName a.example
    QRTrackRateLimit 9
</VirtualHost>
<VirtualHost *:*>
    ServerName b.example
</VirtualHost>
"""

SET = """
QRTrackRateLimit 50
QRTrackRateLimitSlots 64
QRTrackScanBudget 5
QRTrackVisitRetention 30
QRTrackRateLimitStore memcache 127.0.0.1:%d
<Location /scans>
    SetHandler qrtrack-scan
</Location>
"""


def status(srv):
    r = requests.get(srv.base + "/server-status?auto", timeout=10)
    return dict(l.split(": ", 1) for l in r.text.splitlines() if l.startswith("QRTrack"))


def limit(srv, tok, host):
    r = requests.get(srv.api_base + "/account", timeout=10,
                     headers={"Authorization": "Bearer " + tok, "Host": host})
    return r.headers.get("X-RateLimit-Limit")


def scan_url(srv, tok):
    r = requests.get(srv.api_base + "/tracker", timeout=10,
                     headers={"Authorization": "Bearer " + tok, "Host": "b.example"})
    return r.json()["data"][0]["scan_url"] if r.status_code == 200 else None


def graceful(srv):
    subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True,
                   capture_output=True)


def settings(srv, tok):
    """What the server shows of the directives under test, from a fresh child."""
    st = status(srv)
    return (st.get("QRTrackScanBudget"), st.get("QRTrackVisitRetention"),
            st.get("QRTrackRateLimitSlots"), st.get("QRTrackRateLimitStore"),
            limit(srv, tok, "a.example"), limit(srv, tok, "b.example"),
            "/scans/" in (scan_url(srv, tok) or ""))


def test_a_graceful_restart_without_the_directives_returns_to_the_defaults():
    base = STATUS % apxs("LIBEXECDIR") + VHOSTS
    with_them = base + SET % free_port()
    srv, tok = started(extra=with_them)
    try:
        r = requests.post(srv.api_base + "/tracker", timeout=10,
                          headers={"Authorization": "Bearer " + tok},
                          json={"redirect_url": "https://example.com/"})
        assert r.status_code == 200, r.text
        assert settings(srv, tok) == ("5", "30", "64", "memcache", "9", "50", True)

        with open(srv.conf) as f:
            conf = f.read()
        assert with_them in conf
        with open(srv.conf, "w") as f:
            f.write(conf.replace(with_them, base))
        graceful(srv)
        defaults = ("0", "0", "8192", "shm", "9", "120", False)
        wait_until(lambda: settings(srv, tok) == defaults, timeout=30, interval=0.5,
                   what="the defaults after the graceful restart")

        # and back: the directives count again once they are there again
        with open(srv.conf, "w") as f:
            f.write(conf)
        graceful(srv)
        wait_until(lambda: settings(srv, tok)[:3] == ("5", "30", "64"), timeout=30, interval=0.5,
                   what="the directives after a second graceful restart")
    finally:
        srv.cleanup()


def scanned(srv, code):
    """A scan of code answered 302 (False while the restart holds the connections)."""
    try:
        return requests.get(srv.base + "/q/" + code, timeout=10,
                            allow_redirects=False).status_code == 302
    except requests.RequestException:
        return False


def test_a_restart_that_loads_the_module_elsewhere_keeps_the_server():
    """A restart with modules loaded before this one puts it elsewhere in memory, while
    SQLite stays loaded with the database driver: SQLite must hold nothing of the
    module's first load (its log hook, its VFS). Before, the hook set at the first load
    was called at the restart (SQLite logs the settings it refuses once started) in
    code that was gone: the parent died, or did whatever lay there now. The server
    answers scans and the API after the restart, and after one more back to the first
    order, with no crash line."""
    srv, tok = started()
    try:
        auth = {"Authorization": "Bearer " + tok}
        r = requests.post(srv.api_base + "/tracker", timeout=10, headers=auth,
                          json={"redirect_url": "https://example.com/moved"})
        assert r.status_code == 200, r.text
        code = r.json()["code"]
        with open(srv.conf) as f:
            conf = f.read()
        mods = "".join("LoadModule %s_module %s/mod_%s.so\n" % (m, apxs("LIBEXECDIR"), m)
                       for m in ("headers", "env", "status", "setenvif", "expires"))
        first = "LoadModule qrtrack_module"
        assert conf.count(first) == 1
        for text in (conf.replace(first, mods + first), conf):
            with open(srv.conf, "w") as f:
                f.write(text)
            graceful(srv)
            wait_until(lambda: scanned(srv, code), timeout=30, interval=0.5,
                       what=lambda: "scans after the restart:\n" + srv.error_log()[-3000:])
            assert srv.proc.poll() is None, "the parent exited:\n" + srv.error_log()[-3000:]
            r = requests.get(srv.api_base + "/tracker", timeout=10, headers=auth)
            assert r.status_code == 200, r.text
            assert not srv.crash_lines(), srv.crash_lines()
    finally:
        srv.cleanup()
