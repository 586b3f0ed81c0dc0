#!/usr/bin/python3
"""make bench: runs every benchmark script in bench/ and prints their figures."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
rc = 0
for name in ["bench_scan.py", "bench_visits.py", "bench_reports.py"]:
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        continue
    print("==", name, flush=True)
    rc |= subprocess.call([sys.executable, path])
sys.exit(rc)
