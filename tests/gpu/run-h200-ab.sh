#!/bin/bash
# SPDX-License-Identifier: MIT
# Real-GPU A/B of provgate compare on a CUDA machine (run there, not by CI; see README.md).
#
# Uses the stage of tests/gpu/stage.sh. Two builds of the same extension (pvgext, the half2
# kernel launched with 128 threads per block on side A, 256 on side B, each a commit on top
# of the repo's change), installed at the same path one after the other and served by the
# same PyTorch service script, each certified and benchmarked by provgate exec; then
# provgate compare with the extension declared as the change. Then the candidate again under
# a profiler (Nsight Compute when present, else CUDA_INJECTION64_PATH): refused by gate 5;
# and with service.allow_profiler: certified, but refused by compare. Results:
# $OUT/gpu-ab-results.tgz.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgab}
OUT=${OUT:-$W/out}
RES=$W/results
PORT=18100
rm -rf "$W" && mkdir -p "$W/logs" "$RES" "$OUT"
pg() { LD_LIBRARY_PATH=$STAGE/lib "$STAGE/bin/provgate" "$@"; }
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$RES/steps.txt"; }
stop_all() {
	for p in $(pgrep -f "pvg_service.py"); do kill -9 "$p" 2>/dev/null; done
	for _ in $(seq 50); do pgrep -f pvg_service.py >/dev/null || break; sleep 0.1; done
}
finish() {
	say "finish"
	stop_all
	cp "$W"/logs/* "$W"/*.json "$RES/" 2>/dev/null
	tar -C "$W" -czf "$OUT/gpu-ab-results.tgz" results
}
trap finish EXIT
{
	date -u +"date %Y-%m-%dT%H:%M:%SZ"
	nvidia-smi --query-gpu=name,driver_version,uuid --format=csv
	python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
	command -v ncu nsys
	pg --version
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt"

cp -a "$STAGE/repo" "$W/repo"
git -C "$W/repo" config user.name provgate-test
git -C "$W/repo" config user.email provgate-test@localhost
B=$(git -C "$W/repo" rev-parse HEAD)
git -C "$W/repo" checkout -q -b side-a
sed -i 's/int threads = 256;/int threads = 128;/' "$W/repo/csrc/pvg_kern.cu"
git -C "$W/repo" commit -qam "pvgext: 128 threads per block (side A)"
A=$(git -C "$W/repo" rev-parse HEAD)
cd "$W"

config() { # NAME [extra jq-free JSON for service]
	cat >"$W/$1.cfg.json" <<JSON
{
  "name": "h200-ab-$1",
  "arch": "sm_90",
  "build": { "log": "logs/build-$1.log", "artifact": "build-$1/_C.so" },
  "source": {
    "repo": "repo", "baseline": "baseline", "compiled": ["csrc/**"],
    "install_map": [{ "from": "pvgext/", "to": "$W/site/pvgext/" }],
    "ignore": ["**/*.md", "tools/**"]
  },
  "install": { "artifact": "site/pvgext/_C.so" },
  "service": { "match": ["PVG::EngineCore"], "port": $PORT, "family": ["PVG::", "pvg_service.py"]${2:-} },
  "code_object": { "require_kernels": ["pvg_rowscale_f16x2"] },
  "markers": {
    "log": "logs/server.log", "prefix": "KERNEL_DIAG",
    "require": [{ "selected": "True", "shape": "(4, 4096)", "dtype": "torch.float16" }],
    "facts": ["kernel version 2"]
  }
}
JSON
}
build_install() { # SIDE COMMIT
	say "side $1: build $2 (TORCH_CUDA_ARCH_LIST=9.0+PTX), install"
	git -C "$W/repo" checkout -q "$2"
	(cd "$W/repo" && TORCH_CUDA_ARCH_LIST="9.0+PTX" MAX_JOBS=8 python3 tools/build.py "$W/repo" "$W/build-$1") \
		>"$W/logs/build-$1.log" 2>&1 || { tail -30 "$W/logs/build-$1.log"; exit 1; }
	mkdir -p "$W/site/pvgext"
	install -m 0644 "$W/repo/pvgext/__init__.py" "$W/site/pvgext/__init__.py"
	install -m 0755 "$W/build-$1/_C.so" "$W/site/pvgext/_C.so"
	readelf -n "$W/site/pvgext/_C.so" | grep -i "build id" | sed "s/^/   side $1 _C.so /" | tee -a "$RES/steps.txt"
}
start_service() { # [PREFIX...]: a fresh log; the service (optionally under a profiler)
	stop_all
	[ -e "$W/logs/server.log" ] && mv "$W/logs/server.log" "$W/logs/server-$(date +%s%N).log"
	say "start service ${*:-(plain)}"
	(cd "$W/repo/tools" && PYTHONPATH="$W/site" PYTHONUNBUFFERED=1 \
		exec "$@" python3 pvg_service.py --port $PORT) 2>>"$W/logs/server.log" >"$W/logs/service-stdout.log" &
	timeout 300 python3 "$W/repo/tools/request.py" $PORT 4 4096 | tee -a "$RES/steps.txt"
}
cat >"$W/bench.sh" <<SH
#!/bin/sh
# the benchmark: 20 requests of the certified shape
for i in \$(seq 20); do python3 "$W/repo/tools/request.py" $PORT 4 4096 >/dev/null || exit 1; done
echo "20 requests ok"
SH
chmod +x "$W/bench.sh"
verdict() { # REPORT
	python3 - "$1" <<'PY' | tee -a "$RES/verdicts.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: certified={r['certified']}")
for g in r["gates"]:
    if g["status"] != "pass" or g["id"] == 5:
        print(f"   gate {g['id']} {g['name']:16} {g['status']:13} " + ",".join(p["code"] for p in g["problems"]))
        for p in g["problems"][:3]:
            print("      " + p["message"])
print("   profilers:", r["environment"]["service"]["profilers"] if r["environment"]["service"] else None)
PY
}

config A
config B
build_install A "$A"
start_service
say "side A: provgate exec"
pg exec -c A.cfg.json --out "$W/A.json" -- "$W/bench.sh" >"$RES/A.txt" 2>&1
echo "exec A: exit $?" | tee -a "$RES/verdicts.txt"
verdict "$W/A.json"

build_install B "$B"
start_service
say "side B: provgate exec"
pg exec -c B.cfg.json --out "$W/B.json" -- "$W/bench.sh" >"$RES/B.txt" 2>&1
echo "exec B: exit $?" | tee -a "$RES/verdicts.txt"
verdict "$W/B.json"

say "compare A B, the extension declared"
pg compare "$W/A.json" "$W/B.json" --differ 'service.shared_objects.*/pvgext/_C.so' \
	--json "$W/compare-AB.json" >"$RES/compare-AB.txt" 2>&1
echo "compare A B: exit $?" | tee -a "$RES/verdicts.txt"
cat "$RES/compare-AB.txt"
pg compare "$W/A.json" "$W/B.json" --differ 'service.shared_objects.*/pvgext/_C.so' -v \
	>"$RES/compare-AB-all-fields.txt" 2>&1
say "compare A B, nothing declared"
pg compare "$W/A.json" "$W/B.json" --json "$W/compare-AB-undeclared.json" >"$RES/compare-AB-undeclared.txt" 2>&1
echo "compare A B undeclared: exit $?" | tee -a "$RES/verdicts.txt"

# the candidate under a profiler
if command -v ncu >/dev/null; then
	prof=(ncu --target-processes all --launch-count 1 --export "$W/prof" --force-overwrite)
else
	prof=(env "CUDA_INJECTION64_PATH=$(ls /usr/local/cuda/lib64/libcupti.so | head -1)")
fi
start_service "${prof[@]}"
ps -eo pid,ppid,args | grep -e pvg_service -e ncu | grep -v grep >"$RES/profiled.ps.txt"
for p in $(pgrep -f "role engine"); do tr '\0' '\n' <"/proc/$p/environ" | grep -E 'INJECTION|PRELOAD|NV_|NSIGHT' >"$RES/profiled-engine-$p.environ.txt"; grep -E 'nsight|ncu|Injection|nvperf|cupti' "/proc/$p/maps" | awk '{print $6}' | sort -u >"$RES/profiled-engine-$p.maps.txt"; done
say "candidate under the profiler: provgate exec"
pg exec -c B.cfg.json --out "$W/B-profiled.json" -- "$W/bench.sh" >"$RES/B-profiled.txt" 2>&1
echo "exec B under ${prof[0]}: exit $?" | tee -a "$RES/verdicts.txt"
verdict "$W/B-profiled.json"
pg compare "$W/A.json" "$W/B-profiled.json" --differ 'service.shared_objects.*/pvgext/_C.so' \
	--json "$W/compare-A-Bprofiled.json" >"$RES/compare-A-Bprofiled.txt" 2>&1
echo "compare A B-profiled: exit $?" | tee -a "$RES/verdicts.txt"
cat "$RES/compare-A-Bprofiled.txt"
config B ', "allow_profiler": true'
pg exec -c B.cfg.json --out "$W/B-profiled-allowed.json" -- "$W/bench.sh" >"$RES/B-profiled-allowed.txt" 2>&1
echo "exec B under ${prof[0]}, allow_profiler: exit $?" | tee -a "$RES/verdicts.txt"
verdict "$W/B-profiled-allowed.json"
pg compare "$W/A.json" "$W/B-profiled-allowed.json" --differ 'service.shared_objects.*/pvgext/_C.so' \
	--json "$W/compare-A-Bprofiled-allowed.json" >"$RES/compare-A-Bprofiled-allowed.txt" 2>&1
echo "compare A B-profiled-allowed: exit $?" | tee -a "$RES/verdicts.txt"
cat "$RES/compare-A-Bprofiled-allowed.txt"
stop_all
