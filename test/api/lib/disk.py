"""A small file system to fill: a tmpfs mounted by the tests (root only)."""
import os
import subprocess


class Tmpfs:
    """A small tmpfs (root only) for a database that fills its disk; mount says whether
    this machine lets the tests mount one."""

    @staticmethod
    def mount(path, megabytes):
        os.makedirs(path, exist_ok=True)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % megabytes,
                            "tmpfs", path], capture_output=True, text=True)
        return p.returncode == 0

    @staticmethod
    def umount(path):
        subprocess.run(["umount", "-l", path], capture_output=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
