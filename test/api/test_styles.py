"""Named image styles (CONTRACT section 7, "Print-grade images"): POST/GET/DELETE /style,
style= on the image endpoints, the account's `default` style, logos checked before they
are decoded and kept as pixels only, and every styled image decoded with zbarimg.

Each test works in an account of its own: a `default` style left in a shared account
would change every other test's images."""
import base64
import itertools
import os
import re
import struct
import time
import zlib

import pytest
import requests

from conftest import BACKEND, Api, PlainApi, start_server, two_nodes
from lib.memory import rss_kb
from lib.qr import decode_qr
from lib.raster import rasterise
from lib.png import _chunk, logo_png

_accounts = itertools.count(1)

def fresh_api(server):
    """An Api client of a new account of its own."""
    name = "styles-%d-%d" % (os.getpid(), next(_accounts))
    server.account(name)
    return Api(server, server.token(name))


@pytest.fixture
def sapi(server):
    with fresh_api(server) as s:
        yield s


# ---- PNGs written and read here (no imaging library in Debian's python3 set) -------

def bomb_png(side=20000):
    """A 1-bit grey PNG that claims side x side pixels of zeros, whole and valid: about
    50 MB of pixels in well under 200 KB."""
    row = b"\0" * (1 + (side + 7) // 8)
    z = zlib.compressobj(9)
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0))
            + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))


