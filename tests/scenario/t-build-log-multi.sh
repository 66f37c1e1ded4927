#!/usr/bin/env bash
# Gate 1 with several artifacts (SPEC §9), and gates 1 and 6 on target ids, through the CLI,
# on the real hipcc + CMake + ninja build of tests/fixtures/buildlog/make-multi.sh: four HIP
# extensions from one tree (_a_C gfx90a, _b_C gfx90a:xnack- with a static archive linked on,
# _c_C gfx90a:sramecc+:xnack-, _d_C gfx90a:xnack+), csrc/shared.h included by _a_C and _b_C.
# The build tree is remade from the fixtures: the four libraries hipcc wrote, ninja's
# .ninja_log and .ninja_deps, and the log with its paths rewritten to this folder.
source "$PVG_SRC/tests/lib.sh"
M="$FIXTURES/buildlog/multi"

commit() { git -C repo -c user.name=t -c user.email=t@t commit -qam "$1"; }

# repo/ with the sources at baseline "base", repo/build/ the build tree, build.log after it.
setup_tree() {
	need git jq
	git init -q -b main repo
	mkdir -p repo/csrc/a repo/csrc/b repo/csrc/c repo/csrc/d repo/csrc/util inst
	for f in csrc/shared.h csrc/a/a_kern.hip csrc/b/b_kern.hip csrc/c/c_kern.hip \
		csrc/d/d_kern.hip csrc/util/util.cpp csrc/a/a_bind.cpp; do
		echo "// $f" >"repo/$f"
	done
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	sleep 0.01
	mkdir -p repo/build
	for l in _a_C _b_C _c_C _d_C; do
		cp "$M/$l.so" repo/build/
		cp repo/build/$l.so inst/
	done
	cp "$M/ninja_log" repo/build/.ninja_log
	cp "$M/ninja_deps" repo/build/.ninja_deps
	sleep 0.01
	sed "s#/src/ext#$PWD/repo#g" "$M/ninja.log" >build.log
}

# change FILE...: a commit after base that changes these sources
change() {
	for f in "$@"; do echo "// changed" >>"repo/$f"; done
	commit change
	# the sources were edited before the build
	touch -d '1 hour ago' "${@/#/repo/}"
}

# config ARCH NAME...: an artifacts[] config of these extensions
config() {
	local arch=$1 entries="" sep=""
	shift
	for n in "$@"; do
		entries="$entries$sep{\"name\": \"$n\", \"build\": \"repo/build/$n.so\", \"install\": \"inst/$n.so\"}"
		sep=", "
	done
	cat >provgate.json <<JSON
{ "arch": "$arch",
  "build": {"log": "build.log"},
  "artifacts": [$entries],
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "ignore": ["build/**"], "include_uncommitted": false} }
JSON
}

# single ARCH BUILD [LOG]: the single form
single() {
	cat >provgate.json <<JSON
{ "arch": "$1",
  "build": {"log": "${3:-build.log}", "artifact": "$2"},
  "install": {"artifact": "$2"},
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "ignore": ["build/**"], "include_uncommitted": false} }
JSON
}

gate() {
	pg run -c provgate.json --gates "$1" --json report.json
	status=$(gate_status report.json "$1")
	codes=$(problem_codes report.json "$1")
}

test_two_extensions_in_one_ninja_log_both_configured_pass() {
	setup_tree
	change csrc/a/a_kern.hip csrc/b/b_kern.hip csrc/util/util.cpp
	config gfx90a:xnack- _a_C _b_C
	gate 1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '[.gates[0].evidence.artifacts[].name] | join(",")' report.json)" _a_C,_b_C
	# util.cpp went in through libpvgutil.a
	assert_eq "$(jq -r '.gates[0].evidence.files[] | select(.path == "csrc/util/util.cpp") | .linked_into[0].artifact' report.json)" _b_C
	assert_contains "$(jq -r '.gates[0].summary' report.json)" "_a_C.so, _b_C.so relinked"
}

test_changed_source_linked_into_an_unconfigured_output_fails() {
	setup_tree
	change csrc/a/a_kern.hip csrc/c/c_kern.hip
	config gfx90a:xnack- _a_C _b_C
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.unverified-artifact
	msg=$(jq -r '.gates[0].problems[0].message' report.json)
	hint=$(jq -r '.gates[0].problems[0].hint' report.json)
	assert_contains "$msg" "csrc/c/c_kern.hip is linked into _c_C.so"
	assert_contains "$hint" "\"name\": \"_c_C\", \"build\": \"$PWD/repo/build/_c_C.so\""
	assert_eq "$rc" 1
}

