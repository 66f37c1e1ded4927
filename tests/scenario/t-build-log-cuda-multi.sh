#!/usr/bin/env bash
# Gate 1 with several CUDA artifacts: two extensions (_gemm_C, _moe_C) compiled by nvcc for
# sm_90 and linked by one `ninja -v` log, the way torch.utils.cpp_extension's build.ninja
# writes it (one compile rule per .cu, one link per ext_module, objects given by path).
# Real nvcc output; no GPU is needed to build.
source "$PVG_SRC/tests/lib.sh"

NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

# repo/ at baseline "base", then a change to csrc/moe/align.cu; build/ from one ninja log
setup_cuda_tree() {
	need git jq ninja "$NVCC"
	git init -q -b main repo
	mkdir -p repo/csrc/gemm repo/csrc/moe build inst
	cat >repo/csrc/gemm/gemm.cu <<-'CU'
	extern "C" __global__ void gemm_k(float *y, const float *x, int n)
	{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }
	extern "C" int gemm_launch(float *y, const float *x, int n)
	{ gemm_k<<<(n + 127) / 128, 128>>>(y, x, n); return 0; }
	CU
	cat >repo/csrc/moe/align.cu <<-'CU'
	extern "C" __global__ void moe_align_k(int *out, const int *ids, int n)
	{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = ids[i] & 63; }
	extern "C" int moe_align_launch(int *out, const int *ids, int n)
	{ moe_align_k<<<(n + 63) / 64, 64>>>(out, ids, n); return 0; }
	CU
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	echo "// tuned" >>repo/csrc/moe/align.cu
	git -C repo -c user.name=t -c user.email=t@t commit -qam "moe: align"
	touch -d '1 minute ago' repo/csrc/moe/align.cu
	local gen="-gencode arch=compute_90,code=sm_90"
	cat >build/build.ninja <<-NINJA
	cuda_cflags = -Xcompiler -fPIC $gen
	rule cuda_compile
	  command = $NVCC \$cuda_cflags -c \$in -o \$out
	rule link
	  command = g++ -shared \$in -L/usr/local/cuda/lib64 -lcudart -o \$out
	build $PWD/build/gemm.o: cuda_compile $PWD/repo/csrc/gemm/gemm.cu
	build $PWD/build/align.o: cuda_compile $PWD/repo/csrc/moe/align.cu
	build _gemm_C.so: link $PWD/build/gemm.o
	build _moe_C.so: link $PWD/build/align.o
	NINJA
	(cd build && ninja -v -j1) >build.log 2>&1 || { cat build.log; fail "nvcc build failed"; }
	cp build/_gemm_C.so build/_moe_C.so inst/
}

# config ENTRIES: an artifacts[] config, sm_90
config() {
	cat >provgate.json <<JSON
{ "arch": "sm_90",
  "build": {"log": "build.log"},
  "artifacts": [$1],
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "include_uncommitted": false} }
JSON
}
entry() { echo "{\"name\": \"$1\", \"build\": \"build/$1.so\", \"install\": \"inst/$1.so\"${2:+, \"arch\": \"$2\"}}"; }

gate1() {
	pg run -c provgate.json --gates 1 --json report.json
	status=$(gate_status report.json 1)
	codes=$(problem_codes report.json 1)
}

test_cuda_extensions_of_one_log_each_proven() {
	setup_cuda_tree
	grep -q -- "-gencode arch=compute_90,code=sm_90" build.log || fail "no nvcc line in the log"
	config "$(entry _gemm_C), $(entry _moe_C)"
	gate1
	assert_eq "$status" pass "both configured ($codes)"
	assert_contains "$(jq -r '.gates[0].summary' report.json)" "_moe_C.so"
	# the changed source's extension left out: the log links it into an output no entry names
	config "$(entry _gemm_C)"
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.unverified-artifact
	assert_contains "$(jq -r '.gates[0].problems[].message' report.json)" "_moe_C.so"
	# an entry's own arch is checked against the compile line of the source linked into it
	config "$(entry _gemm_C), $(entry _moe_C sm_80)"
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.wrong-arch
}

# An incremental build relinks only what changed: the artifact no changed source goes into
# needs no link step in this log; a changed source of an artifact the build skipped is still
# refused.
test_incremental_build_relinks_only_the_changed_extension() {
	setup_cuda_tree
	# the baseline build first, then only the change rebuilt by ninja
	git -C repo stash -q 2>/dev/null || true
	git -C repo checkout -q base
	(cd build && ninja -v -j1) >first.log 2>&1 || { cat first.log; fail "first build"; }
	git -C repo checkout -q main
	touch repo/csrc/moe/align.cu
	sleep 1
	(cd build && ninja -v -j1) >build.log 2>&1 || { cat build.log; fail "second build"; }
	grep -q "_gemm_C.so" build.log && fail "the second build relinked _gemm_C too"
	grep -q "_moe_C.so" build.log || fail "the second build did not relink _moe_C"
	cp build/_gemm_C.so build/_moe_C.so inst/
	config "$(entry _gemm_C), $(entry _moe_C)"
	gate1
	assert_eq "$status" pass "incremental build ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.artifacts[] | select(.name == "_gemm_C") | .relinked' report.json)" false
	# a change to _gemm_C's source that this build did not compile is refused
	echo "// also" >>repo/csrc/gemm/gemm.cu
	git -C repo -c user.name=t -c user.email=t@t commit -qam "gemm too"
	touch -d '1 minute ago' repo/csrc/gemm/gemm.cu
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.no-compile-line
}

run_tests
