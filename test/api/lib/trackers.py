"""Trackers' QR codes for the tests: the PNG decoded by zbarimg, its size; a phone's user agent."""
import struct
import subprocess
import tempfile

IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")


def decode_qr(png_bytes):
    """The text of the one QR code in a PNG, decoded by zbarimg."""
    assert png_bytes[:8] == b"\x89PNG\r\n\x1a\n"
    with tempfile.NamedTemporaryFile(suffix=".png") as f:
        f.write(png_bytes)
        f.flush()
        p = subprocess.run(["zbarimg", "--raw", "-q", "-Sbinary", f.name],
                           capture_output=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode("utf-8").rstrip("\n")


def png_size(png_bytes):
    return struct.unpack(">II", png_bytes[16:24])
