#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The table of run-gate7.sh steps 10 and 11 from the per-call files demo graph-cost wrote:
#   graph-cost-summary.py FILE.csv[.xz]...
# Files of one variant and graph size (graph-cost-NODES.csv, graph-cost-VARIANT-NODES-rR.csv)
# are taken together. For each: the witness's own time per cuGraphLaunch (both callbacks,
# the timer's brackets included) with replay counting off and on, median p90 p99; the
# difference of the medians; the median, p90 and mean of each pair's difference; the empty
# bracket (two reads of the timer) per callback; the whole call's median and the median and
# quartiles of its pairs' differences.
import collections, lzma, re, statistics, sys


def q(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1))]


groups = collections.OrderedDict()
for path in sys.argv[1:]:
    m = re.search(r"graph-cost-(?:([a-z]+)-)?(\d+)(?:-r\d+)?\.csv", path)
    key = (m.group(1) or "step10", int(m.group(2)))
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        rows = [l.strip().split(",") for l in f][1:]
    g = groups.setdefault(key, {"pairs": [], "empty": []})
    byp = collections.defaultdict(dict)
    for pair, on, call, wit, empty, _exit in rows:
        byp[pair][int(on)] = (float(call), float(wit))
        g["empty"].append(float(empty))
    g["pairs"] += [p for p in byp.values() if len(p) == 2]

print("| variant | nodes | pairs | off: median p90 p99 | on: median p90 p99 | on - off: of medians "
      "| pairs: median p90 mean | empty bracket median | call off median | call pairs: median [p25, p75] |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (var, nodes), g in groups.items():
    off = [p[0][1] for p in g["pairs"]]
    on = [p[1][1] for p in g["pairs"]]
    d = [p[1][1] - p[0][1] for p in g["pairs"]]
    dc = [p[1][0] - p[0][0] for p in g["pairs"]]
    calloff = [p[0][0] for p in g["pairs"]]
    print(f"| {var} | {nodes} | {len(d)} | {q(off, .5):.0f} {q(off, .9):.0f} {q(off, .99):.0f} "
          f"| {q(on, .5):.0f} {q(on, .9):.0f} {q(on, .99):.0f} | {q(on, .5) - q(off, .5):+.0f} "
          f"| {q(d, .5):+.0f} {q(d, .9):+.0f} {statistics.fmean(d):+.0f} | {q(g['empty'], .5):.0f} "
          f"| {q(calloff, .5):.0f} | {q(dc, .5):+.0f} [{q(dc, .25):+.0f}, {q(dc, .75):+.0f}] |")
