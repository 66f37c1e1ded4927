#!/usr/bin/env bash
# Regressions for what the real-GPU validation (tests/gpu/run-h200.sh on an H200) found, on
# fixtures that need no GPU: gate 6 with a kernel that lives in one translation unit's
# container, CUDA relocatable device code (__nv_relfatbin) that is not loadable, wrappers into
# both CUDA sections, and gate 1 on the real torch.utils.cpp_extension build log.
source "$PVG_SRC/tests/lib.sh"
CO="$FIXTURES/codeobj"
RDC="$FIXTURES/cuda-rdc"

gate6() { # ARTIFACT ARCH [KERNEL...]
	local a=$1 arch=$2
	shift 2
	local ks
	ks=$(printf '%s\n' "$@" | jq -R . | jq -sc 'map(select(length > 0))')
	jq -n --arg a "$a" --arg arch "$arch" --argjson ks "$ks" \
		'{arch: $arch, install: {artifact: $a}, code_object: {require_kernels: $ks}}' >cfg.json
	pg run -c cfg.json --gates 6 --json report.json
	status=$(gate_status report.json 6)
	codes=$(problem_codes report.json 6)
}

# hip-two-tu.so: wvSplitK is in the first unit's bundle, paged_attention_tail in the second;
# each is required once, not in every gfx906 code object (vLLM's extension has dozens of units).
test_kernel_in_one_unit_is_present() {
	need jq
	gate6 "$CO/hip-two-tu.so" gfx906 wvSplitK paged_attention_tail
	assert_eq "$status" pass "gate 6 ($codes)"
	assert_eq "$rc" 0
	assert_eq "$(jq -r '.gates[5].evidence.require_kernels.wvSplitK' report.json)" present
	assert_eq "$(jq -r '.gates[5].evidence.require_kernels.paged_attention_tail' report.json)" present
}

test_kernel_in_no_unit_is_missing() {
	need jq
	gate6 "$CO/hip-two-tu.so" gfx906 wvSplitK no_such_kernel
	assert_eq "$status" fail
	assert_eq "$codes" code-object.kernel-missing
	assert_eq "$(jq -r '.gates[5].evidence.require_kernels.wvSplitK' report.json)" present
	assert_eq "$(jq -r '.gates[5].evidence.require_kernels.no_such_kernel' report.json)" missing
}

# rdc-dlink80.so: units compiled for sm_80 and sm_90 but device-linked for sm_80 only; the
# sm_90 cubins in __nv_relfatbin are relocatable and never loaded (cuobjdump lists sm_80 only).
test_rdc_relocatable_only_arch_is_missing() {
	need jq
	gate6 "$RDC/rdc-dlink80.so" sm_90
	assert_eq "$status" fail
	assert_eq "$codes" code-object.arch-missing
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "__nv_relfatbin"
	assert_eq "$(jq -r '.gates[5].evidence.matching' report.json)" 0
}

test_rdc_linked_arch_passes() {
	need jq
	gate6 "$RDC/rdc-dlink80.so" sm_80 pvg_rdc_kernel
	assert_eq "$status" pass "gate 6 ($codes)"
	assert_eq "$(jq -r '.gates[5].evidence.matching' report.json)" 1
	gate6 "$RDC/rdc-both.so" sm_90 pvg_rdc_kernel
	assert_eq "$status" pass "gate 6 ($codes)"
	assert_eq "$(jq -r '.gates[5].evidence.matching' report.json)" 1
	assert_eq "$(jq -r '.gates[5].evidence.relocatable' report.json)" 4
}

# The loadable entries inspect finds (.nv_fatbin) are the ones cuobjdump --list-elf listed when
# the fixtures were made (cuobjdump.txt); every wrapper lands on a container of one section.
test_inspect_rdc_agrees_with_cuobjdump() {
	need jq
	local f want got
	for f in rdc-both rdc-dlink80; do
		want=$(sed -n "/^== $f.so/,/^==/p" "$RDC/cuobjdump.txt" |
			sed -n 's/^ELF file *[0-9]*: .*\.\(sm_[0-9]*\)\.cubin$/\1/p' | sort | tr '\n' ' ')
		pg inspect --json "$RDC/$f.so"
		assert_eq "$rc" 0 "inspect exit"
		got=$(jq -r '.files[0].code_objects[] | select(.section == ".nv_fatbin" and .kind == "cubin") | .arch' <<<"$out" | sort | tr '\n' ' ')
		[ -n "$want" ] || fail "no cuobjdump entries recorded for $f"
		assert_eq "$got" "$want" "$f: .nv_fatbin cubins"
		assert_eq "$(jq -r '.files[0].wrappers' <<<"$out")" 3 "$f wrappers"
		assert_eq "$(jq -r '.files[0].wrappers_located' <<<"$out")" 3 "$f wrappers located"
		assert_eq "$(jq -r '.files[0].problems | length' <<<"$out")" 0 "$f problems"
	done
}

# Gate 1 on the real build log of torch.utils.cpp_extension (nvcc -gencode for sm_90, then the
# g++ -shared link of _C.so), rewritten to a repository whose HEAD changes csrc/pvg_kern.cu.
test_gate1_real_torch_jit_log() {
	need git jq
	git init -q -b main repo
	mkdir -p repo/csrc build
	printf '// base\n' >repo/csrc/pvg_kern.cu
	printf '// ops\n' >repo/csrc/pvg_ops.cpp
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	printf '// changed\n' >repo/csrc/pvg_kern.cu
	git -C repo -c user.name=t -c user.email=t@t commit -qam change
	printf 'ELF' >build/_C.so
	sleep 0.01
	sed -e "s#/tmp/pvgw/repo#$PWD/repo#g" -e "s#/tmp/pvgw/build#$PWD/build#g" \
		"$FIXTURES/gpu-h200/torch-jit-build.log" >build.log
	for arch in sm_90 sm_80; do
		cat >provgate.json <<JSON
{ "arch": "$arch",
  "build": {"log": "build.log", "artifact": "build/_C.so"},
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"],
             "include_uncommitted": false} }
JSON
		pg run -c provgate.json --gates 1 --json report.json
		if [ $arch = sm_90 ]; then
			assert_eq "$(gate_status report.json 1)" pass "gate 1 ($(problem_codes report.json 1))"
			assert_not_contains "$(jq -r '.gates[0].summary' report.json)" hipified "CUDA summary"
			assert_contains "$(jq -r '.gates[0].summary' report.json)" "compiled for sm_90"
		else
			assert_eq "$(gate_status report.json 1)" fail
			assert_eq "$(problem_codes report.json 1)" build-log.wrong-arch
		fi
	done
}

run_tests
