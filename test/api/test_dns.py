"""DBDParams names the database server by a host name, and DNS stops answering (its
servers down or unreachable: the C library then waits 5 s a try, two tries a nameserver):
printed codes keep working. libpq looks the name up each time it opens a connection, with no
timeout of its own over the lookup; the module looks it up aside within a bound and gives
libpq the address (hostaddr), the last one found when no answer comes. Before, a graceful
restart (logrotate's, every night) while DNS did not answer left every scan unanswered for
as long as the parent's check, then each child's first connection of mod_dbd, then its scan
writer each waited a lookup out: some 40 s with lookups of 10 s.

fixtures/dns_stall.c, preloaded into httpd, plays the DNS: a name under .qrtrack.test is
127.0.0.1, or, while the file QRT_DNS_STALL names exists, no answer for the seconds it holds."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

from conftest import BACKEND, Api, Memcached, Server, TOP, apxs
from lib.env import HTTPD
from lib.server import qrtrack_status
from lib.wait import wait_until

pytestmark = pytest.mark.skipif(
    BACKEND != "pgsql", reason="DBDParams with a host name, and memcached for several nodes: "
    "PostgreSQL's; runs in the PostgreSQL pass of `make api` (QRT_TEST_BACKEND=pgsql)")

STALL_S = 20


# (the directory the shim is built in, once a test needs it; removed with the module)
SHIM_DIR = []


def dns_shim():
    if not SHIM_DIR:
        d = tempfile.mkdtemp(prefix="qrtrack-dns-")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", os.path.join(d, "dns_stall.so"),
                        os.path.join(TOP, "test", "api", "fixtures", "dns_stall.c"), "-ldl"],
                       check=True)
        os.chmod(d, 0o755)
        SHIM_DIR.append(d)
    return os.path.join(SHIM_DIR[0], "dns_stall.so")


@pytest.fixture(scope="module", autouse=True)
def remove_the_shim():
    yield
    while SHIM_DIR:
        shutil.rmtree(SHIM_DIR.pop(), ignore_errors=True)


def named_server(host="db.qrtrack.test", extra="", stalled=False):
    """A started server whose DBDParams names the database by a host name that the shim
    answers (None: its address), with DNS not answering from the start when stalled:
    (server, the stall file, a token of acme)."""
    srv = Server(extra=extra, loglevel="info")
    stall = os.path.join(srv.dir, "dns-stall")
    stall_dns(stall, stalled)
    srv.admin("init")
    srv.account("acme")
    if host:
        with open(srv.conf) as f:
            conf = f.read()
        assert "host=127.0.0.1 " in conf
        with open(srv.conf, "w") as f:
            f.write(conf.replace("host=127.0.0.1 ", "host=%s " % host))
    srv.start(env={"LD_PRELOAD": dns_shim(), "QRT_DNS_STALL": stall})
    return srv, stall, srv.token("acme")


def stall_dns(stall, on):
    if on:
        with open(stall, "w") as f:
            f.write("%d\n" % STALL_S)
    elif os.path.exists(stall):
        os.unlink(stall)


def graceful(srv):
    subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True)


def timed_scan(srv, code):
    t = time.monotonic()
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=60)
    return r.status_code, time.monotonic() - t


def visits(srv):
    return int(srv.sql("SELECT COUNT(*) FROM visits").strip())


def test_a_restart_while_dns_does_not_answer_keeps_scans_and_the_api_answering():
    srv, stall, tok = named_server()
    try:
        with Api(srv, tok) as api:
            codes = [api.post("/tracker", json={"redirect_url": "https://example.com/%d" % i})
                     .json()["code"] for i in range(3)]
        assert [timed_scan(srv, c)[0] for c in codes] == [302] * 3
        stall_dns(stall, True)
        logged = srv.error_log().count("QRT00065")
        graceful(srv)
        # the parent waits 2 s for DNS, then reads the configuration with the address
        # it knew
        wait_until(lambda: srv.error_log().count("QRT00065") > logged, timeout=15,
                   what="the restart")
        log = srv.error_log()
        assert "QRT00137" in log and "db.qrtrack.test" in log and "127.0.0.1" in log, log[-3000:]
        answers = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 8:
            answers.append(timed_scan(srv, codes[len(answers) % 3]))
        assert {status for status, _ in answers} == {302}, answers
        slowest = max(took for _, took in answers)
        assert slowest < 5, (slowest, srv.error_log()[-3000:])
        # The API: mod_dbd's connections go to the address too
        with Api(srv, tok) as api:
            t = time.monotonic()
            r = api.get("/tracker")
            assert r.status_code == 200, r.text
            assert time.monotonic() - t < 5
        # ... and every scan reached the database, as the name had answered
        wait_until(lambda: visits(srv) == 3 + len(answers), timeout=15,
                   what="every scan's visit")
        assert "QRT00104" not in srv.error_log()
        # DNS answers again: nothing more said
        stall_dns(stall, False)
        logged = srv.error_log().count("QRT00065")
        graceful(srv)
        wait_until(lambda: srv.error_log().count("QRT00065") > logged, timeout=15,
                   what="the second restart")
        assert timed_scan(srv, codes[0])[0] == 302
        assert srv.error_log().count("QRT00137") == log.count("QRT00137")
        assert not srv.crash_lines(), srv.error_log()
    finally:
        stall_dns(stall, False)
        srv.cleanup()


def test_a_start_while_dns_does_not_answer_uses_the_address_found_before():
    """A start of a stopped server while DNS does not answer: the parent reads the address
    found before from the node's directory (qrtrack-db-address), so the server starts within
    seconds and its scans and API reach the database at once. Before, the start waited a
    lookup out in the parent, then again in each child, and the module's connections failed
    until DNS answered."""
    srv, stall, tok = named_server()
    try:
        with Api(srv, tok) as api:
            code = api.post("/tracker", json={"redirect_url": "https://example.com/s"}) \
                .json()["code"]
        with open(os.path.join(srv.dir, "qrtrack-db-address")) as f:
            assert f.read() == "db.qrtrack.test 127.0.0.1\n"
        srv.stop()
        stall_dns(stall, True)
        t = time.monotonic()
        srv.start(env={"LD_PRELOAD": dns_shim(), "QRT_DNS_STALL": stall})
        assert time.monotonic() - t < 10
        log = srv.error_log()
        assert "QRT00137" in log and "QRT00133" not in log, log[-3000:]
        # said once, though httpd reads its configuration twice as it starts
        assert log.count("QRT00137") == 1, log[-3000:]
        answers = [timed_scan(srv, code) for _ in range(5)]
        assert [s for s, _ in answers] == [302] * 5, (answers, srv.error_log()[-3000:])
        assert max(took for _, took in answers) < 5, answers
        with Api(srv, tok) as api:
            assert api.get("/tracker").status_code == 200
        wait_until(lambda: visits(srv) == 5, timeout=15, what="the visits")
        assert not srv.crash_lines(), srv.error_log()
    finally:
        stall_dns(stall, False)
        srv.cleanup()


def test_a_name_with_several_addresses_is_tried_address_by_address():
    """A name of two addresses (::1, then 127.0.0.1), where the database listens on the second
    only, as host=localhost on many machines: libpq tries a name's addresses in turn, and the
    module gives it all of them (host and hostaddr lists) in the resolver's order, so the
    scans, the writer and the API all reach the database."""
    srv, stall, tok = named_server(host="two.qrtrack.test")
    try:
        with Api(srv, tok) as api:
            code = api.post("/tracker", json={"redirect_url": "https://example.com/l"}) \
                .json()["code"]
            assert [timed_scan(srv, code)[0] for _ in range(3)] == [302] * 3
            assert api.get("/tracker").status_code == 200
        wait_until(lambda: visits(srv) == 3, timeout=15, what="the visits")
        with open(os.path.join(srv.dir, "qrtrack-db-address")) as f:
            assert f.read() == "two.qrtrack.test ::1,127.0.0.1\n"
        assert "QRT00104" not in srv.error_log() and not srv.crash_lines(), srv.error_log()
    finally:
        srv.cleanup()


STATUS = "LoadModule status_module %s/mod_status.so\n<Location /server-status>\n" \
         "    SetHandler server-status\n</Location>\n"


def test_a_memcached_named_by_a_host_dns_does_not_answer_for_holds_no_request():
    """QRTrackRateLimitStore memcache names memcached by a host name, and DNS does not answer
    from the start: each API request is answered within a second or two (the lookup is
    waited for within QRTrackRateLimitTimeout, then memcached is bypassed as one that does
    not answer); once DNS answers, the limits are counted in memcached again. Before, the
    first request of each child waited the lookup out, holding the server's lock, and every
    request after it with it."""
    mc = Memcached()
    srv = None
    try:
        srv, stall, tok = named_server(
            host=None, extra=STATUS % apxs("LIBEXECDIR")
            + "QRTrackRateLimitStore memcache mc.qrtrack.test:%d\n" % mc.port,
            stalled=True)
        times = []
        with Api(srv, tok) as api:
            for _ in range(6):
                t = time.monotonic()
                assert api.get("/account").status_code == 200
                times.append(time.monotonic() - t)
        assert max(times) < 3, times
        assert qrtrack_status(srv)["QRTrackRateLimitStoreUp"] == "0"
        stall_dns(stall, False)

        def counted_in_memcached():
            with Api(srv, tok) as api:
                api.get("/account")
            return qrtrack_status(srv)["QRTrackRateLimitStoreUp"] == "1"
        wait_until(counted_in_memcached, timeout=15, interval=0.5,
                   what="the limits counted in memcached again")
        assert not srv.crash_lines(), srv.error_log()
    finally:
        if srv:
            srv.cleanup()
        mc.stop()
