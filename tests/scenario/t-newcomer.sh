#!/usr/bin/env bash
# timeout: 900
# The first hour of a new user (issue 31): a GPU extension in a small git repo, built with its
# output tee'd (a `set -x` script, make, or ninja -v), installed with `install`, and served by
# a Python ctypes "service" that names itself as vLLM does (tests/helpers/py-demo-service.py:
# "vllm serve" holding the port, VLLM::EngineCore loading the library, its log named on its
# command line, its stdout in a file of its own). From only that: `provgate init`, fill in
# exactly the TODOs it printed (each must be one this script knows the answer to), one
# warm-up request, `provgate certify`: certified the first time. Then the benchmark's fate
# in exec's verdict, and a stale EngineCore of an earlier run started beside the service:
# refused.
#
# Each claim is its own assertion ("ok NAME" / "FAILED NAME: why"), all evaluated before the
# test fails, so a failure names every claim that does not hold:
#   init-identity   service.match / family: the title and the entry point, no argument of the run
#   init-log        markers.log is the log named on the service's command line, not its stdout
#   init-arch       the arch is the one of the code object with kernels (CUDA: sm_90, not the
#                   device-link stub sm_75)
#   todos-known     every TODO init printed is one a user can fill from what they know
#   gate1           gate 1 passes on the tee'd log as the build system wrote it (script and
#                   make write the link line before the link runs; HIP make: a .cu compiled
#                   with hipcc -x hip needs no hipify line)
#   certified       the first certify after the TODOs certifies (all seven gates)
#   exec-failed     exec of a benchmark that exits 3: the status on the verdict line, recorded
#   exec-not-run    exec of a command that cannot start: "ran": false
#   stale-refused   a stale EngineCore beside the service: gate 4 or 5 fails, not certified
source "$PVG_SRC/tests/lib.sh"

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
failed_claims=()
claim() { # NAME STATUS(0 = holds) WHY
	if [ "$2" = 0 ]; then
		echo "ok $1"
	else
		echo "FAILED $1: $3"
		failed_claims+=("$1")
	fi
}
verdict() {
	[ ${#failed_claims[@]} -eq 0 ] || fail "claims that do not hold: ${failed_claims[*]}"
}

git_c() { git -C repo -c user.name=new -c user.email=new@example.invalid "$@"; }

# repo/ with baseline main and a branch that changes the kernel and its Python op
make_repo() { # hip|cuda
	mkdir -p logs site run build old
	git init -q -b main repo
	mkdir -p repo/csrc repo/vllm_demo
	cat >repo/csrc/skinny.cu <<-'CU'
	#include <cuda_runtime.h>
	#ifndef BLOCK
	#define BLOCK 64
	#endif
	extern "C" __global__ void wvSplitK(float *y, const float *a, const float *x, int m, int n)
	{
		int row = blockIdx.x * BLOCK + threadIdx.x;
		if (row >= m)
			return;
		float acc = 0.f;
		for (int k = 0; k < n; k++)
			acc += a[(size_t)row * n + k] * x[k];
		y[row] = acc;
	}
	extern "C" int wvsplitk_launch(float *y, const float *a, const float *x, int m, int n)
	{
		wvSplitK<<<(m + BLOCK - 1) / BLOCK, BLOCK>>>(y, a, x, m, n);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	CU
	if [ "$1" = hip-native ]; then # written for HIP: compiled as HIP, never hipified
		sed -i 's/#include <cuda_runtime.h>/#include <hip\/hip_runtime.h>/; s/cudaGetLastError() == cudaSuccess/hipGetLastError() == hipSuccess/' repo/csrc/skinny.cu
	fi
	: >repo/vllm_demo/__init__.py
	printf 'def use_wvsplitk(m: int, n: int) -> bool:\n    return n %% 512 == 0\n' >repo/vllm_demo/_custom_ops.py
	printf '*.hip\n' >repo/.gitignore
	git_c add -A && git_c commit -qm baseline
	git_c checkout -qb block-832
	sed -i 's/#define BLOCK 64/#define BLOCK 832/' repo/csrc/skinny.cu
	sed -i 's/n % 512 == 0/n % 256 == 0/' repo/vllm_demo/_custom_ops.py
	git_c commit -qam "wvSplitK: block 832"
}

hipify() {
	/usr/bin/python3 - "$T/repo" <<-'PY'
	import sys
	from torch.utils.hipify import hipify_python
	root = sys.argv[1]
	hipify_python.hipify(project_directory=root, output_directory=root,
	                     includes=[root + "/csrc/*"], show_detailed=True,
	                     show_progress=True, is_pytorch_extension=True)
	PY
}

# the compile and link commands of each kind of tree: HIP (hipified .hip), native HIP (.cu
# compiled with -x hip) and CUDA (nvcc -gencode, linked by a plain nvcc -shared)
compile_cmd() { # kind src obj
	case $1 in
	hip) echo "hipcc -fPIC -O2 --offload-arch=gfx90a -c $2 -o $3" ;;
	hip-native) echo "hipcc -x hip -fPIC -O2 --offload-arch=gfx90a -c $2 -o $3" ;;
	cuda) echo "$CUDA_HOME/bin/nvcc -Xcompiler -fPIC -O2 -gencode arch=compute_90,code=sm_90 -c $2 -o $3" ;;
	esac
}
link_cmd() { # kind obj so
	case $1 in
	hip | hip-native) echo "hipcc -shared -fPIC --offload-arch=gfx90a $2 -o $3" ;;
	cuda) echo "$CUDA_HOME/bin/nvcc -shared -Xcompiler -fPIC $2 -o $3" ;;
	esac
}

