#!/usr/bin/env bash
# provgate exec: code the service compiled or loaded while the benchmark ran fails the
# after-check. The demo's scenario for real (hipify + hipcc build, install, a live service
# started with the witness's variables); the service's witness file is written by witness-tool
# build with the live engine's identity, once before exec and again by the benchmark command
# itself, as the witness would while the benchmark runs. vLLM's torch.compile lines are
# written to the service's log by the benchmark command, with the engine's pid and the time.
source "$PVG_SRC/tests/lib.sh"

TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"

setup() {
	need hipcc ninja git ss jq /usr/bin/python3
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$W/wdir CUDA_INJECTION64_PATH=$LIB scenario_start
	request "4096 5120 torch.bfloat16"
	scenario_config
	engine=$(cat run/engine.pid)
	ticks=$(awk '{sub(/.*\) /, ""); print $20}' "/proc/$engine/stat")
	boot=$(cat /proc/sys/kernel/random/boot_id)
	# the witness files here are written by hand and name a stand-in kernel, not the
	# code the changed source compiled to: gate 7's default requirement of that source's
	# kernels (t-witness-code.sh) is exempted, with the reason
	jq --arg d "$W/wdir" '.witness = {"dir": $d, "require": [{"kernel": "wvSplitK"}],
		"changed_sources": {"csrc/rocm/skinny_gemms.cu":
			{"exempt": "the witness files of these tests are hand-written"}}}' \
		provgate.json >p.json && mv p.json provgate.json
	# what the engine loaded while it started: its extension's code object, well before
	# (the artifact's gfx90a code object, by its digest, as gate 6 reads it)
	pg inspect --digests "$W/site/vllm_demo/_rocm_C.abi3.so"
	art_sha=$(awk '$5 ~ /^gfx90a/ { f = 1; next } f && $1 == "sha256" { print $2; exit }' <<<"$out")
	[ ${#art_sha} = 64 ] || fail "no gfx90a digest of the artifact: '$art_sha'"
	ART_MODULE="module sha256=$art_sha origin=embedded load_ns=now-60 size=65536 path=$W/site/vllm_demo/_rocm_C.abi3.so"
	spec warm.spec "$ART_MODULE"
	witness warm.spec
}

# spec FILE MODULE...: the engine's launches of the stand-in kernel, from the first module
# given (a version 2 file: no modules, the launches by name only)
spec() {
	local f=$1; shift
	{
		echo "version ${VERSION:-3}"
		if [ "${VERSION:-3}" = 2 ]; then echo "record name=wvSplitK_832 count=5"
		else echo "record name=wvSplitK_832 count=5 module=1 bind=handle"; fi
		printf '%s\n' "$@"
	} >"$f"
}
witness() { "$TOOL" build "$1" wdir "$engine" "$engine" 1 "$ticks" "$boot" >/dev/null; }
after7() { jq -r ".after.gates[6] | $1" r.json; }

# the benchmark command: the witness's next write (SPEC), then the command's own work
bench() { printf '%s "%s" build %s wdir %s %s 1 %s %s >/dev/null\n' "${1:-}" "$TOOL" "$2" "$engine" "$engine" "$ticks" "$boot"; }

test_module_loaded_during_benchmark_fails_after() {
	setup
	spec jit.spec "$ART_MODULE" \
		"module origin=memory load_ns=now size=4096" "module origin=ptx-jit load_ns=now size=8192"
	bench "" jit.spec >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[6].status' r.json)" pass "before the command"
	assert_eq "$(after7 .status)" fail "after the command"
	assert_eq "$(after7 '[.problems[].code] | unique | join(" ")')" dispatch-marker.loaded-during-benchmark
	assert_eq "$(after7 '.problems | length')" 2
	assert_contains "$(after7 '.problems[0].message')" "memory (memory) sha256:"
	assert_contains "$(after7 '.problems[0].message')" "4096 bytes, loaded by pid $engine"
	assert_contains "$(after7 '.problems[1].message')" "ptx-jit (memory)"
	assert_eq "$(after7 .evidence.benchmark_window.modules.loaded)" 2
	assert_eq "$(after7 .evidence.benchmark_window.modules.recorded)" true
	# the module loaded before the benchmark is no load in its window
	assert_not_contains "$(after7 '.problems[].message')" "_rocm_C.abi3.so"
	assert_contains "$out" "NOT CERTIFIED"
	validate r.json
}

test_loads_before_the_benchmark_pass() {
	setup
	bench "" warm.spec >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(after7 .status)" pass
	assert_eq "$(after7 .evidence.benchmark_window.modules.loaded)" 0
	assert_eq "$(after7 .evidence.benchmark_window.modules.files_recording)" 1
	assert_contains "$(after7 .summary)" "while the benchmark ran: 0 modules loaded, 0 compile lines"
	validate r.json
}

test_allowed_loads_pass_and_are_listed() {
	setup
	jq '.benchmark = {"allow_loads": true}' provgate.json >p.json && mv p.json provgate.json
	spec jit.spec "$ART_MODULE" "module origin=memory load_ns=now size=4096"
	bench "" jit.spec >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(after7 .status)" pass
	assert_eq "$(after7 .evidence.benchmark_window.allowed)" true
	assert_eq "$(after7 .evidence.benchmark_window.modules.loads[0].origin)" memory
	assert_eq "$(after7 .evidence.benchmark_window.modules.loads[0].size)" 4096
	assert_contains "$(after7 .summary)" "1 module loaded, 0 compile lines (allowed: benchmark.allow_loads)"
	validate r.json
}

# A witness that records no module loads (a version 2 file) cannot tell: the report says so,
# and exec still runs and passes.
test_witness_without_module_table_is_noted() {
	setup
	VERSION=2 spec old.spec
	witness old.spec
	bench "" old.spec >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(after7 .evidence.benchmark_window.modules.recorded)" false
	assert_eq "$(after7 .evidence.benchmark_window.modules.files_not_recording)" 1
	assert_contains "$(after7 .summary)" "module loads not recorded by the witness"
	validate r.json
}

compile_line() { # TEXT [WHEN]: the engine's vLLM log line, stamped now (or WHEN, date -d)
	printf '(EngineCore_DP0 pid=%s) INFO %s [backends.py:218] %s\n' "$engine" \
		"$(date -d "${2:-now}" '+%m-%d %H:%M:%S')" "$1"
}

test_vllm_compile_line_during_benchmark_fails_after() {
	setup
	# the warm-up's compile, ten seconds before: not in the window
	compile_line "Compiling a graph for compile range (1, 2048) takes 0.81 s" "-10 sec" >>logs/server.log
	# a line stamped a second or more after the start: in the window whatever its fraction
	{ declare -f compile_line; echo "engine=$engine"; echo "sleep 1.2"
	  echo "compile_line 'Compiling a graph for dynamic shape takes 2.50 s' >>logs/server.log"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[6].status' r.json)" pass "before the command"
	assert_eq "$(after7 .status)" fail
	assert_eq "$(after7 '[.problems[].code] | join(" ")')" dispatch-marker.compiled-during-benchmark
	assert_contains "$(after7 '.problems[0].message')" "Compiling a graph for dynamic shape takes 2.50 s"
	assert_not_contains "$(after7 '.problems[0].message')" "compile range"
	assert_eq "$(after7 .evidence.benchmark_window.compile_lines.in_window)" 1
	validate r.json
}

run_tests
