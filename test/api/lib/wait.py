"""Waiting for a condition instead of sleeping a fixed time."""
import time


def wait_until(cond, timeout=10.0, interval=0.05, what="the condition", ignore=()):
    """Calls cond() until it returns a true value, which is returned; raises an
    AssertionError naming `what` (and the last value) after `timeout` seconds.

    `what` may be a callable, called only on timeout (e.g. to add a log's tail);
    `ignore` names exceptions of cond() that count as a false value (e.g. a
    connection refused while a server starts)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = cond()
        except ignore as e:
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s (last: %r)"
                                 % (timeout, what() if callable(what) else what, last))
        time.sleep(interval)


def sample(fn, seconds=None, interval=0.1, during=None):
    """fn()'s values every `interval` over `seconds`, or as long as during() is true: a
    measurement over a time window (e.g. a file's largest size while a load runs), not
    a wait for a condition."""
    end = time.monotonic() + seconds if seconds is not None else None
    values = []
    while (end is None or time.monotonic() < end) and (during is None or during()):
        values.append(fn())
        time.sleep(interval)
    return values
