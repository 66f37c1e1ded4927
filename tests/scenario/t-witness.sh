#!/usr/bin/env bash
# Gate 7 from the dispatch witness. The witness files are the real ones recorded on the H200
# (tests/gpu/results/2026-12-01-h200-witness/demo.pvgw: pvg_wit_scale 8x128 twice,
# pvg_wit_add 4,2x64 and 5x256, pvg_wit_plain 3x32), given the identity of a live process
# here (witness-tool restamp), and the files libprovgate-witness.so itself writes when a real
# process loads it (witness-tool drive: no GPU, launches counted through its exported entry).
source "$PVG_SRC/tests/lib.sh"
need jq
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"
DEMO="$PVG_SRC/tests/gpu/results/2026-12-01-h200-witness/demo.pvgw"
BOOT=$(cat /proc/sys/kernel/random/boot_id)

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }

# start_service [env]: a process that was (or, with "plain", was not) started with the witness
start_service() {
	mkdir -p wdir
	if [ "${1:-}" = plain ]; then
		sleep 300 &
	else
		PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB sleep 300 &
	fi
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	ticks=$(ticks_of $svc)
}

# config REQUIRE [FORBID]
config() {
	cat >provgate.json <<JSON
{ "witness": { "dir": "wdir", "require": $1, "forbid": ${2:-[]} } }
JSON
}

gate7() {
	pg run -c provgate.json --pid $svc --gates 7 --json report.json
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
}

stamp() { # stamp PID NSPID LEVELS TICKS [BOOT]
	"$TOOL" restamp "$DEMO" wdir "$1" "$2" "$3" "$4" "${5:-$BOOT}" >/dev/null
}

test_recorded_h200_file_parses() {
	out=$("$TOOL" dump "$DEMO")
	assert_contains "$out" 'api=1 flags=3 launches=7 dropped=0 graph_launches=2'
	assert_contains "$out" 'captured=1'
	assert_contains "$out" 'record name="_Z13pvg_wit_scalePffi" demangled="pvg_wit_scale(float*, float, int)" module="" grid=8,1,1 block=128,1,1 via=1 flags=0 count=2'
	assert_contains "$out" 'record name="pvg_wit_plain" demangled="" module="" grid=3,1,1 block=32,1,1 via=1 flags=0 count=1'
	assert_contains "$out" 'grid=4,2,1 block=64,1,1'
	assert_contains "$out" 'grid=5,1,1 block=256,1,1'
	# the graph's captured launch (16x32) is not a record
	assert_not_contains "$out" 'grid=16,1,1'
	assert_eq "$(grep -c '^record' <<<"$out")" 4 "records"
}

test_live_witness_passes() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_scale", "grid": [8], "block": [128], "min_count": 2}, {"kernel": "_Z11pvg_wit_add*", "grid": [4, 2]}]'
	gate7
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$rc" 0
	assert_eq "$(jq -c .chain.witness report.json)" '{"live_files":1,"required_met":2,"required":2,"forbidden_seen":0}'
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].api' report.json)" cuda
	assert_eq "$(jq -r '.gates[6].evidence.witness.graph_launches' report.json)" 2
	# what ran, most launched first
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels_total' report.json)" 4
	assert_eq "$(jq -c '.gates[6].evidence.witness.kernels[0]' report.json)" '{"name":"pvg_wit_scale(float*, float, int)","grid":[8,1,1],"block":[128,1,1],"count":"2","code":"name-only","bind":"none"}'
	# a file without module identity: its launches are linked by name only
	assert_eq "$(jq -r '.gates[6].evidence.witness.required[0].linked_by_name_only' report.json)" 2
	assert_eq "$(jq -c '.gates[6].evidence.witness.modules' report.json)" '[]'
	validate report.json
}

test_demangled_pattern_matches() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_add(float*, float const*, int)", "grid": [5], "block": [256]}]'
	gate7
	assert_eq "$status" pass "status ($codes)"
}

# The recorded file is version 1: its 2 graph launches (pvg_wit_scale 16x32 inside) are not
# itemized, so a requirement they could meet is undecided, not failed.
test_min_count_not_met_with_opaque_replays_is_unverifiable() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_scale", "grid": [8], "min_count": 3}]'
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-too-few
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '2 launches seen by the witness, 3 required; graph replays whose kernels the witness could not itemize may hold it'
	assert_eq "$rc" 1
	# eager launches alone asked for: the replays cannot hold them, so it fails
	config '[{"kernel": "pvg_wit_scale", "grid": [8], "min_count": 3, "via": "eager"}]'
	gate7
	assert_eq "$status" fail
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '{pvg_wit_scale grid=8,1,1 via=eager}: 2 launches seen by the witness, 3 required'
}

