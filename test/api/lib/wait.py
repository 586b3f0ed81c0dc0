"""Waiting for a condition instead of sleeping a fixed time."""
import time


def wait_until(cond, timeout=10.0, interval=0.05, what="the condition"):
    """Calls cond() until it returns a true value, which is returned; raises an
    AssertionError naming `what` (and the last value) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s (last: %r)"
                                 % (timeout, what, last))
        time.sleep(interval)
