#!/usr/bin/env bash
# provgate exec: a service whose processes changed while the benchmark ran ran it partly on
# processes the before-check never certified. A service process (service.family / match, in
# the service's tree) certified before and gone after, or one the before-check did not see,
# fails the after-check, named; the witness file of a process that exited during the window
# is still read for the modules it loaded then, when its writer's identity is the one the
# before-check recorded. A helper of no service name (a compiler) is no service process.
# The demo's scenario for real (hipcc build, install, a live service with two workers); the
# engine starts a worker on SIGUSR2 and a "ptxas" helper on SIGWINCH (fake-service).
source "$PVG_SRC/tests/lib.sh"

TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }
# the pid of the tree's process titled TITLE (its title is "TITLE TAG")
pid_of() { pgrep -f "^$1 $scenario_tag\$" | head -n1; }

setup() {
	need hipcc ninja git ss jq pgrep /usr/bin/python3
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
	boot=$(cat /proc/sys/kernel/random/boot_id)
	worker0=$(pid_of VLLM::Worker_0)
	[ -n "$worker0" ] || fail "no worker 0"
	w0ticks=$(ticks_of "$worker0")
	# service.family names the workers as vLLM's "VLLM::" does; hand-written witness files
	# name a stand-in kernel (see t-exec-loads.sh)
	jq --arg d "$W/wdir" --arg f "VLLM::* $scenario_tag" '.service.family += [$f] |
		.witness = {"dir": $d, "require": [{"kernel": "wvSplitK"}],
		"changed_sources": {"csrc/rocm/skinny_gemms.cu":
			{"exempt": "the witness files of these tests are hand-written"}}}' \
		provgate.json >p.json && mv p.json provgate.json
	pg inspect --digests "$W/site/vllm_demo/_rocm_C.abi3.so"
	art_sha=$(awk '$5 ~ /^gfx90a/ { f = 1; next } f && $1 == "sha256" { print $2; exit }' <<<"$out")
	[ ${#art_sha} = 64 ] || fail "no gfx90a digest of the artifact: '$art_sha'"
	ART_MODULE="module sha256=$art_sha origin=embedded load_ns=now-60 size=65536 path=$W/site/vllm_demo/_rocm_C.abi3.so"
	printf '%s\n' "version 3" "record name=wvSplitK_832 count=5 module=1 bind=handle" \
		"$ART_MODULE" >warm.spec
	"$TOOL" build warm.spec wdir "$engine" "$engine" 1 "$(ticks_of "$engine")" "$boot" >/dev/null
	# worker 0 records too: it loaded the artifact's code while it started
	"$TOOL" build warm.spec wdir "$worker0" "$worker0" 1 "$w0ticks" "$boot" >/dev/null
}

after() { jq -r ".after.gates[$1] | $2" r.json; }

# wait_gone PID: until the engine has reaped it
wait_gone() {
	printf 'while [ -e /proc/%s ] && ! grep -q "^State:.*Z" /proc/%s/status 2>/dev/null; do sleep 0.02; done\n' "$1" "$1"
	printf 'while [ -e /proc/%s ]; do sleep 0.02; done\n' "$1"
}

test_worker_gone_during_benchmark_fails_after() {
	setup
	{ echo "kill $worker0"; wait_gone "$worker0"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].status' r.json)" pass "before the command"
	assert_eq "$(after 3 .status)" fail "after the command"
	assert_eq "$(after 3 '[.problems[].code] | join(" ")')" process-maps.service-process-gone
	assert_contains "$(after 3 '.problems[0].message')" "process $worker0 (VLLM::Worker_0"
	assert_contains "$(after 3 '.problems[0].message')" "is gone"
	assert_eq "$(after 3 '.evidence.service_processes.gone[0].pid')" "$worker0"
	assert_eq "$(after 3 '.evidence.service_processes.gone[0].comm')" VLLM::Worker_0
	assert_eq "$(after 3 '.evidence.service_processes.certified')" 4
	assert_contains "$out" "NOT CERTIFIED"
	validate r.json
}

test_new_worker_during_benchmark_fails_after() {
	setup
	{ echo "kill -USR2 $engine"
	  echo "while ! pgrep -f '^VLLM::Worker_2 $scenario_tag\$' >/dev/null; do sleep 0.02; done"; } >b.sh
	pg exec --out r.json -- sh b.sh
	local w2
	w2=$(pid_of VLLM::Worker_2)
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(after 3 .status)" fail "after the command"
	assert_eq "$(after 3 '[.problems[].code] | join(" ")')" process-maps.service-process-new
	assert_contains "$(after 3 '.problems[0].message')" "process $w2 (VLLM::Worker_2"
	# started by the benchmark: after its start, or within the tick its start time is
	# counted in
	case "$(after 3 '.problems[0].message')" in
	*"s after the benchmark started"* | *"as the benchmark started (within the clock tick"*) ;;
	*) fail "when it started: $(after 3 '.problems[0].message')" ;;
	esac
	assert_eq "$(after 3 '.evidence.service_processes.new[0].pid')" "$w2"
	validate r.json
}

