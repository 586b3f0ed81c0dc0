"""The memory of a server's children."""
import os
import time
import pytest
from lib.server import child_pids, start_server
from lib.reports import DAY, T0, Account, V, fmt, json_error, oracle_crosstab


def children(srv):
    """The server's child processes (the parent is srv.proc)."""
    return child_pids(srv.proc.pid)


def rss_kb(srv):
    """The children's resident memory (VmRSS), summed, in kB."""
    total = 0
    for pid in children(srv):
        try:
            with open("/proc/%d/status" % pid) as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except OSError:
            pass
    return total


def peak_kb(srv):
    """The children's peak resident memory (VmHWM), summed, in kB."""
    total = 0
    for pid in children(srv):
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total
