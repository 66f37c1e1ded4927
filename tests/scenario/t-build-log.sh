#!/usr/bin/env bash
# Gate 1 build-log through the CLI, on a git repository with a changed kernel and the real
# logs of tests/fixtures/buildlog (their paths rewritten to this repository).
source "$PVG_SRC/tests/lib.sh"
BL="$FIXTURES/buildlog"

# A repository whose HEAD changes csrc/kern.cu against the baseline "base", a build folder
# with the artifact, and a log of hipify + the gfx936 build, written after the artifact.
setup_build() {
	need git
	git init -q -b main repo
	mkdir -p repo/csrc repo/build
	cp "$PVG_SRC/tests/fixtures/buildlog/make.sh" repo/csrc/README
	printf '#include "kern.cuh"\n__global__ void k(float *x) { x[0] = 1; }\n' >repo/csrc/kern.cu
	printf '#pragma once\n' >repo/csrc/kern.cuh
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	printf '#include "kern.cuh"\n__global__ void k(float *x) { x[0] = 2; }\n' >repo/csrc/kern.cu
	git -C repo -c user.name=t -c user.email=t@t commit -qam change
	printf 'hipified\n' >repo/csrc/kern.hip
	printf 'ELF' >repo/build/_ext_C.abi3.so
	sleep 0.01
	cat "$BL/hipify-edit.log" "$BL/hip-gfx936.log" | sed "s#/src/ext#$PWD/repo#g" >build.log
	cat >provgate.json <<JSON
{ "arch": "gfx936",
  "build": {"log": "build.log", "artifact": "repo/build/_ext_C.abi3.so"},
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "ignore": ["build/**"], "include_uncommitted": false} }
JSON
}

gate1() {
	pg run -c provgate.json --gates 1 --json report.json
	status=$(gate_status report.json 1)
	codes=$(problem_codes report.json 1)
}

# The change set comes from gate 2's reader; it must have been available.
need_scope() {
	assert_not_contains "$codes" build-log.no-scope "problem codes"
}

test_changed_kernel_hipified_and_built_for_gfx936_passes() {
	setup_build
	gate1
	need_scope
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.files[0].path' report.json)" csrc/kern.cu
}

test_python_only_change_passes_on_a_clean_log() {
	setup_build
	git -C repo reset -q --hard base
	mkdir -p repo/pkg && echo 'x = 1' >repo/pkg/ops.py
	git -C repo add pkg && git -C repo -c user.name=t -c user.email=t@t commit -qm py
	gate1
	need_scope
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.changed_compiled_sources' report.json)" 0
	assert_contains "$(jq -r '.gates[0].summary' report.json)" "no source.compiled file changed"
}

test_log_older_than_artifact_fails() {
	setup_build
	touch -d '1 hour ago' build.log
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.stale-log
	assert_eq "$rc" 1
}

test_wrong_arch_log_fails() {
	setup_build
	cat "$BL/hipify-edit.log" "$BL/hip-gfx90a.log" | sed "s#/src/ext#$PWD/repo#g" >build.log
	gate1
	need_scope
	assert_eq "$status" fail
	assert_eq "$codes" build-log.wrong-arch
}

test_empty_log_is_not_a_pass() {
	setup_build
	: >build.log
	gate1
	assert_eq "$status" fail
	assert_contains "$codes" build-log.empty-log
}

test_garbage_and_10mb_line_do_not_crash() {
	setup_build
	{ head -c 2000000 /dev/urandom; head -c 10485760 /dev/zero | tr '\0' 'x'; } >build.log
	timeout 60 "$PROVGATE" run -c provgate.json --gates 1 --json report.json >/dev/null 2>&1 || true
	assert_eq "$(gate_status report.json 1)" fail
	assert_eq "$(jq -r '.gates[0].evidence.overlong_lines' report.json)" 1
	assert_contains "$(problem_codes report.json 1)" build-log.empty-log
}

test_missing_log_is_unverifiable() {
	setup_build
	rm build.log
	gate1
	assert_eq "$status" unverifiable
	assert_eq "$codes" build-log.unreadable
}

# A changed host-only C++ file (vLLM's torch_bindings.cpp) compiled by the host compiler has no
# device code: it needs no --offload-arch, but it must still be linked into the artifact. The
# log is real (tests/fixtures/buildlog/make-hostcpp.sh: c++ for bind.cpp, hipcc for kern.hip).
setup_hostcpp() {
	need git
	git init -q -b main repo
	mkdir -p repo/csrc repo/build
	echo 'extern "C" int scale_version(void) { return 1; }' >repo/csrc/bind.cpp
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	echo 'extern "C" int scale_version(void) { return 2; }' >repo/csrc/bind.cpp
	git -C repo -c user.name=t -c user.email=t@t commit -qam change
	printf 'ELF' >repo/build/_ext_C.abi3.so
	sleep 0.01
	sed "s#/src/ext#$PWD/repo#g" "$BL/hip-hostcpp.log" >build.log
	cat >provgate.json <<JSON
{ "arch": "gfx90a",
  "build": {"log": "build.log", "artifact": "repo/build/_ext_C.abi3.so"},
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "include_uncommitted": false} }
JSON
}

test_changed_host_cpp_compiled_by_the_host_compiler_needs_no_arch() {
	setup_hostcpp
	gate1
	need_scope
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.files[0].compile_lines[0].host_only' report.json)" true
	assert_eq "$(jq -r '.gates[0].evidence.files[0].linked_into[0].output' report.json)" _ext_C.abi3.so
}

test_changed_cpp_compiled_as_hip_without_arch_still_fails() {
	setup_hostcpp
	# the same line given to a device compiler: hipcc (which compiles .cpp as HIP), and
	# clang++ -x hip, each without --offload-arch
	for cc in "/usr/bin/hipcc" "/usr/bin/clang++-15 -x hip"; do
		sed "s#/src/ext#$PWD/repo#g; s#/usr/bin/c++ #$cc #" "$BL/hip-hostcpp.log" >build.log
		gate1
		assert_eq "$status" fail "$cc: status"
		assert_eq "$codes" build-log.missing-arch "$cc: codes"
	done
}

test_changed_host_cpp_not_linked_still_fails() {
	setup_hostcpp
	sed "s#/src/ext#$PWD/repo#g; s# CMakeFiles/_ext_C.dir/csrc/bind.cpp.o && :# \&\& :#" \
		"$BL/hip-hostcpp.log" >build.log
	gate1
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" build-log.not-linked
}

run_tests
