#!/usr/bin/env bash
# The layers of lib/ (lib/README): includes point down only, formats/ and sys/ know no run,
# and no two source files call each other round a loop. Each rule is also shown to catch a
# tree that breaks it.
source "$PVG_SRC/tests/lib.sh"
: "${PVG_BUILD:?run through tests/run}"
layers() { /usr/bin/python3 "$PVG_SRC/tests/layers.py" "$@"; }

test_includes_point_down_only() {
	layers includes "$PVG_SRC" || fail "an include points up (see above)"
}

test_formats_and_sys_know_no_run() {
	layers words "$PVG_SRC" || fail "formats/ or sys/ mention the run (see above)"
}

test_no_two_files_call_each_other() {
	need nm
	layers cycles "$PVG_SRC" "$PVG_BUILD" || fail "a call loop (see above)"
}

# a copy of the tree's sources, for the checker's own tests
copy_tree() {
	mkdir -p src
	cp -r "$PVG_SRC/lib" "$PVG_SRC/checks" "$PVG_SRC/cmd" src/
}

test_an_upward_include_is_caught() {
	copy_tree
	sed -i '0,/#include "util\/util.h"/s||#include "core/ctx.h"|' src/lib/formats/maps.h
	set +e
	o=$(layers includes src)
	r=$?
	set -e
	assert_eq "$r" 1 "exit status"
	assert_contains "$o" "lib/formats/maps.h" "report"
	assert_contains "$o" "core/ctx.h" "report"
}

test_a_run_word_in_sys_is_caught() {
	copy_tree
	printf '/* decided by gate 4 */\n' >>src/lib/sys/procs.c
	printf 'enum pvg_status leak(void);\n' >>src/lib/formats/markers.h
	set +e
	o=$(layers words src)
	r=$?
	set -e
	assert_eq "$r" 1 "exit status"
	assert_contains "$o" "lib/sys/procs.c" "report"
	assert_contains "$o" "lib/formats/markers.h" "report"
}

test_a_call_loop_is_caught() {
	need cc nm
	mkdir -p b/libprovgate.so.0.p
	printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >a.c
	printf 'int a(int);\nint b(int x) { return x ? a(x - 1) : 1; }\n' >b.c
	printf 'int a(int);\nint c(int x) { return a(x); }\n' >c.c
	for f in a b c; do cc -c "$f.c" -o "b/libprovgate.so.0.p/lib_x_$f.c.o"; done
	set +e
	o=$(layers cycles "$PVG_SRC" b)
	r=$?
	set -e
	assert_eq "$r" 1 "exit status"
	assert_contains "$o" "call loop" "report"
	assert_contains "$o" "lib_x_a.c -> lib_x_b.c" "report"
	assert_not_contains "$o" "lib_x_c.c ->" "report"
}

run_tests
