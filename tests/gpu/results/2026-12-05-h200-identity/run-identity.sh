#!/bin/bash
# SPDX-License-Identifier: MIT
# The last link by content, on an NVIDIA GPU (run there, not by CI; staged by
# stage-identity.sh). Builds and installs the CUDA extension of tests/gpu/ext as run-h200.sh
# does, builds a vendor plugin (tests/gpu/ext/vendor/vendor_ops.cu: an older copy of
# pvg_rowscale_f16x2 under the same name) that the engine maps at start, and runs the
# PyTorch service (tools/pvg_service.py) with the witness (the variables `provgate exec
# --witness` prints). Configs: cfg-require.json (witness.require: rowscale, grid 32, block
# 256, at least 3) and cfg-default.json (a witness and no require: the change's own kernels
# are required by default). Every step starts a fresh service:
#   01 twelve (4, 4096) calls through the vendor plugin only         expected: refused (gate 7
#      names the vendor object and the digest; the default rule names csrc/pvg_kern.cu)
#   02 three (4, 4096) calls of the extension, the plugin mapped     expected: certified
#   03 only the non-contiguous input (the extension falls back), cfg-default: refused naming
#      csrc/pvg_kern.cu; then three selected calls in the same service: certified
#   04 exec over a benchmark (a decode step: cuBLAS and softmax; a Triton kernel) after a
#      warm-up of rowscale alone                                     expected: refused by the
#      after-check (modules loaded and a Triton kernel compiled while it ran); 04b the same
#      after a warm-up that runs the benchmark's requests once       expected: certified
#   05 a service with VLLM_TORCH_PROFILER_DIR: certified (a note) before any profile; after
#      POST /start_profile, a request, POST /stop_profile: refused by gate 5 (certify and
#      exec's before-check); 05b a fresh service with an empty folder: certified
# STEPS (default "01 02 03 04 05") picks the steps. Results in $OUT/identity-results.tgz.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgwid}
PORT=18009
TGZ=identity-results.tgz
. "$STAGE/common.sh"
STEPS=${STEPS:-01 02 03 04 05}
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
echo "steps $STEPS" >>"$RES/env.txt"
export PROVGATE_WITNESS_INTERVAL_MS=200
cp -a "$STAGE/repo" "$W/repo"
cd "$W"
build_install
say "vendor plugin (an older copy of pvg_rowscale_f16x2)"
mkdir -p "$W/vendor"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC "$STAGE/vendor_ops.cu" -o "$W/vendor/libvendor_ops.so" \
	>"$W/logs/vendor-build.log" 2>&1 || { cat "$W/logs/vendor-build.log"; exit 1; }
