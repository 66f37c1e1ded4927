#!/bin/bash
# SPDX-License-Identifier: MIT
# JIT code in the chain, on an NVIDIA GPU with PyTorch and Triton (run there, not by CI;
# staged by tests/gpu/witness/stage-identity.sh; bash STAGE/run-jit.sh). Gate 7 alone
# (provgate run --pid PID --gates 7) against a live process with the witness, its report
# summarised; results in $OUT/jit-results.tgz.
# Triton (triton_service.py; a repository whose change edits pvgjit/kern.py, installed by
# install_map into site/pvgjit/; TRITON_CACHE_DIR in the service's environment):
#   T1 the service compiles and runs the installed kernel                      certified
#   T2 a service that imports it and never runs it                              refused: the
#      changed source's kernels were not launched
#   T3 the file installed again after T1's entry was compiled, a service loading
#      that entry                                                               refused: stale
#   T4 a copy of the package at another path imported instead                   refused: other copy
#   T5 a service compiles the kernel, then the changed file is installed under
#      it without a restart                                                     refused: stale
# torch.compile (vllm_compile_service.py: real Dynamo and Inductor, vLLM's cache layout and
# log lines; the model pvgmodel/layers.py is traced; markers.log is its log):
#   C1 a graph compiled with the installed layers.py                            certified
#   C2 layers.py changed and installed, the service started on C1's cache
#      folder (it logs that it loaded the graphs from it)                       refused: stale graph
#   C3 the folder removed, the graph compiled again with the new layers.py      certified
#   C4 then a change to a kernel source only (csrc/pvgk.cu, built into
#      site/libpvgk.so) and the service started on C3's folder                  certified
# STEPS (default "T C") picks the parts.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgjitrun}
TGZ=jit-results.tgz
. "$STAGE/common.sh"
STEPS=${STEPS:-T C}
part() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
SVC=
stop_svc() {
	[ -n "$SVC" ] && kill -9 "$SVC" 2>/dev/null && wait "$SVC" 2>/dev/null
	SVC=
}
trap 'stop_svc; finish' EXIT
python3 -c 'import triton; print("triton", triton.__version__)' >>"$RES/env.txt" 2>&1
tail -1 "$RES/env.txt"
export GIT_AUTHOR_NAME=pvg GIT_AUTHOR_EMAIL=pvg@example.org GIT_COMMITTER_NAME=pvg \
	GIT_COMMITTER_EMAIL=pvg@example.org

# start NAME ENV... -- ARGS...: the service (python3 ARGS with PYTHONPATH=site unless ENV sets
# it), with the witness; waits for its "ready"
start() {
	local name=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	say "start $name: ${envs[*]} python3 $*"
	(cd "$W" && exec env PYTHONPATH="$W/site" PROVGATE_WITNESS_DIR="$WIT" \
		CUDA_INJECTION64_PATH="$STAGE/libprovgate-witness.so" PROVGATE_WITNESS_INTERVAL_MS=200 \
		"${envs[@]}" python3 "$@") >"$W/logs/$name.log" 2>&1 &
	SVC=$!
	for _ in $(seq 600); do grep -q '^ready' "$W/logs/$name.log" && break
		kill -0 "$SVC" 2>/dev/null || break; sleep 0.2; done
	grep -v '^(EngineCore' "$W/logs/$name.log" | tail -5 | tee -a "$RES/steps.txt"
	settle
}
# gate7 NAME CONFIG EXPECTATION: gate 7 alone against the service
gate7() {
	local name=$1 cfg=$2
	shift 2
	pg run -c "$cfg" --pid "$SVC" --gates 7 --keep-going --json "$RES/$name.json" >"$RES/$name.txt" 2>&1
	local rc=$?
	echo "gate 7 $name: exit $rc (expected: $*)" | tee -a "$RES/steps.txt" "$RES/verdicts.txt"
	local f
	f=$(ls "$WIT"/witness-"$SVC"-*.pvgw 2>/dev/null | head -1)
	[ -n "$f" ] && "$STAGE/witness-tool" dump "$f" >"$RES/$name.witness-dump.txt" 2>&1
	python3 - "$RES/$name.json" <<'PY' | tee -a "$RES/verdicts.txt"
import json, sys
try:
    g = json.load(open(sys.argv[1]))["gates"][6]
except Exception as e:
    print("   no report:", e); sys.exit()
print(f"   gate 7 {g['status']}")
for p in g.get("problems", []):
    print(f"      {p['code']}: {p.get('message', '')[:400]}")
w = g.get("evidence", {}).get("witness", {})
for m in (w.get("triton") or {}).get("modules", []):
    print("      triton module", json.dumps({k: m.get(k) for k in ("verdict", "kernel", "arch", "source", "entry", "compiled_at")}))
for s in w.get("changed_sources", []) or []:
    print("      changed source", json.dumps(s)[:300])
cc = g.get("evidence", {}).get("compile_cache")
if cc:
    print("      compile_cache", json.dumps(cc)[:600])
PY
}

