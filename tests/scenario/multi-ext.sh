# A vLLM-like tree with several HIP extensions built by one CMake + ninja -v log, for the
# several-artifacts scenarios (t-artifacts*.sh) and the multi-artifact benchmark. Source it
# with W (the scenario's folder, the current directory), svc (tests/helpers/fake-service);
# call mx_stop before leaving.
#
#   repo/         git, baseline "main"; branch "moe-align" changes csrc/moe/moe_align_sum_kernels.cu
#                 and vllm/_custom_ops.py; branch "common-header" changes csrc/common.cuh,
#                 which csrc/rocm/skinny_gemms.cu and csrc/moe/moe_align_sum_kernels.cu include
#   build/        CMake's build tree (CXX=hipcc, every .hip compiled for $MX_ARCHS):
#                 _C.abi3.so (csrc/activation_kernels), _moe_C.abi3.so (csrc/moe/*),
#                 _rocm_C.abi3.so (csrc/rocm/*)
#   logs/build.log   PyTorch's hipify (torch.utils.hipify, Debian's python3-torch), cmake, ninja -v
#   site/vllm/    the install folder (mx_install)
#   service: tests/helpers/fake-service as "VLLM::EngineCore" (API server on a port, engine,
#                 workers) dlopening the installed extensions it is given (mx_start)
# shellcheck shell=bash

: "${MX_ARCHS:=gfx906;gfx90a}"
mx_service_pid=
mx_port=
mx_tag=${mx_tag:-mx-$$-$RANDOM}

mx_git() { git -C "$W/repo" -c user.name=mx -c user.email=mx@example.invalid "$@"; }

