#!/usr/bin/env bash
# A changed header shared by two extensions (SPEC §9): csrc/common.cuh, included by
# _rocm_C's and _moe_C's kernels, changed on branch "common-header" of the vLLM-like tree of
# tests/scenario/multi-ext.sh (real hipify, CMake + ninja -v, hipcc for gfx906 and gfx90a).
# Built once per build folder: ninja after the change (both recompiled and relinked, _C
# untouched), and `ninja _rocm_C.abi3.so` alone (_moe_C left as the baseline built it).
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/scenario/multi-ext.sh"

# scenario NAME: "header" or "header-partial", copied here; the service is stopped on exit
scenario() {
	need hipcc cmake ninja git jq ss /usr/bin/python3
	W=$PWD svc="$PVG_BUILD/tests/helpers/fake-service"
	trap mx_stop EXIT
	local dir
	dir=$(mx_cache)/scenarios
	mx_generate "$dir" || fail "the scenario's build failed"
	mx_use "$dir" "$1"
}

ROCM_C=$(mx_entry _rocm_C wvSplitK)
MOE_C=$(mx_entry _moe_C moe_align_block_size_kernel)

certify_json() {
	pg certify -c provgate.json --json r.json "$@"
	validate r.json
}
messages() { jq -r --argjson id "$1" '.gates[] | select(.id == $id) | .problems[].message' r.json; }

test_the_generated_builds_are_what_the_scenarios_claim() {
	scenario header
	assert_contains "$(cat logs/build.log)" "csrc/common_hip.cuh [ok]"
	grep -q -- '-o _rocm_C.abi3.so CMakeFiles/_rocm_C.dir/' logs/build.log || fail "no link of _rocm_C"
	grep -q -- '-o _moe_C.abi3.so CMakeFiles/_moe_C.dir/' logs/build.log || fail "no link of _moe_C"
	grep -q -- '-o _C.abi3.so' logs/build.log && fail "_C relinked"
	cmp -s build/_rocm_C.abi3.so old/_rocm_C.abi3.so && fail "_rocm_C did not change"
	cmp -s build/_moe_C.abi3.so old/_moe_C.abi3.so && fail "_moe_C did not change"
	rm -rf ./*
	scenario header-partial
	grep -q -- '-o _moe_C.abi3.so' logs/build.log && fail "_moe_C relinked in the partial build"
	cmp -s build/_moe_C.abi3.so old/_moe_C.abi3.so || fail "_moe_C is not the baseline's"
	[ repo/csrc/common.cuh -nt build/_moe_C.abi3.so ] || fail "the header is not newer than _moe_C"
}

test_header_change_relinking_both_is_certified() {
	scenario header
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C"
	certify_json
	assert_eq "$rc" 0 "exit ($(jq -c '[.gates[] | select(.status != "pass") | {id, summary, problems}]' r.json))"
	assert_eq "$(jq -r '[.chain.artifacts[].name] | join(" ")' r.json)" "_rocm_C _moe_C"
}

# The header is compiled into both; only _rocm_C was rebuilt after it changed.
test_header_change_with_one_relinked_fails_gate1_naming_the_other() {
	scenario header-partial
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C"
	certify_json
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 1)" fail "gate 1"
	local m
	m=$(messages 1)
	assert_contains "$m" "_moe_C: "
	assert_not_contains "$m" "_rocm_C: "
}

# Both extensions take the header; a config naming _rocm_C alone leaves _moe_C unproven.
test_header_change_into_an_unconfigured_output_fails_gate1() {
	scenario header
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C"
	certify_json
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 1)" fail "gate 1"
	assert_contains "$(problem_codes r.json 1)" build-log.unverified-artifact
	assert_contains "$(messages 1)" "_moe_C.abi3.so"
}

run_tests
