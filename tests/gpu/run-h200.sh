#!/bin/bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of provgate on a CUDA machine (run there, not by CI; see README.md here).
#
# Expects a stage folder made by tests/gpu/stage.sh: bin/provgate, lib/ (its shared libraries),
# repo/ (the scenario repository: baseline tag + change commit), this script and
# compare-inspect.py. Builds the repo's CUDA extension with torch.utils.cpp_extension for sm_90,
# installs it into a site folder, starts a vLLM-shaped PyTorch service, certifies, then breaks
# links for real and records each verdict. Results go to $OUT/gpu-results.tgz.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgw}
OUT=${OUT:-$W/out}
RES=$W/results
PORT=18000
rm -rf "$W" && mkdir -p "$W/logs" "$RES" "$OUT"
export LD_LIBRARY_PATH_PG=$STAGE/lib
pg() { LD_LIBRARY_PATH=$LD_LIBRARY_PATH_PG "$STAGE/bin/provgate" "$@"; }
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$RES/steps.txt"; }
finish() {
	say "finish"
	stop_all
	cp "$W"/logs/* "$RES/" 2>/dev/null
	cp "$W/provgate.json" "$RES/" 2>/dev/null
	tar -C "$W" -czf "$OUT/gpu-results.tgz" results
}
trap finish EXIT

# ---- the machine ---------------------------------------------------------------------------
{
	date -u +"date %Y-%m-%dT%H:%M:%SZ"
	uname -a
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
	nvcc --version | tail -2
	python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
	cuobjdump --version | tail -2
	for t in ninja git c++ nvcc cuobjdump; do printf '%s: %s\n' "$t" "$(command -v $t)"; done
	ninja --version
	pg --version
	cat "$STAGE/provgate-source.txt" 2>/dev/null
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt"

TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
cp -a "$STAGE/repo" "$W/repo"
cd "$W"

# ---- build, install, config -----------------------------------------------------------------
build() { # build.log is the build's own output, kept whole
	say "build (TORCH_CUDA_ARCH_LIST=9.0+PTX)"
	(cd "$W/repo" && TORCH_CUDA_ARCH_LIST="9.0+PTX" MAX_JOBS=8 python3 tools/build.py "$W/repo" "$W/build") \
		>"$W/logs/build.log" 2>&1
	local rc=$?
	NBUILD=$((${NBUILD:-0} + 1))
	cp "$W/logs/build.log" "$RES/build-$NBUILD.log"
	echo "build #$NBUILD rc=$rc" | tee -a "$RES/steps.txt"
	return $rc
}
install_new_inode() {
	say "install (new inode)"
	mkdir -p "$W/site/pvgext"
	install -m 0644 "$W/repo/pvgext/__init__.py" "$W/site/pvgext/__init__.py"
	install -m 0755 "$W/build/_C.so" "$W/site/pvgext/_C.so"
}
cat >"$W/provgate.json" <<JSON
{
  // written by tests/gpu/run-h200.sh
  "name": "h200-pvgext-rowscale",
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
  "markers": {
    "log": "logs/server.log",
    "prefix": "KERNEL_DIAG",
    "require": [{ "selected": "True", "shape": "(4, 4096)", "dtype": "torch.float16" }],
    "min_count": 1,
    "facts": ["kernel version 2"]
  }
}
JSON

# ---- the service ----------------------------------------------------------------------------
NSVC=0
start_service() { # a fresh server.log each time; the old one is kept
	NSVC=$((NSVC + 1))
	[ -e "$W/logs/server.log" ] && mv "$W/logs/server.log" "$W/logs/server-before-$NSVC.log"
	say "start service #$NSVC"
	(cd "$W/repo/tools" && PYTHONPATH="$W/site" PYTHONUNBUFFERED=1 \
		exec python3 pvg_service.py --port $PORT) 2>>"$W/logs/server.log" &
	SVC_API=$!
}
request() { # M N [t]
	say "request $*"
	timeout 200 python3 "$W/repo/tools/request.py" $PORT "$@" 2>&1 | tee -a "$RES/steps.txt"
}
engine_of() { pgrep -P "$1" -f "role engine" | head -1; }
stop_all() {
	for p in $(pgrep -f "pvg_service.py"); do kill -9 "$p" 2>/dev/null; done
	for _ in $(seq 50); do pgrep -f pvg_service.py >/dev/null || break; sleep 0.1; done
}
ps_snapshot() { ps -eo pid,ppid,lstart,comm,args | grep -e PVG -e pvg_service -e "^ *PID" | grep -v grep >"$RES/$1.ps.txt"; }
certify() { # NAME [expectation text]
	local name=$1
	shift
	ps_snapshot "$name"
	pg certify -c "$W/provgate.json" --keep-going --out "$RES/$name.json" >"$RES/$name.txt" 2>&1
	local rc=$?
	echo "certify $name: exit $rc (expected: $*)" | tee -a "$RES/steps.txt" "$RES/verdicts.txt"
	cat "$RES/$name.txt"
	python3 - "$RES/$name.json" <<'PY' | tee -a "$RES/verdicts.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("   no report:", e); sys.exit()
for g in r["gates"]:
    codes = ",".join(p["code"] for p in g.get("problems", []))
    print(f"   gate {g['id']} {g['name']:16} {g['status']:13} {codes}")
PY
}

build || { cat "$W/logs/build.log"; exit 1; }
install_new_inode
pg run -c "$W/provgate.json" --phase install --keep-going --out "$RES/00-install-phase.json" \
	>"$RES/00-install-phase.txt" 2>&1
echo "run --phase install: exit $?" | tee -a "$RES/steps.txt" "$RES/verdicts.txt"
cat "$RES/00-install-phase.txt"

# 1. the whole chain closes
start_service
request 4 4096
certify 01-certified "certified, exit 0"

# 2. rebuild and reinstall (new inode) under the running service: gate 4
touch "$W/repo/csrc/pvg_kern.cu"
build
install_new_inode
certify 02-reinstalled-under-service "gate 4 fail (the service maps the replaced, deleted file)"

# 3. restart: certified again; then overwrite the installed file in place: gate 4
stop_all
start_service
request 4 4096
certify 03-restarted "certified, exit 0"
touch "$W/repo/csrc/pvg_kern.cu"
build
say "install in place (cp over the mapped file, same inode)"
cp "$W/build/_C.so" "$W/site/pvgext/_C.so"
certify 04-overwritten-in-place "gate 4 fail (process started before the installed file changed)"

# 4. an orphaned EngineCore of an earlier run beside the new service: gate 5
stop_all
start_service
request 4 4096
OLD_API=$SVC_API
OLD_ENGINE=$(engine_of "$OLD_API")
say "kill -9 API server $OLD_API: its engine $OLD_ENGINE stays as an orphan"
kill -9 "$OLD_API"
sleep 1
start_service
request 4 4096
certify 05-orphan-engine "gate 5 fail (service process outside the tree, GPU held outside the tree)"

# 5. only a shape that falls back: gate 7
stop_all
start_service
request 4 4096 t
request 4 4095
certify 06-fallback-only "gate 7 fail (selected=False for the benchmark shape: non-contiguous input)"
request 4 4096
certify 07-selected-after-fallback "gate 7 fail: the same live service fell back for the benchmark shape earlier"
stop_all
start_service
request 4 4096
certify 08-fresh-service-selected "certified, exit 0"
stop_all

# ---- inspect against cuobjdump ----------------------------------------------------------------
say "inspect vs cuobjdump"
mkdir -p "$RES/inspect"
inspect_one() { # NAME FILE
	local t0 t1 t2
	t0=$EPOCHREALTIME
	pg inspect --json "$2" >"$RES/inspect/$1.inspect.json" 2>"$RES/inspect/$1.inspect.err"
	echo "inspect $1 exit $?" >>"$RES/inspect/exit-codes.txt"
	t1=$EPOCHREALTIME
	pg inspect "$2" >"$RES/inspect/$1.inspect.txt" 2>&1
	cuobjdump --list-elf "$2" >"$RES/inspect/$1.list-elf.txt" 2>&1
	cuobjdump --list-ptx "$2" >"$RES/inspect/$1.list-ptx.txt" 2>&1
	[ -n "${3:-}" ] && cuobjdump --dump-resource-usage "$2" >"$RES/inspect/$1.resource-usage.txt" 2>&1
	t2=$EPOCHREALTIME
	echo "$1 $(stat -c %s "$2") bytes: inspect $(awk "BEGIN{print $t1 - $t0}")s, cuobjdump x2 $(awk "BEGIN{print $t2 - $t1}")s" >>"$RES/inspect/timing.txt"
}
inspect_one pvgext_C "$W/site/pvgext/_C.so" kernels
say "fixtures: relocatable device code (tests/fixtures/cuda-rdc/make.sh)"
mkdir -p "$RES/fixtures"
cp -r "$STAGE/cuda-rdc" "$W/cuda-rdc" && bash "$W/cuda-rdc/make.sh" >"$RES/fixtures/make-rdc.txt" 2>&1
echo "make-rdc exit $?" >>"$RES/fixtures/make-rdc.txt"
cp "$W"/cuda-rdc/*.so "$W/cuda-rdc/cuobjdump.txt" "$RES/fixtures/" 2>/dev/null
for f in "$W"/cuda-rdc/*.so; do
	[ -e "$f" ] && inspect_one "fixture_$(basename "$f")" "$f" kernels
	pg inspect --kernels "$f" >>"$RES/fixtures/inspect-rdc.txt" 2>&1
done
for lib in libtorch_cuda.so libc10_cuda.so; do
	[ -e "$TORCH_LIB/$lib" ] && inspect_one "torch_$lib" "$TORCH_LIB/$lib"
done
NV=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0] if hasattr(nvidia,"__path__") else nvidia.__file__))' 2>/dev/null)
for pat in 'libcurand.so*' 'libcusparse.so*' 'libcufft.so*' 'libnccl.so*'; do
	f=$(find "$NV/nvidia" -name "$pat" -type f 2>/dev/null | head -1)
	[ -n "$f" ] && inspect_one "$(basename "$f")" "$f" $([ "$pat" = 'libcurand.so*' ] && echo kernels)
done
python3 "$STAGE/compare-inspect.py" "$RES/inspect" | tee "$RES/inspect/comparison.txt"

# ---- gate 6 on PyTorch's own CUDA library --------------------------------------------------------
say "gate 6 on libtorch_cuda.so"
K=$(pg inspect --json --kernels "$TORCH_LIB/libtorch_cuda.so" | python3 -c '
import json, sys
for co in json.load(sys.stdin)["files"][0]["code_objects"]:
    if co.get("arch") == "sm_90" and co.get("kernels"):
        k = co["kernels"][0]
        print(k if isinstance(k, str) else k.get("name") or k.get("symbol")); break')
echo "kernel picked from an sm_90 code object: $K" | tee -a "$RES/steps.txt"
for arch in sm_90 sm_70; do
	printf '{"arch":"%s","install":{"artifact":"%s"},"code_object":{"require_kernels":["%s"]}}\n' \
		"$arch" "$TORCH_LIB/libtorch_cuda.so" "$K" >"$W/g6-$arch.json"
	t0=$EPOCHREALTIME
	pg run -c "$W/g6-$arch.json" --gates 6 --json "$RES/09-gate6-libtorch_cuda-$arch.json" \
		>"$RES/09-gate6-libtorch_cuda-$arch.txt" 2>&1
	echo "gate 6 libtorch_cuda.so $arch: exit $? in $(awk "BEGIN{print $EPOCHREALTIME - $t0}")s" |
		tee -a "$RES/steps.txt" "$RES/verdicts.txt"
	grep "6 code" "$RES/09-gate6-libtorch_cuda-$arch.txt" | tee -a "$RES/verdicts.txt"
done
cp "$W/site/pvgext/_C.so" "$RES/inspect/pvgext_C.so"