test_grid_mismatch_fails() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_add", "grid": [7], "via": "eager"}]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-grid-mismatch
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'pvg_wit_add(float*, float const*, int) ran 2 times with other dimensions'
	# any launch kind: the opaque replays could hold it
	config '[{"kernel": "pvg_wit_add", "grid": [7]}]'
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-grid-mismatch
}

test_forbidden_kernel_fails() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_scale"}]' '["pvg_wit_plain"]'
	gate7
	assert_eq "$status" fail
	# the forbidden kernel was seen; that the opaque replays could hide more is said too
	assert_eq "$codes" "dispatch-marker.witness-graph-opaque dispatch-marker.witness-forbidden"
	assert_contains "$(jq -r '.gates[6].problems[1].message' report.json)" 'launched pvg_wit_plain 1 time (e.g. grid=3,1,1 block=32,1,1)'
}

test_forbid_with_opaque_replays_is_unverifiable() {
	start_service; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_scale"}]' '["pvg_nowhere"]'
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-graph-opaque
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '2 graph replays ran kernels the witness could not itemize'
}

test_earlier_process_with_same_pid_is_stale() {
	start_service; stamp $svc $svc 1 $((ticks - 5))
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-stale
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.pid_reused' report.json)" 1
}

test_other_namespace_does_not_count() {
	start_service
	# same own-namespace pid and start, but written from a child pid namespace (two levels)
	stamp 7 $svc 2 $ticks
	# the target's pid number as the pid of a namespaced writer
	stamp $svc 9 2 $ticks
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-stale
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.foreign_namespace' report.json)" 2
}

test_other_boot_does_not_count() {
	start_service; stamp $svc $svc 1 $ticks 00000000-0000-0000-0000-000000000000
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$codes" dispatch-marker.witness-stale
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.earlier_boot' report.json)" 1
}

