"""The module behind mod_ssl and mod_http2, as docs/operations.md#https sets it up: a TLS
virtual host that speaks HTTP/2 and HTTP/1.1, the URLs taken from its ServerName (no
QRTrackPublicURL), scans multiplexed on one HTTP/2 connection. Driven with curl, which
speaks HTTP/2 (python3-requests does not)."""
import json
import os
import subprocess
import tempfile
import pytest
from lib.env import apxs, free_port
from lib.qr import IPHONE as IPHONE_UA, decode_qr
from lib.server import Server

NAME = "qr.example"

SITE = """
LoadModule ssl_module {lib}/mod_ssl.so
LoadModule socache_shmcb_module {lib}/mod_socache_shmcb.so
LoadModule http2_module {lib}/mod_http2.so
SSLSessionCache "shmcb:{dir}/ssl_scache(512000)"
Listen 127.0.0.1:{port}
<VirtualHost 127.0.0.1:{port}>
    ServerName {name}:{port}
    SSLEngine on
    SSLCertificateFile "{dir}/cert.pem"
    SSLCertificateKeyFile "{dir}/key.pem"
    Protocols h2 http/1.1
</VirtualHost>
"""


@pytest.fixture(scope="module")
def site():
    """(server, token, https base, curl's arguments to reach the site by its name)."""
    keys = tempfile.mkdtemp(prefix="qrtrack-tls-")
    os.chmod(keys, 0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=" + NAME, "-addext", "subjectAltName=DNS:" + NAME,
                    "-keyout", os.path.join(keys, "key.pem"),
                    "-out", os.path.join(keys, "cert.pem")],
                   check=True, capture_output=True)
    for f in ("key.pem", "cert.pem"):
        os.chmod(os.path.join(keys, f), 0o644)
    port = free_port()
    srv = Server(extra=SITE.format(lib=apxs("LIBEXECDIR"), dir=keys, port=port, name=NAME))
    # The site's URLs come from its own ServerName, scheme included: no QRTrackPublicURL.
    with open(srv.conf) as f:
        conf = f.read()
    with open(srv.conf, "w") as f:
        f.write("\n".join(l for l in conf.splitlines() if not l.startswith("QRTrackPublicURL")))
    try:
        srv.admin("init")
        srv.account("acme")
        tok = srv.token("acme")
        srv.start()
        base = "https://%s:%d" % (NAME, port)
        reach = ["--resolve", "%s:%d:127.0.0.1" % (NAME, port),
                 "--cacert", os.path.join(keys, "cert.pem")]
        yield srv, tok, base, reach
    finally:
        srv.stop()
        logs = srv.error_log() + srv.access_log()
        crashes = srv.crash_lines()
        srv.cleanup()
        subprocess.run(["rm", "-rf", keys])
    assert tok not in logs, "a token appears in a log"
    assert not crashes


