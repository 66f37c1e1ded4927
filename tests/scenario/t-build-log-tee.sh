#!/usr/bin/env bash
# Gate 1 on logs written as build systems write them (tests/fixtures/buildlog/make-tee.sh):
# a `set -x | tee` script and make print each command before running it, so the log's last
# line is the link command and the artifact is written after the log's last change. Also a
# native-HIP .cu compiled by hipcc with no hipify line, and the summary's numbers.
source "$PVG_SRC/tests/lib.sh"
BL="$FIXTURES/buildlog"

commit() { git -C repo -c user.name=t -c user.email=t@t commit -qm "$1"; }

# A repository whose HEAD changes csrc/kern.cu; the build folder's object and artifact;
# LOG (a fixture) rewritten to this repository as build.log. Times as the build left them:
# the object before the log's last line, the artifact 2 s after it (the link's duration).
setup_tee() {
	local log=$1 arch=${2:-gfx90a}
	need git
	git init -q -b main repo
	mkdir -p repo/csrc repo/build
	printf '__global__ void k(float *x) { x[0] = 1; }\n' >repo/csrc/kern.cu
	git -C repo add -A && commit base
	git -C repo tag base
	printf '__global__ void k(float *x) { x[0] = 2; }\n' >repo/csrc/kern.cu
	git -C repo add -A && commit change
	printf 'OBJ' >repo/build/kern.o
	printf 'ELF artifact' >repo/build/_ext_C.so
	sed "s#/src/ext#$PWD/repo#g" "$BL/$log" >build.log
	now=$(date +%s)
	touch -d "@$((now - 20))" repo/csrc/kern.cu
	touch -d "@$((now - 10))" repo/build/kern.o
	touch -d "@$((now - 5))" build.log
	touch -d "@$((now - 3))" repo/build/_ext_C.so
	cat >provgate.json <<JSON
{ "arch": "$arch",
  "build": {"log": "build.log", "artifact": "repo/build/_ext_C.so"},
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "ignore": ["build/**"], "include_uncommitted": false} }
JSON
}

gate1() {
	pg run -c provgate.json --gates 1 --json report.json
	status=$(gate_status report.json 1)
	codes=$(problem_codes report.json 1)
	ev() { jq -r ".gates[0].evidence | $1" report.json; }
}

test_set_x_tee_log_ending_with_the_link_binds_the_artifact() {
	setup_tee tee-hipcc.log
	gate1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev .written_by_last_link)" "$PWD/repo/build/_ext_C.so"
	assert_eq "$(ev '.artifacts[0].written_by_last_link.bound_by')" "same file"
	assert_eq "$(ev '.artifacts[0].written_by_last_link.link_line')" 3
	assert_eq "$(ev '.artifacts[0].written_by_last_link.inputs_not_newer_than_log')" 1
	# "+ cd /abs" names the folder the script ran in
	assert_contains "$(ev '.build_roots | join(" ")')" "$PWD/repo"
	assert_contains "$(jq -r '.gates[0].summary' report.json)" "by the link command the log ends with"
}

test_make_echo_then_run_log_binds_through_the_artifacts_build_folder() {
	# no cd, no "Entering directory": the artifact's path ends with the link's output
	setup_tee make-hipcc.log
	gate1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev .written_by_last_link)" "$PWD/repo/build/_ext_C.so"
}

test_nvcc_tee_log_binds_through_the_logs_folder_to_a_copy() {
	# the log beside the tree it built (no cd in it), the configured artifact a copy
	setup_tee tee-nvcc.log sm_90
	mv build.log repo/build.log
	mkdir dist && cp repo/build/_ext_C.so dist/_ext_C.so
	touch -d "@$((now - 5))" repo/build.log
	touch -d "@$((now - 1))" dist/_ext_C.so
	sed -i 's#"log": "build.log"#"log": "repo/build.log"#; s#"artifact": "repo/build/_ext_C.so"#"artifact": "dist/_ext_C.so"#; s#"build/\*\*"#"build/**", "build.log"#' provgate.json
	gate1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev '.artifacts[0].written_by_last_link.output')" "$PWD/repo/build/_ext_C.so"
	assert_eq "$(ev '.artifacts[0].written_by_last_link.bound_by')" "same bytes"
	assert_eq "$(ev '.artifacts[0].written_by_last_link.sha256')" "$(sha256sum dist/_ext_C.so | cut -d' ' -f1)"
	# a copy with other bytes binds nothing
	printf 'other' >dist/_ext_C.so
	touch -d "@$((now - 1))" dist/_ext_C.so
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "holds other bytes"
}

test_artifact_written_long_after_the_log_stays_stale() {
	setup_tee tee-hipcc.log
	touch -d "@$((now + 3600))" repo/build/_ext_C.so
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "longer than a link runs"
}

test_input_recompiled_after_the_log_stays_stale() {
	setup_tee tee-hipcc.log
	touch -d "@$((now - 4))" repo/build/kern.o
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "its input build/kern.o"
}

test_link_whose_inputs_are_gone_stays_stale() {
	# nothing shows that the objects it linked were compiled before the log's last line
	setup_tee tee-hipcc.log
	rm repo/build/kern.o
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "none of the link's inputs"
}

test_link_not_the_last_command_stays_stale() {
	setup_tee tee-hipcc.log
	echo "+ hipcc -x hip --offload-arch=gfx90a -fPIC -c csrc/other.cu -o build/other.o" >>build.log
	touch -d "@$((now - 5))" build.log
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.stale-log
}

test_source_edited_between_log_and_link_is_newer() {
	# the link ran on objects compiled before the edit
	setup_tee tee-hipcc.log
	touch -d "@$((now - 4))" repo/csrc/kern.cu
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.source-newer
}

