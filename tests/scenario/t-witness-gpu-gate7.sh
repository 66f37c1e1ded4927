#!/usr/bin/env bash
# The recording of tests/gpu/witness/run-gate7.sh on the H200
# (tests/gpu/results/2026-12-01-h200-witness-gate7): the PyTorch service's witness files read
# back with the gate's parser, the reports made there (certified from the witness alone; the
# fallback refused with its kernel named; a graph replay not itemized), and gate 7's decisions
# made again here on the recorded files, given the identity of a live process (restamp).
source "$PVG_SRC/tests/lib.sh"
need jq
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
R="$PVG_SRC/tests/gpu/results/2026-12-01-h200-witness-gate7"
BOOT=$(cat /proc/sys/kernel/random/boot_id)
ROWSCALE='record name="pvg_rowscale_f16x2" demangled="" module="" grid=32,1,1 block=256,1,1 via=1 flags=0 count=3'
MUL='_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_'

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }
count_of() { # DUMP MANGLED: the count of that record
	grep -F "record name=\"$2\"" <<<"$1" | sed 's/.* count=\([0-9]*\) .*/\1/'
}

test_recorded_files_parse_as_committed() {
	local f out
	for f in "$R"/*.pvgw; do
		out=$("$TOOL" dump "$f") || fail "$f does not parse"
		assert_eq "$out" "$(cat "${f%.pvgw}.dump.txt")" "dump of $(basename "$f")"
		assert_contains "$out" 'api=1 flags=2 ' "$(basename "$f") (CUDA, recording, not final)"
		assert_contains "$out" 'dropped=0 ' "$(basename "$f")"
		assert_contains "$out" 'note="cuda: /usr/local/cuda/lib64/libcupti.so"' "$(basename "$f")"
	done
	[ "$(ls "$R"/*.pvgw | wc -l)" = 4 ] || fail "expected 4 witness files"
}

test_selected_service_launched_the_extension_kernel() {
	local f out
	for f in 01-selected 03-selected; do
		out=$("$TOOL" dump "$R/$f.engine.pvgw")
		assert_contains "$out" "$ROWSCALE" "$f"
		assert_contains "$out" 'launches=15 dropped=0 graph_launches=0 nested_driver=0 captured=0 records=5' "$f"
		# the service's own check (x * 2.0) runs PyTorch's multiply once per request
		assert_eq "$(count_of "$out" "$MUL")" 3 "$f multiply count"
	done
}

test_fallback_service_did_not() {
	out=$("$TOOL" dump "$R/02-fallback.engine.pvgw")
	assert_not_contains "$out" pvg_rowscale "fallback file"
	assert_contains "$out" 'launches=15 dropped=0 graph_launches=0 nested_driver=0 captured=0 records=4'
	# rowscale's fallback (x * s) and the check (x * 2.0): 2 per request
	assert_eq "$(count_of "$out" "$MUL")" 6 "multiply count"
	assert_contains "$out" 'MulFunctor<float>'
}

test_graph_replay_is_counted_not_itemized() {
	out=$("$TOOL" dump "$R/04-graph.engine.pvgw")
	assert_contains "$out" 'launches=11 dropped=0 graph_launches=5 nested_driver=0 captured=1 records=5'
	assert_not_contains "$out" pvg_rowscale "graph file"
	# launches = the itemized counts (6) + the graph launches (5)
	local sum
	sum=$(grep -o ' count=[0-9]*' <<<"$out" | cut -d= -f2 | awk '{s += $1} END {print s}')
	assert_eq "$sum" 6 "sum of record counts"
}

test_recorded_reports() {
	local n s codes
	for n in 01-selected-certified:pass: 02a-fallback-require-only:fail:dispatch-marker.witness-too-few \
		"02b-fallback-forbid:fail:dispatch-marker.witness-too-few dispatch-marker.witness-forbidden" \
		03-selected-forbid:fail:dispatch-marker.witness-forbidden \
		04-graph-replay:fail:dispatch-marker.witness-too-few; do
		f=$R/${n%%:*}.json s=${n#*:}
		for g in 1 2 3 4 5 6; do
			assert_eq "$(gate_status "$f" $g)" pass "$(basename "$f") gate $g"
		done
		assert_eq "$(gate_status "$f" 7)" "${s%%:*}" "$(basename "$f") gate 7"
		assert_eq "$(problem_codes "$f" 7)" "${s#*:}" "$(basename "$f") gate 7 codes"
		assert_eq "$(jq -r '.gates[6].evidence.witness.live_files | length' "$f")" 1 "$(basename "$f") live files"
		assert_eq "$(jq -r '.gates[4].evidence.witness[0]' "$f")" "provgate dispatch witness (CUDA_INJECTION64_PATH)"
		validate "$f"
	done
	f=$R/01-selected-certified.json
	assert_eq "$(jq -r .certified "$f")" true
	assert_eq "$(jq -c '.gates[6].evidence.witness.required[0]' "$f")" '{"kernel":"pvg_rowscale_f16x2","grid":[32,1,1],"block":[256,1,1],"count":"3","min_count":3}'
	# the config had no markers section: gate 7 passed from the witness alone
	assert_eq "$(grep -c '"markers"' "$R/cfg-require.json" "$R/cfg-forbid.json" | cut -d: -f2 | paste -sd+)" "0+0"
	assert_contains "$(jq -r '.gates[6].problems[1].message' "$R/02b-fallback-forbid.json")" \
		'forbidden "*MulFunctor*": the live service launched void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >'
	assert_contains "$(jq -r '.gates[6].problems[1].message' "$R/02b-fallback-forbid.json")" '6 times (e.g. grid=16,1,1 block=128,1,1)'
	assert_eq "$(jq -r '.gates[6].evidence.witness.graph_launches' "$R/04-graph-replay.json")" 5
	assert_eq "$(jq -r '.gates[6].evidence.witness.captured_launches' "$R/04-graph-replay.json")" 1
	# each later service's folder held the earlier engines' files: ignored, not counted
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.not_target' "$R/04-graph-replay.json")" 3
}

# gate 7 again, here, on a recorded file given to a live process of this machine
regate() { # FILE FORBID
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=/usr/lib/provgate/libprovgate-witness.so sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	"$TOOL" restamp "$R/$1" wdir $svc $svc 1 "$(ticks_of $svc)" "$BOOT" >/dev/null
	cat >provgate.json <<JSON
{ "arch": "sm_90", "witness": { "dir": "wdir",
  "require": [{ "kernel": "pvg_rowscale_f16x2", "grid": [32], "block": [256], "min_count": 3 }],
  "forbid": $2 } }
JSON
	pg run -c provgate.json --pid $svc --gates 7 --json report.json
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
}

test_regate_selected_passes() {
	regate 01-selected.engine.pvgw '[]'
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$rc" 0
	# min_count 4, one more than recorded: refused
	sed -i 's/"min_count": 3/"min_count": 4/' provgate.json
	pg run -c provgate.json --pid $svc --gates 7 --json report.json
	assert_eq "$(problem_codes report.json 7)" dispatch-marker.witness-too-few
}

test_regate_fallback_refused() {
	regate 02-fallback.engine.pvgw '["*MulFunctor*"]'
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.witness-too-few dispatch-marker.witness-forbidden"
	assert_eq "$rc" 1
}

# Recorded by a version 1 witness, which itemized no graph replay: the kernel may have run in
# the 5 replays, so its absence from the records decides nothing (before version 2 this was
# refused as too few, which the replays could have contradicted).
test_regate_graph_undecided() {
	regate 04-graph.engine.pvgw '[]'
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-too-few
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'graph replays whose kernels the witness could not itemize may hold it'
	assert_eq "$(jq -r '.gates[6].evidence.witness.graph_launches' report.json)" 5
	assert_eq "$(jq -r '.gates[6].evidence.witness.graph_replays_opaque' report.json)" 5
}

run_tests
