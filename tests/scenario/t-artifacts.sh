#!/usr/bin/env bash
# Several artifacts in one chain (SPEC §9) on a real build: a vLLM-like tree whose change
# ("moe-align") touches csrc/moe/, hipified by PyTorch's hipify and built by CMake + ninja -v
# with hipcc for gfx906 and gfx90a into _C, _moe_C and _rocm_C (tests/scenario/multi-ext.sh),
# installed, and a service that dlopens them. Each test takes a copy of the generated
# scenario (built once per build folder).
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/scenario/multi-ext.sh"

# scenario: the generated "moe" scenario, copied here; the service is stopped on exit
scenario() {
	need hipcc cmake ninja git jq ss /usr/bin/python3
	W=$PWD svc="$PVG_BUILD/tests/helpers/fake-service"
	trap mx_stop EXIT
	local dir
	dir=$(mx_cache)/scenarios
	mx_generate "$dir" || fail "the scenario's build failed"
	mx_use "$dir" moe
}

ROCM_C=$(mx_entry _rocm_C wvSplitK)
MOE_C=$(mx_entry _moe_C moe_align_block_size_kernel topkGatingSoftmax)
C=$(mx_entry _C silu_and_mul_kernel)

# certify_json [FLAG...]: certify with the report in r.json (--keep-going: every gate
# evaluated, so that one gate's verdict does not wait on the gates before it)
certify_json() {
	pg certify -c provgate.json --json r.json "$@"
	validate r.json
}
# messages GATE: the gate's problem messages, one a line
messages() { jq -r --argjson id "$1" '.gates[] | select(.id == $id) | .problems[].message' r.json; }
# installed_sha NAME: the report's installed sha256 of artifact NAME
installed_sha() { jq -r --arg n "$1" '.chain.artifacts[] | select(.name == $n) | .installed.sha256' r.json; }

test_the_generated_build_is_what_the_scenarios_claim() {
	scenario
	# one log: hipify of the changed kernel, every object compiled for both archs, three links
	assert_contains "$(cat logs/build.log)" "csrc/moe/moe_align_sum_kernels.hip [ok]"
	assert_eq "$(grep -c -- '--offload-arch=gfx906 --offload-arch=gfx90a .* -c ' logs/build.log)" 4 "compile lines"
	for n in _C _moe_C _rocm_C; do
		grep -q -- "-shared .*-o $n.abi3.so CMakeFiles/$n.dir/" logs/build.log || fail "no link of $n"
		[ build/$n.abi3.so -nt old/$n.abi3.so ] || fail "$n was not rebuilt"
	done
	# the change is in _moe_C only: the other two are the same bytes as the baseline's
	cmp -s build/_moe_C.abi3.so old/_moe_C.abi3.so && fail "_moe_C did not change"
	cmp -s build/_rocm_C.abi3.so old/_rocm_C.abi3.so || fail "_rocm_C changed"
	pg inspect --json build/_moe_C.abi3.so
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | .arch] | unique | join(" ")' <<<"$out")" "gfx906 gfx90a"
	mx_config "$ROCM_C" "$MOE_C" "$C"
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" provgate.json || fail "config does not validate"
}

test_all_three_fresh_and_mapped_is_certified() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C" "$C"
	# each gate on its own first, then the verdict
	certify_json --keep-going
	local id
	for id in 2 3 4 5 6 7 1; do
		assert_eq "$(gate_status r.json $id)" pass "gate $id ($(jq -c --argjson id $id '.gates[] | select(.id == $id) | [.summary, .problems]' r.json))"
	done
	assert_eq "$(jq -r '[.chain.artifacts[].name] | join(" ")' r.json)" "_rocm_C _moe_C _C"
	for n in _C _moe_C _rocm_C; do
		assert_eq "$(installed_sha $n)" "$(sha256sum site/vllm/$n.abi3.so | cut -d' ' -f1)" "$n installed sha256"
		assert_eq "$(jq -r --arg n $n '.chain.artifacts[] | select(.name == $n) | .build.sha256' r.json)" \
			"$(sha256sum build/$n.abi3.so | cut -d' ' -f1)" "$n build sha256"
		assert_eq "$(jq -r --arg n $n '.chain.artifacts[] | select(.name == $n) | .processes | length' r.json)" 3 "$n's processes"
	done
	# readers of earlier reports: chain.build / chain.installed keep the first entry
	assert_eq "$(jq -r .chain.installed.path r.json)" "$PWD/site/vllm/_rocm_C.abi3.so"
	# gates 3, 4 and 6 say what they checked for each
	for id in 3 4 6; do
		assert_eq "$(jq -r --argjson id $id '[.gates[] | select(.id == $id) | .evidence.artifacts[] | "\(.name):\(.status)"] | join(" ")' r.json)" \
			"_rocm_C:pass _moe_C:pass _C:pass" "gate $id evidence"
	done
	certify_json
	assert_eq "$rc" 0 "exit"
	assert_eq "$(jq -r .certified r.json)" true
}