test_native_hip_cu_with_x_hip_needs_no_hipify_line() {
	setup_tee tee-hipcc.log
	gate1
	assert_eq "$status" pass "status ($codes)"
	assert_contains "$(ev '.files[0].hip_native')" "line 2 compiles it with -x hip"
	assert_eq "$(ev .changed_hip_native)" 1
	assert_eq "$(ev .changed_hipified)" 0
}

test_hipcc_on_a_cu_with_a_hipified_twin_needs_hipify_or_the_config() {
	# make-hipcc.log: plain hipcc on csrc/kern.cu; with kern.hip beside it the tree hipifies
	setup_tee make-hipcc.log
	printf 'hipified\n' >repo/csrc/kern.hip
	touch -d "@$((now - 20))" repo/csrc/kern.hip
	gate1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.not-hipified
	rm repo/csrc/kern.hip
	gate1
	assert_eq "$status" pass "without the twin ($codes)"
	assert_contains "$(ev '.files[0].hip_native')" "with hipcc"
	printf 'hipified\n' >repo/csrc/kern.hip
	jq '.build.hip_sources = ["csrc/**"]' provgate.json >p && mv p provgate.json
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" provgate.json
	gate1
	assert_eq "$status" pass "with build.hip_sources ($codes)"
	assert_eq "$(ev '.files[0].hip_native')" build.hip_sources
}

test_cuda_compile_of_a_cu_still_needs_hipify_for_a_hip_arch() {
	setup_tee tee-nvcc.log
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.not-hipified
}

test_hip_sources_outside_the_repo_or_for_cuda_is_a_config_error() {
	setup_tee tee-hipcc.log
	for g in '"/abs/**"' '"../x/**"' '"a/../../b"'; do
		jq ".build.hip_sources = [$g]" provgate.json >bad.json
		pg run -c bad.json --gates 1
		assert_eq "$rc" 2 "$g: exit"
		assert_contains "$err" "build.hip_sources[0]" "$g"
		if /usr/bin/python3 "$PVG_SRC/tests/validate-config.py" bad.json >/dev/null; then
			fail "the schema accepts hip_sources $g"
		fi
	done
	jq '.arch = "sm_90" | .build.hip_sources = ["csrc/**"]' provgate.json >bad.json
	pg run -c bad.json --gates 1
	assert_eq "$rc" 2
	assert_contains "$err" "a CUDA build"
}

# The summary's numbers are the evidence's, on real logs: hipified (hipify-edit + the gfx936
# ninja build), HIP already (tee-hipcc), CUDA (tee-nvcc).
summary_matches_evidence() {
	local s n h k
	s=$(jq -r '.gates[0].summary' report.json)
	n=$(ev .changed_compiled_sources)
	assert_contains "$s" "$n changed source" "summary [$s] vs changed_compiled_sources"
	h=$(ev '.changed_hipified // empty')
	k=$(ev '.changed_hip_native // empty')
	if [ -n "$h" ] && [ "$k" != 0 ]; then
		assert_contains "$s" "($h hipified, $k HIP already)" "summary [$s]"
	elif [ -n "$h" ] && [ "$h" != 0 ]; then
		assert_contains "$s" "($h hipified)" "summary [$s]"
	else
		assert_not_contains "$s" "hipified" "summary [$s] with $h hipified"
	fi
	# no file is counted as hipified without its hipify line
	assert_eq "$(ev '[.files[] | select(.hipify_line)] | length')" "${h:-0}" "files with a hipify line"
	assert_eq "$(ev '[.files[] | select(.hip_native)] | length')" "${k:-0}" "files HIP already"
}

test_summary_numbers_equal_evidence_numbers_on_tee_logs() {
	setup_tee tee-hipcc.log
	gate1
	assert_eq "$status" pass "tee-hipcc ($codes)"
	assert_eq "$(ev .hipify_lines)" 0
	summary_matches_evidence
	rm -rf repo build.log provgate.json
	setup_tee tee-nvcc.log sm_90
	gate1
	assert_eq "$status" pass "tee-nvcc ($codes)"
	summary_matches_evidence
}

# hipify-edit.log + hip-gfx936.log: the hipify and ninja build of tests/fixtures/buildlog/make.sh
setup_hipified() {
	setup_tee tee-hipcc.log gfx936
	printf 'hipified\n' >repo/csrc/kern.hip
	printf 'ELF' >repo/build/_ext_C.abi3.so
	touch -d "@$((now - 3))" repo/build/_ext_C.abi3.so
	cat "$BL/hipify-edit.log" "$BL/hip-gfx936.log" | sed "s#/src/ext#$PWD/repo#g" >build.log
	sed -i 's#_ext_C.so"#_ext_C.abi3.so"#' provgate.json
}

test_summary_numbers_equal_evidence_numbers_on_a_hipified_build() {
	setup_hipified
	gate1
	assert_eq "$status" pass "hipify + ninja ($codes)"
	assert_eq "$(ev .changed_hipified)" 1
	summary_matches_evidence
}

test_summary_does_not_call_a_changed_hip_file_hipified() {
	# the source renamed .hip: no hipify line is needed, and none is claimed
	setup_hipified
	rm repo/csrc/kern.hip
	git -C repo mv csrc/kern.cu csrc/kern.hip
	commit rename
	sed "s#/src/ext#$PWD/repo#g" "$BL/hip-gfx936.log" >build.log
	gate1
	assert_eq "$status" pass "renamed ($codes)"
	assert_eq "$(ev .hipify_lines)" 0
	summary_matches_evidence
}

run_tests
