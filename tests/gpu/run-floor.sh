#!/bin/bash
# SPDX-License-Identifier: MIT
# The floor on the H200 (run there, not by CI): PyTorch's libtorch_cuda.so under gate 6 (sm_90,
# a required kernel) and inspect, this build against the one before it in turn (ABAB, each
# run a fresh process: wall time and peak RSS); cuobjdump --list-elf on the same file as the
# reference; inspect --json of the CUDA libraries against cuobjdump --list-elf / --list-ptx
# (compare-inspect.py); gate 3 on two 1 GiB files against openssl dgst -sha256; gates 4+5 with
# 10,000 processes against ps -e and ss -ltnp.
# Expects a stage folder made by tests/gpu/stage.sh, plus bin/provgate-before (the build
# before, its libraries in lib/) and, for the chunks part, bin/hash-sweep. Results:
# $OUT/floor-results.tgz. PVG_FLOOR_PARTS picks parts: "gate6 inspect hash chunks procs" (all).
set -u
STAGE=$(cd "$(dirname "$0")" && pwd)
W=${PVG_GPU_WORK:-/tmp/pvgf}
OUT=${OUT:-$W/out}
RES=$W/results
rm -rf "$W" && mkdir -p "$RES" "$OUT"
pg() { LD_LIBRARY_PATH=$STAGE/lib "$STAGE/bin/provgate" "$@"; }
# one fresh run: label best_s median_s rss_mib rc (the references run without our libraries)
m() { python3 "$STAGE/measure.py" -n 1 "$@"; }
L="env LD_LIBRARY_PATH=$STAGE/lib"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$RES/steps.txt"; }
pids=()
finish() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	tar -C "$W" -czf "$OUT/floor-results.tgz" results
}
trap finish EXIT
{
	date -u +"date %Y-%m-%dT%H:%M:%SZ"
	uname -a
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
	echo "cpus: $(nproc); $(lscpu | grep -E '^Model name' | sed 's/  */ /g')"
	cuobjdump --version | tail -2
	python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda)'
	pg --version
	cat "$STAGE/provgate-source.txt" 2>/dev/null
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt"
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
LIB=$TORCH_LIB/libtorch_cuda.so
echo "libtorch_cuda.so: $(stat -c %s "$LIB") bytes, sha256 $(sha256sum "$LIB" | cut -c1-64)" | tee -a "$RES/env.txt"

parts=" ${PVG_FLOOR_PARTS:-gate6 inspect hash procs} "
part() { case "$parts" in *" $1 "*) return 0 ;; esac; return 1; }

# ---- gate 6 and inspect on libtorch_cuda.so, after (A) and before (B) in turn ------------------
if part gate6; then
say "gate 6 and inspect on libtorch_cuda.so"
K=$(pg inspect --json --kernels "$LIB" | python3 -c '
import json, sys
for co in json.load(sys.stdin)["files"][0]["code_objects"]:
    if co.get("arch") == "sm_90" and co.get("kernels"):
        k = co["kernels"][0]
        print(k if isinstance(k, str) else k.get("name") or k.get("symbol")); break')
echo "kernel picked from an sm_90 code object: $K" | tee -a "$RES/steps.txt"
for arch in sm_90 sm_70; do
	printf '{"arch":"%s","install":{"artifact":"%s"},"code_object":{"require_kernels":["%s"]}}\n' \
		"$arch" "$LIB" "$K" >"$W/g6-$arch.json"
done
cp "$W/g6-sm_90.json" "$RES/"
for side in after before; do
	b=$STAGE/bin/provgate; [ $side = before ] && b=$STAGE/bin/provgate-before
	LD_LIBRARY_PATH=$STAGE/lib "$b" run -c "$W/g6-sm_90.json" --gates 6 --json "$RES/gate6-sm_90-$side.json" \
		>"$RES/gate6-sm_90-$side.txt" 2>&1
	echo "gate 6 sm_90 $side: exit $?" | tee -a "$RES/verdicts.txt"
	LD_LIBRARY_PATH=$STAGE/lib "$b" run -c "$W/g6-sm_70.json" --gates 6 --json "$RES/gate6-sm_70-$side.json" \
		>"$RES/gate6-sm_70-$side.txt" 2>&1
	echo "gate 6 sm_70 $side: exit $? ($(grep '6 code' "$RES/gate6-sm_70-$side.txt" | cut -c1-90))" | tee -a "$RES/verdicts.txt"
done
gzip -9 "$RES"/gate6-*.json
for r in 1 2 3 4 5; do
	for side in after before; do
		b=$STAGE/bin/provgate; [ $side = before ] && b=$STAGE/bin/provgate-before
		m --label "gate6-sm_90-$side" -- $L "$b" run -c "$W/g6-sm_90.json" --gates 6 -q >>"$RES/timings.txt"
		m --label "inspect-$side" -- $L "$b" inspect "$LIB" >>"$RES/timings.txt"
	done
done
m --label "inspect--kernels-after" -- $L "$STAGE/bin/provgate" inspect --kernels "$LIB" >>"$RES/timings.txt"
m --label "cuobjdump--list-elf" -- cuobjdump --list-elf "$LIB" >>"$RES/timings.txt"
cat "$RES/timings.txt"
fi

# ---- inspect against cuobjdump ------------------------------------------------------------------
if part inspect; then
say "inspect vs cuobjdump"
mkdir -p "$RES/inspect"
inspect_one() { # NAME FILE
	pg inspect --json "$2" >"$RES/inspect/$1.inspect.json" 2>"$RES/inspect/$1.inspect.err"
	echo "inspect $1 exit $?" >>"$RES/inspect/exit-codes.txt"
	pg inspect "$2" >"$RES/inspect/$1.inspect.txt" 2>&1
	cuobjdump --list-elf "$2" >"$RES/inspect/$1.list-elf.txt" 2>&1
	cuobjdump --list-ptx "$2" >"$RES/inspect/$1.list-ptx.txt" 2>&1
}
for lib in libtorch_cuda.so libc10_cuda.so; do
	[ -e "$TORCH_LIB/$lib" ] && inspect_one "torch_$lib" "$TORCH_LIB/$lib"
done
NV=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0] if hasattr(nvidia,"__path__") else nvidia.__file__))' 2>/dev/null)
for pat in 'libcurand.so*' 'libcusparse.so*' 'libcufft.so*' 'libnccl.so*'; do
	f=$(find "$NV/nvidia" -name "$pat" -type f 2>/dev/null | head -1)
	[ -n "$f" ] && inspect_one "$(basename "$f")" "$f"
