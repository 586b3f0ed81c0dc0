import os, time, subprocess
import requests
from conftest import Api, Server
from lib.env import HTTPD
import lib.webhooks as wh
from conftest import apxs
from lib.server import snapshot_codes, qrtrack_status
from lib.wait import wait_until

def test_dns_stall():
    srv = Server(extra=wh.STATUS_CONF % apxs("LIBEXECDIR"), loglevel="info")
    stall = os.path.join(srv.dir, "stall")
    try:
        srv.admin("init"); srv.account("acme")
        conf = open(srv.conf).read()
        open(srv.conf, "w").write(conf.replace("host=127.0.0.1", "host=db.qrtrack.test"))
        srv.start(env={"LD_PRELOAD": "/tmp/probe/dnsshim.so", "DNS_STALL_FILE": stall})
        with Api(srv, srv.token("acme")) as api:
            codes = [api.post("/tracker", json={"redirect_url": "https://example.com/%d" % i}).json()["code"] for i in range(3)]
        wait_until(lambda: set(codes) <= snapshot_codes(srv), timeout=15, what="snap")
        print("before", [requests.get("%s/q/%s" % (srv.base, c), allow_redirects=False, timeout=60).status_code for c in codes])
        open(stall, "w").close()
        subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True)
        time.sleep(1)
        t0 = time.monotonic()
        out = []
        while time.monotonic() - t0 < 40:
            t = time.monotonic()
            try:
                r = requests.get("%s/q/%s" % (srv.base, codes[len(out) % 3]), allow_redirects=False, timeout=60)
                st = r.status_code
            except Exception as e:
                st = type(e).__name__
            out.append((round(t - t0, 1), st, round(time.monotonic() - t, 2)))
        print("during", out[:10], "...", out[-5:], len(out), {o[1] for o in out}, max(o[2] for o in out))
        try:
            print(qrtrack_status(srv))
        except Exception as e:
            print("status", e)
        os.unlink(stall)
        time.sleep(5)
        print(srv.error_log()[-4000:])
    finally:
        srv.cleanup()