def png_rows(png):
    """The PNG's rows of pixels, one by one, each pixel a tuple (r, g, b) or (r, g, b, a)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, plte = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", data)
        elif kind == b"PLTE":
            plte = data
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    assert interlace == 0
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    bits = depth * channels
    stride, bpp = (w * bits + 7) // 8, max(1, bits // 8)
    raw, prev = zlib.decompress(idat), bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        row = []
        for x in range(w):
            if depth < 8:
                v = (line[x * depth // 8] >> (8 - depth - (x * depth) % 8)) & ((1 << depth) - 1)
                if ctype == 3:
                    row.append(tuple(plte[3 * v:3 * v + 3]))
                else:
                    v = v * 255 // ((1 << depth) - 1)
                    row.append((v, v, v))
            else:
                px = line[x * bpp:(x + 1) * bpp]
                row.append(tuple(plte[3 * px[0]:3 * px[0] + 3]) if ctype == 3 else
                           (px[0],) * 3 if channels == 1 else
                           (px[0],) * 3 + (px[1],) if channels == 2 else tuple(px))
        yield row


def png_pixels(png):
    return list(png_rows(png))


def png_dark(png):
    """The PNG as rows of booleans, True for a dark pixel (luminance under half)."""
    return [[0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2] < 128 for p in row]
            for row in png_pixels(png)]


def geometry(png):
    """(modules a side, quiet zone in modules) of a QR image. Read from the top row of
    the symbol (the top edges of two finder patterns, 7 modules each): with the image
    far larger than the symbol in modules (size=2048), the whole modules that fit the
    image's width, less the symbol's, are the quiet zone, whatever padding centres it."""
    for y, row in enumerate(png_rows(png)):
        dark = [0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2] < 128 for p in row]
        if any(dark):
            break
    left = dark.index(True)
    right = len(dark) - dark[::-1].index(True)
    run = dark.index(False, left) - left
    scale = run / 7.0
    n = round((right - left) / scale)
    return n, (int(len(dark) / round(scale)) - n) // 2


def quiet_zone(png):
    return geometry(png)[1]


def tracker(s):
    r = s.post("/tracker", json={"redirect_url": "https://example.com/styled"})
    assert r.status_code == 200, r.text
    return r.json()


def image(s, tid, **params):
    params.setdefault("size", 2048)
    r = s.get("/tracker/%d/qrcode" % tid, params=params)
    assert r.status_code == 200, r.text
    return r.content


def put(s, expect=(200, 201), **fields):
    r = s.post("/style", json=fields)
    assert r.status_code in expect, r.text
    return r.json()


# ---- CRUD ------------------------------------------------------------------------

def test_create_list_show_replace_delete(sapi):
    r = sapi.post("/style", json={"name": "brand", "fg": "#112233", "bg": "#fffff0",
                                  "ecc": "q", "margin": 6})
    assert r.status_code == 201, r.text
    st = r.json()
    assert (st["name"], st["fg"], st["bg"], st["ecc"], st["margin"]) == \
        ("brand", "#112233", "#FFFFF0", "Q", 6)
    assert st["has_logo"] is False and st["logo"] is None
    lst = sapi.get("/style").json()["data"]
    assert [x["name"] for x in lst] == ["brand"]
    assert sapi.get("/style/brand").json()["margin"] == 6
    # the same name replaces; defaults fill what is not given
    r = sapi.post("/style", json={"name": "brand", "margin": "2"})
    assert r.status_code == 200, r.text
    assert (r.json()["fg"], r.json()["ecc"], r.json()["margin"]) == ("#000000", "M", 2)
    assert r.json()["created_at"] == st["created_at"]
    put(sapi, name="another", ecc="L")
    assert [x["name"] for x in sapi.get("/style").json()["data"]] == ["another", "brand"]
    assert sapi.delete("/style/brand").status_code == 204
    assert sapi.get("/style/brand").status_code == 404
    assert sapi.delete("/style/brand").status_code == 404
    assert sapi.get("/style/no%20such").status_code == 404
    assert [x["name"] for x in sapi.get("/style").json()["data"]] == ["another"]


@pytest.mark.parametrize("body, fields", [
    ({}, {"name"}),
    ({"name": ""}, {"name"}),
    ({"name": "a b"}, {"name"}),
    ({"name": "x" * 65}, {"name"}),
    ({"name": 7}, {"name"}),
    ({"name": "s", "fg": "red"}, {"fg"}),
    ({"name": "s", "bg": "#12345"}, {"bg"}),
    ({"name": "s", "fg": ["#000000"]}, {"fg"}),
    ({"name": "s", "fg": "#777777", "bg": "#FFFFFF"}, {"fg", "bg"}),
    ({"name": "s", "fg": "#FFFFFF", "bg": "#000000"}, {"fg", "bg"}),
    ({"name": "s", "fg": "#1A1A1A", "bg": "#1A1A1A"}, {"fg", "bg"}),
    ({"name": "s", "ecc": "X"}, {"ecc"}),
    ({"name": "s", "ecc": "HH"}, {"ecc"}),
    ({"name": "s", "margin": 17}, {"margin"}),
    ({"name": "s", "margin": -1}, {"margin"}),
    ({"name": "s", "margin": 1.5}, {"margin"}),
    ({"name": "s", "margin": "4x"}, {"margin"}),
    ({"name": "s", "margin": 10 ** 12}, {"margin"}),
    ({"name": "s", "logo": 12}, {"logo"}),
    ({"name": "s", "logo": "not base64!"}, {"logo"}),
    ({"name": "s", "logo": base64.b64encode(b"GIF89a" + b"\0" * 40).decode()}, {"logo"}),
    ({"name": "s", "logo": base64.b64encode(logo_png()[:100]).decode()}, {"logo"}),
    ({"name": "a b", "fg": "#FFFFFF", "bg": "#000000", "ecc": "Z", "margin": 99},
     {"name", "fg", "bg", "ecc", "margin"}),
])
def test_invalid_styles_are_422_naming_their_fields(sapi, body, fields):
    r = sapi.post("/style", json=body)
    assert r.status_code == 422, r.text
    assert set(r.json()["errors"]) == fields
    assert sapi.get("/style").json()["data"] == []


def test_an_unknown_field_is_422_and_a_style_read_can_be_sent_back(sapi):
    r = sapi.post("/style", json={"name": "s", "colour": "#002200"})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"colour"}, r.text
    assert sapi.get("/style").json()["data"] == []
    r = sapi.post("/style", json={"name": "s", "fg": "#002200", "margin": 2})
    assert r.status_code == 201, r.text
    read = sapi.get("/style/s").json()
    read["margin"] = 5
    read.pop("logo", None)
    r = sapi.post("/style", json=read)
    assert r.status_code == 200, r.text
    assert (r.json()["margin"], r.json()["fg"]) == (5, "#002200")


def test_contrast_refusal_names_both_colours(sapi):
    r = sapi.post("/style", json={"name": "grey", "fg": "#777777", "bg": "#ffffff"})
    assert r.status_code == 422
    msg = r.json()["errors"]["fg"][0]
    assert "#777777" in msg and "#ffffff" in msg and "4.5" in msg
    assert r.json()["errors"]["bg"] == [msg]
    r = sapi.post("/style", json={"name": "inverse", "fg": "#ffffff", "bg": "#000000"})
    assert "darker" in r.json()["errors"]["fg"][0]
    # 4.54: just enough
    assert sapi.post("/style", json={"name": "ok", "fg": "#767676"}).status_code == 201


def test_bad_bodies(sapi):
    r = sapi.post("/style", data=b"{", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    r = sapi.post("/style", data=b"[]", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    r = sapi.post("/style", data=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415


# ---- logos -------------------------------------------------------------------------

def test_logo_is_re_encoded_and_forces_ecc_h(sapi):
    src = logo_png(text=b"secret-comment")
    r = sapi.post("/style", json={"name": "logo", "ecc": "L",
                                  "logo": base64.b64encode(src).decode()})
    assert r.status_code == 201, r.text
    st = r.json()
    assert st["ecc"] == "H" and st["has_logo"] is True
    assert (st["logo"]["width"], st["logo"]["height"]) == (48, 48)
    assert "data" not in st["logo"]
    listed = sapi.get("/style").json()["data"][0]
    assert listed["logo"]["bytes"] == st["logo"]["bytes"] and "data" not in listed["logo"]
    got = base64.b64decode(sapi.get("/style/logo").json()["logo"]["data"])
    assert len(got) == st["logo"]["bytes"]
    assert got[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"secret-comment" not in got and b"tEXt" not in got
    # the same pixels came through: the red disc, the transparent corners
    px = png_pixels(got)
    assert (len(px), len(px[0])) == (48, 48)
    assert px[24][24] == (160, 20, 30, 255) and px[0][0][3] == 0


def test_logo_as_a_multipart_file(sapi):
    r = sapi.post("/style", data={"name": "upload", "margin": "3", "fg": "#002200"},
                  files={"logo": ("logo.png", logo_png(), "image/png")})
    assert r.status_code == 201, r.text
    st = r.json()
    assert (st["margin"], st["fg"], st["ecc"], st["has_logo"]) == (3, "#002200", "H", True)
    # a form without a file replaces the style without a logo
    r = sapi.post("/style", data={"name": "upload"},
                  files={"other": ("x.txt", b"text", "text/plain")})
    assert r.status_code == 200, r.text
    assert r.json()["has_logo"] is False and r.json()["ecc"] == "M"


def test_logo_over_256_kb_is_refused(sapi):
    big = logo_png() + b"\0" * (256 * 1024)
    r = sapi.post("/style", json={"name": "big", "logo": base64.b64encode(big).decode()})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"logo"}
    assert "262144" in r.json()["errors"]["logo"][0]
    r = sapi.post("/style", data={"name": "big"}, files={"logo": ("l.png", big, "image/png")})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"logo"}


def test_png_bomb_is_refused_fast_and_the_children_stay_flat(server, sapi):
    bomb = bomb_png()
    assert len(bomb) < 200 * 1024
    body = {"name": "bomb", "logo": base64.b64encode(bomb).decode()}
    sapi.post("/style", json={"name": "warm", "logo": base64.b64encode(logo_png()).decode()})
    before = rss_kb(server)
    for _ in range(6):
        t0 = time.monotonic()
        r = sapi.post("/style", json=body)
        took = time.monotonic() - t0
        assert r.status_code == 422, r.text
        assert "1024" in r.json()["errors"]["logo"][0]
        assert took < 1.0, took
        r = sapi.post("/style", data={"name": "bomb"},
                      files={"logo": ("bomb.png", bomb, "image/png")})
        assert r.status_code == 422, r.text
    grown = rss_kb(server) - before
    # decoding it would take 400 MB as RGBA; the request bodies themselves are 0.3 MB
    assert grown < 16 * 1024, grown
    assert sapi.get("/style/bomb").status_code == 404


def test_at_most_100_styles_an_account(sapi):
    for i in range(100):
        put(sapi, name="s%03d" % i)
    r = sapi.post("/style", json={"name": "one-more"})
    assert r.status_code == 422, r.text
    assert "100" in r.json()["errors"]["name"][0]
    # replacing one is still fine
    assert put(sapi, expect=(200,), name="s007", margin=5)["margin"] == 5
    assert len(sapi.get("/style").json()["data"]) == 100


def test_requests_at_once_make_a_name_once_and_keep_to_the_limit(server):
    """Whether a style is new, the count of the account's and the write are one
    transaction: twelve requests at once for one new name answer 201 once and 200 for the
    rest; at 99 styles, twelve at once for new names make one (201) and are refused for
    the others (422). Over several rounds: before, now and then two answered 201 for one
    name, and on PostgreSQL an account went past 100."""
    name = "styles-race-%d" % os.getpid()
    server.account(name)
    with Api(server, server.unused_token(name)) as s:
        styles_at_once([server.api_base], lambda: server.unused_token(name), s)


def styles_at_once(bases, new_token, s):
    """The rounds of test_requests_at_once_make_a_name_once_and_keep_to_the_limit, each
    burst's requests sent in turn to the API bases given (one server's, or several nodes'
    on one database), each burst with a token of new_token(); s: an Api of the account
    with none of its styles yet."""
    import concurrent.futures

    def burst(ex, bodies):
        # (a token a burst: each its own rate-limit window)
        auth = {"Authorization": "Bearer " + new_token()}
        return sorted(ex.map(lambda ib: requests.post(
            bases[ib[0] % len(bases)] + "/style", json=ib[1], headers=auth,
            timeout=30).status_code, enumerate(bodies)))

    with concurrent.futures.ThreadPoolExecutor(12) as ex:
        for rnd in range(12):
            codes = burst(ex, [{"name": "race%d" % rnd, "fg": "#000000"}] * 12)
            assert codes == [200] * 11 + [201], (rnd, codes)
        for i in range(99 - 12):
            put(s, expect=(201,), name="fill%03d" % i)
        for rnd in range(6):
            names = ["new%d-%d" % (rnd, i) for i in range(12)]
            codes = burst(ex, [{"name": n} for n in names])
            assert codes == [201] + [422] * 11, (rnd, codes)
            listed = [x["name"] for x in s.get("/style").json()["data"]]
            made = [n for n in names if n in listed]
            assert len(listed) == 100 and len(made) == 1, (rnd, len(listed), made)
            assert s.delete("/style/" + made[0]).status_code == 204


def svg_colours(s, tid, style=None):
    """The colours of an SVG image of tracker tid but its white background (style= given
    when not None)."""
    params = {"format": "svg"}
    if style is not None:
        params["style"] = style
    r = s.get("/tracker/%d/qrcode" % tid, params=params)
    assert r.status_code == 200, r.text
    return set(c.upper() for c in re.findall(r"#[0-9A-Fa-f]{6}", r.text)) - {"#FFFFFF"}


def test_a_style_deleted_and_made_again_draws_with_its_new_colours(server):
    """Each child caches the styles it draws with under their versions: a style deleted
    and made again under its name must not come back with a version a child holds.
    Before, a new row started again at version 1, and every image after the style was
    made again was drawn in the deleted style's colours (12 of 12)."""
    name = "styles-again-%d" % os.getpid()
    server.account(name)
    sessions = [PlainApi(server, server.unused_token(name)) for _ in range(6)]
    try:
        tid = tracker(sessions[0])["tracker_id"]
        for rnd, (style, old, new) in enumerate((("brand", "#1A237E", "#3E2723"),
                                                 ("default", "#004D40", "#4A148C"),
                                                 ("brand", "#3E2723", "#BF360C"))):
            drawn = None if style == "default" else style
            put(sessions[0], expect=(201,), name=style, fg=old)
            # every connection (both children) draws with it, and caches it
            for _ in range(4):
                for s in sessions:
                    assert svg_colours(s, tid, drawn) == {old}, (rnd, style)
            assert sessions[0].delete("/style/" + style).status_code == 204
            if style == "default":
                # deleting it brings back black on white
                got = [svg_colours(s, tid) for s in sessions for _ in range(2)]
                assert all(g == {"#000000"} for g in got), (rnd, got)
            put(sessions[0], expect=(201,), name=style, fg=new)
            assert sessions[0].get("/style/" + style).json()["fg"] == new
            got = [svg_colours(s, tid, drawn) for s in sessions for _ in range(3)]
            stale = [g for g in got if g != {new}]
            assert not stale, (rnd, style, "made again with fg", new, "was", old,
                               len(stale), "of", len(got), "images drawn in", stale[0])
            if style == "brand":
                assert sessions[0].delete("/style/brand").status_code == 204
    finally:
        for s in sessions:
            s.close()


