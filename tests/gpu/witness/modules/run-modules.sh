#!/bin/bash
# SPDX-License-Identifier: MIT
# Code identity on the GPU (run there: bash STAGE/run-modules.sh; STAGE made by
# make-modules.sh). Every run leaves its witness file, the bench library's module log (what
# CUPTI gave at each load, and how each new record was bound) and its output under $OUT/NAME/.
set -u
S=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/pvg-modules-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PROVGATE_WITNESS_CUPTI=/usr/local/cuda/lib64/libcupti.so
LIB=$S/libprovgate-witness-bench.so
exec > >(tee "$OUT/run.txt") 2>&1
echo "date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
# cuobjdump's sm_90 ELF of each shared object and of the fatbin
mkdir -p "$OUT/elf"
for so in libpvgdup.so libpvgdup_z.so libvendor_ops.so k_fat.fatbin; do
	d=$(mktemp -d)
	(cd "$d" && cuobjdump -xelf all "$S/$so" >/dev/null 2>&1; ls)
	for f in "$d"/*; do cp "$f" "$OUT/elf/$so.$(basename "$f")"; done
	rm -rf "$d"
done
sha256sum "$OUT"/elf/* "$S"/*.cubin
one() { # NAME ENV... -- CMD...
	local name=$1; shift
	local env=()
	while [ "$1" != "--" ]; do env+=("$1"); shift; done
	shift
	local w=$OUT/$name
	rm -rf "$w"; mkdir -p "$w"
	echo "== $name: ${env[*]} $*"
	env "${env[@]}" CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$w \
		PVG_WITNESS_BENCH_MODLOG=$w/modlog.txt "$@" >"$w/stdout.txt" 2>&1
	echo "rc=$?"; cat "$w/stdout.txt"; cat "$w/modlog.txt"
	for f in "$w"/*.pvgw; do "$S/witness-tool" dump "$f" | grep -v '^record.*name="_ZN2at\|^record.*cublas\|nvjet' | head -60; done
}
one dup-vendor-lazy CUDA_MODULE_LOADING=LAZY -- "$S/dupsvc" vendor 12
one dup-artifact-lazy CUDA_MODULE_LOADING=LAZY -- "$S/dupsvc" artifact 12
one dup-both-eager CUDA_MODULE_LOADING=EAGER -- "$S/dupsvc" both 12
one dup-vendor-eager CUDA_MODULE_LOADING=EAGER -- "$S/dupsvc" vendor 12
one dup-compressed-lazy CUDA_MODULE_LOADING=LAZY PVGDUP_SO=libpvgdup_z.so -- "$S/dupsvc" artifact 3
one dup-compressed-eager CUDA_MODULE_LOADING=EAGER PVGDUP_SO=libpvgdup_z.so -- "$S/dupsvc" artifact 3
one lazy-after-start CUDA_MODULE_LOADING=LAZY -- "$S/dupsvc" lazy 5
one modload CUDA_MODULE_LOADING=LAZY -- "$S/modload" "$S"
one modload-eager CUDA_MODULE_LOADING=EAGER -- "$S/modload" "$S"
mkdir -p "$OUT/triton/cache"
one triton TRITON_CACHE_DIR=$OUT/triton-cache -- python3 "$S/triton_add.py"
echo "== load cost: import torch; one CUDA op (modules recorded vs not), 4 pairs"
cat >"$OUT/load.py" <<'PY'
import time; t = time.perf_counter()
import torch
x = torch.ones(1024, device="cuda"); y = (x @ torch.ones(1024, 1024, device="cuda")).sum() + torch.softmax(x, 0).sum()
torch.cuda.synchronize(); print(f"load_s={time.perf_counter() - t:.3f}")
PY
for i in 1 2 3 4; do
	for m in 1 0; do
		rm -rf /tmp/pvgw-load; mkdir -p /tmp/pvgw-load
		echo -n "modules=$m "; CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=/tmp/pvgw-load PVG_WITNESS_BENCH_MODULES=$m python3 "$OUT/load.py"
		[ $i = 1 ] && [ $m = 1 ] && "$S/witness-tool" dump /tmp/pvgw-load/*.pvgw | grep -E '^modules|^header' 
	done
done
echo "== tight loop: empty kernel <<<1,32>>>, blocks of 20000 launches, module recording off/on alternating in one process; 4 processes"
for i in 1 2 3 4; do
	rm -rf /tmp/pvgw-tight; mkdir -p /tmp/pvgw-tight
	PVG_OVH_TOGGLE=modules CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=/tmp/pvgw-tight taskset -c 2-3 "$S/demo" bench-toggle 20000 20
done
