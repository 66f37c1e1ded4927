#!/usr/bin/python3
"""measure.py [-n RUNS] [--label L] -- CMD...: best wall time (s) and peak RSS (MiB) of CMD.

Prints one line: LABEL best_s=... median_s=... rss_mib=... rc=...
Each run is a fresh child process; RSS is the child's own peak (getrusage), so runs do not mix.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, default=3)
ap.add_argument("--label", default="")
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
walls, rss, rc = [], 0, 0
for _ in range(a.n):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    walls.append(time.perf_counter() - t0)
    rss = max(rss, ru.ru_maxrss / 1024.0)
    rc = os.waitstatus_to_exitcode(status)
walls.sort()
print(f"{a.label or cmd[0]} best_s={walls[0]:.4f} median_s={walls[len(walls)//2]:.4f} "
      f"rss_mib={rss:.1f} rc={rc}")
