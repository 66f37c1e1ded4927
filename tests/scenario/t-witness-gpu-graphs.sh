#!/usr/bin/env bash
# The recording of run-gate7.sh's steps 05-09 on the H200
# (tests/gpu/results/2026-12-01-h200-witness-graphs): the PyTorch service's witness files
# (version 2) read back with the gate's parser, the reports made there (certified from
# replayed launches; the fallback in the replays refused; certified 0.1 s after eager
# launches from the answer to the request), and gate 7's decisions made again here on the
# recorded files, given the identity of a live process (restamp).
source "$PVG_SRC/tests/lib.sh"
need jq
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
R="$PVG_SRC/tests/gpu/results/2026-12-01-h200-witness-graphs/01-service"
BOOT=$(cat /proc/sys/kernel/random/boot_id)
ROWSCALE='record name="pvg_rowscale_f16x2" demangled="" module="" grid=32,1,1 block=256,1,1'

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }

test_recorded_files_parse_as_committed() {
	local f
	for f in "$R"/*.engine.pvgw; do
		assert_eq "$("$TOOL" dump "$f")" "$(cat "${f%.pvgw}.dump.txt")" "dump of $(basename "$f")"
	done
}

test_decode_step_replays_are_itemized() {
	out=$("$TOOL" dump "$R/05-decode-graph-after.engine.pvgw")
	assert_contains "$out" 'graph_launches=20 nested_driver=0 captured=7 records=29'
	assert_contains "$out" 'graphs itemized=20 opaque=0 partial=0 kernel_launches=140 execs=1 opaque_why=0x0'
	# the warm-up's eager call and the 20 replays, apart
	assert_contains "$out" "$ROWSCALE via=1 flags=0 count=1 "
	assert_contains "$out" "$ROWSCALE via=4 flags=0 count=20 "
	# every via 4 record: the 7 nodes of the one exec, 20 replays each
	assert_eq "$(grep -c 'via=4 flags=0 count=20 ' <<<"$out")" 7
	out=$("$TOOL" dump "$R/06-decode-graph-fallback-after.engine.pvgw")
	assert_not_contains "$out" pvg_rowscale
	assert_contains "$out" 'MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<c10::Half'
	assert_contains "$(grep MulFunctor <<<"$out" | grep 'c10::Half, c10::Half, c10::Half')" 'grid=16,1,1 block=128,1,1 via=4 flags=0 count=20 '
}

test_the_answer_had_what_the_periodic_file_did_not() {
	before=$("$TOOL" dump "$R/07-eager-certify-at-0.1s-before.engine.pvgw")
	after=$("$TOOL" dump "$R/07-eager-certify-at-0.1s-after.engine.pvgw")
	assert_contains "$before" 'api=0 flags=0 launches=0 '
	assert_contains "$before" 'answered=0'
	assert_contains "$after" 'api=1 flags=2 launches=15 '
	assert_contains "$after" "$ROWSCALE via=1 flags=0 count=3 "
	token=$(jq -r '.gates[6].evidence.witness.request.token' "$R/07-eager-certify-at-0.1s.json")
	assert_contains "$after" "answered=$token"
}

test_recorded_reports() {
	local n f s
	for n in 05-decode-graph:pass: "06-decode-graph-fallback:fail:dispatch-marker.witness-too-few" \
		07-eager-certify-at-0.1s:pass:; do
		f=$R/${n%%:*}.json s=${n#*:}
		for g in 1 2 3 4 5 6; do
			assert_eq "$(gate_status "$f" $g)" pass "$(basename "$f") gate $g"
		done
		assert_eq "$(gate_status "$f" 7)" "${s%%:*}" "$(basename "$f") gate 7"
		assert_eq "$(problem_codes "$f" 7)" "${s#*:}" "$(basename "$f") gate 7 codes"
		assert_eq "$(jq -r '.gates[6].evidence.witness.live_files[0].fresh' "$f")" answered "$(basename "$f") fresh"
		assert_eq "$(jq -r '.gates[6].evidence.witness.request.not_answered' "$f")" 0
		validate "$f"
	done
	f=$R/05-decode-graph.json
	assert_eq "$(jq -r .certified "$f")" true
	assert_eq "$(jq -c '.gates[6].evidence.witness.required[0]' "$f")" '{"kernel":"pvg_rowscale_f16x2","grid":[32,1,1],"block":[256,1,1],"via":"graph","count":"20","in_graph_replays":"20","min_count":20}'
	assert_contains "$(jq -r '.gates[6].problems[0].message' "$R/06-decode-graph-fallback.json")" '{pvg_rowscale_f16x2 grid=32,1,1 block=256,1,1 via=graph}: 0 launches seen by the witness, 20 required'
}

regate() { # FILE REQUIRE
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=/usr/lib/provgate/libprovgate-witness.so sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	rm -f wdir/*.pvgw
	"$TOOL" restamp "$R/$1" wdir $svc $svc 1 "$(ticks_of $svc)" "$BOOT" >/dev/null
	printf '{ "witness": { "dir": "wdir", "require": %s } }\n' "$2" >provgate.json
	pg run -c provgate.json --pid $svc --gates 7 --json report.json
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
}

test_regate_via() {
	regate 05-decode-graph-after.engine.pvgw '[{"kernel": "pvg_rowscale_f16x2", "grid": [32], "via": "graph", "min_count": 20}]'
	assert_eq "$status" pass "via graph ($codes)"
	# 21 in all: the replays and the warm-up
	regate 05-decode-graph-after.engine.pvgw '[{"kernel": "pvg_rowscale_f16x2", "min_count": 21}]'
	assert_eq "$status" pass "any via ($codes)"
	regate 05-decode-graph-after.engine.pvgw '[{"kernel": "pvg_rowscale_f16x2", "via": "eager", "min_count": 2}]'
	assert_eq "$status" fail
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '1 launch seen by the witness, 2 required; its launches inside graph replays do not count (via eager)'
	# the fallback's replays: every replay itemized, so the absence is decided
	regate 06-decode-graph-fallback-after.engine.pvgw '[{"kernel": "pvg_rowscale_f16x2"}]'
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-too-few
}

run_tests
