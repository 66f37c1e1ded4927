#!/usr/bin/env bash
# Code identity recorded on the H200 (tests/fixtures/witness-modules, made by
# tests/gpu/witness/modules/run-modules.sh): a service mapping libpvgdup.so (the artifact's
# pvg_dup_kernel) and libvendor_ops.so (an older copy). The modules' digests are those of the
# sm_90 cubins nvcc makes from the same source here, and the launches' binding is what the
# front end could decide: one loaded copy binds by name, two differing copies are ambiguous.
source "$PVG_SRC/tests/lib.sh"
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
F="$PVG_SRC/tests/fixtures/witness-modules"
ART=$(sha256sum "$F/pvgdup.sm_90.cubin" | cut -d' ' -f1)
VEN=$(sha256sum "$F/vendor_ops.sm_90.cubin" | cut -d' ' -f1)

# the index of the module line with digest $2 in dump $1
module_of() { grep "^module index=[0-9]* sha256=$2 " <<<"$1" | sed 's/^module index=\([0-9]*\) .*/\1/'; }

test_lazy_artifact_module_is_the_artifacts_cubin() {
	out=$("$TOOL" dump "$F/dup-artifact-lazy.pvgw")
	assert_contains "$out" 'modules n=1 loaded=1 dropped=0'
	assert_contains "$out" "sha256=$ART size=$(stat -c %s "$F/pvgdup.sm_90.cubin") origin=4 "
	assert_contains "$out" 'arch=90'
	i=$(module_of "$out" "$ART")
	assert_eq "$i" 1
	# 12 launches, bound by name to the one loaded module that defines the kernel
	assert_contains "$out" "count=12 "
	assert_contains "$(grep '^record name="pvg_dup_kernel"' <<<"$out")" "code=$i bind=3"
}

test_eager_both_copies_are_ambiguous() {
	out=$("$TOOL" dump "$F/dup-both-eager.pvgw")
	a=$(module_of "$out" "$ART")
	v=$(module_of "$out" "$VEN")
	assert_eq "$([ -n "$a" ] && echo yes)" yes
	assert_eq "$([ -n "$v" ] && [ "$v" != "$a" ] && echo yes)" yes
	assert_eq "$(grep -c '^record name="pvg_dup_kernel".* count=12 .* bind=4$' <<<"$out")" 2
	assert_not_contains "$out" "bind=3"
}

run_tests