if part T; then
say "Triton: repository and install"
R=$W/jrepo
mkdir -p "$R/pvgjit" "$W/site/pvgjit"
git init -q -b main "$R"
sed 's/\* s, mask=m)/* s + 0.0, mask=m)/' "$STAGE/pvgjit_kern.py" >"$R/pvgjit/kern.py"
touch "$R/pvgjit/__init__.py"
git -C "$R" add -A && git -C "$R" commit -qm "pvgjit: scale" && git -C "$R" tag baseline
cp "$STAGE/pvgjit_kern.py" "$R/pvgjit/kern.py"
git -C "$R" commit -qam "pvgjit: scale without the add"
install -m 0644 "$R/pvgjit/__init__.py" "$R/pvgjit/kern.py" "$W/site/pvgjit/"
cat >"$W/cfg-triton.json" <<JSON
{
  // written by tests/gpu/jit/run-jit.sh: gate 7 and Triton's JIT code
  "name": "h200-triton-jit",
  "arch": "sm_90",
  "source": { "repo": "$R", "baseline": "baseline", "include_uncommitted": false,
              "install_map": [{ "from": "pvgjit/", "to": "$W/site/pvgjit/" }] },
  "service": { "match": ["PVG::EngineCore"] },
  "witness": { "dir": "$WIT" }
}
JSON
stat -c '%n %s mtime=%y ctime=%z' "$W/site/pvgjit/kern.py" | tee -a "$RES/steps.txt"

start T1 TRITON_CACHE_DIR="$W/tc-a" -- "$STAGE/triton_service.py" run 5
gate7 T1-fresh "$W/cfg-triton.json" "certified: the entry compiled from the installed kern.py for sm_90"
find "$W/tc-a" -type f -printf '%TY-%Tm-%TdT%TH:%TM:%TS %s %P\n' | sort | tee "$RES/T1-cache-listing.txt"
stop_svc

start T2 TRITON_CACHE_DIR="$W/tc-a" -- "$STAGE/triton_service.py" idle 0
gate7 T2-not-run "$W/cfg-triton.json" "refused: pvgjit/kern.py's kernel pvg_jit_scale was not launched"
stop_svc

sleep 1.1
install -m 0644 "$R/pvgjit/kern.py" "$W/site/pvgjit/kern.py"
stat -c '%n %s mtime=%y ctime=%z (installed again)' "$W/site/pvgjit/kern.py" | tee -a "$RES/steps.txt"
start T3 TRITON_CACHE_DIR="$W/tc-a" -- "$STAGE/triton_service.py" run 5
gate7 T3-stale "$W/cfg-triton.json" "refused: the live entry (T1's, loaded from the cache) was compiled before kern.py took its installed content"
stop_svc

mkdir -p "$W/copy" && cp -a "$W/site/pvgjit" "$W/copy/"
start T4 TRITON_CACHE_DIR="$W/tc-c" PYTHONPATH="$W/copy" -- "$STAGE/triton_service.py" run 5
gate7 T4-other-copy "$W/cfg-triton.json" "refused: compiled from $W/copy/pvgjit/kern.py, not the installed file"
stop_svc

start T5 TRITON_CACHE_DIR="$W/tc-d" -- "$STAGE/triton_service.py" run 5
sleep 1.1
sed 's/\* s, mask=m)/* s * s, mask=m)/' "$STAGE/pvgjit_kern.py" >"$R/pvgjit/kern.py"
git -C "$R" commit -qam "pvgjit: scale twice"
install -m 0644 "$R/pvgjit/kern.py" "$W/site/pvgjit/kern.py"
say "T5: kern.py (scale twice) committed and installed under the running service"
gate7 T5-installed-under-service "$W/cfg-triton.json" "refused: the live entry was compiled before the installed content"
stop_svc
fi