done
python3 "$STAGE/compare-inspect.py" "$RES/inspect" | tee "$RES/inspect/comparison.txt"
gzip -9 $(find "$RES/inspect" -size +1M -type f)
fi

# ---- gate 3: two 1 GiB files against one openssl dgst -sha256 -----------------------------------
if part hash || part chunks; then
say "gate 3 on 2 x 1 GiB"
mkdir -p "$W/h" && cd "$W/h"
head -c 1073741824 /dev/urandom >a.so && cp a.so b.so && cat a.so b.so >/dev/null
echo '{"build": {"artifact": "a.so"}, "install": {"artifact": "b.so"}}' >two.json
part hash && for r in 1 2 3 4 5; do
	m --label openssl-installed -- openssl dgst -sha256 b.so >>"$RES/timings-hash.txt"
	m --label gate3-after -- $L "$STAGE/bin/provgate" run -c two.json --gates 3 -q >>"$RES/timings-hash.txt"
	m --label gate3-before -- $L "$STAGE/bin/provgate-before" run -c two.json --gates 3 -q >>"$RES/timings-hash.txt"
done
if part chunks && [ -x "$STAGE/bin/hash-sweep" ]; then
	# the pair job under each read plan, in turn with openssl and cat (tests/bench/chunks)
	for r in 1 2 3; do
		m --label openssl-installed -- openssl dgst -sha256 b.so >>"$RES/timings-chunks.txt"
		m --label cat-both -- cat a.so b.so >>"$RES/timings-chunks.txt"
		for c in 32 64 128 256 1024; do
			m --label "pair-$c-KiB" -- $L "$STAGE/bin/hash-sweep" --chunk $c a.so b.so \
				>>"$RES/timings-chunks.txt"
		done
		m --label "pair-64-KiB-hasher-reads" -- $L "$STAGE/bin/hash-sweep" --chunk 64 --hasher-reads \
			a.so b.so >>"$RES/timings-chunks.txt"
	done
	cat "$RES/timings-chunks.txt"
fi
rm -f a.so b.so
cat "$RES/timings-hash.txt"
fi

# ---- gates 4+5 with 10,000 processes -------------------------------------------------------------
if part procs; then
say "gates 4+5 with 10,000 processes"
mkdir -p "$W/p" && cd "$W/p"
cp "$STAGE/libpvgfixture.so" build.so && sleep 0.05 && cp build.so inst.so && sleep 0.05 # times a clock tick apart
port=18777
python3 -c "import ctypes, http.server, socketserver, sys; ctypes.CDLL('$W/p/inst.so'); socketserver.TCPServer(('127.0.0.1', $port), http.server.SimpleHTTPRequestHandler).serve_forever()" pvg-floor-svc &
pids+=("$!")
cat >provgate.json <<J
{"build": {"artifact": "build.so"}, "install": {"artifact": "inst.so"},
 "service": {"match": ["pvg-floor-svc"], "port": $port, "family": ["pvg-floor-svc"]}}
J
for _ in $(seq 50); do ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.1; done
existing=$(ls /proc | grep -c '^[0-9]')
for ((i = 0; i < 10000 - existing; i++)); do sleep 900 & pids+=("$!"); done
echo "live processes: $(ls /proc | grep -c '^[0-9]')" | tee -a "$RES/steps.txt"
pg run --gates 4,5 --json "$RES/gates45-after.json" >"$RES/gates45-after.txt" 2>&1
echo "gates 4,5 after: exit $?" | tee -a "$RES/verdicts.txt"
LD_LIBRARY_PATH=$STAGE/lib "$STAGE/bin/provgate-before" run --gates 4,5 -q >"$RES/gates45-before.txt" 2>&1
echo "gates 4,5 before: exit $?" | tee -a "$RES/verdicts.txt"
for r in $(seq 10); do
	m --label gates45-after -- $L "$STAGE/bin/provgate" run --gates 4,5 -q >>"$RES/timings-procs.txt"
	m --label gates45-before -- $L "$STAGE/bin/provgate-before" run --gates 4,5 -q >>"$RES/timings-procs.txt"
	m --label ps-e -- ps -e >>"$RES/timings-procs.txt"
	m --label ss-ltnp -- ss -ltnp >>"$RES/timings-procs.txt"
done
cat "$RES/timings-procs.txt"
fi
say "done"
