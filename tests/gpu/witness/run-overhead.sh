#!/bin/bash
# SPDX-License-Identifier: MIT
# The witness's cost to PyTorch decode-like loops, on an NVIDIA GPU (run there, not by CI):
#   bash STAGE/run-overhead.sh        (STAGE from make-stage.sh)
# PAIRS pairs of processes, one without and one with the witness (driver callbacks, the
# default) in ABBA order (the first of a pair alternates, so a drift of the machine weighs on
# both sides alike), all pinned to the same CPUS. Each process runs overhead-loop.py: four
# loops, BLOCKS timed blocks each; then demo bench (tight: ns per launch of an empty kernel)
# runs 3 times in the same mode. Per process and loop the statistic is the median block;
# per pair the ratio with/without; the summary gives, per loop, the median of the pair
# ratios and a 95 % bootstrap interval of it (pairs resampled). After each process with the
# witness, its witness file is read with witness-tool (the gate's parser) and its graph
# launches are checked against the graph loop's steps: a "with" number only counts when the
# witness was seen to record.
# TOGGLES more processes (one after each pair while they last) run with
# libprovgate-witness-bench.so and PVG_OVH_TOGGLE=1: each loop alternates blocks with the
# witness's callbacks off and on in the one process, and demo bench-toggle does the same for
# the tight loop; per process the statistic is the median of the on/off ratios of adjacent
# blocks, which the process's own speed (that varies from one process to the next on this
# kind of machine by more than the witness costs) does not enter. What the callbacks cost
# when off (CUPTI attached, the library loaded) is what the pairs measure, with their noise,
# and what DETACHES more processes measure in one process: the same alternation, with "off"
# detaching CUPTI from the process (cuptiFinalize) and "on" attaching it again.
# Everything goes to $OUT/overhead.txt.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/pvg-witness-out}
PAIRS=${PAIRS:-10} BLOCKS=${BLOCKS:-10} CPUS=${CPUS:-2-3} TOGGLES=${TOGGLES:-0} DETACHES=${DETACHES:-0}
mkdir -p "$OUT"
W=/tmp/pvg-witness-ovh
rm -rf "$W" && mkdir -p "$W/wit" "$W/bench"
exec > >(tee "$OUT/overhead.txt") 2>&1
echo "date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
echo "cpus $(nproc) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
cupti=""
for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
	[ -z "$cupti" ] && [ -e "$c" ] && cupti=$c
