#!/usr/bin/env bash
# provgate init: a starting config from what is there. On the demo's scenario (hipify +
# hipcc build, install, a live vLLM-like service) and on a pip install into a venv served
# by a Python service, the config it writes certifies with no edit; it never overwrites a
# config; what it writes is valid against lib/config.schema.json.
source "$PVG_SRC/tests/lib.sh"

validate_config() { /usr/bin/python3 "$PVG_SRC/tests/validate-config.py" "$@" || fail "config does not validate"; }

test_init_on_demo_scenario_certifies_without_edit() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	scenario_start
	request "4096 5120 torch.bfloat16"
	pg init
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	assert_contains "$out" "wrote $T/provgate.json"
	assert_contains "$out" "guessed: build log logs/build.log"
	validate_config provgate.json
	local j
	j=$(sed '/^\/\//d' provgate.json)
	assert_eq "$(jq -r .build.artifact <<<"$j")" build/_rocm_C.abi3.so
	assert_eq "$(jq -r .install.artifact <<<"$j")" site/vllm_demo/_rocm_C.abi3.so
	assert_eq "$(jq -r .source.baseline <<<"$j")" main
	assert_eq "$(jq -r .arch <<<"$j")" gfx90a
	assert_eq "$(jq -r .markers.prefix <<<"$j")" DCU_KERNEL_DIAG
	assert_eq "$(jq -r .service.port <<<"$j")" "$port"
	pg certify --json r.json
	assert_eq "$rc" 0 "certify with init's config, no edit ($out)"
	validate r.json
	# a second init refuses to overwrite; --force does
	cp provgate.json before.json
	pg init
	assert_eq "$rc" 2 "second init: a usage error, not a verdict"
	assert_contains "$err" "exists; not overwriting it: use -o FILE to write another, or --force to replace it"
	cmp -s before.json provgate.json || fail "the config was changed"
	pg init --force
	assert_eq "$rc" 0 "init --force ($err)"
	# and the report from the certify run above never counts as a change
	pg certify --json r.json
	assert_eq "$rc" 0 "certify again ($out)"
}

