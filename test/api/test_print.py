"""Print-grade images (CONTRACT section 7): formats, colours, physical size, Accept, ZIP.

Every image is decoded with zbarimg after rasterising SVG (rsvg-convert), PDF (pdftoppm)
and EPS (ghostscript): what the API returns must scan to the tracker's scan URL."""
import base64
import io
import math
import re
import zipfile

import pytest
import requests

from lib.raster import decode_any

MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf",
        "eps": "application/postscript"}
COLOURS = [None, ("#1A237E", "#FFF8E1"), ("#7F0000", "#FFFFFF")]


def create(api, **body):
    body.setdefault("redirect_url", "https://example.com/print")
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def image(api, t, **params):
    return api.get("/tracker/%d/qrcode" % t["tracker_id"], params=params)


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf", "eps"])
@pytest.mark.parametrize("colours", COLOURS, ids=["default", "navy-cream", "maroon-white"])
def test_every_format_ecc_and_colours_decodes_to_the_scan_url(api, fmt, colours):
    t = create(api)
    for ecc in "LMQH":
        params = {"format": fmt, "ecc": ecc}
        if colours:
            params.update(fg=colours[0], bg=colours[1])
        r = image(api, t, **params)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == MIME[fmt]
        assert int(r.headers["Content-Length"]) == len(r.content)
        assert decode_any(r.content, fmt) == t["scan_url"], (fmt, ecc, colours)


def test_png_stays_the_default(api):
    t = create(api)
    r = image(api, t)
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png"
    assert decode_any(r.content, "png") == t["scan_url"]


def test_colours_show_in_svg_and_png(api):
    t = create(api)
    r = image(api, t, format="svg", fg="#1a237e", bg="#fff8e1")
    assert '<rect x="0" y="0"' in r.text and 'fill="#FFF8E1"' in r.text
    assert '<path fill="#1A237E"' in r.text
    png = image(api, t, fg="#1A237E", bg="#FFF8E1").content
    i = png.index(b"PLTE")
    assert png[i + 4:i + 10] == bytes.fromhex("FFF8E1") + bytes.fromhex("1A237E")


def test_svg_is_one_path_in_a_viewbox_of_whole_modules(api):
    t = create(api)
    r = image(api, t, format="svg", margin=4)
    svg = r.text
    assert svg.count("<path") == 1 and svg.count("<rect") == 1
    m = re.search(r'viewBox="0 0 (\d+) (\d+)"', svg)
    n = int(m.group(1))
    assert n == int(m.group(2)) and (n - 8 - 21) % 4 == 0      # version v: 17 + 4v modules
    assert re.search(r'<rect x="0" y="0" width="%d" height="%d"' % (n, n), svg)
    assert "mm" not in svg
    r = image(api, t, format="svg", margin=0)
    assert 'viewBox="0 0 %d %d"' % (n - 8, n - 8) in r.text
    assert decode_any(image(api, t, format="svg", margin=2).content, "svg") == t["scan_url"]


@pytest.mark.parametrize("mm", ["10", "35.5", "1000"])
def test_size_mm_sets_the_physical_size(api, mm):
    t = create(api)
    r = image(api, t, format="svg", size_mm=mm)
    assert r.status_code == 200
    assert 'width="%smm" height="%smm"' % (mm, mm) in r.text
    r = image(api, t, format="pdf", size_mm=mm)
    pt = float(mm) * 72 / 25.4
    box = re.search(rb"/MediaBox \[ 0 0 ([\d.]+) ([\d.]+) \]", r.content)
    assert abs(float(box.group(1)) - pt) < 0.01 and abs(float(box.group(2)) - pt) < 0.01
    r = image(api, t, format="eps", size_mm=mm)
    # whole points, rounded up; the exact size in the line after
    box = re.search(rb"\n%%BoundingBox: 0 0 (\d+) (\d+)\n"
                    rb"%%HiResBoundingBox: 0 0 ([\d.]+) ([\d.]+)\n", r.content)
    assert box, r.content[:600]
    assert int(box.group(1)) == int(box.group(2)) == math.ceil(pt - 0.0005)
    assert abs(float(box.group(3)) - pt) < 0.001 and abs(float(box.group(4)) - pt) < 0.001


@pytest.mark.parametrize("mm", ["9", "9.99", "1000.5", "1001", "0", "-20", "abc", "nan",
                                "inf", "", " 20", "20mm", "0x20", "2e1", "+20"])