export PVG_VENDOR_OPS=$W/vendor/libvendor_ops.so
# the kernel's code in each object, as the driver gets it (the reference for the digests)
for so in "$W/site/pvgext/_C.so" "$PVG_VENDOR_OPS"; do
	d=$W/cubins/$(basename "$so")
	mkdir -p "$d" && (cd "$d" && cuobjdump -xelf all "$so" >/dev/null 2>&1)
	for c in "$d"/*; do [ -f "$c" ] && echo "cubin $(sha256sum "$c" | cut -c1-64) $(basename "$so") $(basename "$c")"; done
done | tee -a "$RES/steps.txt" >"$RES/cubins.txt"

# (4, 4096) fp16: n2 = 8192 half2, 256 threads per block, 32 blocks (pvg_kern.cu)
write_cfg() { # FILE WITNESS_REQUIRE_LINE
	cat >"$1" <<JSON
{
  // written by tests/gpu/witness/run-identity.sh: gate 7 reads the witness
  "name": "h200-pvgext-identity",
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
    $2
    "dir": "$WIT",
    "library": "$STAGE/libprovgate-witness.so"
  }
}
JSON
}
write_cfg "$W/cfg-require.json" '"require": [{ "kernel": "pvg_rowscale_f16x2", "grid": [32], "block": [256], "min_count": 3 }],'
write_cfg "$W/cfg-default.json" ''
pg exec -c "$W/cfg-require.json" --witness "$WIT" >"$RES/exec-witness-before.txt" 2>&1
eval "$(grep '^ *export \(PROVGATE_WITNESS_DIR\|CUDA_INJECTION64_PATH\)=' "$RES/exec-witness-before.txt")"
if [ -z "${CUDA_INJECTION64_PATH:-}" ]; then
	export PROVGATE_WITNESS_DIR=$WIT CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so
	echo "exec --witness printed no variables; set them by hand" | tee -a "$RES/steps.txt"
fi
dump_engine() { # NAME: the engine's witness file, read with the gate's parser
	engine_file "$1"
	[ -f "$RES/$1.engine.pvgw" ] && "$STAGE/witness-tool" dump "$RES/$1.engine.pvgw" >"$RES/$1.engine.dump.txt" 2>&1
	grep -i -e '^header' -e '^module' -e rowscale -e tri_scale "$RES/$1.engine.dump.txt" 2>/dev/null | cut -c1-300
}
fresh() { stop_all; rm -f "$WIT"/*.pvgw; start_service; }
exec_bench() { # NAME CONFIG EXPECTATION -- REQUESTS (";"-separated)
	local name=$1 cfg=$2 expect=$3 reqs=$4
	local bench="$W/bench-$name.sh"
	{
		echo "#!/bin/bash"
		echo "set -e"
		local IFS=';' r
		for r in $reqs; do echo "python3 $W/repo/tools/request.py $PORT $r"; done
	} >"$bench"
	chmod +x "$bench"
	pg exec -c "$cfg" --keep-going --out "$RES/$name.json" -- "$bench" >"$RES/$name.txt" 2>&1
	local rc=$?
	echo "exec $name ($(basename "$cfg")): exit $rc (expected: $expect)" | tee -a "$RES/steps.txt" "$RES/verdicts.txt"
	cat "$RES/$name.txt"
}

if step 01; then
fresh
for _ in $(seq 12); do request 4 4096 v; done
settle
dump_engine 01-vendor
certify 01a-vendor-require "$W/cfg-require.json" "refused by gate 7: rowscale ran only from libvendor_ops.so"
certify 01b-vendor-default "$W/cfg-default.json" "refused by gate 7: csrc/pvg_kern.cu's kernels ran only from another object"
fi

if step 02; then
fresh
for _ in 1 2 3; do request 4 4096; done
settle
dump_engine 02-artifact
certify 02a-artifact-require "$W/cfg-require.json" "certified"
certify 02b-artifact-default "$W/cfg-default.json" "certified"
fi

if step 03; then
fresh
for _ in 1 2 3; do request 4 4096 t; done
settle
dump_engine 03-fallback
certify 03a-fallback-default "$W/cfg-default.json" "refused by gate 7: csrc/pvg_kern.cu's kernels never ran"
for _ in 1 2 3; do request 4 4096; done
settle
dump_engine 03-selected
certify 03b-selected-default "$W/cfg-default.json" "certified"
fi

if step 04; then
fresh
for _ in 1 2 3; do request 4 4096; done
settle
exec_bench 04a-cold "$W/cfg-require.json" "refused by the after-check: modules loaded during the benchmark" \
	"4 4096 d 5;4 4096 r;4 4096"
dump_engine 04a-cold
fresh
for r in "4 4096" "4 4096" "4 4096" "4 4096 d 1" "4 4096 r"; do request $r; done
settle
exec_bench 04b-warm "$W/cfg-require.json" "certified" "4 4096 d 5;4 4096 r;4 4096"
dump_engine 04b-warm
fi

if step 05; then
export VLLM_TORCH_PROFILER_DIR=$W/profiles
mkdir -p "$VLLM_TORCH_PROFILER_DIR"
fresh
for _ in 1 2 3; do request 4 4096; done
settle
certify 05a-profile-capable "$W/cfg-require.json" "certified, with a note that the service can be profiled"
curl -s -X POST "http://127.0.0.1:$PORT/start_profile" | tee -a "$RES/steps.txt"
request 4 4096
curl -s -X POST "http://127.0.0.1:$PORT/stop_profile" | tee -a "$RES/steps.txt"
sleep 2
ls -l "$VLLM_TORCH_PROFILER_DIR" | tee -a "$RES/steps.txt"
for _ in 1 2 3; do request 4 4096; done
settle
certify 05b-profiled "$W/cfg-require.json" "refused by gate 5: profiler traces written after the service started"
exec_bench 05c-profiled-exec "$W/cfg-require.json" "refused by gate 5 before the benchmark" "4 4096"
rm -rf "$VLLM_TORCH_PROFILER_DIR" && mkdir -p "$VLLM_TORCH_PROFILER_DIR"
fresh
for _ in 1 2 3; do request 4 4096; done
settle
certify 05d-fresh "$W/cfg-require.json" "certified"
unset VLLM_TORCH_PROFILER_DIR
fi