done
echo "cupti $cupti pairs $PAIRS blocks $BLOCKS pinned to cpus $CPUS"
export PROVGATE_WITNESS_CUPTI=$cupti
tight() { # LOG ENV...: demo bench (an empty kernel <<<1, 32>>>, 100,000 launches) 3 times
	local log=$1 v=() i
	shift
	for i in 1 2 3; do
		v+=("$("$@" timeout 60 taskset -c "$CPUS" "$STAGE/demo" bench 100000 |
			sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')")
	done
	echo "tight ${v[*]}" >>"$log"
}
run_one() { # MODE PAIR
	local log=$W/$1-$2.txt
	if [ "$1" = toggle ] || [ "$1" = detach ]; then
		local before how=1
		[ "$1" = detach ] && how=detach
		before=$(ls "$W/wit" | wc -l)
		CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness-bench.so PROVGATE_WITNESS_DIR=$W/wit \
			PVG_OVH_TOGGLE=$how timeout 300 taskset -c "$CPUS" python3 "$STAGE/overhead-loop.py" "$BLOCKS" >"$log" 2>&1
		CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness-bench.so PROVGATE_WITNESS_DIR=$W/bench \
			PVG_OVH_TOGGLE=$how timeout 120 taskset -c "$CPUS" "$STAGE/demo" bench-toggle 20000 10 >>"$log" 2>&1
		local f
		f=$(ls -t "$W"/wit/*.pvgw 2>/dev/null | head -1)
		if [ "$(ls "$W/wit" | wc -l)" -le "$before" ] || [ -z "$f" ]; then
			echo "witness $1 $2: no new witness file"
		else
			echo "witness $1 $2: $("$STAGE/witness-tool" dump "$f" | head -1)"
		fi
	elif [ "$1" = with ]; then
		local before
		before=$(ls "$W/wit" | wc -l)
		CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so PROVGATE_WITNESS_DIR=$W/wit \
			timeout 300 taskset -c "$CPUS" python3 "$STAGE/overhead-loop.py" "$BLOCKS" >"$log" 2>&1
		tight "$log" env CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so PROVGATE_WITNESS_DIR=$W/bench
		local f
		f=$(ls -t "$W"/wit/*.pvgw 2>/dev/null | head -1)
		if [ "$(ls "$W/wit" | wc -l)" -le "$before" ] || [ -z "$f" ]; then
			echo "witness with $2: no new witness file"
		else
			echo "witness with $2: $("$STAGE/witness-tool" dump "$f" | head -1)"
		fi
	else
		timeout 300 taskset -c "$CPUS" python3 "$STAGE/overhead-loop.py" "$BLOCKS" >"$log" 2>&1
		tight "$log" env
	fi
	sed "s/^/$1 $2 /" "$log"
}
for i in $(seq "$PAIRS"); do
	if [ $((i % 2)) = 1 ]; then run_one without "$i"; run_one with "$i"
	else run_one with "$i"; run_one without "$i"; fi
	[ "$i" -le "$TOGGLES" ] && run_one toggle "$i"
	[ "$i" -le "$DETACHES" ] && run_one detach "$i"
done
for i in $(seq $((PAIRS + 1)) "$TOGGLES"); do run_one toggle "$i"; done
for i in $(seq $((PAIRS + 1)) "$DETACHES"); do run_one detach "$i"; done
python3 - "$OUT/overhead.txt" <<'PY'
import random, re, statistics, sys
blocks = {}    # (loop, mode) -> {pair: [us/step per block]}
clocks = {}    # (loop, mode) -> {pair: [SM MHz after each block]}
steps = {}
wit = {}
tog = {}       # (toggle|detach, loop, "off"|"on") -> {process: [per block]}
for line in open(sys.argv[1]):
    line = line.strip()
    m = re.match(r"(without|with|toggle|detach) (\d+) steps (\S+) (\d+)$", line)
    if m:
        steps[(m.group(1), int(m.group(2)), m.group(3))] = int(m.group(4))
        continue
    m = re.match(r"(toggle|detach) (\d+) (\S+)-(off|on) ([0-9. ]+)$", line)
    if m:
        tog.setdefault((m.group(1), m.group(3), m.group(4)), {})[int(m.group(2))] = [float(x) for x in m.group(5).split()]
        continue
    m = re.match(r"(without|with) (\d+) clocks (\S+) ([0-9 ]+)$", line)
    if m:
        clocks.setdefault((m.group(3), m.group(1)), {})[int(m.group(2))] = [int(x) for x in m.group(4).split()]
        continue
    m = re.match(r"(without|with) (\d+) (\S+) ([0-9. ]+)$", line)
    if m:
        blocks.setdefault((m.group(3), m.group(1)), {})[int(m.group(2))] = [float(x) for x in m.group(4).split()]
        continue
    m = re.match(r"witness (with|toggle|detach) (\d+): header .*graph_launches=(\d+)", line)
    if m:
        wit[(m.group(1), int(m.group(2)))] = int(m.group(3))
ok = {k: steps.get(k + ("graph-8b",)) == g for k, g in wit.items()}
graph_ok = {k[1]: v for k, v in ok.items() if k[0] == "with"}
tog_ok = {k: v for k, v in ok.items() if k[0] in ("toggle", "detach")}
bad = sorted(k for k in ok if not ok[k]) + sorted(
    {k[:2] for k in steps if k[0] != "without"} - set(wit))
print("witness files checked:", len(wit), "graph launches equal to the graph loop's steps in",
      sum(ok.values()), "of them", "; left out:" if bad else "", *bad)
random.seed(1)


def compare(loop, a, b, what):
    pairs = sorted(p for p in a if p in b and graph_ok.get(p))
    if not pairs:
        print(f"{loop} ({what}): no complete pairs")
        return
    r = [b[p] / a[p] for p in pairs]
    boot = sorted(statistics.median(random.choices(r, k=len(r))) for _ in range(4000))
    lo, hi, mr = boot[100], boot[3899], statistics.median(r)
    unit = "ns/launch" if loop == "tight" else "us/step"
    print(f"{loop} ({what}): {len(pairs)} pairs; median {unit} without {statistics.median(a[p] for p in pairs):.2f},"
          f" with {statistics.median(b[p] for p in pairs):.2f}; median ratio {mr:.4f}"
          f" ({(mr - 1) * 100:+.2f} %), 95 % interval {(lo - 1) * 100:+.2f} % to {(hi - 1) * 100:+.2f} %")
    print("  without", " ".join(f"{a[p]:.2f}" for p in pairs))
    print("  with   ", " ".join(f"{b[p]:.2f}" for p in pairs))


for loop in ["tight", "small", "eager-1b", "eager-8b", "graph-8b"]:
    A, B = blocks.get((loop, "without"), {}), blocks.get((loop, "with"), {})
    compare(loop, {p: statistics.median(v) for p, v in A.items()},
            {p: statistics.median(v) for p, v in B.items()}, "all blocks")
    ca, cb = clocks.get((loop, "without"), {}), clocks.get((loop, "with"), {})
    top = max([c for d in (ca, cb) for v in d.values() for c in v] or [0])
    if not top:
        continue
    def full(blk, clk):  # the blocks that ended at the run's highest SM clock
        out = {}
        for p, v in blk.items():
            kept = [t for t, c in zip(v, clk.get(p, [])) if c >= top]
            if kept:
                out[p] = statistics.median(kept)
        return out
    share = lambda d: sum(c >= top for v in d.values() for c in v) / max(1, sum(len(v) for v in d.values()))
    print(f"  SM clock: highest {top} MHz; blocks that ended there: without {share(ca) * 100:.0f} %,"
          f" with {share(cb) * 100:.0f} %; median clock without {statistics.median(c for v in ca.values() for c in v)},"
          f" with {statistics.median(c for v in cb.values() for c in v)}")
    compare(loop, full(A, ca), full(B, cb), f"blocks at {top} MHz")

for kind, title in (("toggle", "callbacks off and on in one process"),
                    ("detach", "CUPTI detached and attached again in one process")):
    if not any(k[0] == kind for k in tog):
        continue
    print(f"{title} (libprovgate-witness-bench.so):")
    for loop in ["tight", "small", "eager-1b", "eager-8b", "graph-8b"]:
        off, on = tog.get((kind, loop, "off"), {}), tog.get((kind, loop, "on"), {})
        procs = sorted(p for p in off if p in on and (loop == "tight" or tog_ok.get((kind, p))))
        if not procs:
            continue
        per = {p: statistics.median(b / a for a, b in zip(off[p], on[p])) for p in procs}
        allr = [b / a for p in procs for a, b in zip(off[p], on[p])]
        boot = sorted(statistics.median(random.choices(allr, k=len(allr))) for _ in range(4000))
        mr = statistics.median(allr)
        unit = "ns/launch" if loop == "tight" else "us/step"
        d = statistics.median(b - a for p in procs for a, b in zip(off[p], on[p]))
        print(f"{loop}: {len(procs)} processes, {len(allr)} block pairs; median {unit} off"
              f" {statistics.median(v for p in procs for v in off[p]):.2f}, on {statistics.median(v for p in procs for v in on[p]):.2f};"
              f" median on/off ratio {mr:.4f} ({(mr - 1) * 100:+.2f} %, {d:+.2f} {unit}),"
              f" 95 % interval {(boot[100] - 1) * 100:+.2f} % to {(boot[3899] - 1) * 100:+.2f} %")
        print("  per process", " ".join(f"{(per[p] - 1) * 100:+.2f}%" for p in procs))
PY