# build KIND STYLE: the build as a newcomer runs it, its output tee'd to logs/build.log
build() {
	local kind=$1 style=$2 src=$T/repo/csrc/skinny.cu obj=$T/build/skinny.o so=$T/build/_C.abi3.so
	[ "$kind" = hip ] && src=$T/repo/csrc/skinny.hip
	case $style in
	script)
		cat >build/build.sh <<-SH
		set -ex
		$( [ "$kind" = hip ] && echo "/usr/bin/python3 $T/build/hipify.py $T/repo" )
		$(compile_cmd "$kind" "$src" "$obj")
		$(link_cmd "$kind" "$obj" "$so")
		SH
		hipify_script >build/hipify.py
		bash build/build.sh 2>&1 | tee logs/build.log
		;;
	make)
		printf 'all: %s\n%s: %s\n\t%s\n%s: %s\n\t%s\n' "$so" "$so" "$obj" "$(link_cmd "$kind" "$obj" "$so")" \
			"$obj" "$src" "$(compile_cmd "$kind" "$src" "$obj")" >build/Makefile
		{ if [ "$kind" = hip ]; then hipify; fi; make -C build; } 2>&1 | tee logs/build.log
		;;
	ninja)
		cat >build/build.ninja <<-NINJA
		rule cc
		  command = $(compile_cmd "$kind" '$in' '$out')
		rule link
		  command = $(link_cmd "$kind" '$in' '$out')
		build $obj: cc $src
		build $so: link $obj
		NINJA
		{ if [ "$kind" = hip ]; then hipify; fi; ninja -v -C build; } 2>&1 | tee logs/build.log
		;;
	esac
	[ -f "$so" ]
}

hipify_script() {
	cat <<-'PY'
	import sys
	from torch.utils.hipify import hipify_python
	root = sys.argv[1]
	hipify_python.hipify(project_directory=root, output_directory=root,
	                     includes=[root + "/csrc/*"], show_detailed=True,
	                     show_progress=True, is_pytorch_extension=True)
	PY
}

pids=()
stop_all() { local p; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }

