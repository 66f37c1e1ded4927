#!/bin/bash
# SPDX-License-Identifier: MIT
# The dispatch witness on an NVIDIA GPU (run there, not by CI): STAGE holds demo (built by
# make-stage.sh from demo.cu) and libprovgate-witness.so (a release build). Runs demo under
# CUDA_INJECTION64_PATH and keeps its witness file (with runtime and driver callbacks, and with
# driver callbacks only: PROVGATE_WITNESS_RUNTIME=0); runs demo without and with the witness
# for the launch-rate figures; a small PyTorch loop without and with it. Everything goes to
# $OUT (the first run, results/2026-12-01-h200-witness/run.txt, was made by the version of
# this script in commit 90665ce: one mode, 3 and 2 rounds).
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/pvg-witness-out}
mkdir -p "$OUT"
W=/tmp/pvg-witness
rm -rf "$W" && mkdir -p "$W/demo" "$W/torch" "$W/torch-driver" "$W/bench"
log=$OUT/run.txt
exec > >(tee "$log") 2>&1
echo "date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
cupti=$(python3 -c 'import nvidia.cuda_cupti, os; d = os.path.join(list(nvidia.cuda_cupti.__path__)[0], "lib"); print(os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("libcupti.so"))[0]))' 2>/dev/null)
for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
	[ -z "$cupti" ] && [ -e "$c" ] && cupti=$c
done
echo "cupti $cupti"
export PROVGATE_WITNESS_CUPTI=$cupti
LIB=$STAGE/libprovgate-witness.so

echo "== demo under the witness (runtime and driver callbacks), then driver callbacks only"
CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/demo "$STAGE/demo"; echo "demo rc=$?"
cp "$W"/demo/*.pvgw "$OUT/demo.pvgw"
mkdir -p "$W/demo-driver"
CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/demo-driver PROVGATE_WITNESS_RUNTIME=0 "$STAGE/demo"; echo "demo rc=$?"
cp "$W"/demo-driver/*.pvgw "$OUT/demo-driver-only.pvgw"

echo "== launch rate: 200000 launches of an empty kernel; 5 rounds of without / with / with, driver only"
for i in 1 2 3 4 5; do
	echo -n "without:     "; "$STAGE/demo" bench 200000
	echo -n "with:        "; CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/bench "$STAGE/demo" bench 200000
	echo -n "driver only: "; CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/bench PROVGATE_WITNESS_RUNTIME=0 "$STAGE/demo" bench 200000
done

echo "== PyTorch decode-like loop (small matmul + add + softmax per step, 3000 steps); 3 rounds"
cat >"$W/loop.py" <<'PY'
import time, torch
x = torch.randn(8, 4096, device="cuda", dtype=torch.float16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
for _ in range(50):
    y = torch.softmax(x @ w + 1.0, dim=-1)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(3000):
    y = torch.softmax(x @ w + 1.0, dim=-1)
torch.cuda.synchronize()
print(f"torch_loop steps=3000 us_per_step={(time.perf_counter() - t) / 3000 * 1e6:.2f}")
PY
for i in 1 2 3; do
	echo -n "without:     "; timeout 120 python3 "$W/loop.py"
	echo -n "with:        "; CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/torch timeout 120 python3 "$W/loop.py"
	echo -n "driver only: "; CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_DIR=$W/torch-driver PROVGATE_WITNESS_RUNTIME=0 timeout 120 python3 "$W/loop.py"
done
cp "$(ls -t "$W"/torch/*.pvgw | head -1)" "$OUT/torch-loop.pvgw" 2>/dev/null
cp "$(ls -t "$W"/torch-driver/*.pvgw | head -1)" "$OUT/torch-loop-driver-only.pvgw" 2>/dev/null
echo "finished"
