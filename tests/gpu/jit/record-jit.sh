#!/bin/bash
# SPDX-License-Identifier: MIT
# Records real Triton and torch.compile caches on an NVIDIA GPU, with the witness's module
# records of the same processes, as fixtures for reading JIT code without a GPU. Run there:
# bash record-jit.sh STAGE (STAGE as stage-identity.sh makes it, with this folder's files
# copied in). Results: $OUT/jit-caches.tgz
#   1 pvgjit/kern.py installed, run: Triton compiles pvg_jit_scale (cache entry A)
#   2 the same kernel compiled for sm_80 without running (an entry for another arch)
#   3 kern.py edited (the body scales twice), installed again, run: entry B; A stays (stale)
#   4 a torch.compile'd function, run twice in two processes (the second from the caches)
set -u
STAGE=$(cd "${1:-$(dirname "$0")}" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgjit}
OUT=${OUT:-$W/out}
rm -rf "$W" && mkdir -p "$W/site/pvgjit" "$W/witness" "$OUT" "$W/rec"
export TRITON_CACHE_DIR=$W/rec/triton-cache TORCHINDUCTOR_CACHE_DIR=$W/rec/inductor-cache
export PROVGATE_WITNESS_DIR=$W/witness CUDA_INJECTION64_PATH=$STAGE/libprovgate-witness.so
export PROVGATE_WITNESS_INTERVAL_MS=200
cupti=$(python3 -c 'import nvidia.cuda_cupti, os; d = os.path.join(list(nvidia.cuda_cupti.__path__)[0], "lib"); print(os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("libcupti.so"))[0]))' 2>/dev/null)
[ -n "$cupti" ] || cupti=/usr/local/cuda/lib64/libcupti.so
export PROVGATE_WITNESS_CUPTI=$cupti
touch "$W/site/pvgjit/__init__.py"
run() { # NAME MODE
	(cd "$W" && PYTHONPATH=$W/site python3 "$STAGE/jit_service.py" "$2") >"$W/rec/$1.log" 2>&1
	echo "$1: exit $? $(tail -1 "$W/rec/$1.log")"
	# one file a process: torch.compile's compile workers write theirs beside the main one's
	local f
	for f in "$W"/witness/*.pvgw; do
		[ -f "$f" ] || continue
		mv "$f" "$W/rec/$1.$(basename "$f")"
		"$STAGE/witness-tool" dump "$W/rec/$1.$(basename "$f")" >"$W/rec/$1.$(basename "$f" .pvgw).dump.txt" 2>&1
	done
	date -u +"%Y-%m-%dT%H:%M:%S.%NZ $1 done" >>"$W/rec/times.txt"
}
install -m 0644 "$STAGE/pvgjit_kern.py" "$W/site/pvgjit/kern.py"
date -u +"%Y-%m-%dT%H:%M:%S.%NZ installed kern.py v1" >>"$W/rec/times.txt"
stat -c '%n %s %Y %Z' "$W/site/pvgjit/kern.py" >>"$W/rec/times.txt"
run 1-triton triton
run 2-aot-sm80 aot
sleep 1.1
sed 's/\* s, mask=m)/* s * s, mask=m)/' "$STAGE/pvgjit_kern.py" >"$W/kern-v2.py"
install -m 0644 "$W/kern-v2.py" "$W/site/pvgjit/kern.py"
date -u +"%Y-%m-%dT%H:%M:%S.%NZ installed kern.py v2" >>"$W/rec/times.txt"
stat -c '%n %s %Y %Z' "$W/site/pvgjit/kern.py" >>"$W/rec/times.txt"
cp "$W/site/pvgjit/kern.py" "$W/rec/kern-v2.py"; cp "$STAGE/pvgjit_kern.py" "$W/rec/kern-v1.py"
run 3-triton-changed triton
run 4a-compile compile
run 4b-compile-cached compile
find "$W/rec" -type f -printf '%TY-%Tm-%TdT%TH:%TM:%TS %s %P\n' | sort -k3 >"$W/rec/listing.txt"
cat "$W/rec/times.txt"
grep -h -e '^module' "$W"/rec/*.dump.txt | cut -c1-200
tar -C "$W" -czf "$OUT/jit-caches.tgz" rec
ls -l "$OUT"
