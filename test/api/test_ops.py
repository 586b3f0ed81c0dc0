"""Operations the way Debian admins run Apache: name-based virtual hosts, mod_status,
per-module log levels, URLs that no Host header can change, and start-up that fails
loudly when the database cannot work (CONTRACT section 6)."""
import base64
from concurrent.futures import ThreadPoolExecutor
import os
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import Api, HTTPD, MODULE, Server, TOP, apxs, configtest, free_port, start_server
from lib.qr import IPHONE, decode_qr
from lib.wait import wait_until

VHOSTS = """
LoadModule status_module {libexec}/mod_status.so
ExtendedStatus On
LogLevel warn qrtrack:debug
<VirtualHost *:*>
    ServerName a.example
    <Location /server-status>
        SetHandler server-status
    </Location>
</VirtualHost>
<VirtualHost *:*>
    ServerName b.example
</VirtualHost>
"""


def without_public_url(srv):
    """The generated config minus QRTrackPublicURL (the shipped default)."""
    with open(srv.conf) as f:
        conf = f.read()
    conf = re.sub(r"^QRTrackPublicURL .*$", "", conf, flags=re.M)
    with open(srv.conf, "w") as f:
        f.write(conf)


def graceful(srv):
    subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"],
                   check=True, capture_output=True)
    # The parent logs this once the new generation is configured.
    wait_until(lambda: srv.error_log().count("resuming normal operations") >= 2, timeout=20,
               interval=0.1, what=lambda: "the new generation: " + srv.error_log())


@pytest.fixture(scope="module")
def debian():
    """Two name-based virtual hosts, mod_status, qrtrack:debug, no QRTrackPublicURL."""
    srv = Server(extra=VHOSTS.format(libexec=apxs("LIBEXECDIR")))
    without_public_url(srv)
    srv.admin("init")
    srv.account("acme", "professional")
    srv.start()
    yield srv
    srv.cleanup()


def host(srv, name):
    return {"Host": "%s:%d" % (name, srv.port)}


def test_statements_prepared_once_whatever_the_virtual_hosts(debian):
    """mod_dbd shares the main server's statements with virtual hosts that have no
    DBD directives of their own: preparing them per host logged AH02653 for each."""
    graceful(debian)
    log = debian.error_log()
    assert "AH02653" not in log
    assert not [l for l in log.splitlines() if ":warn]" in l or ":error]" in l], log
    # The version is announced once per configuration.
    assert re.search(r"\[qrtrack:notice\] .*QRT00065: mod_qrtrack/\d+\.\d+\.\d+ configured", log)
    # Every virtual host serves the API with those statements.
    tok = debian.token("acme")
    for name in ("a.example", "b.example"):
        with Api(debian, tok) as a:
            r = a.get("/tracker", headers=host(debian, name))
            assert r.status_code == 200, r.text


def test_urls_come_from_the_virtual_host_never_from_the_host_header(debian):
    tok = debian.token("acme")
    with Api(debian, tok) as a:
        # A Host header nobody configured lands on the first virtual host (a.example).
        r = a.post("/tracker/qrcode", json={"redirect_url": "https://example.com/x"},
                   headers={"Host": "evil.example:666"})
        assert r.status_code == 200, r.text
        t, qr = r.json()["tracker"], r.json()["qr"]
        base = "http://a.example:%d" % debian.port
        assert t["scan_url"] == "%s/q/%s" % (base, t["code"])
        assert t["short_url"] == "%s/l/%s" % (base, t["code"])
        assert decode_qr(base64.b64decode(qr["data"])) == t["scan_url"]
        # Through b.example: b.example's name, whatever the Host header's port says.
        r = a.get("/tracker/show/%d" % t["tracker_id"], headers={"Host": "b.example:666"})
        assert r.status_code == 200
        assert r.json()["scan_url"] == "http://b.example:%d/q/%s" % (debian.port, t["code"])
        # Plain QR images of a URL carry what was asked, not a server URL: no Host there.
        r = a.get("/tracker", headers={"Host": "evil.example"})
        assert "evil" not in r.text


PATHS = """
<VirtualHost *:*>
    ServerName a.example
    QRTrackPublicURL https://a.example
</VirtualHost>
<VirtualHost *:*>
    ServerName b.example
    QRTrackPublicURL https://b.example
    <Location /go>
        SetHandler qrtrack-scan
    </Location>
    <Location /tap>
        SetHandler qrtrack-click
    </Location>
</VirtualHost>
"""


