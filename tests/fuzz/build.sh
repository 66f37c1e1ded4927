#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan + libFuzzer) into build-fuzz/ and, with
# --run SECONDS, runs each for that long on a corpus seeded from tests/fixtures.
#   tests/fuzz/build.sh               build
#   tests/fuzz/build.sh --run 60      build, then fuzz each target for 60 s
#   tests/fuzz/build.sh --seed        build and seed each corpus-TARGET/, run nothing
#                                     (tests/fuzz/remote.sh runs them elsewhere)
# Needs clang (Debian's clang-14 or newer) and its libFuzzer runtime (libclang-rt-*-dev).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${PVG_FUZZ_BUILD:-$src/build-fuzz}
CC=${CC:-clang}
mkdir -p "$out"
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-D_GNU_SOURCE -fno-strict-aliasing -I"$src/lib" -I"$src/checks" -I"$out"
	$(pkg-config --cflags libcjson libgit2))
# what meson's configure_file writes (meson.build), with the default prefix
printf '#define PVG_VERSION "fuzz"\n#define PVG_DATADIR "/usr/local/share"\n#define PVG_WITNESS_LIB "/usr/local/lib/x86_64-linux-gnu/provgate/libprovgate-witness.so"\n' >"$out/pvg-version.h"
# the whole library (the gates' decisions are fuzzed too), instrumented but without main;
# lib/witness is the injection library, not part of it (its format and decoder are)
objs=()
while IFS= read -r c; do
	rel=${c#"$src"/}
	o="$out/$(printf '%s' "${rel%.c}" | tr / -).o"
	$CC "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$c" -o "$o"
	objs+=("$o")
done < <(find "$src/lib" "$src/checks" -name '*.c' -not -path "$src/lib/witness/*" | sort)
targets=(${PVG_FUZZ_TARGETS:-offload-bundle ccob amdgpu cuda-fatbin elf-sections buildlog ninja-deps markers proc-text config dsse hostlist elf-note compare cluster witness report-kind escape pymodule resolve triton})
for t in "${targets[@]}"; do
	$CC "${flags[@]}" "$src/tests/fuzz/fuzz-$t.c" "${objs[@]}" -o "$out/fuzz-$t" \
		-lelf -lcjson -lproc2 -lz -lzstd -llz4 -lcrypto -lgit2 -lpthread
done
echo "built: ${targets[*]/#/$out/fuzz-}"

if [ "${1:-}" = --run ] || [ "${1:-}" = --seed ]; then
	secs=${2:-60}
	fx="$src/tests/fixtures/codeobj"
	for t in "${targets[@]}"; do
		corpus="$out/corpus-$t"
		mkdir -p "$corpus"
		case $t in
		offload-bundle) cp "$fx"/bundle-gfx906.bin "$fx"/ccob-*.bin "$corpus/" ;;
		ccob) cp "$fx"/ccob-v*.bin "$corpus/" ;;
		amdgpu) /usr/bin/python3 - "$fx/bundle-gfx906.bin" "$corpus/gfx906.co" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
pos = 32 + 24 + struct.unpack_from("<Q", b, 32 + 16)[0]
off, size = struct.unpack_from("<QQ", b, pos)
open(sys.argv[2], "wb").write(b[off:off + size])
PY
		;;
		cuda-fatbin) cp "$fx"/cuda*.fatbin "$corpus/" ;;
		elf-sections) cp "$fx"/hip-gfx906.so "$fx"/cuda.so "$fx"/ccob-v3-zstd.bin "$corpus/" ;;
		proc-text) cat /proc/self/maps >"$corpus/maps"; cat /proc/net/tcp >"$corpus/tcp"; cat /proc/self/mountinfo >"$corpus/mountinfo"; cat /proc/self/stat >"$corpus/stat"
			cat /proc/net/tcp6 >"$corpus/tcp6" 2>/dev/null || true ;;
		config) cp "$src"/tests/fixtures/*/provgate*.json "$corpus/" 2>/dev/null || true
			printf '{"name": "x", "build": {"artifact": "a"}} // c\n' >"$corpus/seed.json"
			# the several-artifacts form (SPEC 9), and the mistakes it refuses
			cat >"$corpus/artifacts.json" <<'JSON'
{"arch": "gfx90a", "build": {"log": "logs/build.log"}, "install": {"python": "/opt/venv/bin/python3"},
 /* vLLM's extensions */
 "artifacts": [
  {"name": "_rocm_C", "build": "b/_rocm_C.abi3.so", "install": "/opt/site/vllm/_rocm_C.abi3.so",
   "compiled": ["csrc/rocm/**"], "require_kernels": ["wvSplitK"]},
  {"name": "_moe_C", "build": "b/_moe_C.abi3.so", "python_module": "vllm._moe_C", "arch": "gfx90a:xnack-"},
  {"name": "_C", "build": "b-{node}/_C.abi3.so", "install": "/local/{node}/_C.abi3.so"}]}
