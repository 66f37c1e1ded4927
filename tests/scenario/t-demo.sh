#!/usr/bin/env bash
# The README's first command, from a clean clone: certified, then refused after a link breaks.
source "$PVG_SRC/tests/lib.sh"

test_demo_certifies_then_refuses_from_a_clean_clone() {
	need git meson ninja hipcc /usr/bin/python3
	git clone -q "$PVG_SRC" clone
	set +e
	mkdir -p tmp
	TMPDIR="$T/tmp" PROVGATE_DEMO_BUILD="$T/build" NO_COLOR=1 clone/tests/demo/run >demo.txt 2>&1
	rc=$?
	set -e
	[ "$rc" = 0 ] || { tail -n 60 demo.txt; fail "demo exit $rc"; }
	grep -q "CERTIFIED: all seven gates passed" demo.txt || fail "no certified verdict"
	grep -q "NOT CERTIFIED: gate 4 process-maps: fail" demo.txt || fail "no refusal"
	# one problem per process still mapping the replaced file, one hint for them all (the
	# first problem's message is the gate's summary, so its line shows the code alone)
	assert_eq "$(grep -cE "^ +process-maps.deleted(: process|$)" demo.txt)" 3 "problems, one per process"
	assert_eq "$(grep -c "process-maps.deleted: process" demo.txt)" 2 "the summary not repeated"
	assert_eq "$(grep -c "hint: restart the service: it still maps the replaced file" demo.txt)" 1 "the shared hint, once"
	# the reinstall replaced the dispatch module the service imported, too
	assert_eq "$(grep -c "process-maps.installed-after-start: 1 installed file of the change set" demo.txt)" 1 \
		"the replaced .py"
	# its own folder and processes only: other tests run demo-like services meanwhile
	! ls -d "$T"/tmp/provgate-demo.* 2>/dev/null | grep -q . || fail "demo left its folder"
	! pgrep -f "$T/tmp/provgate-demo" >/dev/null || fail "demo left a service running"
}

run_tests