def test_each_virtual_host_prints_its_own_scan_and_click_paths():
    """A <Location> of qrtrack-scan or qrtrack-click inside a <VirtualHost> is that host's:
    its codes' URLs and images carry it, and another host's keep the main server's (/q
    and /l), which it serves. Before, the last such <Location> of the configuration went
    into every host's URLs, and a.example's printed codes answered 404."""
    srv = start_server(extra=PATHS, accounts=[("acme", "professional")])
    try:
        tok = srv.token("acme")
        with Api(srv, tok) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/v"},
                       headers={"Host": "a.example"}).json()
            want = {"a.example": ("/q/", "/l/"), "b.example": ("/go/", "/tap/")}
            for name, (scan, click) in want.items():
                r = a.get("/tracker/show/%d" % t["tracker_id"], headers={"Host": name})
                assert r.json()["scan_url"] == "https://%s%s%s" % (name, scan, t["code"])
                assert r.json()["short_url"] == "https://%s%s%s" % (name, click, t["code"])
                r = a.get("/tracker/%d/qrcode" % t["tracker_id"], params={"size": 300},
                          headers={"Host": name})
                assert decode_qr(r.content) == "https://%s%s%s" % (name, scan, t["code"])
                for path in (scan, click):
                    r = requests.get(srv.base + path + t["code"], headers={"Host": name,
                                     "User-Agent": IPHONE}, allow_redirects=False, timeout=10)
                    assert r.status_code == 302 and r.headers["Location"] == \
                        "https://example.com/v", (name, path, r.status_code)
    finally:
        srv.cleanup()


def test_a_public_url_that_is_no_base_or_too_long_fails_configtest():
    for value in ("https://qr.example.com/?utm=x", "https://qr.example.com/#top",
                  "https://user:secret@qr.example.com", "https://qr.example.com/" + "a" * 600):
        rc, out = configtest("QRTrackPublicURL %s\n" % value)
        assert rc != 0 and "QRTrackPublicURL" in out, (value, out)
    # (a long base with a long <Location>: no code's URL would fit a QR code at ecc H)
    rc, out = configtest("QRTrackPublicURL https://qr.example.com/%s\n<Location /%s>\n"
                         "SetHandler qrtrack-scan\n</Location>\n" % ("a" * 480, "b" * 800))
    assert rc != 0 and "QRT00023" in out, out
    rc, out = configtest("QRTrackPublicURL https://qr.example.com/base/\n")
    assert rc == 0, out


def test_module_lines_carry_its_name_at_debug(debian):
    tok = debian.token("acme")
    with Api(debian, tok) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/d"}).json()
        assert a.get("/tracker/show/0").status_code == 404
    r = requests.get("%s/q/%s" % (debian.base, t["code"]), allow_redirects=False,
                     headers={"User-Agent": IPHONE}, timeout=10)
    assert r.status_code == 302

    def logged():
        log = debian.error_log()
        assert re.search(r"\[qrtrack:debug\] .*QRT00061: POST /tracker: route /tracker", log)
        assert re.search(r"\[qrtrack:debug\] .*QRT00062: GET /tracker/show/0: 404", log)
        assert re.search(r"\[qrtrack:debug\] .*QRT00063: code %s is tracker %d"
                         % (t["code"], t["tracker_id"]), log)
        assert re.search(r"\[qrtrack:debug\] .*QRT00064: committed \d+ visits", log)
        return log
    log = wait_until(logged, timeout=10, ignore=(AssertionError,), what="the debug lines")
    # Never a line without the module's name, and never the token.
    assert "[:" not in log
    assert tok not in log and tok[:20] not in log


def test_server_status_has_the_module_section(debian):
    def auto():
        r = requests.get(debian.base + "/server-status?auto", headers=host(debian, "a.example"),
                         timeout=10)
        assert r.status_code == 200
        return dict(l.split(": ", 1) for l in r.text.splitlines()
                    if l.startswith("QRTrack"))

    tok = debian.token("acme")
    with Api(debian, tok) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/s"}).json()
    before = auto()
    for key in ("QRTrackVersion", "QRTrackQueueCapacity", "QRTrackQueueDepth",
                "QRTrackCommitter", "QRTrackVisitsCommitted", "QRTrackCommits",
                "QRTrackLastBatch", "QRTrackQueueFull", "QRTrackRateLimitSlots",
                "QRTrackRateLimitSlotsInUse", "QRTrackRateLimited"):
        assert key in before, before
    # SQLite's WAL, copied back by each child's thread.
    assert ("QRTrackWALFrames" in before) == (debian.backend == "sqlite")
    assert int(before["QRTrackQueueCapacity"]) > 0
    assert int(before["QRTrackRateLimitSlotsInUse"]) >= 1      # this token's window
    for _ in range(5):
        r = requests.get("%s/q/%s" % (debian.base, t["code"]), allow_redirects=False,
                         headers={"User-Agent": IPHONE}, timeout=10)
        assert r.status_code == 302
    after = auto()
    assert int(after["QRTrackVisitsCommitted"]) - int(before["QRTrackVisitsCommitted"]) == 5
    assert int(after["QRTrackCommits"]) > int(before["QRTrackCommits"])
    assert 1 <= int(after["QRTrackLastBatch"]) <= 5
    assert int(after["QRTrackQueueDepth"]) == 0
    # The committer that took them is one of the children.
    assert int(after["QRTrackCommitter"]) > 0
    html = requests.get(debian.base + "/server-status", headers=host(debian, "a.example"),
                        timeout=10).text
    assert "<h2>mod_qrtrack</h2>" in html and "Visits committed" in html