JSON
			printf '{"artifacts": [{"name": "a", "build": "a.so"}, {"name": "a", "build": "a.so", "instal": 1}]}' >"$corpus/artifacts-dup.json"
			printf '{"build": {"artifact": "a"}, "artifacts": [{"name": "a", "build": "b", "install": "c", "python_module": "d"}]}' >"$corpus/artifacts-both.json"
			printf '{"artifacts": []}' >"$corpus/artifacts-empty.json" ;;
		buildlog) cp "$src"/tests/fixtures/buildlog/*.log "$src"/tests/fixtures/buildlog/multi/*.log "$corpus/" ;;
		ninja-deps) cp "$src"/tests/fixtures/buildlog/multi/ninja_deps "$src"/tests/fixtures/buildlog/multi/ninja_log "$corpus/"
			find "$src"/tests/fixtures/buildlog/multi/make-deps -name '*.d' -exec cp {} "$corpus/" \; ;;
		report-kind) printf '{"schema": "provgate.report/1"}' >"$corpus/report.json"
			printf '{"payloadType": "x", "payload": "eyJfdHlwZSI6ImluLXRvdG8iLCJwcmVkaWNhdGVUeXBlIjoicHJvdmdhdGUifQ=="}' >"$corpus/dsse.json" ;;
		escape) printf '\033[2J\n{\233 \302\233 \357\277\276 */ \342\200\250 <&>"' >"$corpus/a"
			printf 'svc \355\240\200 \364\220\200\200 \300\257 \342\200\256 x' >"$corpus/b" ;;
		triton) cp "$src"/tests/fixtures/triton-cache/*.json "$corpus/" 2>/dev/null || true
			printf '{"hash": "ab", "target": {"backend": "hip", "arch": "gfx936:xnack-", "warp_size": 64}, "name": "k", "triton_version": "3.6.0"}' >"$corpus/meta.json"
			printf '#loc = loc("/site/pkg/ops/k.py":7:0)\nmodule {\n}' >"$corpus/k.source"
			printf 'import triton\n@triton.autotune(configs=[])\n@triton.jit\ndef k(x):\n    pass\n' >"$corpus/k.py"
			printf 'file:///opt/rocm/lib/librocsparse.so.0#offset=0x3000&size=4096' >"$corpus/uri-file"
			printf 'memory://1234#offset=0x7f00deadbeef&size=5504' >"$corpus/uri-mem" ;;
		pymodule) cp "$src"/tests/fixtures/pymodule/*.cfg "$src"/tests/fixtures/pymodule/*.py \
			"$src"/tests/fixtures/pymodule/*.pth "$corpus/" ;;
		resolve) # a tree and lookups (fuzz-resolve.c): links up, out, absolute, looping, to
			# "file/", chains of 40 and 41
			printf 'd a\nd a/b\nf a/b/f\np a/fifo\nl a/up ../..\nl a/abs /a/b/f\nl esc ../../outside\nl loop loop\nl sl a/b/f/\n? a/up/a/abs\n? esc\n? /../../outside\n? loop\nD a/up\n? a/b/f/\n? sl\n? a/fifo\n' >"$corpus/a"
			printf 'd d\nf d/f\nl s .\n? %s\n? %s\nl c0 c1\nl c1 /c2\nl c2 ./d/\n? c0/f\nD c0\n' \
				"$(printf 's/%.0s' $(seq 40))d/f" "$(printf 's/%.0s' $(seq 41))d/f" >"$corpus/b" ;;
		hostlist) printf 'gpu[01-04,07]' >"$corpus/a"; printf 'r[1-2]n[001-3],x' >"$corpus/b"
			printf 'reports/{node}-{{x}}.json' >"$corpus/c" ;;
		dsse) cp "$src"/tests/fixtures/attest/*.json "$corpus/" ;;
		cluster) printf '{"schema": "provgate.report/1", "host": {"node": "n2"}, "certified": true, "started_at": "2026-11-29T12:00:00Z", "gates": []}' >"$corpus/n2.json" ;;
		elf-note) cp /usr/lib/x86_64-linux-gnu/libc.so.6 "$fx"/cuda.so "$corpus/" 2>/dev/null || true ;;
		compare) /usr/bin/python3 - "$corpus/pair" "$src/tests/gpu/results" <<'PY'
import glob, json, sys
# two real reports with an environment (the GPU A/B's), small enough for -max_len
for a in sorted(glob.glob(sys.argv[2] + "/*/A.json"))[:1]:
    r = json.load(open(a))
    r["environment"]["service"]["shared_objects"] = r["environment"]["service"]["shared_objects"][:4]
    t = json.dumps(r, separators=(",", ":")).encode()
    open(sys.argv[1], "wb").write(t + b"\0" + t)
PY
		;;
		witness) cp "$src"/tests/fixtures/witness-modules/*.pvgw "$src"/tests/gpu/results/*/*.pvgw "$src"/tests/gpu/results/*/*/*.engine.pvgw "$fx"/bundle-gfx906.bin "$corpus/" ;;
		markers) cp "$src"/tests/fixtures/markers/*.log "$corpus/" 2>/dev/null ||
			printf '(EngineCore_DP0 pid=1) INFO 11-29 12:00:00 [a.py:1] DCU_KERNEL_DIAG selected=True shape=(1, 2) dtype="x y"\n' >"$corpus/seed.log"
			# the recorded runtime logs, cut to -max_len, and zone files
			for f in "$src"/tests/fixtures/ctrlog/*.log; do head -c 60000 "$f" >"$corpus/$(basename "$f")"; done
			cp /usr/share/zoneinfo/Asia/Shanghai "$corpus/tz-shanghai" 2>/dev/null || true
			cp /usr/share/zoneinfo/America/Los_Angeles "$corpus/tz-la" 2>/dev/null || true
			printf 'AEST-10AEDT,M10.1.0,M4.1.0/3' >"$corpus/tz-rule" ;;
		esac
		# inputs that once crashed a target (tests/fuzz/crashes/TARGET-*) stay in its corpus
		cp "$src"/tests/fuzz/crashes/"$t"-* "$corpus/" 2>/dev/null || true
		[ "$1" = --seed ] && continue
		echo "== fuzz-$t for ${secs}s"
		# crash inputs go to $out/artifacts, never into the source tree
		mkdir -p "$out/artifacts"
		"$out/fuzz-$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 \
			-artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 "$corpus" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" || true
	done
fi