start_service() { # the service, stdout and stderr in serve.out
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	/usr/bin/python3 "$PVG_SRC/tests/helpers/py-demo-service.py" --port "$port" \
		--lib "$T/site/vllm_demo/_C.abi3.so" --device /dev/null --log "$T/logs/server.log" \
		--pidfile run/serve.pid --engine-pidfile run/engine.pid --tag "$tag" \
		--python /usr/bin/python3 </dev/null >serve.out 2>&1 &
	pids+=($!)
	for _ in $(seq 300); do [ -s run/serve.pid ] && break; sleep 0.05; done
	[ -s run/serve.pid ] || { cat serve.out; fail "the service did not start"; }
}

request() { # one warm-up request, as a benchmark's first one
	printf '4096 5120 torch.bfloat16\n' >logs/server.log.request
	local before
	before=$(grep -c 'request [0-9]* done' logs/server.log || true)
	kill -USR1 "$(cat run/engine.pid)"
	for _ in $(seq 200); do
		[ "$(grep -c 'request [0-9]* done' logs/server.log || true)" -gt "$before" ] && return 0
		sleep 0.05
	done
	fail "the service did not answer"
}

# fill_todos: each TODO init printed, filled with what the user knows; any other is a claim
# that fails (todos-known) and is left as it is
fill_todos() {
	local line key unknown=
	local -a sets=()
	while IFS= read -r line; do
		key=${line#  to fill in: }
		key=${key%%:*}
		case $key in
		markers.prefix) sets+=('.markers.prefix = "DCU_KERNEL_DIAG"') ;;
		arch) sets+=(".arch = \"$build_arch\"") ;;
		*) unknown+="[$line] " ;;
		esac
	done < <(grep '^  to fill in: ' <<<"$init_out" || true)
	claim todos-known "$([ -z "$unknown" ] && echo 0 || echo 1)" "TODOs a user cannot fill from what they know: $unknown"
	local filter=. s
	for s in "${sets[@]}"; do filter+=" | $s"; done
	{ grep '^//' provgate.json; sed '/^\/\//d' provgate.json | jq "$filter"; } >provgate.json.new
	mv provgate.json.new provgate.json
	echo "filled: $filter"
}

