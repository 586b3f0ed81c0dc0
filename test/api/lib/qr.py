"""Decoding QR images with zbarimg; a user agent every test can scan with."""
import base64
import concurrent.futures
import json
import os
import signal
import struct
import subprocess
import tempfile
import pytest
import requests
from lib.api import Api
from lib.env import HTTPD, apxs, sqlite_only
from lib.server import Server, start_server


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
