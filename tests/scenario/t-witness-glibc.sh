#!/usr/bin/env bash
# libprovgate-witness.so loads into processes with glibc >= 2.17: its dynamic symbol versions
# (read with readelf from .gnu.version_r and .dynsym) name no GLIBC version newer than 2.17,
# and it needs nothing but libc (libdl.so.2 and libpthread.so.0, where an old glibc keeps
# dlopen and pthread_create, and the loader). Debian 11's Python loading it for real is
# tests/scenario/t-bundle.sh.
source "$PVG_SRC/tests/lib.sh"
need readelf cc

# glibc_too_new LIB: the GLIBC_x.y versions LIB needs that are newer than 2.17, one a line
glibc_too_new() {
	{
		readelf -W -V "$1" | sed -n 's/.*Name: \(GLIBC_[0-9.]*\).*/\1/p'
		readelf -W --dyn-syms "$1" | grep -oE '@GLIBC_[0-9.]+' | tr -d @
	} | sort -u | while read -r v; do
		[ "$(printf '%s\nGLIBC_2.17\n' "$v" | sort -V | tail -n1)" = GLIBC_2.17 ] || echo "$v"
	done
}

# the libraries LIB names in DT_NEEDED, space-separated
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }

test_the_check_sees_a_symbol_newer_than_2_17() {
	# a library built the ordinary way against this glibc: dlopen@GLIBC_2.34
	printf '#include <dlfcn.h>\nvoid *f(const char *p) { return dlopen(p, RTLD_NOW); }\n' >n.c
	cc -shared -fPIC -o n.so n.c || fail "cannot build the control library"
	assert_contains "$(glibc_too_new n.so)" GLIBC_2.34 "the control library's versions"
}

test_witness_needs_no_glibc_newer_than_2_17() {
	local lib found=0
	for lib in "$PVG_BUILD"/lib/witness/libprovgate-witness*.so; do
		[ -f "$lib" ] || continue
		found=$((found + 1))
		assert_eq "$(glibc_too_new "$lib" | tr '\n' ' ')" "" "versions newer than GLIBC_2.17 in $(basename "$lib")"
		# the versions it does need are read at all (the parsing above found something)
		readelf -W -V "$lib" | grep -q 'Name: GLIBC_2.2.5' || fail "no GLIBC_2.2.5 need read from $lib"
		assert_eq "$(needed "$lib")" "ld-linux-x86-64.so.2 libc.so.6 libdl.so.2 libpthread.so.0 " \
			"libraries $(basename "$lib") needs"
	done
	[ "$found" -ge 1 ] || fail "no witness library in $PVG_BUILD/lib/witness"
}

run_tests