# -- loud failures at start-up --------------------------------------------------------

def edit_conf(srv, fn):
    with open(srv.conf) as f:
        conf = f.read()
    with open(srv.conf, "w") as f:
        f.write(fn(conf))


def fails_to_start(srv):
    """Starts srv expecting it to stop at start-up: the error log."""
    with pytest.raises(AssertionError) as e:
        srv.start()
    return str(e.value) + srv.error_log()


def sqlite_server():
    return Server(backend="sqlite")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start httpd as www-data")
def test_a_database_directory_the_user_cannot_write_stops_start_up():
    srv = sqlite_server()
    try:
        dbdir = os.path.join(srv.dir, "rootonly")
        os.makedirs(dbdir)
        os.chmod(dbdir, 0o755)          # root's, and www-data cannot create the WAL
        db = os.path.join(dbdir, "qrtrack.db")
        edit_conf(srv, lambda c: c.replace(srv.db, db))
        out = fails_to_start(srv)
        assert "QRT00060" in out and dbdir in out and "not writable" in out, out
        assert not os.path.exists(db)   # nothing created as root on the way
        # The same directory given to www-data: it starts.
        shutil.chown(dbdir, "www-data", "www-data")
        srv.start()
        assert requests.get(srv.base + "/api/account", timeout=10).status_code == 401
    finally:
        srv.cleanup()


def test_a_missing_database_directory_stops_start_up():
    srv = sqlite_server()
    try:
        db = os.path.join(srv.dir, "nowhere", "qrtrack.db")
        edit_conf(srv, lambda c: c.replace(srv.db, db))
        out = fails_to_start(srv)
        assert "QRT00060" in out and "does not exist" in out and os.path.dirname(db) in out, out
    finally:
        srv.cleanup()


def test_a_database_that_does_not_match_the_build_stops_start_up():
    """Every statement of the build is prepared against the database as httpd starts:
    one that does not prepare (a column dropped by hand, say) stops the start, naming
    the statement's error, rather than the first request that needs it."""
    srv = Server(initialized=True)
    try:
        srv.init()
        srv.sql("ALTER TABLE tokens DROP COLUMN expires_at")
        out = fails_to_start(srv)
        assert "QRT00125: the database does not match this build" in out, out
        assert "expires_at" in out, out
    finally:
        srv.cleanup()


def test_without_mod_dbd_the_log_says_to_load_it():
    srv = Server()
    try:
        def strip(conf):
            conf = re.sub(r"^LoadModule dbd_module .*$", "", conf, flags=re.M)
            return re.sub(r"^(DBDriver|DBDParams) .*$", "", conf, flags=re.M)
        edit_conf(srv, strip)
        out = fails_to_start(srv)
        assert "QRT00010" in out and "a2enmod dbd" in out, out
        assert "undefined symbol" not in out
    finally:
        srv.cleanup()


def test_another_database_in_a_virtual_host_is_refused_with_a_message():
    srv = Server(extra="<VirtualHost *:*>\n    ServerName a.example\n"
                       "    DBDParams \"/tmp/elsewhere.db\"\n</VirtualHost>\n")
    try:
        srv.admin("init")
        out = fails_to_start(srv)
        assert "QRT00060" in out and "DBDParams in <VirtualHost *:*> (" in out, out
        assert "outside <VirtualHost>" in out
    finally:
        srv.cleanup()


def test_the_same_database_repeated_in_a_virtual_host_is_fine():
    """A virtual host with DBD directives of its own gets its own mod_dbd
    configuration: the statements are prepared there too (once)."""
    srv = Server(extra="<VirtualHost *:*>\n    ServerName a.example\n    DBDMax 4\n"
                       "</VirtualHost>\n")
    try:
        srv.admin("init")
        srv.account("acme", "professional")
        srv.start()
        tok = srv.token("acme")
        with Api(srv, tok) as a:
            assert a.get("/tracker", headers={"Host": "a.example"}).status_code == 200
            assert a.get("/tracker").status_code == 200
        assert "AH02653" not in srv.error_log()
    finally:
        srv.cleanup()


