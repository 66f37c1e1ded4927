# The demo's scenario as functions, for tests/demo/run, the exec tests and the certify
# benchmark. Source it with W (an empty work folder, the current directory), pg (provgate)
# and svc (tests/helpers/fake-service) set; call scenario_stop before leaving.
# shellcheck shell=bash

service_pid=
type say >/dev/null 2>&1 || say() { :; }
port=
scenario_tag=${scenario_tag:-demo-$$-$RANDOM}

# git with a fixed identity, in the scenario's repository
git_c() { git -C repo -c user.name=demo -c user.email=demo@example.invalid "$@"; }

# scenario_repo: baseline "main"; branch wvsplitk-832 changes the kernel and its Python op.
scenario_repo() {
	mkdir -p logs site run build
	git init -q -b main repo
	mkdir -p repo/csrc/rocm repo/vllm_demo repo/docs
	cat >repo/csrc/rocm/skinny_gemms.cu <<-'CU'
	#include <cuda_runtime.h>
	// y = A x for skinny shapes; the block size is what the branch tunes.
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
		y[row] = acc;
	}
	extern "C" int wvsplitk_launch(float *y, const float *a, const float *x, int m, int n)
	{
		wvSplitK<<<(m + WVSPLITK_BLOCK - 1) / WVSPLITK_BLOCK, WVSPLITK_BLOCK>>>(y, a, x, m, n);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	CU
	cat >repo/vllm_demo/__init__.py <<-'PY'
	PY
	cat >repo/vllm_demo/_custom_ops.py <<-'PY'
	def use_wvsplitk(m: int, n: int) -> bool:
	    return n % 512 == 0
	PY
	printf '# notes\n' >repo/docs/notes.md
	printf '*.hip\n' >repo/.gitignore
	git_c add -A && git_c commit -qm "baseline"
	git_c checkout -qb wvsplitk-832
	sed -i 's/#define WVSPLITK_BLOCK 64/#define WVSPLITK_BLOCK 832/' repo/csrc/rocm/skinny_gemms.cu
	sed -i 's/n % 512 == 0/n % 256 == 0/' repo/vllm_demo/_custom_ops.py
	git_c commit -qam "wvSplitK: block size 832; dispatch for N % 256"
}

build_extension() { # the project's build: hipify, then ninja running hipcc; all output logged
	{
		/usr/bin/python3 - "$W/repo" <<-'PY'
		import sys
		from torch.utils.hipify import hipify_python
		root = sys.argv[1]
		hipify_python.hipify(project_directory=root, output_directory=root,
		                     includes=[root + "/csrc/*"], show_detailed=True,
		                     show_progress=True, is_pytorch_extension=True)
		PY
		cat >build/build.ninja <<-NINJA
		rule hipcc
		  command = hipcc -fPIC -O2 --offload-arch=gfx90a -c \$in -o \$out
		rule link
		  command = hipcc -shared -fPIC --offload-arch=gfx90a \$in -o \$out
		build $W/build/skinny_gemms.o: hipcc $W/repo/csrc/rocm/skinny_gemms.hip
		build $W/build/_rocm_C.abi3.so: link $W/build/skinny_gemms.o
		NINJA
		ninja -v -C build
	} >logs/build.log 2>&1
}

