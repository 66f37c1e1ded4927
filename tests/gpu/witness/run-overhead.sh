#!/bin/bash
# SPDX-License-Identifier: MIT
# The witness's cost to a PyTorch decode-like loop, on an NVIDIA GPU (run there, not by CI):
# STAGE holds libprovgate-witness.so (make-stage.sh). Processes without and with the witness
# (driver callbacks, the default) alternate, ROUNDS each; every process warms up, then times
# BLOCKS blocks of STEPS steps (fp16 8x4096 @ 4096x4096, + 1, softmax: the shape of one
# decode step's small kernels) and prints each block's microseconds per step. The summary
# takes each process's fastest block (the one least disturbed) and compares the medians of
# those between the two modes. Everything goes to $OUT/overhead.txt.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/pvg-witness-out}
ROUNDS=${ROUNDS:-8} BLOCKS=${BLOCKS:-12} STEPS=${STEPS:-500}
mkdir -p "$OUT"
W=/tmp/pvg-witness-ovh
rm -rf "$W" && mkdir -p "$W/wit"
exec > >(tee "$OUT/overhead.txt") 2>&1
echo "date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
cupti=$(python3 -c 'import nvidia.cuda_cupti, os; d = os.path.join(list(nvidia.cuda_cupti.__path__)[0], "lib"); print(os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("libcupti.so"))[0]))' 2>/dev/null)
for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
	[ -z "$cupti" ] && [ -e "$c" ] && cupti=$c
done
echo "cupti $cupti rounds $ROUNDS blocks $BLOCKS steps $STEPS"
export PROVGATE_WITNESS_CUPTI=$cupti
cat >"$W/loop.py" <<'PY'
import sys, time, torch
blocks, steps = int(sys.argv[1]), int(sys.argv[2])
x = torch.randn(8, 4096, device="cuda", dtype=torch.float16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
for _ in range(2000):
    y = torch.softmax(x @ w + 1.0, dim=-1)
torch.cuda.synchronize()
out = []
for _ in range(blocks):
    t = time.perf_counter()
    for _ in range(steps):
        y = torch.softmax(x @ w + 1.0, dim=-1)
    torch.cuda.synchronize()
    out.append((time.perf_counter() - t) / steps * 1e6)
print(" ".join(f"{v:.3f}" for v in out))
PY
for i in $(seq "$ROUNDS"); do
	echo -n "without $i: "; timeout 120 python3 "$W/loop.py" "$BLOCKS" "$STEPS"
	echo -n "with $i: "; CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so \
		PROVGATE_WITNESS_DIR=$W/wit timeout 120 python3 "$W/loop.py" "$BLOCKS" "$STEPS"
done
ls "$W/wit" | head -3
python3 - "$OUT/overhead.txt" <<'PY'
import re, statistics, sys
best = {"without": [], "with": []}
for line in open(sys.argv[1]):
    m = re.match(r"(without|with) \d+: ([0-9. ]+)$", line.strip())
    if m:
        best[m.group(1)].append(min(float(v) for v in m.group(2).split()))
a, b = statistics.median(best["without"]), statistics.median(best["with"])
print(f"fastest block per process, median over {len(best['without'])}/{len(best['with'])} processes: "
      f"without {a:.3f} us/step, with {b:.3f} us/step, ratio {b / a:.4f} ({(b / a - 1) * 100:+.2f} %)")
print("without", " ".join(f"{v:.3f}" for v in sorted(best["without"])))
print("with   ", " ".join(f"{v:.3f}" for v in sorted(best["with"])))
PY