# A worker restarted: the old one gone, a new one in its place; both named.
test_restarted_worker_is_named_twice() {
	setup
	{ echo "kill $worker0"; wait_gone "$worker0"; echo "kill -USR2 $engine"
	  echo "while ! pgrep -f '^VLLM::Worker_2 $scenario_tag\$' >/dev/null; do sleep 0.02; done"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(after 3 '[.problems[].code] | join(" ")')" \
		"process-maps.service-process-gone process-maps.service-process-new"
}

# A compiler the engine runs is in its tree but no service process: no failure.
test_helper_started_during_benchmark_passes() {
	setup
	{ echo "kill -WINCH $engine"
	  echo "while ! pgrep -x ptxas -P $engine >/dev/null; do sleep 0.02; done"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(after 3 .status)" pass
	assert_eq "$(after 3 '.evidence.service_processes.new | length')" 0
	pgrep -x ptxas -P "$engine" >/dev/null || fail "the helper is not running"
	validate r.json
}

# The worker loaded code while the benchmark ran, wrote its file at its exit, and is gone:
# its loads are counted, named with its pid and that it exited.
test_exited_worker_loads_are_counted() {
	setup
	printf '%s\n' "version 3" "flags 0x13" "record name=wvSplitK_832 count=9 module=1 bind=handle" \
		"$ART_MODULE" "module origin=memory load_ns=now size=4096" >jit.spec
	{ printf '"%s" build jit.spec wdir %s %s 1 %s %s >/dev/null\n' "$TOOL" "$worker0" \
		"$worker0" "$w0ticks" "$boot"
	  echo "kill $worker0"; wait_gone "$worker0"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(after 6 .status)" fail "gate 7 after the command"
	assert_contains "$(after 6 '[.problems[].code] | join(" ")')" dispatch-marker.loaded-during-benchmark
	assert_contains "$(after 6 '.problems[] | select(.code == "dispatch-marker.loaded-during-benchmark") | .message')" \
		"loaded by pid $worker0 (exited before the after-check)"
	assert_eq "$(after 6 .evidence.benchmark_window.modules.loaded)" 1
	assert_eq "$(after 6 .evidence.benchmark_window.modules.loads[0].exited)" true
	assert_eq "$(after 6 .evidence.benchmark_window.modules.files_of_exited)" 1
	assert_eq "$(after 3 '[.problems[].code] | join(" ")')" process-maps.service-process-gone
	validate r.json
}

# A file in the exited worker's name whose start time is not the one the before-check
# recorded is another process's: never counted as the worker's.
test_exited_worker_file_of_another_identity_is_not_its() {
	setup
	printf '%s\n' "version 3" "flags 0x13" "record name=wvSplitK_832 count=9 module=1 bind=handle" \
		"$ART_MODULE" "module origin=memory load_ns=now size=4096" >jit.spec
	{ printf '"%s" build jit.spec wdir %s %s 1 %s %s >/dev/null\n' "$TOOL" "$worker0" \
		"$worker0" "$((w0ticks - 1))" "$boot"
	  echo "kill $worker0"; wait_gone "$worker0"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(after 6 .evidence.benchmark_window.modules.loaded)" 0
	# the worker's own file, written before the benchmark, is read: not the other one
	assert_eq "$(after 6 .evidence.benchmark_window.modules.files_of_exited)" 1
	assert_not_contains "$(after 6 '[.problems[].code] | join(" ")')" loaded-during-benchmark
}

# The exited worker's last write was before the benchmark ended and not at its exit (it was
# killed): what it loaded after that write is not known.
test_exited_worker_without_final_write_is_unverifiable() {
	setup
	{ echo "kill -KILL $worker0"; wait_gone "$worker0"; } >b.sh
	pg exec --out r.json -- sh b.sh
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(after 6 .status)" unverifiable
	assert_eq "$(after 6 '[.problems[].code] | join(" ")')" dispatch-marker.loads-not-covered
	assert_contains "$(after 6 '.problems[0].message')" "process $worker0"
	assert_eq "$(after 6 .evidence.benchmark_window.modules.files_of_exited)" 1
}

run_tests