if part C; then
say "torch.compile: repository and install"
R=$W/crepo
mkdir -p "$R/pvgmodel" "$R/csrc" "$W/site/pvgmodel"
git init -q -b main "$R"
touch "$R/pvgmodel/__init__.py"
cat >"$R/pvgmodel/layers.py" <<'PY'
import torch


def forward(x):
    h = torch.nn.functional.silu(x) * 2.0
    return torch.softmax(h, dim=-1) + 1.0
PY
cat >"$R/csrc/pvgk.cu" <<'CU'
extern "C" __global__ void pvg_k(float *y, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] * 2.0f;
}
CU
git -C "$R" add -A && git -C "$R" commit -qm "pvgmodel: layers" && git -C "$R" tag c0
install -m 0644 "$R/pvgmodel/__init__.py" "$R/pvgmodel/layers.py" "$W/site/pvgmodel/"
ccfg() { # FILE BASELINE
	cat >"$1" <<JSON
{
  // written by tests/gpu/jit/run-jit.sh: gate 7's compile-cache rule
  "name": "h200-compile-cache",
  "arch": "sm_90",
  "source": { "repo": "$R", "baseline": "$2", "include_uncommitted": false,
              "compiled": ["csrc/**"],
              "install_map": [{ "from": "pvgmodel/", "to": "$W/site/pvgmodel/" }] },
  "service": { "match": ["VLLM::EngineCor"] },
  "markers": { "log": "$W/logs/server.log", "prefix": "PVG_DIAG",
               "require": [{ "selected": "True" }] }
}
JSON
}
D=$W/compile-cache
cstart() { # NAME
	start "$1" -- "$STAGE/vllm_compile_service.py" "$D"
	cat "$W/logs/$1.log" >>"$W/logs/server.log"
	grep -e 'cache directory' -e 'Directly load' -e 'Compiling a graph' "$W/logs/$1.log" | tee -a "$RES/steps.txt"
}
: >"$W/logs/server.log"
sed 's/\* 2.0$/* 2.0 + 0.5/' "$R/pvgmodel/layers.py" >"$W/layers-c1.py"
cp "$W/layers-c1.py" "$R/pvgmodel/layers.py"
git -C "$R" commit -qam "pvgmodel: shift" && install -m 0644 "$R/pvgmodel/layers.py" "$W/site/pvgmodel/"
ccfg "$W/cfg-c1.json" c0
cstart C1
grep -n '# File' "$D"/rank_0_0/backbone/computation_graph.py | head -8 | tee -a "$RES/steps.txt"
gate7 C1-compiled "$W/cfg-c1.json" "certified: the graph was compiled by this service"
stop_svc

sleep 1.1
sed 's/torch.softmax(h, dim=-1) + 1.0/torch.softmax(h * 0.5, dim=-1) + 1.0/' "$W/layers-c1.py" >"$R/pvgmodel/layers.py"
git -C "$R" commit -qam "pvgmodel: temperature" && git -C "$R" tag c2
install -m 0644 "$R/pvgmodel/layers.py" "$W/site/pvgmodel/"
ccfg "$W/cfg-c2.json" c0
cstart C2
gate7 C2-stale-graph "$W/cfg-c2.json" "refused: graphs loaded from a folder written before the traced layers.py took its installed content"
stop_svc

rm -rf "$D"
cstart C3
gate7 C3-recompiled "$W/cfg-c2.json" "certified: compiled again"
stop_svc

sleep 1.1
sed -i 's/\* 2.0f/* 3.0f/' "$R/csrc/pvgk.cu"
git -C "$R" commit -qam "pvgk: triple"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC "$R/csrc/pvgk.cu" -o "$W/site/libpvgk.so" >"$W/logs/pvgk-build.log" 2>&1
echo "pvgk build rc=$?" | tee -a "$RES/steps.txt"
ccfg "$W/cfg-c4.json" c2
cstart C4
gate7 C4-kernel-only "$W/cfg-c4.json" "certified: the change touches nothing the graph traced"
stop_svc
find "$D" -maxdepth 3 -printf '%TY-%Tm-%TdT%TH:%TM:%TS %s %P\n' | sort >"$RES/C-cache-listing.txt"
cp "$D"/rank_0_0/backbone/computation_graph.py "$RES/computation_graph.py" 2>/dev/null
fi