def deletes_and_creates_at_once(bases, new_token, rounds):
    """rounds of five DELETEs and five POSTs of one existing style's name at once, the
    requests alternating between the API bases given: each answers 204 or 404 (DELETE),
    201 or 200 (POST), never 5xx; and what is left afterwards is the last POST's or
    nothing, readable."""
    import concurrent.futures
    import threading

    auth = {}
    bar = threading.Barrier(10)

    def one(i, name):
        base = bases[i % len(bases)]
        bar.wait()
        if i % 2 == 0:
            r = requests.delete(base + "/style/" + name, headers=auth, timeout=30)
            return ("DELETE", r.status_code, r.text[:200])
        r = requests.post(base + "/style", json={"name": name, "margin": i},
                          headers=auth, timeout=30)
        return ("POST", r.status_code, r.text[:200])

    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        for rnd in range(rounds):
            # (a token a round: each its own rate-limit window)
            auth["Authorization"] = "Bearer " + new_token()
            name = "race%d" % rnd
            r = requests.post(bases[0] + "/style", json={"name": name}, headers=auth,
                              timeout=30)
            assert r.status_code == 201, r.text
            got = list(ex.map(lambda i: one(i, name), range(10)))
            wrong = [g for g in got if g[1] not in {"DELETE": (204, 404),
                                                    "POST": (200, 201)}[g[0]]]
            assert not wrong, (rnd, wrong)
            r = requests.get(bases[-1] + "/style/" + name, headers=auth, timeout=30)
            assert r.status_code in (200, 404), r.text
            if r.status_code == 200:
                assert requests.delete(bases[0] + "/style/" + name, headers=auth,
                                       timeout=30).status_code == 204


