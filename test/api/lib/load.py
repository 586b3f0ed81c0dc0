"""Threads scanning one code under faults and restarts."""
import threading
import time

import requests

from lib.qr import IPHONE
from lib.wait import wait_until


class Load:
    """Threads scanning one code, a connection per request; each result is
    (start, end, status or None for a connection cut)."""

    def __init__(self, srv, code, threads=8):
        self.url = "%s/q/%s" % (srv.base, code)
        self.stop = threading.Event()
        self.results = []
        self.lock = threading.Lock()
        # Daemon threads: a test that fails before finish() must not keep pytest from
        # exiting (they would scan a stopped server in a tight loop for ever).
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                code = requests.get(self.url, allow_redirects=False,
                                    headers={"User-Agent": IPHONE}, timeout=30).status_code
            except requests.RequestException:
                code = None
            with self.lock:
                self.results.append((start, time.monotonic(), code))

    def seen(self, status, since=0.0):
        """How many requests started at `since` or later got status."""
        with self.lock:
            return sum(1 for start, _, code in self.results if code == status and start >= since)

    def wait_for(self, status, timeout, n=1, since=0.0, what=None):
        """Returns once n requests started at `since` or later got status; after timeout
        seconds, stops the load and fails."""
        try:
            wait_until(lambda: self.seen(status, since) >= n, timeout=timeout, interval=0.02,
                       what=what or "%d scans answered %d" % (n, status))
        except AssertionError:
            self.finish()
            raise

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        return self.results
