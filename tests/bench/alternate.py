#!/usr/bin/python3
"""alternate.py [-n ROUNDS] [--ref LABEL] LABEL=CMD...: commands timed in turns, for a loaded machine.

Each round runs every command once, in an order that rotates from round to round, so that a
change of load over the minutes of a bench weighs on all of them alike. Prints, per command,
the median wall and CPU (user + system) time with the quartiles, and the median over rounds of
its ratio to --ref's time in the same round (wall and CPU). CMD is split on spaces.
"""
import argparse
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, default=15)
ap.add_argument("--ref", default=None)
ap.add_argument("cmds", nargs="+")
a = ap.parse_args()
cmds = []
for c in a.cmds:
    label, _, line = c.partition("=")
    cmds.append((label, line.split()))
labels = [c[0] for c in cmds]
wall = {l: [] for l in labels}
cpu = {l: [] for l in labels}


def run(argv):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execvp(argv[0], argv)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)}: exit {os.waitstatus_to_exitcode(status)}")
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime


for r in range(a.n):
    k = r % len(cmds)
    for label, argv in cmds[k:] + cmds[:k]:
        w, c = run(argv)
        wall[label].append(w)
        cpu[label].append(c)


def q(v):
    v = sorted(v)
    return v[len(v) // 4], statistics.median(v), v[(3 * len(v)) // 4]


print(f"{a.n} rounds; ms: median [quartiles]")
for l in labels:
    w1, w2, w3 = q(wall[l])
    c1, c2, c3 = q(cpu[l])
    line = f"{l:<10} wall {w2*1e3:6.0f} [{w1*1e3:.0f}-{w3*1e3:.0f}]  cpu {c2*1e3:6.0f} [{c1*1e3:.0f}-{c3*1e3:.0f}]"
    if a.ref and l != a.ref:
        rw = q([x / y for x, y in zip(wall[l], wall[a.ref])])
        rc = q([x / y for x, y in zip(cpu[l], cpu[a.ref])])
        line += (f"  / {a.ref}: wall {rw[1]:.2f} [{rw[0]:.2f}-{rw[2]:.2f}]"
                 f" cpu {rc[1]:.2f} [{rc[0]:.2f}-{rc[2]:.2f}]")
    print(line)
