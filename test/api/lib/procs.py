"""A test server's processes read from /proc: its children and their peak memory."""
import os


def children(srv):
    """The server's child processes (the parent is srv.proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == srv.proc.pid:
            out.append(int(d))
    return out


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
