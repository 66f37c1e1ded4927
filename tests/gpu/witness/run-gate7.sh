#!/bin/bash
# SPDX-License-Identifier: MIT
# Gate 7 from the dispatch witness alone, on an NVIDIA GPU (run there, not by CI; staged by
# stage-gate7.sh). Builds and installs the CUDA extension of tests/gpu/ext as run-h200.sh
# does, and starts its PyTorch service (tools/pvg_service.py) with libprovgate-witness.so
# (the variables printed by `provgate exec --witness`). The config has no markers section:
#   01 selected shape (4, 4096) x3: certify, witness requires pvg_rowscale_f16x2 grid 32
#      block 256 at least 3 times                                  expected: certified
#   02 fresh service, only the non-contiguous (4, 4096) input (falls back to PyTorch) x3:
#      certify with the same config (refused: too few); the fallback kernel's name is taken
#      from that report's witness evidence (the gate's parser on the engine's file); certify
#      again with witness.forbid naming it                        expected: refused, forbidden
#   03 fresh service, selected shape x3, certified against the config with forbid: does the
#      forbid pattern also match a PyTorch kernel the service runs on the selected path?
#   04 fresh service, one rowscale call captured in a torch.cuda.CUDAGraph (no eager call)
#      and replayed 5 times: certify; the engine's witness file shows what a graph replay leaves
# With graph replays itemized and the request (STEPS="05 06 07 08"; the writer's own interval
# is a minute here: the file is rewritten at once only in answer to gate 7's request):
#   05 fresh service, a decode-like step (matmul, rowscale, softmax, add) warmed up once
#      eagerly, captured in a torch.cuda.CUDAGraph and replayed 20 times; certified right
#      after the request with a config requiring rowscale 20 times "via": "graph"
#   06 fresh service, the same step with rowscale's input non-contiguous: the replays run the
#      fallback; the same config                                  expected: refused (too few)
#   07 fresh service, 3 eager (4, 4096) requests, certify 0.1 s after the last one returned
#      (the file as it was just before is kept)                  expected: certified
#   08 demo graph-bench: the cost of cuGraphLaunch with the witness detached, subscribed with
#      no callback, with the launch callbacks of before, with all and replay counting off, and
#      on, for graphs of 1, 10, 100 and 1000 kernel nodes (blocks of calls in turn)
#   09 demo graph-pairs: replay counting switched on and off between two consecutive calls,
#      the difference of each pair, for the same graphs
#   10 demo graph-cost: graph-pairs, and in each call the witness's own time (its callbacks
#      at the call's entry and exit, bracketed by the bench library's timer), for the same
#      graphs; each call's numbers in graph-cost-NODES.csv (GRAPH_COST_PAIRS pairs, 20000 by
#      default; twice as many at 100 nodes, a quarter at 1000)
#   11 demo graph-cost for the launch path's variants, each in its own process: "installed"
#      (the bench build of this tree), "nocache" (PVG_WITNESS_BENCH_NOCACHE=1: every replay
#      looks its exec up in the slot table), "gettime" (PVG_WITNESS_BENCH_CLOCK=gettime: the
#      last replay stamped with clock_gettime), and "before" when the stage has
#      libprovgate-witness-bench-before.so (the bench build of an earlier tree); 1 node
#      (10000 pairs) and 1000 nodes (800 pairs) for each, in two rounds in opposite orders,
#      and 10 and 100 nodes for "installed"
# STEPS (default "01 02 03 04") picks the steps.
# Everything (reports, witness files, logs) goes to $OUT/gate7-results.tgz.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgw7}
PORT=18007
TGZ=gate7-results.tgz
. "$STAGE/common.sh"
STEPS=${STEPS:-01 02 03 04}
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
echo "steps $STEPS" >>"$RES/env.txt"
# the steps of before the request settle() for the writer's 200 ms interval; the later ones
# set it to a minute, so that only the answer to gate 7's request can show recent launches
if step 01 || step 02 || step 03 || step 04; then
	export PROVGATE_WITNESS_INTERVAL_MS=200
else
	export PROVGATE_WITNESS_INTERVAL_MS=60000
fi
cp -a "$STAGE/repo" "$W/repo"
cd "$W"

# ---- build, install (as run-h200.sh) --------------------------------------------------------
# (not for the benchmarks alone)
if step 01 || step 02 || step 03 || step 04 || step 05 || step 06 || step 07; then
build_install
fi