# compiled globs per entry: gate 2 says which artifact the change goes into
test_compiled_globs_name_the_artifact_of_a_change() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_config "$(jq -c '.compiled = ["csrc/rocm/**"]' <<<"$ROCM_C")" \
		"$(jq -c '.compiled = ["csrc/moe/**", "csrc/common.cuh"]' <<<"$MOE_C")" "$C"
	pg run -c provgate.json --gates 2 --json r.json
	assert_eq "$(gate_status r.json 2)" pass "gate 2"
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "csrc/moe/moe_align_sum_kernels.cu") | .artifact' r.json)" _moe_C
	assert_contains "$(jq -r '.gates[1].summary' r.json)" "_moe_C 1"
}

# The false certification of the issue: the changed extension installed from an older build
test_one_installed_from_an_older_build_fails_gate3_naming_it() {
	scenario
	mx_install _C old/_moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C" "$C"
	certify_json --keep-going
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 3)" fail "gate 3"
	local m
	m=$(messages 3)
	assert_contains "$m" "_moe_C: "
	assert_not_contains "$m" "_rocm_C: "
	assert_not_contains "$m" "_C: differ" # only the stale one is named
	assert_eq "$(jq -r '.certified' r.json)" false
}

test_one_not_mapped_by_the_service_fails_gate4_naming_it() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C" "$C"
	certify_json --keep-going
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 3)" pass "gate 3 ($(messages 3))"
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	local m
	m=$(messages 4)
	assert_contains "$m" "_moe_C: "
	assert_not_contains "$m" "_rocm_C: "
}

test_required_kernel_missing_from_the_second_fails_gate6_naming_it() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	# wvSplitK is _rocm_C's kernel, not _moe_C's
	mx_config "$ROCM_C" "$(jq -c '.require_kernels = ["moe_align_block_size_kernel", "wvSplitK"]' <<<"$MOE_C")" "$C"
	certify_json --keep-going
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 6)" fail "gate 6"
	local m
	m=$(messages 6)
	assert_contains "$m" "_moe_C: "
	assert_contains "$m" "wvSplitK"
	assert_not_contains "$m" "_rocm_C: "
}

# The single form means a list of one, and reports as before: no name in front of problems.
test_single_form_is_unchanged() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config
	jq '.build.artifact = "build/_moe_C.abi3.so" | .install.artifact = "site/vllm/_moe_C.abi3.so"
	    | .code_object.require_kernels = ["moe_align_block_size_kernel"]' provgate.json >p.json
	mv p.json provgate.json
	certify_json
	assert_eq "$rc" 0 "exit ($(jq -c '[.gates[] | select(.status != "pass") | {id, problems}]' r.json))"
	assert_eq "$(jq -r .chain.build.path r.json)" "$PWD/build/_moe_C.abi3.so"
	assert_eq "$(jq -r .chain.installed.sha256 r.json)" "$(sha256sum site/vllm/_moe_C.abi3.so | cut -d' ' -f1)"
	# the stale install, refused as before, its message without an artifact's name
	mx_stop
	mx_install old/_moe_C
	mx_start _C _moe_C _rocm_C
	certify_json
	assert_eq "$(gate_status r.json 3)" fail "gate 3"
	assert_not_contains "$(messages 3)" "_moe_C: "
	# the flags still override the single form
	pg run -c provgate.json --gates 3 --installed build/_moe_C.abi3.so --json r.json
	assert_eq "$(gate_status r.json 3)" pass "gate 3 with --installed"
}

# exec re-checks every artifact: the second one replaced while the benchmark runs
test_exec_recheck_covers_every_artifact() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$MOE_C" "$C"
	pg exec -c provgate.json --out r.json --run-anyway --keep-going -- \
		sh -c 'install -m 755 old/_moe_C.abi3.so site/vllm/_moe_C.abi3.so'
	validate r.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].status' r.json)" pass "gate 4 before the command"
	assert_eq "$(jq -r '.after.gates[2].status' r.json)" fail "gate 3 after the command"
	assert_eq "$(jq -r '.after.gates[3].status' r.json)" fail "gate 4 after the command"
	local m
	m=$(jq -r '.after.gates[2].problems[].message, .after.gates[3].problems[].message' r.json)
	assert_contains "$m" "_moe_C: "
	assert_not_contains "$m" "_rocm_C: "
	assert_eq "$(jq -r .certified r.json)" false
}

# An entry's python_module is resolved with install.python, as install.python_module is: a
# venv whose path takes site/ (a .pth file), the module found without importing vllm.
test_python_module_entry_is_resolved_per_artifact() {
	scenario
	/usr/bin/python3 -m venv --without-pip venv || fail "python3 -m venv failed"
	local sp
	sp=$(venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	echo "$PWD/site" >"$sp/mx-site.pth"
	echo "raise SystemExit('vllm/__init__ was imported')" >repo/vllm/__init__.py
	# (installed by mx_install: the resolver must not run it)
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$(jq -c 'del(.install) | .python_module = "vllm._moe_C"' <<<"$MOE_C")" "$C"
	jq '.install.python = "venv/bin/python3"' provgate.json >p.json
	mv p.json provgate.json
	certify_json --keep-going
	assert_eq "$(gate_status r.json 3)" pass "gate 3 ($(messages 3))"
	assert_eq "$(gate_status r.json 4)" pass "gate 4 ($(messages 4))"
	assert_eq "$(jq -r '.chain.artifacts[] | select(.name == "_moe_C") | .installed.path' r.json)" "$PWD/site/vllm/_moe_C.abi3.so"
	# the older build installed where the module resolves: named as any other
	mx_stop
	mx_install old/_moe_C
	mx_start _C _moe_C _rocm_C
	certify_json --keep-going
	assert_eq "$(gate_status r.json 3)" fail "gate 3"
	assert_contains "$(messages 3)" "_moe_C: "
	assert_not_contains "$(messages 3)" "_rocm_C: "
}

# An entry's arch is its own: gate 6 looks for it in that artifact, gate 1 in the compile
# lines of the sources linked into it (all built for gfx906 and gfx90a).
test_an_entry_arch_is_checked_for_that_artifact() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_config "$ROCM_C" "$MOE_C" "$(jq -c '.arch = "gfx906"' <<<"$C")"
	pg run -c provgate.json --gates 6 --json r.json
	assert_eq "$(gate_status r.json 6)" pass "gate 6, _C for gfx906 ($(messages 6))"
	mx_config "$ROCM_C" "$MOE_C" "$(jq -c '.arch = "gfx908"' <<<"$C")"
	pg run -c provgate.json --gates 6 --json r.json
	assert_eq "$(gate_status r.json 6)" fail "gate 6, _C for gfx908"
	assert_contains "$(messages 6)" "_C: "
	assert_contains "$(messages 6)" "gfx908"
	assert_not_contains "$(messages 6)" "_moe_C: "
	# the changed source goes into _moe_C: compiled for gfx906 and gfx90a, not gfx908
	mx_config "$ROCM_C" "$(jq -c '.arch = "gfx908"' <<<"$MOE_C")" "$C"
	pg run -c provgate.json --gates 1 --json r.json
	assert_eq "$(gate_status r.json 1)" fail "gate 1, _moe_C for gfx908"
	assert_contains "$(problem_codes r.json 1)" build-log.wrong-arch
	assert_contains "$(messages 1)" "_moe_C: "
	mx_config "$ROCM_C" "$(jq -c '.arch = "gfx906"' <<<"$MOE_C")" "$C"
	pg run -c provgate.json --gates 1 --json r.json
	assert_eq "$(gate_status r.json 1)" pass "gate 1, _moe_C for gfx906 ($(messages 1))"
}

test_artifact_flags_are_refused_on_a_listed_config() {
	scenario
	mx_config "$ROCM_C" "$MOE_C"
	pg run -c provgate.json --gates 3 --artifact build/_C.abi3.so
	assert_eq "$rc" 2 "exit for --artifact"
	assert_contains "$err" "the config lists \"artifacts\""
	pg run -c provgate.json --gates 3 --installed site/vllm/_C.abi3.so
	assert_eq "$rc" 2 "exit for --installed"
	assert_contains "$err" "the config lists \"artifacts\""
}

# The change is linked into _moe_C, which no entry names: never proven by the others' hashes.
test_change_linked_into_an_unconfigured_output_fails_gate1() {
	scenario
	mx_install _C _moe_C _rocm_C
	mx_start _C _moe_C _rocm_C
	mx_request
	mx_config "$ROCM_C" "$C"
	certify_json
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 1)" fail "gate 1"
	assert_contains "$(problem_codes r.json 1)" build-log.unverified-artifact
	local m
	m=$(messages 1)
	assert_contains "$m" "_moe_C.abi3.so"
	assert_contains "$m" "csrc/moe/moe_align_sum_kernels.cu"
	# and in the single form of another extension, the same
	mx_config
	certify_json
	assert_eq "$(gate_status r.json 1)" fail "gate 1, single form of _rocm_C"
	assert_contains "$(problem_codes r.json 1)" build-log.unverified-artifact
}

run_tests