test_init_on_venv_install_certifies_without_edit() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	# a real package installed by pip into a venv: the module and the built library
	/usr/bin/python3 -m venv --system-site-packages venv || fail "python3 -m venv"
	cp build/_rocm_C.abi3.so repo/vllm_demo/
	cat >repo/pyproject.toml <<-'TOML'
	[build-system]
	requires = ["setuptools"]
	build-backend = "setuptools.build_meta"
	[project]
	name = "vllm_demo"
	version = "0.1"
	[tool.setuptools]
	packages = ["vllm_demo"]
	[tool.setuptools.package-data]
	vllm_demo = ["*.so"]
	TOML
	printf '*.so\nbuild/\n*.egg-info/\n' >>repo/.gitignore
	git_c add pyproject.toml .gitignore && git_c commit -qm packaging
	venv/bin/pip install -q --no-build-isolation --no-deps --no-index ./repo >pip.log 2>&1 || { cat pip.log; fail "pip install"; }
	site=$(venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	[ -f "$site/vllm_demo/_rocm_C.abi3.so" ] || fail "pip did not install the library"
	rm -rf repo/build repo/*.egg-info
	sleep 0.05
	tag="pyinit-$$-$RANDOM"
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" --tag "$tag" \
		--site "$site" --package vllm_demo --module _custom_ops --function use_wvsplitk \
		--lib "$site/vllm_demo/_rocm_C.abi3.so" --log "$T/logs/server.log" \
		--pidfile run/py.pid </dev/null >py.out 2>&1 &
	py_pid=$!
	trap 'kill $py_pid 2>/dev/null || true' EXIT
	for _ in $(seq 200); do [ -s run/py.pid ] && break; sleep 0.05; done
	[ -s run/py.pid ] || { cat py.out; fail "the service did not start"; }
	pg init
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	validate_config provgate.json
	local j
	j=$(sed '/^\/\//d' provgate.json)
	assert_eq "$(jq -r .install.python_module <<<"$j")" vllm_demo._rocm_C
	assert_eq "$(jq -r .install.python <<<"$j")" venv/bin/python3
	assert_eq "$(jq -r '.source.install_map[0].to' <<<"$j")" "${site#$T/}/vllm_demo/"
	assert_eq "$(jq -r .markers.log <<<"$j")" logs/server.log
	pg certify --json r.json
	assert_eq "$rc" 0 "certify with init's config, no edit ($out)"
}

# The arch from this node's GPUs: a real hipcc build log (tests/fixtures/buildlog) linking
# the five-target library of tests/fixtures/codeobj, and a KFD topology made from the recorded
# DCU node's properties with another gfx_target_version.
init_on_node() { # GFX_TARGET_VERSION (or "none")
	rm -rf node && mkdir -p node/logs node/sys
	cp "$FIXTURES/buildlog/hip-gfx936.log" node/logs/build.log
	cp "$FIXTURES/codeobj/hip-multi.so" node/_ext_C.abi3.so
	if [ "$1" != none ]; then
		cp -r "$FIXTURES/environment/kfd/sys/class" node/sys/
		sed -i "s/^gfx_target_version 90306/gfx_target_version $1/" \
			node/sys/class/kfd/kfd/topology/nodes/1/properties
	fi
	PROVGATE_SYSFS=$PWD/node/sys PROVGATE_NVML_LIBRARY=$PWD/no-nvml.so pg init node -o node/cfg.json
	assert_eq "$rc" 0 "init ($err)"
	arch=$(sed '/^\/\//d' node/cfg.json | jq -r .arch)
}

test_init_takes_the_arch_this_nodes_gpus_run() {
	need jq
	grep -q -- '-o _ext_C.abi3.so' "$FIXTURES/buildlog/hip-gfx936.log" || fail "the fixture log links another file"
	init_on_node 90008
	assert_eq "$arch" "gfx908:xnack-" "gfx908 node"
	assert_contains "$out" "guessed: arch gfx908:xnack-: the code object in _ext_C.abi3.so for this node's GPUs (gfx908, KFD topology)"
	assert_not_contains "$out" "to fill in: arch"
	init_on_node 100300
	assert_eq "$arch" gfx1030 "gfx1030 node"
	# two code objects for the node's processor: which one depends on the GPU's xnack mode
	init_on_node 90010
	assert_contains "$out" "to fill in: arch: _ext_C.abi3.so holds several code objects for this node's GPUs (gfx90a, KFD topology): gfx90a:xnack+, gfx90a:xnack-"
	# a GPU the artifact has nothing for: said, not silently taken
	init_on_node 90306
	assert_contains "$out" "to fill in: arch: this node's GPUs are gfx936 (KFD topology), and _ext_C.abi3.so holds no code object for them"
	# no GPU visible: the first code object, and the list to choose from
	init_on_node none
	assert_eq "$arch" gfx1030
	assert_contains "$out" "to fill in: arch: _ext_C.abi3.so holds code objects for gfx1030 and"
}

# A plain nvcc build (compile with -gencode sm_90, link with `nvcc -shared` and no -gencode):
# the link's device link puts an empty sm_75 image first (tests/fixtures/buildlog/make-tee.sh)
test_init_takes_the_arch_whose_code_objects_hold_kernels() {
	need jq
	rm -rf node && mkdir -p node/logs node/build
	cp "$FIXTURES/buildlog/tee-nvcc.log" node/logs/build.log
	cp "$FIXTURES/buildlog/tee-nvcc.so" node/build/_ext_C.so
	PROVGATE_SYSFS=$PWD/no-sys PROVGATE_NVML_LIBRARY=$PWD/no-nvml.so pg init node -o node/cfg.json
	assert_eq "$rc" 0 "init ($err)"
	assert_eq "$(sed '/^\/\//d' node/cfg.json | jq -r .arch)" sm_90
	assert_contains "$out" "guessed: arch sm_90, from the code object in build/_ext_C.so"
	assert_contains "$out" "arch: sm_75 not taken: the code object for it in build/_ext_C.so holds no kernel"
	assert_not_contains "$out" "to fill in: arch"
}

test_init_says_what_it_could_not_find() {
	need git
	mkdir empty
	pg init empty
	assert_eq "$rc" 0 "init ($err)"
	assert_contains "$out" "to fill in: source.repo: no git checkout"
	assert_contains "$out" "to fill in: build.log and build.artifact"
	# what it wrote loads: run says what is missing, not that the config is bad
	pg run -c empty/provgate.json --gates 3
	assert_eq "$rc" 1 "run on the starting config ($err)"
	validate_config empty/provgate.json
	pg init empty/nonexistent
	assert_eq "$rc" 2
}

# Several extensions from one log (tests/fixtures/buildlog/multi: four real HIP libraries of
# one CMake + ninja -v build): the service maps installed copies of three; init proposes those
# three as artifacts and names the fourth, which nothing maps, in a TODO.
test_init_proposes_every_extension_the_service_maps() {
	need git jq /usr/bin/python3
	local M="$FIXTURES/buildlog/multi"
	git init -q -b main repo
	mkdir -p repo/csrc build inst
	echo "// x" >repo/csrc/x.cpp
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	# the build folder ninja ran in (its outputs are relative to it)
	: >build/build.ninja
	for l in _a_C _b_C _c_C _d_C; do
		cp "$M/$l.so" build/
		cp build/$l.so inst/
	done
	cp "$M/ninja_log" build/.ninja_log
	sleep 0.01
	sed "s#/src/ext#$PWD/repo#g" "$M/ninja.log" >build.log
	# a process that maps three of the four installed libraries, as Python's import would;
	# its environment names a Triton cache, which init lists for witness.triton_caches
	mkdir -p tcache
	TRITON_CACHE_DIR=$PWD/tcache VLLM_CACHE_ROOT=$PWD/vcache /usr/bin/python3 -c '
import mmap, os, sys, time
fs = [open(p, "rb") for p in sys.argv[1:]]
ms = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in fs]
open("ready", "w").write(str(os.getpid()))
time.sleep(120)' "$PWD/inst/_a_C.so" "$PWD/inst/_b_C.so" "$PWD/inst/_c_C.so" &
	init_spid=$!
	trap 'kill $init_spid 2>/dev/null' EXIT
	for _ in $(seq 200); do [ -s ready ] && break; sleep 0.05; done
	pg init
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	validate_config provgate.json
	local j names
	j=$(sed '/^\/\//d' provgate.json)
	assert_eq "$(jq -r '.build.artifact // "none"' <<<"$j")" none "the single form is left out"
	names=$(jq -r '[.artifacts[].name] | sort | join(",")' <<<"$j")
	assert_eq "$names" "_a_C,_b_C,_c_C"
	assert_eq "$(jq -r '.artifacts[] | select(.name == "_b_C") | .install' <<<"$j")" inst/_b_C.so
	assert_eq "$(jq -r '.artifacts[] | select(.name == "_b_C") | .build' <<<"$j")" build/_b_C.so
	assert_contains "$out" "_d_C.so too, but the service maps no installed copy of it"
	assert_contains "$out" "guessed: Triton caches: the service's environment names TRITON_CACHE_DIR=$PWD/tcache, VLLM_CACHE_ROOT=$PWD/vcache; gate 7 looks there"
	assert_contains "$(sed -n '/^\/\//p' provgate.json)" "// guessed: Triton caches: the service's environment names TRITON_CACHE_DIR=$PWD/tcache"
	# what it proposed is what the gates check: the four hashes, the three mappings
	pg run --gates 3 --json r3.json
	assert_eq "$(jq -r '.chain.artifacts | length' r3.json)" 3
	assert_eq "$(jq -r '.gates[2].status' r3.json)" pass "gate 3 ($out)"
	kill $init_spid 2>/dev/null
}

# A ctypes service as a newcomer writes one: it renames itself with prctl only (its command
# line stays "python3 svc.py --title ... --run N"), loads the library, may listen on a port,
# and logs to the file its command line names; a marker on each SIGUSR1. Its title's prefix
# is this test's own (vLLM's VLLM_PROCESS_NAME_PREFIX), so that no other test's engine meets it.
write_ctypes_service() {
	cat >svc.py <<-'PY'
	import argparse, ctypes, os, signal, socket, sys, time
	ap = argparse.ArgumentParser()
	ap.add_argument("--title"); ap.add_argument("--lib"); ap.add_argument("--port", type=int, default=0)
	ap.add_argument("--log-file"); ap.add_argument("--run"); ap.add_argument("--ready")
	a = ap.parse_args()
	ctypes.CDLL(None).prctl(15, ctypes.c_char_p(a.title.encode()[:15]), 0, 0, 0)
	lib = ctypes.CDLL(a.lib)
	if a.port:
	    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	    s.bind(("127.0.0.1", a.port)); s.listen(4)
	def line(text):
	    t = time.localtime()
	    with open(a.log_file, "a") as f:
	        f.write("(EngineCore_DP0 pid=%d) INFO %02d-%02d %02d:%02d:%02d %s\n"
	                % (os.getpid(), t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, text))
	line("Initializing an engine with config: block size = 832, prefix caching = False")
	signal.signal(signal.SIGUSR1, lambda *_: line("DCU_KERNEL_DIAG selected=True shape=(4096, 5120) dtype=torch.bfloat16"))
	signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
	open(a.ready, "w").write(str(os.getpid()))
	while True:
	    signal.pause()
	PY
}

start_ctypes_service() { # READY-FILE ARGS...: its pid in $svc_pid once it is ready
	local ready=$1
	shift
	rm -f "$ready"
	/usr/bin/python3 svc.py --ready "$ready" "$@" </dev/null >>serve.out 2>&1 &
	svc_pid=$!
	svc_pids+=("$svc_pid")
	for _ in $(seq 200); do [ -s "$ready" ] && return 0; sleep 0.05; done
	cat serve.out
	fail "the service did not start"
}

free_port() {
	local p=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$p" | grep -q .; do p=$(( 20000 + RANDOM % 12000 )); done
	echo "$p"
}

# The issue's newcomer: init's config finds the service by its title, not by the arguments of
# the run it saw, so a restart with another argument is still the service, and a stale engine
# with the same title is a service process gate 5 refuses; its log is the one its command line
# names, not its stdout file.
test_init_matches_the_title_and_takes_the_named_log() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	write_ctypes_service
	svc_pids=()
	trap 'kill "${svc_pids[@]}" 2>/dev/null || true' EXIT
	local title="N$((RANDOM % 10000))::EngineCore" port j
	port=$(free_port)
	start_ctypes_service run/a --title "$title" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--port "$port" --log-file logs/server.log --run 1
	pg init
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	j=$(sed '/^\/\//d' provgate.json)
	assert_eq "$(jq -r '.service.match | join(" ")' <<<"$j")" "${title:0:15}" "service.match"
	assert_eq "$(jq -r '.service.family | join(" ")' <<<"$j")" "${title%%::*}::" "service.family"
	assert_eq "$(jq -r .service.port <<<"$j")" "$port"
	assert_eq "$(jq -r .markers.log <<<"$j")" logs/server.log "markers.log"
	assert_contains "$out" "guessed: markers.log logs/server.log: its command line names it"
	# the one TODO: the marker's prefix, which no line shows yet
	assert_contains "$out" "to fill in: markers.prefix"
	{ grep '^//' provgate.json; jq '.markers.prefix = "DCU_KERNEL_DIAG"' <<<"$j"; } >p.json && mv p.json provgate.json
	kill -USR1 "$svc_pid"
	sleep 0.2
	pg certify --json r1.json
	assert_eq "$rc" 0 "certify with init's config and its TODO filled ($out)"
	# restarted with another argument: still the service
	kill "$svc_pid"
	wait "$svc_pid" 2>/dev/null || true
	start_ctypes_service run/b --title "$title" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--port "$port" --log-file logs/server.log --run 2
	kill -USR1 "$svc_pid"
	sleep 0.2
	pg certify --json r2.json
	assert_eq "$rc" 0 "certify after a restart with another argument ($out)"
	# a stale engine of the same title (an older copy, no port, its own log): refused
	mkdir -p old && cp site/vllm_demo/_rocm_C.abi3.so old/ && printf 'old' >>old/_rocm_C.abi3.so
	start_ctypes_service run/c --title "$title" --lib "$T/old/_rocm_C.abi3.so" \
		--log-file logs/old.log --run 0
	local stale=$svc_pid
	pg certify --keep-going --json r3.json
	assert_eq "$rc" 1 "certify with a stale engine beside the service ($out)"
	assert_eq "$(gate_status r3.json 5)" fail "gate 5 ($out)"
	assert_contains "$(jq -r '.gates[4].problems[].message' r3.json)" "service process $stale "
}

# Two engines map the installed library with the same bytes: the service, whose tree owns the
# port, and a newer stale one without. init takes the port's owner; at run time the target is
# the port's owner too, and gate 5 names the newer one as the orphan, not the service.
test_the_engine_that_owns_the_port_is_the_service() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	write_ctypes_service
	svc_pids=()
	trap 'kill "${svc_pids[@]}" 2>/dev/null || true' EXIT
	local title="P$((RANDOM % 10000))::EngineCore" port j real stale
	port=$(free_port)
	start_ctypes_service run/a --title "$title" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--port "$port" --log-file logs/server.log --run 1
	real=$svc_pid
	sleep 0.05
	start_ctypes_service run/b --title "$title" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--log-file logs/server.log --run 0
	stale=$svc_pid
	kill -USR1 "$real"
	sleep 0.2
	pg init
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	local init_out=$out
	j=$(sed '/^\/\//d' provgate.json)
	assert_eq "$(jq -r .service.port <<<"$j")" "$port"
	pg certify --keep-going --json r.json
	assert_eq "$rc" 1 "certify with the stale engine ($out)"
	assert_eq "$(jq -r '.chain.processes[0].pid' r.json)" "$real" "the target"
	assert_eq "$(gate_status r.json 4)" pass "gate 4 ($out)"
	assert_eq "$(gate_status r.json 5)" fail "gate 5 ($out)"
	assert_contains "$(jq -r '.gates[4].problems[].message' r.json)" "service process $stale "
	assert_not_contains "$(jq -r '.gates[4].problems[].message' r.json)" "service process $real "
	assert_contains "$init_out" "guessed: service: process $real "
	assert_contains "$init_out" "1 other process of that kind maps _rocm_C.abi3.so outside its tree (pid $stale); it was taken for owning the port"
}

run_tests