# ---- configs: no markers section; the witness section ---------------------------------------
# (4, 4096) fp16: n2 = 8192 half2, 256 threads per block, 32 blocks (pvg_kern.cu)
REQUIRE='[{ "kernel": "pvg_rowscale_f16x2", "grid": [32], "block": [256], "min_count": 3 }]'
write_cfg() { # FILE FORBID_JSON
	cat >"$1" <<JSON
{
  // written by tests/gpu/witness/run-gate7.sh: no markers section, gate 7 reads the witness
  "name": "h200-pvgext-rowscale-witness",
  "arch": "sm_90",
  "build": { "log": "logs/build.log", "artifact": "build/_C.so" },
  "source": {
    "repo": "repo",
    "baseline": "baseline",
    "compiled": ["csrc/**"],
    "install_map": [{ "from": "pvgext/", "to": "$W/site/pvgext/" }],
    "ignore": ["**/*.md", "tools/**"]
  },
  "install": { "artifact": "site/pvgext/_C.so" },
  "service": { "match": ["PVG::EngineCore"], "port": $PORT, "family": ["PVG::", "pvg_service.py"] },
  "code_object": { "require_kernels": ["pvg_rowscale_f16x2"] },
  "witness": {
    "dir": "$WIT",
    "library": "$STAGE/libprovgate-witness.so",
    "require": $REQUIRE,
    "forbid": $2
  }
}
JSON
}
write_cfg "$W/cfg-require.json" '[]'
pg exec -c "$W/cfg-require.json" --witness "$WIT" >"$RES/exec-witness-before.txt" 2>&1
echo "exec --witness (no service yet): exit $?" | tee -a "$RES/steps.txt"
cat "$RES/exec-witness-before.txt"
eval "$(grep '^ *export \(PROVGATE_WITNESS_DIR\|CUDA_INJECTION64_PATH\)=' "$RES/exec-witness-before.txt")"
echo "service env: PROVGATE_WITNESS_DIR=${PROVGATE_WITNESS_DIR:-unset} CUDA_INJECTION64_PATH=${CUDA_INJECTION64_PATH:-unset}" |
	tee -a "$RES/steps.txt"
if [ -z "${CUDA_INJECTION64_PATH:-}" ]; then
	export PROVGATE_WITNESS_DIR=$WIT CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so
	echo "exec --witness printed no variables; set them by hand" | tee -a "$RES/steps.txt"
fi


if step 01; then
# 01 the selected shape: gate 7 from the witness alone
start_service
request 4 4096
request 4 4096
request 4 4096
settle
engine_file 01-selected
pg exec -c "$W/cfg-require.json" --witness "$WIT" >"$RES/exec-witness-live.txt" 2>&1
echo "exec --witness (live service): exit $?" | tee -a "$RES/steps.txt"
cat "$RES/exec-witness-live.txt"
certify 01-selected-certified "$W/cfg-require.json" "certified, exit 0"
fi

if step 02; then
# 02 only the fallback (non-contiguous input): required kernel missing; then forbid the fallback
stop_all
start_service
request 4 4096 t
request 4 4096 t
request 4 4096 t
settle
engine_file 02-fallback
certify 02a-fallback-require-only "$W/cfg-require.json" "refused by gate 7: witness-too-few"
PAT=$(python3 - "$RES/02a-fallback-require-only.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = [g for g in r["gates"] if g["id"] == 7][0]
names = [k["name"] for k in g["evidence"]["witness"].get("kernels", [])]
# PyTorch's multiply (x * s in rowscale's fallback) is an elementwise kernel of MulFunctor
mul = [n for n in names if "MulFunctor" in n]
if mul:
    print("*MulFunctor*")
else:
    other = [n for n in names if "elementwise" in n and "normal" not in n and "Compare" not in n]
    print(other[0] if other else "")
PY
)
echo "fallback kernel pattern from 02a's witness evidence: '$PAT'" | tee -a "$RES/steps.txt"
[ -n "$PAT" ] || PAT="*MulFunctor*"
write_cfg "$W/cfg-forbid.json" "[\"$PAT\"]"
certify 02b-fallback-forbid "$W/cfg-forbid.json" "refused by gate 7: witness-forbidden (fallback named) and witness-too-few"
fi

