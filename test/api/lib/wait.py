"""wait_until: poll a condition instead of sleeping a fixed time before reading a state."""

import time


def wait_until(cond, timeout=10.0, interval=0.05, what="the condition"):
    """Calls cond() every `interval` seconds until it returns a true value, and returns that
    value; after `timeout` seconds raises an AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)
