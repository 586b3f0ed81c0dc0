"""Images of every format the API returns, rasterised and decoded with zbarimg: SVG with
rsvg-convert (librsvg2-bin), PDF with pdftoppm (poppler-utils), EPS with ghostscript."""
import os
import subprocess
import tempfile

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF-",
         "eps": b"%!PS-Adobe-3.0 EPSF-3.0"}


def rasterise(data, fmt, px=400):
    """PNG bytes of an image of format fmt (png, svg, pdf, eps)."""
    assert data.startswith(MAGIC[fmt]), data[:40]
    if fmt == "png":
        return data
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in." + fmt)
        out = os.path.join(d, "out.png")
        with open(src, "wb") as f:
            f.write(data)
        if fmt == "svg":
            cmd = ["rsvg-convert", "-w", str(px), "-o", out, src]
        elif fmt == "pdf":
            cmd = ["pdftoppm", "-png", "-r", "200", "-singlefile", src, out[:-4]]
        else:
            cmd = ["gs", "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-dEPSCrop",
                   "-sDEVICE=png16m", "-r200", "-sOutputFile=" + out, src]
        p = subprocess.run(cmd, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        with open(out, "rb") as f:
            return f.read()


def decode_any(data, fmt):
    """The text of the one QR code in an image of format fmt, or None."""
    png = rasterise(data, fmt)
    with tempfile.NamedTemporaryFile(suffix=".png") as f:
        f.write(png)
        f.flush()
        p = subprocess.run(["zbarimg", "--raw", "-q", "-Sbinary", f.name],
                           capture_output=True, timeout=60)
    if p.returncode != 0:
        return None
    return p.stdout.decode("utf-8").rstrip("\n")