# scenario_built: scenario_repo and build_extension in $W (the current directory), made once
# per build folder: the suite keeps the result under $PVG_BUILD/demo-scenario/KEY (KEY: a
# hash of these functions, hipcc's, ninja's, git's and PyTorch's versions, so that a change
# remakes it) and copies it in with its times, its paths made $W's (the times of the files
# so edited kept too). Without PVG_BUILD (the demo, the benchmarks) it builds in $W.
scenario_built() {
	[ -n "${PVG_BUILD:-}" ] || { scenario_repo && build_extension; return; }
	local key dir f
	key=$({ declare -f git_c scenario_repo build_extension scenario_built
		hipcc --version 2>&1; ninja --version 2>&1; git --version 2>&1
		/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>&1; } |
		sha256sum | cut -c1-16)
	dir=$PVG_BUILD/demo-scenario/$key
	mkdir -p "$PVG_BUILD/demo-scenario"
	(
		flock 9
		[ -f "$dir/done" ] && exit 0
		rm -rf "$dir" && mkdir -p "$dir/w" && cd "$dir/w" || exit 1
		W=$dir/w
		scenario_repo >/dev/null && build_extension ||
			{ cp logs/build.log "$OLDPWD/build.log.failed" 2>/dev/null; exit 1; }
		echo "$W" >"$dir/done"
	) 9>"$PVG_BUILD/demo-scenario/lock" || {
		mkdir -p logs && mv -f build.log.failed logs/build.log 2>/dev/null; return 1; }
	cp -a "$dir/w/." "$W/"
	for f in logs/build.log build/build.ninja build/.ninja_log; do
		[ -f "$W/$f" ] || continue
		sed -i "s#$dir/w#$W#g" "$W/$f"
		touch -r "$dir/w/$f" "$W/$f"
	done
}

install_extension() { # an install that replaces files (new inodes), like cmake --install
	mkdir -p site/vllm_demo
	install -m 644 repo/vllm_demo/*.py site/vllm_demo/
	install -m 755 build/_rocm_C.abi3.so site/vllm_demo/_rocm_C.abi3.so
}

# scenario_start: the service (API server on a free port, engine, two workers) loading the
# installed library; returns once it is ready.
scenario_start() {
	# below the ephemeral range (32768 and up), and in no state at all on this machine
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	say "starting the service on port $port (it loads site/vllm_demo/_rocm_C.abi3.so)"
	"$svc" --server --workers 2 --port "$port" --lib "$W/site/vllm_demo/_rocm_C.abi3.so" \
		--pidfile run/serve.pid --engine-pidfile run/engine.pid --log "$W/logs/server.log" \
		--tag "$scenario_tag" &
	service_pid=$!
	for _ in $(seq 200); do [ -s run/serve.pid ] && break; sleep 0.05; done
	[ -s run/serve.pid ] || { echo "the service did not start" >&2; return 1; }
}

scenario_stop() {
	if [ -n "$service_pid" ] && kill -0 "$service_pid" 2>/dev/null; then
		kill "$service_pid" 2>/dev/null || true
		wait "$service_pid" 2>/dev/null || true
	fi
	service_pid=
}

request() { # SHAPES...: one warm-up request; waits until the engine logged it
	printf '%s\n' "$@" >logs/server.log.request
	local before
	before=$(grep -c 'request [0-9]* done' logs/server.log || true)
	kill -USR1 "$(cat run/engine.pid)"
	for _ in $(seq 200); do
		[ "$(grep -c 'request [0-9]* done' logs/server.log || true)" -gt "$before" ] && return 0
		sleep 0.05
	done
	echo "the service did not answer" >&2
	return 1
}

# scenario_config: provgate.json for all seven gates of this scenario.
scenario_config() {
	cat >provgate.json <<-JSON
	{
	  "name": "demo-wvsplitk-832",
	  "arch": "gfx90a",
	  "build": { "log": "logs/build.log", "artifact": "build/_rocm_C.abi3.so" },
	  "source": {
	    "repo": "repo",
	    "baseline": "main",
	    "compiled": ["csrc/**"],
	    "install_map": [{ "from": "vllm_demo/", "to": "site/vllm_demo/" }],
	    "ignore": ["docs/**", "**/*.md", ".gitignore"]
	  },
	  "install": { "artifact": "site/vllm_demo/_rocm_C.abi3.so" },
	  "service": { "match": ["VLLM::EngineCore $scenario_tag"], "port": $port,
	               "family": ["VLLM:: $scenario_tag", "vllm serve fixture $scenario_tag"] },
	  "code_object": { "require_kernels": ["wvSplitK"] },
	  "markers": {
	    "log": "logs/server.log",
	    "prefix": "DCU_KERNEL_DIAG",
	    "require": [{ "selected": "True", "shape": "(4096, 5120)", "dtype": "torch.bfloat16" }],
	    "forbid": ["fallback to unified triton"],
	    "facts": ["block size = 832", "prefix caching = False"]
	  }
	}
	JSON
}
