#!/bin/bash
# SPDX-License-Identifier: MIT
# Gate 6's node check against a real GPU and its real NVML (run there, not by CI; staged by
# tests/gpu/stage.sh with the fixtures copied to STAGE/fixtures):
#   cuda.so (nvcc cubins sm_80, sm_90) with arch sm_90   expected on an H200: pass, gpus sm_90
#   cuda.so with arch sm_80                               expected: arch-not-on-node (the sm_90
#                                                         cubin is what the GPU runs)
#   cuda-sm90a.fatbin with arch sm_90a                    expected: pass
#   nvidia-smi's compute_cap, for comparison
# Reports go to $OUT/node-arch.txt.
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/pvg-node-arch}
mkdir -p "$OUT"
exec > >(tee "$OUT/node-arch.txt") 2>&1
pg() { LD_LIBRARY_PATH=$STAGE/lib "$STAGE/bin/provgate" "$@"; }
echo "date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
cd "$(mktemp -d)"
for c in "cuda.so sm_90" "cuda.so sm_80" "cuda-sm90a.fatbin sm_90a"; do
	set -- $c
	jq -n --arg a "$STAGE/fixtures/$1" --arg arch "$2" '{arch: $arch, install: {artifact: $a}}' >cfg.json
	pg run -c cfg.json --gates 6 --json r.json >/dev/null 2>&1
	echo "== $1 arch $2: exit $? gate 6 $(jq -r '.gates[5].status' r.json)"
	jq -c '.gates[5].evidence.node' r.json
	jq -r '.gates[5].problems[] | "\(.code): \(.message)"' r.json
done