def test_deletes_and_creates_of_one_name_at_once_never_answer_5xx(server):
    """POST /style answers from what its own transaction wrote: before, it read the
    style back after its commit, and a DELETE landing in between made the POST a 500
    (about 1 round in 20 on SQLite, 6 in 15 on PostgreSQL)."""
    name = "styles-delete-race-%d" % os.getpid()
    server.account(name)
    deletes_and_creates_at_once([server.api_base], lambda: server.unused_token(name), 150)


def test_other_accounts_styles_are_invisible(server, sapi):
    put(sapi, name="mine", margin=9)
    put(sapi, name="default", margin=12)
    with fresh_api(server) as other:
        assert other.get("/style/mine").status_code == 404
        assert other.delete("/style/mine").status_code == 404
        assert other.get("/style").json()["data"] == []
        t = tracker(other)
        r = other.get("/tracker/%d/qrcode" % t["tracker_id"], params={"style": "mine"})
        assert r.status_code == 404, r.text
        # not their default either
        assert quiet_zone(image(other, t["tracker_id"])) == 4
    assert sapi.get("/style/mine").json()["margin"] == 9


# ---- styles on images --------------------------------------------------------------

def test_default_and_named_styles_apply(sapi):
    t = tracker(sapi)
    tid = t["tracker_id"]
    assert quiet_zone(image(sapi, tid)) == 4
    put(sapi, name="default", margin=10)
    assert quiet_zone(image(sapi, tid)) == 10
    assert decode_qr(image(sapi, tid)) == t["scan_url"]
    # a parameter of the request wins over the style's
    assert quiet_zone(image(sapi, tid, margin=2)) == 2
    put(sapi, name="wide", margin=14)
    assert quiet_zone(image(sapi, tid, style="wide")) == 14
    r = sapi.get("/tracker/%d/qrcode" % tid, params={"style": "nope"})
    assert r.status_code == 404 and "nope" in r.json()["message"]
    r = sapi.get("/tracker/%d/qrcode" % tid, params={"style": "../x"})
    assert r.status_code == 404
    assert quiet_zone(image(sapi, tid, style="")) == 10, "style= empty: the default"
    # replaced: followed at once (the children's caches go by the style's version)
    put(sapi, name="default", margin=7)
    assert quiet_zone(image(sapi, tid)) == 7
    assert sapi.delete("/style/default").status_code == 204
    assert quiet_zone(image(sapi, tid)) == 4