if step 03; then
# 03 the selected shape against the forbid config
[ -f "$W/cfg-forbid.json" ] || write_cfg "$W/cfg-forbid.json" '["*MulFunctor*"]'
stop_all
start_service
request 4 4096
request 4 4096
request 4 4096
settle
engine_file 03-selected
certify 03-selected-forbid "$W/cfg-forbid.json" "certified if the forbid pattern matches only the fallback; refused (forbidden) if the service's own check runs the same kernel"
fi

if step 04; then
# 04 a CUDA graph: one rowscale call captured (no eager call), replayed 5 times
stop_all
start_service
request 4 4096 g 5
settle
engine_file 04-graph
certify 04-graph-replay "$W/cfg-require.json" "what the witness shows of a graph replay (the kernel runs only inside it)"
fi

# ---- graph replays itemized, a fresh witness ------------------------------------------------
REQUIRE='[{ "kernel": "pvg_rowscale_f16x2", "grid": [32], "block": [256], "min_count": 20, "via": "graph" }]'
write_cfg "$W/cfg-graph.json" '[]'
REQUIRE='[{ "kernel": "pvg_rowscale_f16x2", "grid": [32], "block": [256], "min_count": 3 }]'
write_cfg "$W/cfg-require.json" '[]'
dump_engine() { # NAME: the engine's file, read with the gate's parser
	[ -f "$RES/$1.engine.pvgw" ] && "$STAGE/witness-tool" dump "$RES/$1.engine.pvgw" >"$RES/$1.engine.dump.txt" 2>&1
	grep -e '^header' -e '^graphs' -e rowscale -e MulFunctor "$RES/$1.engine.dump.txt" 2>/dev/null | cut -c1-400
}

# STEP NAME REQUEST... EXPECTATION-ARGS: a fresh service, the requests, then at once (0.1 s
# after the last one returned) the engine's file as it is, certify, and the file after
fresh_step() {
	local name=$1 cfg=$2 expect=$3
	shift 3
	stop_all
	start_service
	local r
	for r in "$@"; do request $r; done
	sleep 0.1
	ENG=$(pgrep -P "$SVC_API" -f "role engine" | head -1)
	local f
	f=$(ls "$WIT"/witness-"$ENG"-*.pvgw 2>/dev/null | head -1)
	[ -n "$f" ] && cp "$f" "$RES/$name-before.engine.pvgw" && dump_engine "$name-before"
	certify "$name" "$cfg" "$expect"
	engine_file "$name-after"
	dump_engine "$name-after"
}

# 05 a decode-like step captured and replayed 20 times
step 05 && fresh_step 05-decode-graph "$W/cfg-graph.json" \
	"certified from replayed launches (via graph, 20)" "4 4096 d 20"
# 06 the same step, rowscale's input non-contiguous: the replays run the fallback
step 06 && fresh_step 06-decode-graph-fallback "$W/cfg-graph.json" \
	"refused: witness-too-few (the replays ran the fallback)" "4 4096 t d 20"
# 07 eager launches, certify 0.1 s after the last one
step 07 && fresh_step 07-eager-certify-at-0.1s "$W/cfg-require.json" \
	"certified: the answer to the request has the 3 launches" "4 4096" "4 4096" "4 4096"
stop_all

