#!/usr/bin/python3
"""Images with styles: GET /tracker/<id>/qrcode at the default size, side by side in one
run on one two-process httpd, driven by wrk on loopback for BENCH_SECONDS (default 5)
each: no style (today's PNG), a colour style, and a style with a 128 x 128 logo.

Targets (issue 36): a style no slower than 0.8 x the plain PNG; a logo style at least
1,000 images/s. Until the renderer (qrt_render) is merged a style changes only the ECC
and margin of the PNG and its logo is not drawn: these figures then measure what the
style lookup costs (one query, and the per-child cache of decoded logos).

Exit 0 when the targets are met, 2 when only a target is missed, 1 when a run failed.
"""
import base64
import os
import struct
import subprocess
import sys
import zlib

from benchlib import HERE, NAME, Api
from conftest import start_server

SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
CONNECTIONS = 8
STYLE_RATIO = 0.8
LOGO_RPS = 1000


def logo_png(side=128):
    """A side x side RGBA PNG: a dark disc on transparency."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    r = side // 2
    raw = b"".join(b"\0" + b"".join(
        b"\x20\x20\x60\xff" if (x - r) ** 2 + (y - r) ** 2 < (r - 4) ** 2 else b"\0\0\0\0"
        for x in range(side)) for y in range(side))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def wrk(url, token):
    out = subprocess.run(["wrk", "-t2", "-c%d" % CONNECTIONS, "-d%ds" % SECONDS,
                          "-H", "Authorization: Bearer " + token,
                          "-s", os.path.join(HERE, "count.lua"), url],
                         capture_output=True, text=True, check=True).stdout
    res = {"status": {}}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "STATUS":
            res["status"][int(parts[1])] = int(parts[2])
        elif parts and parts[0] in ("RPS", "P99_MS", "P50_MS"):
            res[parts[0]] = float(parts[1])
    return res


def main():
    srv = start_server(extra="QRTrackRateLimit 0\n", accounts=[("bench", "professional")])
    try:
        tok = srv.token("bench")
        with Api(srv, tok) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/spring"}).json()
            for body in ({"name": "brand", "fg": "#1A237E", "bg": "#FFFDE7"},
                         {"name": "logo", "logo": base64.b64encode(logo_png()).decode()}):
                r = a.post("/style", json=body)
                assert r.status_code in (200, 201), r.text
        url = "%s/tracker/%d/qrcode" % (srv.api_base, t["tracker_id"])
        runs = [("plain PNG", url), ("colour style", url + "?style=brand"),
                ("logo style", url + "?style=logo")]
        res = {}
        for label, u in runs:
            res[label] = r = wrk(u, tok)
            bad = {k: v for k, v in r["status"].items() if k != 200}
            print("%-13s %8.0f images/s  p50 %.2f ms  p99 %.2f ms%s"
                  % (label, r["RPS"], r["P50_MS"], r["P99_MS"],
                     "  (not 200: %s)" % bad if bad else ""), flush=True)
            if bad:
                return 1
        ratio = res["colour style"]["RPS"] / res["plain PNG"]["RPS"]
        print("styles bench, %s: wrk -t2 -c%d -d%ds on loopback, default size 300 px; "
              "colour style / plain %.2f (target >= %.1f), logo style %.0f/s (target >= %d)"
              % (NAME, CONNECTIONS, SECONDS, ratio, STYLE_RATIO, res["logo style"]["RPS"],
                 LOGO_RPS))
        return 0 if ratio >= STYLE_RATIO and res["logo style"]["RPS"] >= LOGO_RPS else 2
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