# mx_repo: the tree at baseline "main", and its two candidate branches.
mx_repo() {
	mkdir -p "$W/logs" "$W/site/vllm" "$W/run" "$W/old"
	git init -q -b main "$W/repo"
	local r=$W/repo
	mkdir -p "$r/csrc/rocm" "$r/csrc/moe" "$r/vllm" "$r/docs"
	cat >"$r/csrc/common.cuh" <<-'CU'
	#pragma once
	#include <cuda_runtime.h>
	// shared by _rocm_C and _moe_C
	#define VLLM_WARP 64
	__device__ inline float vllm_scale(float x) { return x * 1.0f; }
	static inline int vllm_ok(void) { return cudaGetLastError() == cudaSuccess ? 0 : 1; }
	CU
	cat >"$r/csrc/rocm/skinny_gemms.cu" <<-'CU'
	#include "../common.cuh"
	#ifndef WVSPLITK_BLOCK
	#define WVSPLITK_BLOCK 64
	#endif
	extern "C" __global__ void wvSplitK(float *y, const float *a, const float *x, int m, int n)
	{
		int row = blockIdx.x * WVSPLITK_BLOCK + threadIdx.x;
		if (row >= m)
			return;
		float acc = 0.f;
		for (int k = 0; k < n; k++)
			acc += a[(size_t)row * n + k] * x[k];
		y[row] = vllm_scale(acc);
	}
	extern "C" int wvsplitk_launch(float *y, const float *a, const float *x, int m, int n)
	{
		wvSplitK<<<(m + WVSPLITK_BLOCK - 1) / WVSPLITK_BLOCK, WVSPLITK_BLOCK>>>(y, a, x, m, n);
		return vllm_ok();
	}
	CU
	cat >"$r/csrc/moe/moe_align_sum_kernels.cu" <<-'CU'
	#include "../common.cuh"
	#define MOE_ALIGN_BLOCK 128
	extern "C" __global__ void moe_align_block_size_kernel(const int *topk_ids, int *counts,
							       int numel, int num_experts)
	{
		int i = blockIdx.x * MOE_ALIGN_BLOCK + threadIdx.x;
		if (i < numel && topk_ids[i] < num_experts)
			atomicAdd(&counts[topk_ids[i]], (int)vllm_scale(1.f));
	}
	extern "C" int moe_align_launch(const int *ids, int *counts, int numel, int experts)
	{
		moe_align_block_size_kernel<<<(numel + MOE_ALIGN_BLOCK - 1) / MOE_ALIGN_BLOCK,
					      MOE_ALIGN_BLOCK>>>(ids, counts, numel, experts);
		return vllm_ok();
	}
	CU
	cat >"$r/csrc/moe/topk_softmax_kernels.cu" <<-'CU'
	#include <cuda_runtime.h>
	extern "C" __global__ void topkGatingSoftmax(const float *in, float *out, int n)
	{
		int i = blockIdx.x * blockDim.x + threadIdx.x;
		if (i < n)
			out[i] = in[i] > 0.f ? in[i] : 0.f;
	}
	extern "C" int topk_softmax_launch(const float *in, float *out, int n)
	{
		topkGatingSoftmax<<<(n + 255) / 256, 256>>>(in, out, n);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	CU
	cat >"$r/csrc/activation_kernels.cu" <<-'CU'
	#include <cuda_runtime.h>
	extern "C" __global__ void silu_and_mul_kernel(float *out, const float *in, int d)
	{
		int i = blockIdx.x * blockDim.x + threadIdx.x;
		if (i < d)
			out[i] = in[i] / (1.f + __expf(-in[i])) * in[d + i];
	}
	extern "C" int silu_and_mul(float *out, const float *in, int d)
	{
		silu_and_mul_kernel<<<(d + 255) / 256, 256>>>(out, in, d);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	CU
	# vLLM's layout: one target per extension, .hip sources compiled by hipcc as CXX
	cat >"$r/CMakeLists.txt" <<-'CMAKE'
	cmake_minimum_required(VERSION 3.20)
	project(vllm_mx CXX)
	set(ARCHS "gfx90a" CACHE STRING "offload archs")
	foreach(a ${ARCHS})
	  list(APPEND OFFLOAD --offload-arch=${a})
	endforeach()
	function(hip_ext name)
	  set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CXX)
	  add_library(${name} MODULE ${ARGN})
	  target_compile_options(${name} PRIVATE -x hip -O2 ${OFFLOAD})
	  target_link_options(${name} PRIVATE ${OFFLOAD})
	  set_target_properties(${name} PROPERTIES PREFIX "" SUFFIX ".abi3.so")
	endfunction()
	hip_ext(_C csrc/activation_kernels.hip)
	hip_ext(_moe_C csrc/moe/moe_align_sum_kernels.hip csrc/moe/topk_softmax_kernels.hip)
	hip_ext(_rocm_C csrc/rocm/skinny_gemms.hip)
	CMAKE
	printf '' >"$r/vllm/__init__.py"
	cat >"$r/vllm/_custom_ops.py" <<-'PY'
	def moe_align_block(num_tokens: int) -> int:
	    return 128
	PY
	printf '# notes\n' >"$r/docs/notes.md"
	printf '*.hip\n*_hip.cuh\n' >"$r/.gitignore"
	mx_git add -A && mx_git commit -qm "baseline"
	mx_git checkout -qb moe-align
	sed -i 's/#define MOE_ALIGN_BLOCK 128/#define MOE_ALIGN_BLOCK 256/' "$r/csrc/moe/moe_align_sum_kernels.cu"
	sed -i 's/return 128/return 256/' "$r/vllm/_custom_ops.py"
	mx_git commit -qam "moe_align: block 256"
	mx_git checkout -q main
	mx_git checkout -qb common-header
	sed -i 's/return x \* 1.0f;/return x * 0.5f;/' "$r/csrc/common.cuh"
	mx_git commit -qam "common.cuh: vllm_scale halves"
	mx_git checkout -q main
}

mx_hipify() {
	/usr/bin/python3 - "$W/repo" <<-'PY'
	import sys
	from torch.utils.hipify import hipify_python
	root = sys.argv[1]
	hipify_python.hipify(project_directory=root, output_directory=root,
	                     includes=[root + "/csrc/*"], show_detailed=True,
	                     show_progress=True, is_pytorch_extension=True)
	PY
}

# mx_build [--clean] [TARGET...]: hipify, (re)configure and ninja -v into logs/build.log (a new
# log each time, as a build that is logged); --clean starts from an empty build tree.
mx_build() {
	if [ "${1:-}" = --clean ]; then
		rm -rf "$W/build"
		shift
	fi
	{
		mx_hipify &&
			CXX=hipcc cmake -S "$W/repo" -B "$W/build" -G Ninja -DARCHS="$MX_ARCHS" \
				-DCMAKE_BUILD_TYPE=Release &&
			ninja -v -C "$W/build" "$@"
	} >"$W/logs/build.log" 2>&1 || { cat "$W/logs/build.log" >&2; return 1; }
}

# mx_build_full: every object rebuilt in the configured tree (as after `ninja -t clean`),
# so that the log compiles and links every extension.
mx_build_full() {
	ninja -C "$W/build" -t clean >/dev/null
	mx_build
}

# mx_generate DIR: the scenarios, each a folder DIR/NAME to copy with mx_use. All are built
# in DIR/w from one baseline build, one after another (CMake's cache and ninja's state name
# that folder), the baseline's outputs kept in old/ (times kept):
#   moe             "moe-align" rebuilt in full: logs/build.log compiles and links all three
#                   extensions
#   header          "common-header" built by ninja: _rocm_C and _moe_C recompiled and
#                   relinked, _C untouched
#   header-partial  the same but only `ninja _rocm_C.abi3.so`: _moe_C is the baseline's
# Kept once complete (DIR/done); a DIR already done is left as it is. Concurrent calls wait
# for the one making it.
mx_generate() {
	local dir=$1
	mkdir -p "$(dirname "$dir")"
	(
		flock 9
		[ -f "$dir/done" ] && exit 0
		rm -rf "$dir" && mkdir -p "$dir" || exit 1
		# one step after another: a failed step stops here (set -e is off inside an && list)
		W=$dir/w
		mkdir -p "$W" &&
			mx_repo &&
			mx_build --clean &&
			cp -p "$W"/build/*.abi3.so "$W/old/" &&
			cp -a "$W" "$dir/base" &&
			sleep 1 || exit 1 # the candidates' files are clearly newer than the baseline's
		mx_git checkout -q moe-align &&
			mx_build_full &&
			mv "$W" "$dir/moe" && cp -a "$dir/base" "$W" &&
			mx_git checkout -q common-header &&
			mx_build _rocm_C.abi3.so &&
			mv "$W" "$dir/header-partial" && cp -a "$dir/base" "$W" &&
			mx_git checkout -q common-header &&
			mx_build &&
			mv "$W" "$dir/header" || exit 1
		rm -rf "$dir/base"
		echo "$W" >"$dir/done"
	) 9>"$dir.lock"
}

# mx_use DIR NAME: a copy of scenario NAME of mx_generate DIR in $W, its log naming $W (the
# build tree there is not for rebuilding: CMake's cache names DIR/w).
mx_use() {
	cp -a "$1/$2/." "$W/"
	sed -i "s#$(cat "$1/done")#$W#g" "$W/logs/build.log"
}

# mx_cache: the folder the suite keeps generated scenarios in, one per version of the
# functions that make them, hipcc and hipify, so that they are built once per build folder.
mx_cache() {
	local key
	key=$({ declare -f mx_repo mx_hipify mx_build mx_build_full mx_generate; echo "$MX_ARCHS"
		hipcc --version 2>&1; /usr/bin/python3 -c \
		'import torch; print(torch.__version__)' 2>&1; } | sha256sum | cut -c1-16)
	echo "${PVG_BUILD:-${TMPDIR:-/tmp}}/mx-scenarios/$key"
}

# mx_install NAME...: installs vllm/*.py and build/NAME.abi3.so (new inodes, as cmake
# --install does); NAME=old/X installs the baseline's X instead.
mx_install() {
	mkdir -p "$W/site/vllm"
	install -m 644 "$W"/repo/vllm/*.py "$W/site/vllm/"
	local n
	for n in "$@"; do
		case $n in
		old/*) install -m 755 "$W/old/${n#old/}.abi3.so" "$W/site/vllm/${n#old/}.abi3.so" ;;
		*) install -m 755 "$W/build/$n.abi3.so" "$W/site/vllm/$n.abi3.so" ;;
		esac
	done
}

# mx_start NAME...: the service (API server on a free port, engine, two workers) dlopening
# site/vllm/NAME.abi3.so for each NAME; returns once it is ready.
mx_start() {
	mx_port=$((20000 + RANDOM % 12000))
	while ss -tanH "sport = :$mx_port" | grep -q .; do mx_port=$((20000 + RANDOM % 12000)); done
	local libs=() n
	for n in "$@"; do libs+=(--lib "$W/site/vllm/$n.abi3.so"); done
	sleep 0.05 # start times have a 10 ms resolution: start clearly after the install
	rm -f "$W/run/serve.pid" "$W/run/engine.pid"
	"$svc" --server --workers 2 --port "$mx_port" "${libs[@]}" \
		--pidfile "$W/run/serve.pid" --engine-pidfile "$W/run/engine.pid" \
		--log "$W/logs/server.log" --tag "$mx_tag" &
	mx_service_pid=$!
	for _ in $(seq 400); do [ -s "$W/run/serve.pid" ] && break; sleep 0.05; done
	[ -s "$W/run/serve.pid" ] || { echo "the service did not start" >&2; return 1; }
}

mx_stop() {
	if [ -n "$mx_service_pid" ] && kill -0 "$mx_service_pid" 2>/dev/null; then
		kill "$mx_service_pid" 2>/dev/null || true
		wait "$mx_service_pid" 2>/dev/null || true
	fi
	mx_service_pid=
}

mx_request() { # one warm-up request the markers answer; waits until the engine logged it
	printf '4096 5120 torch.bfloat16\n' >"$W/logs/server.log.request"
	local before
	before=$(grep -c 'request [0-9]* done' "$W/logs/server.log" || true)
	kill -USR1 "$(cat "$W/run/engine.pid")"
	for _ in $(seq 200); do
		[ "$(grep -c 'request [0-9]* done' "$W/logs/server.log" || true)" -gt "$before" ] && return 0
		sleep 0.05
	done
	echo "the service did not answer" >&2
	return 1
}

# mx_entry NAME [KERNEL...]: one artifacts[] entry (JSON) for build/NAME.abi3.so
mx_entry() {
	local n=$1
	shift
	jq -nc --arg n "$n" --args '{name: $n, build: ("build/" + $n + ".abi3.so"),
		install: ("site/vllm/" + $n + ".abi3.so")} +
		(if $ARGS.positional | length > 0 then {require_kernels: $ARGS.positional} else {} end)' "$@"
}

# mx_config ENTRY...: provgate.json for all seven gates, with "artifacts" as given (mx_entry);
# with no entry, the single form for _rocm_C.
mx_config() {
	local arts
	if [ $# -gt 0 ]; then
		arts=$(printf '%s\n' "$@" | jq -sc '{artifacts: .}')
	else
		arts='{"build": {"artifact": "build/_rocm_C.abi3.so"},
		       "install": {"artifact": "site/vllm/_rocm_C.abi3.so"},
		       "code_object": {"require_kernels": ["wvSplitK"]}}'
	fi
	jq -n --argjson a "$arts" --arg tag "$mx_tag" --argjson port "${mx_port:-20000}" '{
	  name: "mx-moe-align", arch: "gfx90a",
	  build: {log: "logs/build.log"},
	  source: {repo: "repo", baseline: "main", compiled: ["csrc/**"],
	           install_map: [{from: "vllm/", to: "site/vllm/"}],
	           ignore: ["docs/**", "**/*.md", ".gitignore", "CMakeLists.txt"]},
	  service: {match: ["VLLM::EngineCore " + $tag], port: $port,
	            family: ["VLLM:: " + $tag, "vllm serve fixture " + $tag]},
	  markers: {log: "logs/server.log", prefix: "DCU_KERNEL_DIAG",
	            require: [{selected: "True", shape: "(4096, 5120)", dtype: "torch.bfloat16"}],
	            forbid: ["fallback to unified triton"]}
	} * $a' >"$W/provgate.json"
}