if step 08; then
# 08 the cost of cuGraphLaunch with and without replay counting
say "graph-bench"
for nodes in 1 10 100 1000; do
	launches=2000
	[ $nodes = 100 ] && launches=1000
	[ $nodes = 1000 ] && launches=200
	mkdir -p "$W/bench-$nodes"
	PROVGATE_WITNESS_DIR=$W/bench-$nodes CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness-bench.so \
		$(command -v taskset >/dev/null && echo taskset -c 2) "$STAGE/demo" graph-bench $nodes $launches 10 2>&1 | tee -a "$RES/graph-bench.txt"
	"$STAGE/witness-tool" dump "$W"/bench-$nodes/*.pvgw >"$RES/graph-bench-$nodes.dump.txt" 2>&1
	grep -e '^header' -e '^graphs' -e 'via=4' "$RES/graph-bench-$nodes.dump.txt" | cut -c1-300 | tee -a "$RES/graph-bench.txt"
done
python3 - "$RES/graph-bench.txt" <<'PY' | tee "$RES/graph-bench-summary.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 3 and f[0] == "graph-bench" and not f[2].startswith("instantiate"):
        rows.setdefault(f[1], {})[f[2]] = [float(x) for x in f[3:]]
for nodes, m in rows.items():
    med = " ".join(f"{k} {statistics.median(v):.0f}" for k, v in m.items())
    d = [a - b for a, b in zip(m["count-on"], m["count-off"])]
    print(f"{nodes}: median over blocks of the per-block median ns per cuGraphLaunch: {med}; "
          f"count-on - count-off per round: median {statistics.median(d):+.0f} ns "
          f"(min {min(d):+.0f}, max {max(d):+.0f})")
PY
fi
if step 09; then
say "graph-pairs"
for nodes in 1 10 100 1000; do
	pairs=10000
	[ $nodes = 100 ] && pairs=4000
	[ $nodes = 1000 ] && pairs=1500
	mkdir -p "$W/pairs-$nodes"
	PROVGATE_WITNESS_DIR=$W/pairs-$nodes CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness-bench.so \
		$(command -v taskset >/dev/null && echo taskset -c 2) "$STAGE/demo" graph-pairs $nodes $pairs 2>&1 | tee -a "$RES/graph-pairs.txt"
	"$STAGE/witness-tool" dump "$W"/pairs-$nodes/*.pvgw >"$RES/graph-pairs-$nodes.dump.txt" 2>&1
	grep -e '^header' -e '^graphs' -e 'via=4' "$RES/graph-pairs-$nodes.dump.txt" | cut -c1-300 | tee -a "$RES/graph-pairs.txt"
done
fi
if step 10; then
say "graph-cost"
for nodes in 1 10 100 1000; do
	pairs=${GRAPH_COST_PAIRS:-20000}
	[ $nodes = 100 ] && pairs=$((pairs * 2))
	[ $nodes = 1000 ] && pairs=$((pairs / 4))
	mkdir -p "$W/cost-$nodes"
	PROVGATE_WITNESS_DIR=$W/cost-$nodes CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness-bench.so \
		$(command -v taskset >/dev/null && echo taskset -c 2) "$STAGE/demo" graph-cost $nodes $pairs \
		"$RES/graph-cost-$nodes.csv" 2>&1 | tee -a "$RES/graph-cost.txt"
	"$STAGE/witness-tool" dump "$W"/cost-$nodes/*.pvgw >"$RES/graph-cost-$nodes.dump.txt" 2>&1
	grep -e '^header' -e '^graphs' -e 'via=4' "$RES/graph-cost-$nodes.dump.txt" | cut -c1-300 | tee -a "$RES/graph-cost.txt"
done
fi
if step 11; then
say "graph-cost variants"
cost_variant() { # VARIANT NODES PAIRS ROUND
	local lib=$STAGE/libprovgate-witness-bench.so envs=()
	case $1 in
	nocache) envs=(PVG_WITNESS_BENCH_NOCACHE=1) ;;
	gettime) envs=(PVG_WITNESS_BENCH_CLOCK=gettime) ;;
	before) lib=$STAGE/libprovgate-witness-bench-before.so ;;
	esac
	local d=$W/var-$1-$2-$4
	mkdir -p "$d"
	echo "variant=$1 nodes=$2 round=$4" | tee -a "$RES/graph-cost-variants.txt"
	env "${envs[@]}" PROVGATE_WITNESS_DIR=$d CUDA_INJECTION64_PATH=$lib \
		$(command -v taskset >/dev/null && echo taskset -c 2) "$STAGE/demo" graph-cost $2 $3 \
		"$RES/graph-cost-$1-$2-r$4.csv" 2>&1 | tee -a "$RES/graph-cost-variants.txt"
	"$STAGE/witness-tool" dump "$d"/*.pvgw >"$RES/graph-cost-$1-$2-r$4.dump.txt" 2>&1
	grep -e '^header' -e '^graphs' -e 'via=4' "$RES/graph-cost-$1-$2-r$4.dump.txt" | cut -c1-300 |
		tee -a "$RES/graph-cost-variants.txt"
}
variants="installed nocache gettime"
[ -f "$STAGE/libprovgate-witness-bench-before.so" ] && variants="before $variants"
for v in $variants; do cost_variant $v 1 10000 1; done
for v in $variants; do cost_variant $v 1000 800 1; done
cost_variant installed 10 10000 1
cost_variant installed 100 10000 1
for v in $(echo $variants | tr ' ' '\n' | tac); do cost_variant $v 1000 800 2; done
fi
say "done"
