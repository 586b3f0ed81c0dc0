"""Debian's memcached on a loopback port."""
import atexit
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import jsonschema
import pytest
import requests

from lib.env import free_port
from lib.wait import wait_until


class Memcached:
    """Debian's memcached on a loopback port (a free one, or the given one to start it
    again where a stopped one was), stopped by its PID."""

    def __init__(self, port=None):
        self.port = port or free_port()
        self.addr = "127.0.0.1:%d" % self.port
        cmd = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", "16"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(self._up, timeout=10, ignore=(OSError,),
                   what="memcached to come up on %s" % self.addr)

    def _up(self):
        if self.proc.poll() is not None:
            raise AssertionError("memcached exited: %s" % self.proc.stderr.read())
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