test_header_shared_by_two_extensions_needs_both() {
	setup_tree
	change csrc/shared.h
	config gfx90a:xnack- _a_C _b_C
	gate 1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.files[0].consumers_from' report.json)" .ninja_deps
	assert_eq "$(jq -r '[.gates[0].evidence.files[0].linked_into[].artifact] | join(",")' report.json)" _a_C,_b_C
	# one of the two configured: the other extension holds the header's code unchecked
	config gfx90a:xnack- _a_C
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.unverified-artifact
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "_b_C.so"
	# without the deps log, the consumers are unknown and evidence says so
	rm repo/build/.ninja_deps
	gate 1
	assert_eq "$status" pass "status ($codes)"
	assert_contains "$(jq -r '.gates[0].evidence.files[0].consumers' report.json)" unknown
}

# gate 1: a build for gfx90a (xnack any) serves gfx90a:xnack-, one for xnack+ does not
test_xnack_any_on_off_in_gate_1() {
	setup_tree
	change csrc/a/a_kern.hip
	for arch in gfx90a gfx90a:xnack- gfx90a:xnack+; do
		single "$arch" repo/build/_a_C.so
		gate 1
		assert_eq "$status" pass "gfx90a build for $arch ($codes)"
	done
	git -C repo reset -q --hard base
	change csrc/d/d_kern.hip
	single gfx90a:xnack- repo/build/_d_C.so
	gate 1
	assert_eq "$status" fail "xnack+ build for xnack-"
	assert_eq "$codes" build-log.wrong-arch
	single gfx90a:xnack+ repo/build/_d_C.so
	gate 1
	assert_eq "$status" pass "xnack+ build for xnack+ ($codes)"
	git -C repo reset -q --hard base
	change csrc/c/c_kern.hip
	single gfx90a:sramecc+:xnack- repo/build/_c_C.so
	gate 1
	assert_eq "$status" pass "sramecc+:xnack- ($codes)"
	single gfx90a:sramecc- repo/build/_c_C.so
	gate 1
	assert_eq "$status" fail "sramecc+ build for sramecc-"
}

# gate 6 on the code objects hipcc wrote: the same rule
test_xnack_any_on_off_in_gate_6() {
	setup_tree
	for c in "_a_C gfx90a:xnack- pass" "_a_C gfx90a:xnack+ pass" "_b_C gfx90a pass" \
		"_b_C gfx90a:xnack+ fail" "_c_C gfx90a:sramecc+:xnack- pass" \
		"_c_C gfx90a:sramecc- fail" "_d_C gfx90a:xnack- fail" "_d_C gfx90a:xnack+ pass"; do
		set -- $c
		single "$2" "inst/$1.so"
		gate 6
		assert_eq "$status" "$3" "gate 6: $1 for $2 ($codes)"
	done
}

# Built on container-local disk, "the logs and the final .so" copied back with plain cp.
copy_out() {
	mkdir -p out
	cp build.log out/build.log
	sleep 0.01
	cp repo/build/_a_C.so out/_a_C.so
	single gfx90a:xnack- out/_a_C.so out/build.log
}

test_log_and_artifact_copied_out_of_the_build_tree() {
	setup_tree
	change csrc/a/a_kern.hip
	copy_out
	gate 1
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[0].evidence.copied_from' report.json)" "$PWD/repo/build/_a_C.so"
	assert_contains "$(jq -r '.gates[0].summary' report.json)" "a copy of the log's own output"
	# the build tree is gone: both possibilities, and how to keep times
	rm -rf repo/build
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	msg=$(jq -r '.gates[0].problems[0].message' report.json)
	assert_contains "$msg" "either it is the log of an earlier build, or they were copied without keeping their times"
	assert_contains "$(jq -r '.gates[0].problems[0].hint' report.json)" "cp -p"
}

test_copy_with_other_bytes_is_refused() {
	setup_tree
	change csrc/a/a_kern.hip
	copy_out
	printf 'x' >>out/_a_C.so
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "holds other bytes"
}

test_log_of_an_earlier_build_is_still_refused() {
	setup_tree
	change csrc/a/a_kern.hip
	# the artifact in the tree, the log older than it
	single gfx90a:xnack- repo/build/_a_C.so
	touch -d '1 minute ago' build.log
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "the log is of an earlier build"
	# a copied log while the tree was rebuilt since: the tree's output is newer than it
	copy_out
	touch -d '1 minute ago' out/build.log
	gate 1
	assert_eq "$status" fail
	assert_eq "$codes" build-log.stale-log
	assert_contains "$(jq -r '.gates[0].problems[0].message' report.json)" "a later build"
}

run_tests