def test_the_readme_config_block_passes_configtest(tmp_path):
    """The README's configuration, pasted as it is (paths aside), is valid."""
    with open(os.path.join(TOP, "README.md")) as f:
        block = re.search(r"```apache\n(LoadModule dbd_module.*?)```", f.read(), re.S).group(1)
    # (the database's directory, which configtest checks the server's User can write)
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o777)
    block = (block.replace("modules/mod_dbd.so", os.path.join(apxs("LIBEXECDIR"), "mod_dbd.so"))
             .replace("/path/to/build/mod_qrtrack.so", MODULE)
             .replace("/var/lib/qrtrack/", "%s/" % data))
    assert str(data) in block
    conf = tmp_path / "httpd.conf"
    conf.write_text("ServerRoot %s\nListen 127.0.0.1:%d\nServerName localhost\n"
                    "ErrorLog %s/error.log\nLoadModule mpm_event_module %s/mod_mpm_event.so\n"
                    "LoadModule authz_core_module %s/mod_authz_core.so\n%s"
                    % (tmp_path, free_port(), tmp_path, apxs("LIBEXECDIR"),
                       apxs("LIBEXECDIR"), block))
    p = subprocess.run([HTTPD, "-t", "-f", str(conf)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Syntax OK" in p.stdout + p.stderr


def test_graceful_restarts_under_scans_prepare_every_connection():
    """New children's connections prepare their statements after SQLite's busy
    timeout is set: no AH00632 'failed to prepare' / AH00636 'child init failed'
    while other children commit scans, and every scan is answered."""
    import concurrent.futures
    import threading
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/g"}).json()
        stop = threading.Event()
        codes = []          # list.append is atomic: the threads share it

        def load():
            # A connection each: a graceful restart closes idle kept-alive ones.
            while not stop.is_set():
                codes.append(requests.get("%s/q/%s" % (srv.base, t["code"]),
                                          allow_redirects=False, headers={"User-Agent": IPHONE},
                                          timeout=30).status_code)
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
            futs = [ex.submit(load) for _ in range(6)]
            for i in range(6):
                # The restarts' rhythm under the load is the scenario, not a wait.
                time.sleep(0.4)
                subprocess.run([HTTPD, "-f", srv.conf,
                                "-k", "graceful"], check=True, capture_output=True)
            since = len(codes)
            try:
                wait_until(lambda: len(codes) >= since + 20, timeout=30,
                           what="scans answered after the last restart")
            finally:
                stop.set()
            [f.result() for f in futs]
        assert codes and set(codes) <= {302, 503}
        assert codes.count(302) > 0
        log = srv.error_log()
        for bad in ("AH00632", "AH00636", "QRT00066", "QRT00067", "database is locked"):
            assert bad not in log, log[-4000:]
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == codes.count(302)
    finally:
        srv.cleanup()


def test_a_line_every_child_would_say_is_rationed_for_the_server():
    """A throttled line about the node (here the health check's QRT00069, which every child
    answering a balancer meets) is said once per 10 s by the server, not once by each
    child; the next one counts the lines every child left out."""
    srv = start_server(extra='LogFormat "%P %U %>s" qrtpid\nCustomLog logs/pids.log qrtpid\n')
    try:
        url = srv.api_base + "/health"
        assert requests.get(url, timeout=10).status_code == 200
        srv.sql("UPDATE qrt_schema SET version = version - 1")

        def check(_):
            r = requests.get(url, headers={"Connection": "close"}, timeout=10)
            return r.status_code, r.json().get("message")

        n = 48
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(check, range(n)))
        first = time.monotonic()
        assert set(answers) == {(503, "the database's schema is older than this module's")}
        with open(os.path.join(srv.dir, "logs", "pids.log")) as f:
            pids = {l.split()[0] for l in f if " /api/health 503" in l}
        assert len(pids) >= 2, pids    # both children answered some
        lines = [l for l in srv.error_log().splitlines() if "QRT00069" in l]
        assert len(lines) == 1 and "(and 0 more since" in lines[0], lines
        time.sleep(max(0.0, first + 10.5 - time.monotonic()))
        assert check(0)[0] == 503
        lines = [l for l in srv.error_log().splitlines() if "QRT00069" in l]
        assert len(lines) == 2 and "(and %d more since" % (n - 1) in lines[1], lines
    finally:
        srv.cleanup()