test_truncated_file_is_refused() {
	start_service; stamp $svc $svc 1 $ticks
	f=$(ls wdir/*.pvgw)
	head -c 500 "$f" >"$f.cut" && mv "$f.cut" "$f"
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-corrupt
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'truncated'
}

test_flipped_byte_is_refused() {
	start_service; stamp $svc $svc 1 $ticks
	f=$(ls wdir/*.pvgw)
	printf 'X' | dd of="$f" bs=1 seek=400 conv=notrunc 2>/dev/null
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_contains "$codes" dispatch-marker.witness-corrupt
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'checksum'
}

test_service_without_witness_is_unverifiable() {
	start_service plain; stamp $svc $svc 1 $ticks
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-not-enabled
	assert_contains "$(jq -r '.gates[6].problems[0].hint' report.json)" 'provgate exec --witness'
}

test_witness_dir_mismatch_is_unverifiable() {
	start_service; stamp $svc $svc 1 $ticks
	mkdir other
	cat >provgate.json <<JSON
{ "witness": { "dir": "other", "require": [{"kernel": "pvg_wit_scale"}] } }
JSON
	gate7
	assert_eq "$status" unverifiable
	assert_contains "$codes" dispatch-marker.witness-dir-mismatch
}

test_missing_folder_is_unverifiable() {
	start_service
	rmdir wdir
	config '[{"kernel": "pvg_wit_scale"}]'
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-dir-unreadable
}

# A real process loads the library: its constructor writes the header file at once, counts
# the launches the process reports through the library, and writes the final file at exit.
test_real_process_witness_attribution_and_bounds() {
	mkdir wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB "$TOOL" drive "$LIB" "$PWD/wdir" 10 300 >drive.out &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 600); do [ -s drive.out ] && break; sleep 0.05; done
	f=$(ls wdir/*.pvgw)
	assert_eq "$(basename "$f")" "witness-$svc-$(ticks_of $svc)-${BOOT:0:8}.pvgw" "file name"
	# no temporary file is left behind
	assert_eq "$(ls -A wdir | wc -l)" 1
	out=$("$TOOL" dump "$f")
	assert_contains "$out" "header pid=$svc nspid=$svc levels=1 start_ticks=$(ticks_of $svc) boot_id=$BOOT api=0 flags=0 launches=13"
	# (demangled when the process has a C++ runtime: the sanitizers' runtime brings one)
	assert_contains "$out" 'name="_Z10pvg_test_0Pf" demangled="'
	assert_contains "$out" 'module="" grid=1,1,1 block=128,1,1 via=1 flags=0 count=4'
	cat >provgate.json <<JSON
{ "witness": { "dir": "wdir", "require": [{"kernel": "pvg_test_0P*", "grid": [1], "min_count": 4}] } }
JSON
	gate7
	# loaded, but no GPU runtime called it: the witness says so and nothing is trusted
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-not-recording
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'no GPU runtime has called it yet'
	kill $svc; wait $svc 2>/dev/null || true
	# the exit handler's final file replaced the first one
	out=$("$TOOL" dump "$f")
	assert_contains "$out" 'flags=1 '
	# a new process with another pid: the old file is not its witness
	start_service
	gate7
	assert_eq "$codes" dispatch-marker.witness-stale
}

test_table_is_bounded() {
	mkdir wdir
	"$TOOL" drive "$LIB" "$PWD/wdir" 5000 >/dev/null
	out=$("$TOOL" dump wdir/*.pvgw)
	assert_contains "$out" 'launches=5003 dropped=904'
	assert_contains "$out" 'records=4096'
	# FINAL | TABLE_FULL
	assert_contains "$out" 'flags=5 '
	assert_eq "$(grep -c '^record' <<<"$out")" 4096
}

test_markers_and_witness_together() {
	start_service; stamp $svc $svc 1 $ticks
	printf 'DCU_KERNEL_DIAG selected=True shape=(8, 128)\n' >server.log
	cat >provgate.json <<JSON
{ "markers": { "log": "server.log", "prefix": "DCU_KERNEL_DIAG", "require": [{"selected": "True"}] },
  "witness": { "dir": "wdir", "require": [{"kernel": "pvg_wit_scale", "min_count": 9, "via": "eager"}] } }
JSON
	gate7
	# the markers pass (the log was created after the service started), the witness does not
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-too-few
	assert_contains "$(jq -r '.gates[6].summary' report.json)" 'markers: '
}

test_exec_witness_prints_the_variables_and_checks_the_service() {
	start_service; stamp $svc $svc 1 $ticks
	cat >provgate.json <<JSON
{ "arch": "sm_90", "service": {"pid": $svc}, "witness": { "dir": "wdir", "require": [{"kernel": "pvg_wit_scale"}] } }
JSON
	PROVGATE_WITNESS_LIB=$LIB pg exec --witness wdir
	assert_eq "$rc" 0 "exit ($err)"
	assert_contains "$out" "export PROVGATE_WITNESS_DIR=$PWD/wdir"
	assert_contains "$out" "export CUDA_INJECTION64_PATH=$LIB"
	assert_not_contains "$out" HSA_TOOLS_LIB
	assert_contains "$out" "pid $svc: PROVGATE_WITNESS_DIR=$PWD/wdir, CUDA_INJECTION64_PATH=$LIB"
	# the same service certifies gate 7 from the witness alone
	gate7
	assert_eq "$status" pass "gate 7 ($codes)"
}

test_exec_witness_refuses_a_service_without_it() {
	start_service plain
	printf '{ "service": {"pid": %d} }' $svc >provgate.json
	PROVGATE_WITNESS_LIB=$LIB pg exec --witness wdir
	assert_eq "$rc" 1
	assert_contains "$out" "pid $svc: started without the witness (PROVGATE_WITNESS_DIR not set)"
	# without an arch, both loaders are printed
	assert_contains "$out" "export HSA_TOOLS_LIB=$LIB"
	pg exec --witness wdir -- true
	assert_eq "$rc" 2
	assert_contains "$err" "--witness starts nothing"
	pg exec --witness
	assert_eq "$rc" 2
}

# A real pid namespace (unshare, as a container has): the library inside sees its own /proc,
# so its file says pid 1 with one NSpid level; from here that process has another pid. Its
# file is attributed to it by its own-namespace pid, start ticks and boot id.
test_witness_written_in_a_pid_namespace_is_attributed() {
	need unshare pgrep
	unshare --pid --fork --mount-proc true 2>/dev/null || { echo "SKIP: cannot make a pid namespace here (needs root or user namespaces)" >&2; exit 77; }
	mkdir wdir
	unshare --pid --fork --mount-proc env PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB \
		"$TOOL" drive "$LIB" "$PWD/wdir" 3 300 >drive.out 2>&1 &
	wrapper=$!
	trap 'kill $svc $wrapper 2>/dev/null || true' EXIT
	for _ in $(seq 600); do [ -s drive.out ] && break; sleep 0.05; done
	assert_eq "$(cat drive.out)" "pid 1" "its own pid"
	svc=$(pgrep -P $wrapper)
	assert_eq "$(awk '/^NSpid:/ {print $2, $3}' /proc/$svc/status)" "$svc 1" "NSpid seen from here"
	f=$(ls wdir/*.pvgw)
	assert_eq "$(basename "$f")" "witness-1-$(ticks_of $svc)-${BOOT:0:8}.pvgw"
	cat >provgate.json <<JSON
{ "witness": { "dir": "wdir", "require": [{"kernel": "pvg_test_0", "min_count": 4}] } }
JSON
	gate7
	# live (attributed to the namespaced process), but recording nothing: no GPU runtime
	assert_eq "$codes" dispatch-marker.witness-not-recording
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].pid' report.json)" "$svc"
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].nspid' report.json)" 1
	# it answered the gate's request from inside the namespace
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].fresh' report.json)" answered
	# a file of this namespace's earlier pid 1 (another start) is not its witness; the live
	# process, asked for a fresh witness, writes its own file again
	"$TOOL" restamp "$f" wdir 1 1 1 $(( $(ticks_of $svc) - 7 )) "$BOOT" >/dev/null
	mkdir other && mv "$f" other/
	# (a gate that finds no file of the live process waits for none: whether the new file
	# is there when it reads the folder depends on the writer's thread, so this run may see
	# only the earlier start's file)
	gate7
	case $codes in
	dispatch-marker.witness-stale|dispatch-marker.witness-not-recording) ;;
	*) fail "with its file gone: $codes" ;;
	esac
	for _ in $(seq 200); do [ -f "$f" ] && break; sleep 0.05; done
	[ -f "$f" ] || fail "the live process did not write its file again"
	gate7
	assert_eq "$codes" dispatch-marker.witness-not-recording
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.pid_reused' report.json)" 1
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files | length' report.json)" 1
	assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].fresh' report.json)" answered
}

# Which front ends this build has: the CUDA one needs CUDA's CUPTI headers (not a Debian
# package), so without them it is reported as skipped, never as passed; the ROCm one needs
# Debian's libhsa-runtime-dev and g++ (tests/deps), so in CI its absence is a failure.
test_cuda_front_end_is_built() {
	need nm
	if ! nm -D --defined-only "$LIB" | grep -q ' T InitializeInjection$'; then
		echo "SKIP: the CUDA front end is not built (no cupti.h under \$CUDA_HOME or /usr/local/cuda): the CUDA path is not tested by this build" >&2
		exit 77
	fi
}

test_rocm_front_end_is_built() {
	need nm
	nm -D --defined-only "$LIB" | grep -q ' T OnLoad$' || fail "no OnLoad: the ROCm front end was not built (libhsa-runtime-dev, g++)"
}

test_library_is_self_contained() {
	need ldd nm
	libs=$(ldd "$LIB" | awk '{print $1}' | sort | tr '\n' ' ')
	assert_not_contains "$libs" libprovgate.so
	for l in libgit2 libproc2 libcjson libelf libcrypto libstdc++ libasan libubsan; do
		assert_not_contains "$libs" "$l"
	done
	# only the entry points are exported
	exported=$(nm -D --defined-only "$LIB" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')
	for s in $exported; do
		case $s in InitializeInjection|OnLoad|OnUnload|pvg_witness_*) ;; *) fail "exports $s";; esac
	done
}

# The benchmark build can switch the witness off inside a process; the installed one must
# have no such door, or a service could hide launches from gate 7.
test_installed_library_cannot_be_paused() {
	need nm
	assert_not_contains "$(nm -D --defined-only "$LIB")" pvg_witness_bench
	bench="$PVG_BUILD/lib/witness/libprovgate-witness-bench.so"
	if nm -D --defined-only "$LIB" | grep -q ' T InitializeInjection$'; then
		[ -f "$bench" ] || fail "the CUDA front end is built but libprovgate-witness-bench.so is not"
		assert_contains "$(nm -D --defined-only "$bench")" pvg_witness_bench_callbacks
	fi
	need meson
	installed=$(cd "$PVG_BUILD" && meson introspect --installed .) || fail "meson introspect failed"
	assert_contains "$installed" provgate/libprovgate-witness.so
	assert_not_contains "$installed" witness-bench
}

run_tests