def test_ecc_of_a_style_and_of_its_logo(sapi):
    t = tracker(sapi)
    tid = t["tracker_id"]
    put(sapi, name="low", ecc="L")
    put(sapi, name="high", ecc="H")
    put(sapi, name="logo", ecc="L", logo=base64.b64encode(logo_png()).decode())
    sizes = {}
    for name in ("low", "high", "logo"):
        png = image(sapi, tid, style=name)
        assert decode_qr(png) == t["scan_url"]
        sizes[name] = geometry(png)[0]
    # more correction, more modules; a logo means H whatever the style said
    assert sizes["low"] < sizes["high"] == sizes["logo"]


def test_logos_shared_by_concurrent_images_while_styles_are_replaced_and_evicted():
    """Each child keeps 16 decoded logos, shared by the requests drawing with them: with
    20 logo styles drawn from 6 threads while they are replaced, every image carries its
    own style's logo at its centre, and no child crashes (an evicted or replaced logo is
    freed only after the last request using it)."""
    server = start_server(extra="QRTrackAccountRateLimit logos 100000\n",
                          accounts=[("logos", "enterprise")])
    try:
        with Api(server, server.token("logos")) as sapi:
            _logos_under_load(server, sapi)
        assert not server.crash_lines()
    finally:
        server.stop()
        server.cleanup()