def curl(reach, *args, proto="--http2"):
    """curl's (status line fields, body): -w writes the HTTP version and status after
    the body, on a line of their own."""
    p = subprocess.run(["curl", "-sS", proto] + reach + list(args)
                       + ["-w", "\n%{http_version} %{http_code}"],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    body, _, status = p.stdout.rpartition(b"\n")
    return status.decode().split(), body


def new_tracker(site, url):
    """A tracker made through the site over HTTP/2: (curl's Authorization header, the
    tracker)."""
    _, tok, base, reach = site
    auth = "Authorization: Bearer " + tok
    status, body = curl(reach, "-H", auth, "-H", "Content-Type: application/json",
                        "-d", json.dumps({"redirect_url": url}), base + "/api/tracker")
    assert status == ["2", "200"], body
    return auth, json.loads(body)


def test_the_site_s_urls_are_https_from_its_own_name(site):
    _, _, base, reach = site
    auth, t = new_tracker(site, "https://example.com/tls")
    assert t["scan_url"] == "%s/q/%s" % (base, t["code"])
    assert t["short_url"] == "%s/l/%s" % (base, t["code"])
    # the printed code carries the same URL
    status, png = curl(reach, "-H", auth, "%s/api/tracker/%d/qrcode" % (base, t["tracker_id"]))
    assert status == ["2", "200"]
    assert decode_qr(png) == t["scan_url"]


def test_scans_multiplexed_on_one_http2_connection_are_each_recorded(site):
    _, _, base, reach = site
    auth, t = new_tracker(site, "https://example.com/many")
    n = 120
    # one connection, up to 100 streams at once; each answer's status and Location
    # (options hold for every URL until --next, which starts a transfer's own)
    args = ["curl", "-sS", "--parallel", "--parallel-max", "100"]
    for i in range(n):
        args += (["--next"] if i else []) + ["--http2"] + reach + [
            "-A", "phone-%d" % i, "%s?n=%d" % (t["scan_url"], i), "-o", "/dev/null",
            "-w", "%{http_version} %{http_code} %{num_connects} %{redirect_url}\n"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == n
    assert all(l.split()[:2] == ["2", "302"] for l in lines), lines[:5]
    assert all(l.split()[3] == "https://example.com/many" for l in lines)
    # (curl reuses the first connection for every later transfer)
    assert sum(int(l.split()[2]) for l in lines) == 1
    _, body = curl(reach, "-H", auth, "%s/api/tracker/analytics/%d" % (base, t["tracker_id"]))
    a = json.loads(body)
    assert a["totalScans"] == n
    assert a["uniqueVisitors"] == n
    # the visits' CSV streams whole over HTTP/2: a header and a row per scan
    status, csv = curl(reach, "-H", auth,
                       "%s/api/visits/tracker/%d/download/csv" % (base, t["tracker_id"]))
    assert status == ["2", "200"]
    rows = csv.decode().split("\r\n")
    assert rows[0].startswith("id,visit_start,source,tracker_id")
    assert rows[-1] == ""
    assert sorted(r.split(",")[-2] for r in rows[1:-1]) == sorted("phone-%d" % i
                                                                  for i in range(n))


def test_http1_over_tls_and_errors_over_http2(site):
    _, _, base, reach = site
    auth, t = new_tracker(site, "https://example.com/one")
    status, _ = curl(reach, t["short_url"], proto="--http1.1")
    assert status == ["1.1", "302"]
    # a request body read over HTTP/2: malformed JSON is the API's 400 in JSON
    status, body = curl(reach, "-H", auth, "-H", "Content-Type: application/json",
                        "-d", "{not json", base + "/api/tracker")
    assert status == ["2", "400"]
    assert "message" in json.loads(body)
    status, body = curl(reach, base + "/api/tracker")
    assert status == ["2", "401"]
    assert "message" in json.loads(body)
    status, body = curl(reach, base + "/qrtrack/")
    assert status == ["2", "200"] and body.lstrip().lower().startswith(b"<!doctype html")
    _, body = curl(reach, "-H", auth, "%s/api/tracker/analytics/%d" % (base, t["tracker_id"]))
    assert json.loads(body)["totalClicks"] == 1


def test_scans_one_after_another_on_one_http1_connection_over_tls(site):
    """HTTP/1.1 over TLS: scans sent one after another on one keep-alive connection (from
    the second on, the connection waits for each next scan as a connection waiting for
    I/O: QRTrackScanKeepAlive) are each answered on that connection and recorded."""
    _, _, base, reach = site
    auth, t = new_tracker(site, "https://example.com/kept")
    n = 12
    p = subprocess.run(["curl", "-sS", "--http1.1"] + reach + [
        "-A", IPHONE_UA,
        "-w", "%{http_version} %{http_code} %{num_connects} %{redirect_url}\n"]
        + [a for i in range(n) for a in ("%s?n=%d" % (t["scan_url"], i), "-o", "/dev/null")],
        capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == n
    assert all(l.split()[:2] == ["1.1", "302"] for l in lines), lines[:5]
    assert all(l.split()[3] == "https://example.com/kept" for l in lines)
    assert [int(l.split()[2]) for l in lines] == [1] + [0] * (n - 1)
    _, body = curl(reach, "-H", auth, "%s/api/tracker/analytics/%d" % (base, t["tracker_id"]))
    assert json.loads(body)["totalScans"] == n