def test_size_mm_out_of_bounds_is_422(api, mm):
    t = create(api)
    r = image(api, t, format="svg", size_mm=mm)
    assert r.status_code == 422, (mm, r.text)
    assert list(r.json()["errors"]) == ["size_mm"]


@pytest.mark.parametrize("fg,bg", [("#777777", "#FFFFFF"),      # 4.48: just below
                                   ("#FFFFFF", "#000000"),      # light on dark
                                   ("#FFFF00", "#0000AA"),      # light on dark, contrast ok
                                   ("#000000", "#000000")])
def test_low_contrast_or_light_on_dark_is_422_naming_both(api, fg, bg):
    t = create(api)
    r = image(api, t, fg=fg, bg=bg)
    assert r.status_code == 422, r.text
    errors = r.json()["errors"]
    assert set(errors) == {"fg", "bg"}
    assert "contrast" in errors["fg"][0]
    r = api.post("/tracker/qrcode", params={"fg": fg, "bg": bg},
                 json={"redirect_url": "https://example.com/x"})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"fg", "bg"}
    r = api.post("/qrCode", files={"type": (None, "url"), "url": (None, "https://e.com/"),
                                   "fg": (None, fg), "bg": (None, bg)})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"fg", "bg"}


def test_contrast_just_enough_passes(api):
    t = create(api)
    r = image(api, t, fg="#767676", bg="#FFFFFF")          # 4.54
    assert r.status_code == 200
    assert decode_any(r.content, "png") == t["scan_url"]


@pytest.mark.parametrize("bad", [{"fg": "red"}, {"bg": "#12345"}, {"fg": "#GGGGGG"},
                                 {"bg": "123456"}, {"format": "jpeg"}, {"format": ""},
                                 {"margin": "17"}, {"ecc": "X"}])
def test_bad_image_parameters_are_422_naming_the_field(api, bad):
    t = create(api)
    r = image(api, t, **bad)
    assert r.status_code == 422, r.text
    assert list(r.json()["errors"]) == list(bad)


@pytest.mark.parametrize("accept,fmt", [("image/svg+xml", "svg"),
                                        ("application/pdf", "pdf"),
                                        ("application/postscript", "eps"),
                                        ("image/png;q=0.5, image/svg+xml", "svg"),
                                        ("image/svg+xml;q=0.2, application/pdf;q=0.9", "pdf"),
                                        ("*/*", "png"),
                                        ("text/html, image/*", "png"),
                                        # a type's q is its most specific range's
                                        ("image/svg+xml;q=0.9, image/*", "png"),
                                        ("image/png;q=0.1, image/*", "svg"),
                                        ("image/*;q=0.5, image/svg+xml;q=0.5", "svg"),
                                        ("image/*;q=0.5, application/pdf", "pdf")])
def test_accept_chooses_the_format(api, accept, fmt):
    t = create(api)
    r = api.get("/tracker/%d/qrcode" % t["tracker_id"], headers={"Accept": accept})
    assert r.status_code == 200 and r.headers["Content-Type"] == MIME[fmt]
    assert decode_any(r.content, fmt) == t["scan_url"]


def test_format_parameter_beats_accept(api):
    t = create(api)
    r = api.get("/tracker/%d/qrcode" % t["tracker_id"], params={"format": "eps"},
                headers={"Accept": "image/svg+xml"})
    assert r.headers["Content-Type"] == "application/postscript"