def _logos_under_load(server, sapi):
    import concurrent.futures
    import threading
    tid = tracker(sapi)["tracker_id"]
    colours = {}
    for i in range(20):
        colours["l%d" % i] = (40 + 10 * i, 20, 30)
        put(sapi, name="l%d" % i, logo=base64.b64encode(
            logo_png(colour=colours["l%d" % i])).decode())
    stop = threading.Event()

    def replace():
        n = 0
        with Api(server, sapi.token) as s:
            while not stop.is_set():
                name = "l%d" % (n % 20)
                r = s.post("/style", json={"name": name, "margin": 4 + n % 3,
                                           "logo": base64.b64encode(
                                               logo_png(colour=colours[name])).decode()})
                assert r.status_code in (200, 201), r.text
                n += 1
        return n

    def draw(k):
        with Api(server, sapi.token) as s:
            for j in range(25):
                name = "l%d" % ((k * 7 + j) % 20)
                r = s.get("/tracker/%d/qrcode" % tid, params={"style": name, "size": 180})
                assert r.status_code == 200, r.text
                rows = png_pixels(r.content)
                centre = rows[len(rows) // 2][len(rows[0]) // 2][:3]
                assert centre == colours[name], (name, centre)
        return True

    with concurrent.futures.ThreadPoolExecutor(7) as ex:
        writer = ex.submit(replace)
        assert all(ex.map(draw, range(6)))
        stop.set()
        assert writer.result() > 0


def test_style_on_the_other_image_endpoints(sapi):
    put(sapi, name="wide", margin=12)
    r = sapi.post("/qrCode", data={"type": "url", "url": "https://example.com/p",
                                   "style": "wide", "size": "2048"})
    assert r.status_code == 200, r.text
    assert quiet_zone(r.content) == 12 and decode_qr(r.content) == "https://example.com/p"
    r = sapi.post("/qrCode", data={"type": "url", "url": "https://example.com/p",
                                   "style": "nope"})
    assert r.status_code == 404
    n = len(sapi.get("/tracker").json()["data"])
    r = sapi.post("/tracker/qrcode", params={"style": "nope"},
                  json={"redirect_url": "https://example.com/x"})
    assert r.status_code == 404
    assert len(sapi.get("/tracker").json()["data"]) == n, "nothing is created"
    r = sapi.post("/tracker/qrcode", params={"style": "wide", "size": "2048"},
                  json={"redirect_url": "https://example.com/x"},
                  headers={"Accept": "image/png"})
    assert r.status_code == 200, r.text
    assert quiet_zone(r.content) == 12


def test_an_unknown_style_with_invalid_fields_is_400_naming_them_and_it(sapi):
    # CONTRACT: any invalid field of POST /qrCode is 400 with errors; an unknown style alone
    # is 404 (test_style_on_the_other_image_endpoints). Both: 400 naming the fields and the
    # style, never a 404 carrying field errors.
    for kw, fields in (({"data": {"type": "bogus", "style": "nope"}}, {"type", "style"}),
                       ({"files": {"type": (None, "bogus"), "style": (None, "nope")}},
                        {"type", "style"}),
                       ({"json": {"type": "wifi", "style": "nope"}},
                        {"network_name", "network_password", "style"}),
                       ({"json": {"type": "url", "url": "ftp://x.org/", "size": "9",
                                  "style": "nope"}}, {"url", "size", "style"})):
        r = sapi.post("/qrCode", **kw)
        assert r.status_code == 400, (kw, r.text)
        assert set(r.json()["errors"]) == fields, (kw, r.text)
        assert r.json()["errors"]["style"] == ["No style named nope."]
    r = sapi.post("/qrCode", data={"type": "url", "url": "https://example.com/p",
                                   "style": "nope"})
    assert r.status_code == 404 and r.json() == {"message": "No style named nope."}, r.text
    # without the style the same bodies name their fields alone
    r = sapi.post("/qrCode", data={"type": "bogus"})
    assert r.status_code == 400 and list(r.json()["errors"]) == ["type"], r.text
    r = sapi.post("/qrCode", json={"type": "url", "url": "ftp://x.org/", "size": "9"})
    assert r.status_code == 400 and set(r.json()["errors"]) == {"url", "size"}, r.text


@pytest.mark.parametrize("fmt", [
    "png", "svg", "pdf", "eps",
])
@pytest.mark.parametrize("ecc", ["L", "M", "Q", "H"])
def test_styled_images_decode(sapi, fmt, ecc):
    """Every format of a logo style, and of a colour style at each ECC, decodes to the
    tracker's scan URL."""
    t = tracker(sapi)
    put(sapi, name="brand", fg="#1A237E", bg="#FFFDE7", ecc=ecc, margin=4)
    put(sapi, name="logo", fg="#000000", bg="#FFFFFF",
        logo=base64.b64encode(logo_png()).decode())
    for style in ("brand", "logo"):
        params = {"style": style}
        if fmt != "png":
            params["format"] = fmt
        body = image(sapi, t["tracker_id"], **params)
        assert decode_qr(rasterise(body, fmt)) == t["scan_url"], (style, fmt, ecc)


# ---- several nodes -----------------------------------------------------------------

@pytest.mark.skipif(BACKEND != "pgsql", reason="several nodes share a PostgreSQL database: "
                    "this test runs in the PostgreSQL pass (as test_nodes.py)")
def test_a_style_made_on_one_node_applies_on_the_other():
    with two_nodes() as (a, b):
        tok = a.token("acme")
        b.tokens.append(tok)
        with Api(a, tok) as sa, Api(b, tok) as sb:
            t = tracker(sa)
            tid = t["tracker_id"]
            assert quiet_zone(image(sb, tid)) == 4
            put(sa, name="default", margin=9)
            assert quiet_zone(image(sb, tid)) == 9
            put(sa, name="default", margin=3)
            assert quiet_zone(image(sb, tid)) == 3
            put(sa, name="logo", logo=base64.b64encode(logo_png()).decode())
            assert sb.get("/style/logo").json()["ecc"] == "H"
            # each node encodes its own base URL
            assert decode_qr(image(sb, tid, style="logo")).endswith("/q/" + t["code"])
            assert sa.delete("/style/default").status_code == 204
            assert quiet_zone(image(sb, tid)) == 4


@pytest.mark.skipif(BACKEND != "pgsql", reason="several nodes share a PostgreSQL database: "
                    "this test runs in the PostgreSQL pass (as test_nodes.py)")
def test_requests_at_once_on_two_nodes_make_a_name_once_and_keep_to_the_limit():
    """The same rounds as on one server, each burst's requests alternating between two
    nodes on one database: the account's row, locked in the database, orders them."""
    with two_nodes() as (a, b):
        def new_token():
            tok = a.token("acme")
            b.tokens.append(tok)
            return tok

        with Api(b, new_token()) as sb:
            styles_at_once([a.api_base, b.api_base], new_token, sb)


@pytest.mark.skipif(BACKEND != "pgsql", reason="several nodes share a PostgreSQL database: "
                    "this test runs in the PostgreSQL pass (as test_nodes.py)")
def test_deletes_and_creates_of_one_name_at_once_on_two_nodes_never_answer_5xx():
    """The same rounds, each burst's requests alternating between two nodes on one
    database (before: a 500 in about 8 rounds of 20)."""
    with two_nodes() as (a, b):
        def new_token():
            tok = a.token("acme")
            b.tokens.append(tok)
            return tok

        deletes_and_creates_at_once([a.api_base, b.api_base], new_token, 40)