newcomer() { # hip|hip-native|cuda script|make|ninja
	local kind=$1 style=$2 j ok
	need git jq ss make ninja /usr/bin/python3
	case $kind in
	hip | hip-native) need hipcc; build_arch=gfx90a ;;
	cuda) need "$CUDA_HOME/bin/nvcc"; build_arch=sm_90 ;;
	esac
	tag="newcomer-$$-$RANDOM"
	trap stop_all EXIT
	make_repo "$kind"
	build "$kind" "$style" || { cat logs/build.log; fail "the build failed"; }
	mkdir -p site/vllm_demo
	install -m 644 repo/vllm_demo/*.py site/vllm_demo/
	install -m 755 build/_C.abi3.so site/vllm_demo/_C.abi3.so
	sleep 0.05
	start_service

	pg init
	assert_eq "$rc" 0 "init ($err)"
	init_out=$out
	echo "$init_out"
	j=$(sed '/^\/\//d' provgate.json)
	# the service by what survives a restart: the title without the run's arguments
	local match family
	match=$(jq -r '.service.match | join("|")' <<<"$j")
	family=$(jq -r '.service.family | join("|")' <<<"$j")
	case "$match|$family" in
	*--port* | *--lib* | *py-demo-service* | *"$port"*)
		claim init-identity 1 "match [$match] family [$family] hold the run's arguments" ;;
	*)
		ok=0; { [[ $match == VLLM::EngineCore* ]] && [[ $family == VLLM::* ]]; } || ok=1
		claim init-identity $ok "match [$match] family [$family]: not the process title" ;;
	esac
	local mlog
	mlog=$(jq -r '.markers.log' <<<"$j")
	ok=0; [ "$mlog" = logs/server.log ] || ok=1
	claim init-log $ok "markers.log is [$mlog], not logs/server.log (named on the service's command line)"
	local arch
	arch=$(jq -r '.arch' <<<"$j")
	ok=0; { [ "$arch" = "$build_arch" ] && ! grep -q '^  to fill in: arch' <<<"$init_out"; } || ok=1
	claim init-arch $ok "arch [$arch] (or a TODO about it), the build's kernels are $build_arch"
	fill_todos

	request
	pg certify --keep-going --json r1.json
	echo "$out"
	ok=0; [ "$(gate_status r1.json 1)" = pass ] || ok=1
	claim gate1 $ok "gate 1 on the $style log: $(jq -c '.gates[0].problems' r1.json)"
	ok=0; [ "$rc" = 0 ] || ok=1
	claim certified $ok "the first certify: rc $rc: $(jq -c '[.gates[] | {id, status, problems: [.problems[].code]}]' r1.json)"

	# the benchmark's fate (--run-anyway: judged even where gate 1 did not pass)
	pg exec --run-anyway --out x3.json -- sh -c 'exit 3'
	echo "$out"
	local last
	last=$(tail -n1 <<<"$out")
	ok=0
	{ [ "$rc" != 0 ] && [ "$(jq -r .exec.ran x3.json)" = true ] &&
		[ "$(jq -r .exec.exit_status x3.json)" = 3 ] &&
		grep -Eq '(status|exit(ed)?|code)[^0-9]{0,12}3\b' <<<"$last"; } || ok=1
	claim exec-failed $ok "a benchmark that exits 3: rc $rc, verdict [$last]"
	pg exec --run-anyway --out x127.json -- ./no-such-benchmark
	last=$(tail -n1 <<<"$out")
	ok=0
	{ [ "$rc" != 0 ] && [ "$(jq -r .exec.ran x127.json)" = false ] &&
		! grep -q '^CERTIFIED: all seven gates passed, and gates 3, 4, 5, 7 still hold after the command$' <<<"$last"; } || ok=1
	claim exec-not-run $ok "a command that cannot start: rc $rc, ran $(jq -r .exec.ran x127.json), verdict [$last]"

	# a stale EngineCore of an earlier run (another port, an older copy, another log),
	# started beside the service: same title, other arguments
	cp site/vllm_demo/_C.abi3.so old/_C.abi3.so
	printf 'old' >>old/_C.abi3.so
	( exec -a "VLLM::EngineCore $tag" /usr/bin/python3 "$PVG_SRC/tests/helpers/py-demo-service.py" \
		--role engine --port $((port + 1)) --lib "$T/old/_C.abi3.so" --device /dev/null \
		--log "$T/logs/old-server.log" --pidfile run/old.pid --engine-pidfile run/old-engine.pid \
		--tag "$tag" --python /usr/bin/python3 </dev/null >old.out 2>&1 ) &
	pids+=($!)
	for _ in $(seq 300); do [ -s run/old-engine.pid ] && break; sleep 0.05; done
	[ -s run/old-engine.pid ] || { cat old.out; fail "the stale engine did not start"; }
	pg certify --keep-going --json r2.json
	echo "$out"
	ok=0
	{ [ "$rc" = 1 ] && { [ "$(gate_status r2.json 5)" = fail ] || [ "$(gate_status r2.json 4)" = fail ]; }; } || ok=1
	claim stale-refused $ok "with a stale EngineCore beside it: rc $rc, gate 4 $(gate_status r2.json 4) $(problem_codes r2.json 4), gate 5 $(gate_status r2.json 5) $(problem_codes r2.json 5)"
	stop_all
	verdict
}

test_newcomer_hip_script() { newcomer hip script; }
test_newcomer_hip_make_native_hip() { newcomer hip-native make; }
test_newcomer_hip_ninja() { newcomer hip ninja; }
test_newcomer_cuda_script() { newcomer cuda script; }
test_newcomer_cuda_make() { newcomer cuda make; }
test_newcomer_cuda_ninja() { newcomer cuda ninja; }

run_tests