def test_post_tracker_qrcode_in_each_format(api):
    r = api.post("/tracker/qrcode", json={"redirect_url": "https://example.com/a"},
                 headers={"Accept": "application/pdf"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/pdf"
    t = api.get("/tracker/show/%s" % r.headers["X-Tracker-Id"]).json()
    assert decode_any(r.content, "pdf") == t["scan_url"]
    r = api.post("/tracker/qrcode", params={"format": "svg", "fg": "#003300"},
                 json={"redirect_url": "https://example.com/b"})
    assert r.status_code == 200
    j = r.json()
    assert j["qr"]["content_type"] == "image/svg+xml" and j["qr"]["encoding"] == "base64"
    assert decode_any(base64.b64decode(j["qr"]["data"]), "svg") == j["tracker"]["scan_url"]


@pytest.mark.parametrize("fmt", ["svg", "pdf", "eps"])
def test_plain_qr_code_in_each_format(api, fmt):
    url = "https://example.com/plain?x=1"
    r = api.post("/qrCode", files={"type": (None, "url"), "url": (None, url),
                                   "format": (None, fmt), "fg": (None, "#202060"),
                                   "size_mm": (None, "40")})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == MIME[fmt]
    assert decode_any(r.content, fmt) == url
    r = api.post("/qrCode", files={"type": (None, "url"), "url": (None, url),
                                   "format": (None, "gif")})
    assert r.status_code == 400 and list(r.json()["errors"]) == ["format"]


# -- the ZIP of a print run ------------------------------------------------------------

def unzip(r):
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(r.content))
    assert z.testzip() is None
    return z


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf", "eps"])
def test_zip_of_trackers_has_code_dot_ext_entries_that_decode(api, fmt):
    ts = [create(api, name="n%d" % i) for i in range(3)]
    ids = ",".join(str(t["tracker_id"]) for t in ts)
    r = api.get("/tracker/qrcodes", params={"trackers": ids, "format": fmt,
                                            "fg": "#102030"})
    # streamed as made: past one 8 KB bucket the archive goes out chunked
    assert r.headers.get("Transfer-Encoding") == "chunked" or len(r.content) <= 8192
    assert r.headers["Content-Disposition"] == 'attachment; filename="qrcodes.zip"'
    z = unzip(r)
    assert z.namelist() == ["%s.%s" % (t["code"], fmt) for t in ts]
    for t in ts:
        assert decode_any(z.read("%s.%s" % (t["code"], fmt)), fmt) == t["scan_url"]


def test_zip_by_tag(api):
    tag = "campaign:print-%s" % api.token[-6:].lower()
    ts = [create(api, tags=[tag]) for _ in range(2)]
    create(api, tags=["campaign:other"])
    z = unzip(api.get("/tracker/qrcodes", params={"tag": tag, "format": "svg"}))
    assert sorted(z.namelist()) == sorted("%s.svg" % t["code"] for t in ts)
    z = unzip(api.get("/tracker/qrcodes", params={"tag": "campaign:nobody-has-this"}))
    assert z.namelist() == []


def test_zip_accepts_repeated_and_bracketed_ids_in_id_order(api):
    ts = [create(api) for _ in range(2)]
    r = api.get("/tracker/qrcodes?trackers[]=%d&trackers[]=%d&trackers[]=%d" % (
        ts[1]["tracker_id"], ts[0]["tracker_id"], ts[1]["tracker_id"]))
    assert unzip(r).namelist() == ["%s.png" % t["code"] for t in ts]


def test_zip_of_another_accounts_trackers_is_refused(api, other_api):
    mine = create(api)
    theirs = create(other_api)
    r = api.get("/tracker/qrcodes", params={"trackers": "%d,%d" % (
        mine["tracker_id"], theirs["tracker_id"])})
    assert r.status_code == 403, r.text
    assert theirs["code"].encode() not in r.content
    r = api.get("/tracker/qrcodes", params={"trackers": "999999999"})
    assert r.status_code == 403
    deleted = create(api)
    api.delete("/tracker/%d" % deleted["tracker_id"])
    r = api.get("/tracker/qrcodes", params={"trackers": deleted["tracker_id"]})
    assert r.status_code == 403


def test_zip_of_1001_trackers_is_422(api):
    r = api.get("/tracker/qrcodes", params={"trackers": ",".join(
        str(i) for i in range(1, 1002))})
    assert r.status_code == 422 and list(r.json()["errors"]) == ["trackers"]


@pytest.mark.parametrize("params,field", [({}, "trackers"),
                                          ({"trackers": "1", "tag": "x"}, "tag"),
                                          ({"trackers": "abc"}, "trackers"),
                                          ({"tag": "a\x01b"}, "tag"),
                                          ({"tag": "x", "format": "tiff"}, "format"),
                                          ({"tag": "x", "fg": "#EEEEEE"}, "fg")])
def test_zip_bad_parameters_are_422(api, params, field):
    r = api.get("/tracker/qrcodes", params=params)
    assert r.status_code == 422, r.text
    assert field in r.json()["errors"]


def test_zip_head_has_no_body(api):
    t = create(api)
    r = api.head("/tracker/qrcodes", params={"trackers": t["tracker_id"]})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/zip"
    assert r.content == b""


def test_zip_needs_a_token(anon):
    assert anon.get("/tracker/qrcodes", params={"trackers": "1"}).status_code == 401
