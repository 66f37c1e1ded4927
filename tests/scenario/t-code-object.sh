#!/usr/bin/env bash
# Gate 6 code-object and `provgate inspect` on fixtures built by real compilers
# (tests/fixtures/codeobj/make.sh), on corrupt variants made here, and against the
# reference tools on Debian's ROCm libraries.
source "$PVG_SRC/tests/lib.sh"
CO="$FIXTURES/codeobj"
PY=/usr/bin/python3

# gate6 ARTIFACT ARCH [KERNEL...]: runs gate 6 alone; sets $rc and leaves report.json
gate6() {
	local artifact=$1 arch=$2
	shift 2
	local ks
	ks=$(printf '%s\n' "$@" | jq -R . | jq -sc 'map(select(. != ""))')
	jq -n --arg a "$artifact" --arg arch "$arch" --argjson ks "$ks" \
		'{arch: $arch, install: {artifact: $a}, code_object: {require_kernels: $ks}}' >cfg.json
	pg run -c cfg.json --gates 6 --json report.json
}

archs() { jq -r '[.files[0].code_objects[] | select(.kind != "host") | .arch] | join(" ")' <<<"$out"; }

# kfd_node VERSION...: a KFD topology under $PWD/sys (the recorded properties of a DCU node,
# tests/fixtures/environment, with gfx_target_version set), a CPU node first; PROVGATE_SYSFS
kfd_node() {
	local t="$PWD/sys/class/kfd/kfd/topology/nodes" src="$FIXTURES/environment/kfd/sys/class/kfd/kfd/topology/nodes"
	rm -rf sys
	mkdir -p "$t/0"
	cp "$src/0/properties" "$t/0/properties"
	local i=1 v
	for v in "$@"; do
		mkdir -p "$t/$i"
		sed "s/^gfx_target_version .*/gfx_target_version $v/" "$src/1/properties" >"$t/$i/properties"
		i=$((i + 1))
	done
	export PROVGATE_SYSFS="$PWD/sys"
}

test_node_gpus_run_the_arch() {
	kfd_node 90006 90006
	gate6 "$CO/hip-multi.so" gfx906
	assert_eq "$(gate_status report.json 6)" pass "gate 6"
	assert_eq "$(jq -c '.gates[5].evidence.node' report.json)" \
		'{"checked":true,"source":"kfd topology","gpus":["gfx906","gfx906"]}'
}

test_node_with_another_gpu_fails() {
	kfd_node 90010
	gate6 "$CO/hip-multi.so" gfx906
	assert_eq "$(gate_status report.json 6)" fail "gate 6"
	assert_eq "$(problem_codes report.json 6)" code-object.arch-not-on-node
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "arch gfx906, but this node's GPUs are gfx90a"
	# the same with the DCU node as recorded (gfx_target_version 90306: gfx936)
	kfd_node 90306
	gate6 "$CO/hip-multi.so" gfx906
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "GPUs are gfx936"
	# a node of both: the gfx906 GPU runs it
	kfd_node 90010 90006
	gate6 "$CO/hip-multi.so" gfx906
	assert_eq "$(gate_status report.json 6)" pass "mixed node"
}

test_node_without_kfd_is_recorded_unchecked() {
	export PROVGATE_SYSFS="$PWD/nosys"
	gate6 "$CO/hip-multi.so" gfx906
	assert_eq "$(gate_status report.json 6)" pass "gate 6"
	assert_eq "$(jq -r '.gates[5].evidence.node.checked' report.json)" false
	assert_contains "$(jq -r '.gates[5].evidence.node.why' report.json)" "no GPU in the KFD topology"
}

# HSA_OVERRIDE_GFX_VERSION in the service's environment: ROCr loads code objects for the
# processor it names, whatever the GPU is
test_hsa_override_of_the_service_decides() {
	kfd_node 90010
	HSA_OVERRIDE_GFX_VERSION=9.0.6 sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	jq -n --arg a "$CO/hip-multi.so" --argjson p "$svc" \
		'{arch: "gfx906", install: {artifact: $a}, service: {pid: $p}}' >cfg.json
	pg run -c cfg.json --gates 6 --json report.json
	assert_eq "$(gate_status report.json 6)" pass "override names the arch ($(problem_codes report.json 6))"
	assert_eq "$(jq -c '.gates[5].evidence.node.hsa_override_gfx_version' report.json)" \
		"{\"value\":\"9.0.6\",\"pid\":$svc,\"processor\":\"gfx906\"}"
	kill $svc
	kfd_node 90006
	HSA_OVERRIDE_GFX_VERSION=9.0.10 sleep 300 &
	svc=$!
	jq -n --arg a "$CO/hip-multi.so" --argjson p "$svc" \
		'{arch: "gfx906", install: {artifact: $a}, service: {pid: $p}}' >cfg.json
	pg run -c cfg.json --gates 6 --json report.json
	assert_eq "$(gate_status report.json 6)" fail "override names another processor"
	assert_eq "$(problem_codes report.json 6)" code-object.arch-not-on-node
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "HSA_OVERRIDE_GFX_VERSION=9.0.10: ROCr loads gfx90a code objects"
}

# CUDA: NVML's compute capability (the stand-in NVML of tests/helpers, one GPU) against the
# cubins of cuda.so (sm_80 and sm_90, nvcc)
fake_gpu() {
	: >nvml-procs
	export PROVGATE_NVML_LIBRARY="$PVG_BUILD/tests/helpers/fake-nvml.so" PVG_FAKE_NVML="$PWD/nvml-procs" PVG_FAKE_NVML_CC=$1
}

test_cuda_node_gpu_decides_which_cubin_runs() {
	fake_gpu 9.0
	gate6 "$CO/cuda.so" sm_90
	assert_eq "$(gate_status report.json 6)" pass "sm_90 on an sm_90 GPU"
	assert_eq "$(jq -c '.gates[5].evidence.node' report.json)" '{"checked":true,"source":"nvml","gpus":["sm_90"]}'
	# the artifact's sm_90 cubin runs on that GPU, not the sm_80 one asked about
	gate6 "$CO/cuda.so" sm_80
	assert_eq "$(gate_status report.json 6)" fail "sm_80 on an sm_90 GPU"
	assert_eq "$(problem_codes report.json 6)" code-object.arch-not-on-node
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "sm_90: the artifact's sm_90 cubin is what runs there"
	# no sm_86 cubin: the sm_80 one runs on an sm_86 GPU
	fake_gpu 8.6
	gate6 "$CO/cuda.so" sm_80
	assert_eq "$(gate_status report.json 6)" pass "sm_80 on an sm_86 GPU ($(problem_codes report.json 6))"
	# another major: no cubin runs
	fake_gpu 10.0
	gate6 "$CO/cuda.so" sm_90
	assert_eq "$(gate_status report.json 6)" fail "sm_90 on an sm_100 GPU"
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "sm_100: sm_90 code does not run there"
	# an arch-specific cubin on its own GPU
	fake_gpu 9.0
	gate6 "$CO/cuda-sm90a.fatbin" sm_90a
	assert_eq "$(gate_status report.json 6)" pass "sm_90a on an sm_90 GPU"
	fake_gpu 9.2
	gate6 "$CO/cuda-sm90a.fatbin" sm_90a
	assert_eq "$(gate_status report.json 6)" fail "sm_90a code runs on 9.0 only"
}

test_cuda_without_nvml_is_recorded_unchecked() {
	export PROVGATE_NVML_LIBRARY="$PWD/no-such-nvml.so"
	gate6 "$CO/cuda.so" sm_90
	assert_eq "$(gate_status report.json 6)" pass
	assert_eq "$(jq -r '.gates[5].evidence.node.checked' report.json)" false
	assert_contains "$(jq -r '.gates[5].evidence.node.why' report.json)" "no NVML"
}

test_inspect_lists_every_arch_and_xnack_variant() {
	pg inspect --json "$CO/hip-multi.so"
	assert_eq "$rc" 0 "exit status"
	assert_eq "$(archs)" "gfx1030 gfx906 gfx908:xnack- gfx90a:xnack+ gfx90a:xnack-"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | .kernel_count] | unique | join(",")' <<<"$out")" 2
	assert_eq "$(jq -r '.files[0].code_objects[] | select(.arch == "gfx90a:xnack+") | "\(.xnack) \(.code_object_version) \(.mach_name)"' <<<"$out")" "on 4 gfx90a"
	pg inspect "$CO/hip-multi.so"
	assert_contains "$out" "hipv4-amdgcn-amd-amdhsa--gfx908:xnack-"
	assert_contains "$out" "KERNELS"
}

test_inspect_reads_every_bundle_of_a_section() {
	pg inspect --json "$CO/hip-two-tu.so"
	assert_eq "$(jq -r '.files[0].sections[0].containers' <<<"$out")" 2
	assert_eq "$(jq -r '[.files[0].code_objects[].bundle] | unique | join(",")' <<<"$out")" "0,1"
	assert_eq "$(jq -r '.files[0].wrappers_located' <<<"$out")" 2
	pg inspect --json --kernels "$CO/hip-two-tu.so"
	assert_contains "$(jq -r '[.files[0].code_objects[] | select(.bundle == 1) | .kernels[]?.name] | join(" ")' <<<"$out")" paged_attention_tail
}

test_inspect_reads_ccob_v1_v2_v3_zlib_and_zstd() {
	local v m
	for v in 1 2 3; do
		for m in zlib zstd; do
			# --kernels: the whole bundle decompressed, its hash checked
			pg inspect --json --kernels "$CO/ccob-v$v-$m.bin"
			assert_eq "$rc" 0 "ccob-v$v-$m exit"
			assert_eq "$(jq -r '.files[0].code_objects[1] | "\(.container) \(.arch) \(.kernel_count) \(.compressed) \(.container_checksum)"' <<<"$out")" \
				"ccob-v$v-$m gfx906 2 true verified" "ccob-v$v-$m"
			# without: of v2 and v3 only the bundle header (entry ids) is decompressed, and
			# that is said; v1 records no length, so only its whole stream tells its end
			pg inspect --json "$CO/ccob-v$v-$m.bin"
			assert_eq "$rc" 0 "ccob-v$v-$m exit"
			if [ "$v" = 1 ]; then
				want="gfx906 true 2 verified"
			else
				want="gfx906 false 0 not verified"
			fi
			assert_eq "$(jq -r '.files[0].code_objects[1] | "\(.arch) \(.kernels_known) \(.kernel_count) \(.container_checksum)"' <<<"$out")" \
				"$want" "ccob-v$v-$m without --kernels"
		done
	done
	pg inspect "$CO/ccob-v3-zstd.bin"
	assert_contains "$out" "1 CCOB bundle decompressed in part only: its checksum is not verified"
	assert_contains "$out" "1 compressed entry not decoded"
	pg inspect --json "$CO/ccob-stream.bin"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | .container] | join(" ")' <<<"$out")" \
		"bundle ccob-v3-zstd ccob-v2-zlib"
	pg inspect --json "$CO/hip-ccob.so"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | "\(.section):\(.container)"] | join(" ")' <<<"$out")" \
		".hip_fatbin:bundle .hip_fatbin:ccob-v3-zstd .hip_fatbin:ccob-v2-zlib"
	gate6 "$CO/hip-ccob.so" gfx906 wvSplitK
	assert_eq "$(gate_status report.json 6)" pass "gate 6 on a library of CCOB bundles"
}


# 40 CCOBs, one a translation unit (hip-ccob-many.so): each decompressed only as far as the
# entries asked for end, in parallel; what was not decompressed is said, never taken as read
test_many_ccobs_are_decompressed_as_far_as_asked() {
	local lib="$CO/hip-ccob-many.so"
	pg inspect --json "$lib"
	assert_eq "$rc" 0 "inspect exit"
	assert_eq "$(jq -r '.files[0].sections[0].containers' <<<"$out")" 40
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu")] | "\(length) \(map(.kernels_known) | unique) \(map(.container_checksum) | unique)"' <<<"$out")" \
		'122 [false] ["not verified"]' "headers only"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.bundle == 3 and .kind == "amdgpu") | .arch] | join(" ")' <<<"$out")" \
		"gfx1030 gfx906 gfx908:xnack- gfx90a:xnack+ gfx90a:xnack-" "archs of the bundle ids"
	pg inspect --json --kernels "$lib"
	assert_eq "$rc" 0 "inspect --kernels exit"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | "\(.kernels_known) \(.container_checksum) \(.code_object_version)"] | unique | join(",")' <<<"$out")" \
		"true verified 4" "--kernels: every bundle whole"
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.arch == "gfx906") | .kernel_count] | add' <<<"$out")" 67
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "amdgpu") | .bundle] | unique | length' <<<"$out")" 40 "bundles in order"
	# gate 6 for gfx906: decompressed as far as each bundle's gfx906 entry ends
	gate6 "$lib" gfx906 wvSplitK paged_attention_tail
	assert_eq "$(gate_status report.json 6)" pass "gate 6 gfx906"
	assert_eq "$(jq -r '.gates[5].evidence.ccob_checksums_not_verified' report.json)" 40
	assert_contains "$(jq -r '.gates[5].summary' report.json)" "40 CCOB bundles decompressed only as far as the entries checked: their checksums are not verified"
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.matches_arch) | .kernels_known] | unique | join(",")' report.json)" true
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.bundle == 0 and .kind == "amdgpu") | "\(.arch):\(.kernels_known)"] | join(" ")' report.json)" \
		"gfx1030:true gfx906:true gfx908:xnack-:false gfx90a:xnack+:false gfx90a:xnack-:false"
	# the last entry of every bundle: every bundle whole, every checksum checked
	gate6 "$lib" gfx90a:xnack- wvSplitK
	assert_eq "$(gate_status report.json 6)" pass "gate 6 gfx90a:xnack-"
	assert_eq "$(jq -r '.gates[5].evidence.ccob_checksums_not_verified' report.json)" null
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | .container_checksum] | unique | join(",")' report.json)" verified
}

# three CCOBs of the 40 damaged: bundle 0's zstd stream (its last 64 bytes zeroed: zstd
# decodes a block of up to 128 KiB at a time, and this bundle's one block holds its bundle
# header), bundle 3's zlib stream likewise, past its gfx906 entry, and bundle 7 cut short
# (its declared size and stream 200 bytes short)
test_many_ccobs_one_damaged() {
	"$PY" - "$CO/hip-ccob-many.so" bad-many.so <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
stroff = struct.unpack_from("<Q", d, shoff + shstrndx * shentsize + 0x18)[0]
for i in range(shnum):
    name, _t, _f, _a, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
    if d[stroff + name:].startswith(b".hip_fatbin\0"):
        base = off
pos, k = base, 0
while d[pos:pos + 4] == b"CCOB":
    v, = struct.unpack_from("<H", d, pos + 4)
    total = struct.unpack_from("<I" if v == 2 else "<Q", d, pos + 8)[0]
    if k in (0, 3):
        d[pos + total - 64:pos + total] = b"\0" * 64
    if k == 7:
        struct.pack_into("<I" if v == 2 else "<Q", d, pos + 8, total - 200)
    pos = (pos + total + 4095) & ~4095
    k += 1
open(sys.argv[2], "wb").write(d)
PY
	# even without --kernels bundle 0's header does not decompress; the bundles after it are read
	pg inspect bad-many.so
	assert_eq "$rc" 1 "inspect exit"
	assert_contains "$out" "problem: .hip_fatbin bundle 0 (CCOB): zstd stream is corrupt"
	assert_contains "$out" "39 CCOB bundles decompressed in part only"
	gate6 "$PWD/bad-many.so" gfx90a:xnack- wvSplitK
	assert_eq "$(gate_status report.json 6)" fail "the damage is in what was decompressed"
	assert_eq "$(problem_codes report.json 6 | tr ' ' '\n' | sort -u)" code-object.malformed
	local probs
	probs=$(jq -r '[.gates[5].problems[].message] | join(" | ")' report.json)
	assert_contains "$probs" ".hip_fatbin bundle 0 (CCOB): zstd stream is corrupt"
	assert_contains "$probs" ".hip_fatbin bundle 3 (CCOB): zlib stream is corrupt"
	assert_contains "$probs" ".hip_fatbin bundle 7 (CCOB): "
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.bundle == 3 and .kind == "amdgpu") | .container_checksum] | unique | join(",")' report.json)" bad
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.bundle == 3 and .kind == "amdgpu") | .kernels_known] | unique | join(",")' report.json)" false
	pg inspect --kernels bad-many.so
	assert_eq "$rc" 1 "inspect --kernels sees it"
	assert_contains "$out" "not read: its CCOB does not decompress"
	# bundle 3's gfx906 entry ends before its damage: read, and its checksum said unchecked
	gate6 "$PWD/bad-many.so" gfx906 wvSplitK
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.bundle == 3 and .kind == "amdgpu") | .container_checksum] | unique | join(",")' report.json)" "not verified"
	assert_eq "$(jq -r '.gates[5].evidence.code_objects[] | select(.bundle == 3 and .arch == "gfx906") | .kernels_known' report.json)" true
	# bundle 7 is cut past its gfx906 entry too: not seen, and its checksum said unchecked
	assert_eq "$(jq -r '[.gates[5].problems[].message] | join(" | ")' report.json)" \
		".hip_fatbin bundle 0 (CCOB): zstd stream is corrupt: Data corruption detected"
	assert_eq "$(jq -r '.gates[5].evidence.code_objects[] | select(.bundle == 7 and .arch == "gfx906") | "\(.kernels_known) \(.container_checksum)"' report.json)" "true not verified"
	assert_eq "$(gate_status report.json 6)" fail "bundle 0 is damaged"
}
test_inspect_finds_where_a_v1_ccob_ends() {
	# version 1 records no length: the end of its compressed stream says where it stops
	"$PY" - "$CO" <<'PY'
import sys
co = sys.argv[1]
out = b""
for f in ("ccob-v1-zstd.bin", "ccob-v1-zlib.bin", "bundle-gfx906.bin"):
    out += open(f"{co}/{f}", "rb").read()
    out += b"\0" * (-len(out) % 4096)
open("v1-stream.bin", "wb").write(out)
PY
	pg inspect --json v1-stream.bin
	assert_eq "$rc" 0
	assert_eq "$(jq -r '[.files[0].code_objects[] | select(.entry == 1) | "\(.container)@\(.container_offset)"] | join(" ")' <<<"$out")" \
		"ccob-v1-zstd@0 ccob-v1-zlib@4096 bundle@8192"
}

test_inspect_reads_cuda_fatbins_compressed_or_not() {
	pg inspect --json --kernels "$CO/cuda.fatbin"
	assert_eq "$(archs)" "sm_80 sm_90 compute_90"
	assert_eq "$(jq -r '.files[0].code_objects[0].kernels | map(.name) | sort | join(" ")' <<<"$out")" "_Z9scale_addPff wvSplitK"
	pg inspect --json --kernels "$CO/cuda-z.fatbin"
	assert_eq "$(jq -r '[.files[0].code_objects[] | "\(.arch):\(.compressed):\(.kernel_count)"] | join(" ")' <<<"$out")" \
		"sm_80:true:2 sm_90:true:2 compute_90:true:2"
	# the same kernels.cu, the same gencodes, LZ4 instead of zstd: the decoded entries must
	# give the same archs, cubin sizes and kernel lists as the uncompressed fatbin
	pg inspect --json --kernels "$CO/cuda-lz4.fatbin"
	assert_eq "$rc" 0
	assert_eq "$(jq -r '[.files[0].code_objects[] | "\(.compressed):\(.kernels_known)"] | unique | join(" ")' <<<"$out")" "true:true"
	pg inspect --json --kernels "$CO/cuda.fatbin"
	local want
	want=$(jq -c '[.files[0].code_objects[] | select(.kind != "ptx") | {arch, size, k: (.kernels | map(.name) | sort)}]' <<<"$out")
	pg inspect --json --kernels "$CO/cuda-lz4.fatbin"
	assert_eq "$(jq -c '[.files[0].code_objects[] | select(.kind != "ptx") | {arch, size, k: (.kernels | map(.name) | sort)}]' <<<"$out")" "$want" "LZ4 cubins decode to the uncompressed ones"
	pg inspect --json "$CO/cuda.so"
	assert_eq "$(jq -r '.files[0].sections[0].name' <<<"$out")" .nv_fatbin
	assert_eq "$(archs)" "sm_80 sm_90"
	assert_eq "$(jq -r '.files[0].code_objects[1] | "\(.e_flags) \(.abi_version)"' <<<"$out" | cut -c1-2)" 0x
}

# NVIDIA's cuobjdump -symbols, recorded by cuobjdump.sh on a CUDA machine, against inspect:
# for the plain, zstd- and LZ4-compressed fatbins and the .so, the same cubins (arch) with
# the same kernels (STO_ENTRY functions), line for line.
test_inspect_cuda_kernels_agree_with_cuobjdump() {
	need jq
	local f want got
	for f in cuda.fatbin cuda-z.fatbin cuda-lz4.fatbin cuda.so; do
		want=$(awk -v f="== $f" '
			/^== / { on = ($0 == f); next }
			on && /^Fatbin / { elf = ($2 == "elf") }
			on && elf && /^arch = / { arch = $3 }
			on && elf && / STO_ENTRY / { print arch ":" $NF }' "$CO/cuobjdump.txt" | sort)
		[ -n "$want" ] || fail "no cuobjdump reading recorded for $f"
		pg inspect --json --kernels "$CO/$f"
		assert_eq "$rc" 0 "inspect $f"
		got=$(jq -r '.files[0].code_objects[] | select(.kind == "cubin") | .arch as $a | .kernels[] | "\($a):\(.name)"' <<<"$out" | sort)
		assert_eq "$got" "$want" "$f: cubin kernels"
	done
}

test_gate_passes_when_the_arch_and_kernels_are_there() {
	gate6 "$CO/hip-multi.so" "gfx90a:xnack-" wvSplitK scale_add
	assert_eq "$rc" 0
	assert_eq "$(gate_status report.json 6)" pass
	assert_eq "$(jq -r '.gates[5].evidence.matching' report.json)" 1
}

test_gate_fails_when_the_arch_is_absent() {
	gate6 "$CO/hip-multi.so" gfx942
	assert_eq "$rc" 1
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.arch-missing
	assert_contains "$(jq -r '.gates[5].summary' report.json)" "gfx90a:xnack+"
}

# tests/fixtures/buildlog/tee-nvcc.so: compiled with -gencode sm_90, linked by `nvcc -shared`
# without -gencode, whose device link adds an sm_75 image with no kernel
test_gate_fails_on_an_arch_whose_code_objects_hold_no_kernels() {
	export PROVGATE_NVML_LIBRARY="$PWD/no-such-nvml.so"
	gate6 "$FIXTURES/buildlog/tee-nvcc.so" sm_75
	assert_eq "$rc" 1
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.no-kernels-for-arch
	assert_contains "$(jq -r '.gates[5].problems[0].hint' report.json)" 'set arch to "sm_90" in the config'
	assert_eq "$(jq -r '.gates[5].evidence.kernels.in_matching' report.json)" 0
	assert_eq "$(jq -c '.gates[5].evidence.kernels.other_archs_with_kernels' report.json)" '["sm_90"]'
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | "\(.arch)=\(.kernel_count)"] | join(" ")' report.json)" "sm_75=0 sm_90=1"
	gate6 "$FIXTURES/buildlog/tee-nvcc.so" sm_90
	assert_eq "$(gate_status report.json 6)" pass
	assert_eq "$(jq -r '.gates[5].evidence.kernels.in_matching' report.json)" 1
	# HIP code objects that hold their kernels pass as before
	gate6 "$CO/hip-two-tu.so" gfx90a
	assert_not_contains "$(problem_codes report.json 6)" no-kernels-for-arch
}

test_wrong_arch_hint_points_at_the_config_when_kernels_are_built_for_another() {
	export PROVGATE_NVML_LIBRARY="$PWD/no-such-nvml.so"
	gate6 "$FIXTURES/buildlog/tee-nvcc.so" sm_80
	assert_eq "$(problem_codes report.json 6)" code-object.arch-missing
	local hint
	hint=$(jq -r '.gates[5].problems[0].hint' report.json)
	assert_contains "$hint" 'set arch to "sm_90" in the config'
	case "$hint" in "set arch"*) ;; *) fail "the hint starts with a rebuild: $hint";; esac
	gate6 "$CO/hip-gfx906.so" gfx90a
	assert_contains "$(jq -r '.gates[5].problems[0].hint' report.json)" 'set arch to "gfx906" in the config'
}

test_gate_xnack_rules_follow_the_hip_runtime() {
	# a code object with xnack unspecified (any) runs with xnack on or off
	gate6 "$CO/hip-any.so" "gfx90a:xnack-"
	assert_eq "$(gate_status report.json 6)" pass "xnack- on an any code object"
	gate6 "$CO/hip-any.so" "gfx90a:xnack+"
	assert_eq "$(gate_status report.json 6)" pass "xnack+ on an any code object"
	# asking for xnack+ does not accept a code object built xnack-
	gate6 "$CO/hip-multi.so" "gfx908:xnack+"
	assert_eq "$(gate_status report.json 6)" fail "xnack+ against xnack- only"
	# no feature asked: any gfx908 code object will do
	gate6 "$CO/hip-multi.so" gfx908
	assert_eq "$(gate_status report.json 6)" pass "plain processor"
	gate6 "$CO/hip-multi.so" "gfx906:sramecc-"
	assert_eq "$(gate_status report.json 6)" pass "sramecc- on an any code object"
}

test_gate_accepts_gfx936_from_its_metadata_note() {
	gate6 "$CO/hip-gfx936.so" gfx936 wvSplitK
	assert_eq "$(gate_status report.json 6)" pass
	assert_eq "$(jq -r '.gates[5].evidence.code_objects[1] | "\(.mach) \(.mach_name) \(.note_target)"' report.json)" \
		"0xf0 null amdgcn-amd-amdhsa--gfx936"
	gate6 "$CO/hip-gfx936.so" gfx906
	assert_eq "$(gate_status report.json 6)" fail "the derived object is no longer gfx906"
	pg inspect "$CO/hip-gfx936.so"
	assert_contains "$out" "not in the public EF_AMDGPU_MACH table"
}

test_gate_fails_when_bundle_id_note_and_eflags_disagree() {
	gate6 "$CO/hip-id-mismatch.so" gfx906
	assert_eq "$(gate_status report.json 6)" fail
	assert_contains "$(problem_codes report.json 6)" code-object.id-mismatch
	gate6 "$CO/hip-eflags-mismatch.so" gfx906
	assert_eq "$(gate_status report.json 6)" fail
	assert_contains "$(problem_codes report.json 6)" code-object.id-mismatch
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "names gfx908"
}

test_gate_fails_when_a_required_kernel_is_missing() {
	gate6 "$CO/hip-multi.so" gfx906 wvSplitK no_such_kernel
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.kernel-missing
	assert_eq "$(jq -r '.gates[5].evidence.require_kernels.wvSplitK' report.json)" present
}

test_gate_cuda_arch_and_kernels() {
	gate6 "$CO/cuda.so" sm_90 wvSplitK scale_add
	assert_eq "$(gate_status report.json 6)" pass
	gate6 "$CO/cuda.so" sm_86
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.arch-missing
	gate6 "$CO/cuda-z.fatbin" sm_80 wvSplitK
	assert_eq "$(gate_status report.json 6)" pass "zstd entries are decoded"
	gate6 "$CO/cuda-sm90a.fatbin" sm_90a wvSplitK
	assert_eq "$(gate_status report.json 6)" pass "sm_90a cubin for sm_90a"
	gate6 "$CO/cuda-sm90a.fatbin" sm_90
	assert_eq "$(gate_status report.json 6)" pass "an sm_90 device loads the sm_90a cubin"
	gate6 "$CO/cuda.fatbin" sm_90a
	assert_eq "$(gate_status report.json 6)" fail "sm_90a asks for the arch-specific cubin"
}

test_gate_reads_lz4_compressed_cuda_entries() {
	gate6 "$CO/cuda-lz4.fatbin" sm_90 wvSplitK scale_add
	assert_eq "$(gate_status report.json 6)" pass
	gate6 "$CO/cuda-lz4.fatbin" sm_90 no_such_kernel
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.kernel-missing
}

test_gate_unreadable_kernels_are_unverifiable() {
	gate6 "$CO/cuda-nosymtab.so" sm_90 wvSplitK
	assert_eq "$(gate_status report.json 6)" unverifiable
	assert_eq "$(problem_codes report.json 6)" code-object.kernels-unverifiable
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "no symbol table"
	gate6 "$CO/cuda-nosymtab.so" sm_90
	assert_eq "$(gate_status report.json 6)" pass "the arch itself is known"
}

test_bad_damaged_lz4_entry() {
	# the damage is in the first sequence: even the ELF header does not decode
	pg inspect "$CO/cuda-lz4-bad.fatbin"
	assert_eq "$rc" 1
	assert_contains "$out" "LZ4-compressed entry does not decode to its first 64 bytes"
	gate6 "$CO/cuda-lz4-bad.fatbin" sm_90 wvSplitK
	assert_eq "$rc" 1
	local st
	st=$(gate_status report.json 6)
	[ "$st" = fail ] || [ "$st" = unverifiable ] || fail "gate 6 is $st"
}

# A compressed entry is decompressed whole only where its kernel names are asked for (inspect
# --kernels, gate 6's arch); elsewhere its ELF header, from the first bytes of the stream, is
# read. Damage past the header: found where the entry is decoded, not where it is not.
test_compressed_entries_decoded_where_asked_for() {
	cp "$CO/cuda-lz4.fatbin" late.fatbin
	/usr/bin/python3 - late.fatbin <<'PY'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
hs, = struct.unpack_from("<H", d, 6)
fs, = struct.unpack_from("<Q", d, 8)
e = hs
while e < hs + fs:
    kind, = struct.unpack_from("<H", d, e)
    ehs, = struct.unpack_from("<I", d, e + 4)
    ps, = struct.unpack_from("<Q", d, e + 8)
    sm, = struct.unpack_from("<I", d, e + 28)
    if kind == 2 and sm == 90:
        # the block's recorded length 100 bytes short: the stream ends before its last
        # sequences (the header, at its start, still decodes)
        cs, = struct.unpack_from("<I", d, e + 16)
        struct.pack_into("<I", d, e + 16, cs - 100)
        break
    e += ehs + ps
open(p, "wb").write(d)
PY
	pg inspect --json late.fatbin
	assert_eq "$rc" 0 "headers only: the damage is not read"
	assert_eq "$(jq -r '[.files[0].code_objects[] | "\(.arch):\(.kernels_known)"] | join(" ")' <<<"$out")" \
		"sm_80:false sm_90:false compute_90:false"
	assert_contains "$(jq -r '.files[0].code_objects[1].kernels_unknown_because' <<<"$out")" \
		"decoded only when asked for"
	pg inspect --kernels late.fatbin
	assert_eq "$rc" 1
	assert_contains "$out" "LZ4-compressed entry does not decode to its declared 5592 bytes"
	gate6 "$PWD/late.fatbin" sm_90
	assert_eq "$(gate_status report.json 6)" fail "the configured arch's entry is decoded whole"
	assert_contains "$(problem_codes report.json 6)" code-object.malformed
	assert_contains "$(jq -r '.gates[5].problems[0].message' report.json)" "does not decode to its declared 5592 bytes"
	gate6 "$PWD/late.fatbin" sm_80 wvSplitK
	assert_eq "$(gate_status report.json 6)" pass "another arch's entry: header only"
	assert_eq "$(jq -r '.gates[5].evidence.code_objects[1].kernels_known' report.json)" false
}

test_gate_fails_on_an_artifact_without_device_code() {
	need cc
	printf 'int f(void) { return 1; }\n' >f.c
	cc -shared -fPIC f.c -o host-only.so
	gate6 "$PWD/host-only.so" gfx936
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.no-device-code
	pg inspect host-only.so
	assert_eq "$rc" 1
	assert_contains "$out" "no device code objects"
	gate6 "$PWD/missing.so" gfx936
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.no-artifact
}

# --- bad input: clear message, non-pass, no crash (the suite runs under ASan/UBSan) ----

# corrupt KIND OUT: writes a damaged variant of a fixture
corrupt() {
	"$PY" - "$1" "$2" "$CO" <<'PY'
import hashlib, struct, subprocess, sys, zlib
kind, out, co = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(f"{co}/bundle-gfx906.bin", "rb").read())
def ccob3(plain, declared=None, total_delta=0, method="zstd"):
    comp = zlib.compress(plain) if method == "zlib" else subprocess.run(
        ["zstd", "-q", "-c"], input=plain, stdout=subprocess.PIPE, check=True).stdout
    h = int.from_bytes(hashlib.md5(plain).digest()[:8], "little")
    m = 0 if method == "zlib" else 1
    return b"CCOB" + struct.pack("<HHQQQ", 3, m, 32 + len(comp) + total_delta,
                                 len(plain) if declared is None else declared, h) + comp
if kind == "truncated":
    data = b[:100]
elif kind == "offset-past-end":
    # entry 1: offset field at 32 + 24 + len(host id) ... find it by walking
    pos = 32
    idlen = struct.unpack_from("<Q", b, pos + 16)[0]
    pos += 24 + idlen
    struct.pack_into("<Q", b, pos, 1 << 40)
    data = b
elif kind == "absurd-count":
    struct.pack_into("<Q", b, 24, 1 << 40)
    data = b
elif kind == "corrupt-elf":
    pos = 32
    idlen = struct.unpack_from("<Q", b, pos + 16)[0]
    pos += 24 + idlen
    off = struct.unpack_from("<Q", b, pos)[0]
    struct.pack_into("<Q", b, off + 0x20, 0xffffffff0)  # e_phoff far outside the object
    data = b
elif kind == "bad-metadata":
    pos = 32
    idlen = struct.unpack_from("<Q", b, pos + 16)[0]
    pos += 24 + idlen
    off = struct.unpack_from("<Q", b, pos)[0]
    k = b.find(b"\xaeamdhsa.kernels", off)
    b[k + 15] = 0xdd  # array32 ...
    struct.pack_into(">I", b, k + 16, 0x7fffffff)  # ... claiming 2^31 kernels
    data = b
elif kind == "ccob-size-lies":
    data = ccob3(bytes(b), total_delta=5000)
elif kind == "ccob-size-short":
    data = ccob3(bytes(b), total_delta=-40)
elif kind == "ccob-hash":
    data = bytearray(ccob3(bytes(b)))
    data[24] ^= 0xff
elif kind == "zip-bomb":
    # the bundle and 64 MiB of zeros after it, declaring the bundle's size
    data = ccob3(bytes(b) + b"\0" * (64 << 20), declared=len(b))
elif kind == "zip-bomb-declared":
    data = ccob3(b"\0" * 4096, declared=8 << 30)
elif kind == "garbage":
    data = bytes((i * 7919 + 13) & 0xff for i in range(65536))
open(out, "wb").write(data)
PY
}

bad_input() {
	local kind=$1 needle=$2
	need zstd jq
	corrupt "$kind" "$kind.bin"
	pg inspect --kernels "$kind.bin"
	assert_eq "$rc" 1 "$kind: inspect exit"
	assert_contains "$out" "$needle" "$kind: inspect output"
	gate6 "$PWD/$kind.bin" gfx906 wvSplitK
	assert_eq "$rc" 1 "$kind: run exit"
	local st
	st=$(gate_status report.json 6)
	[ "$st" = fail ] || [ "$st" = unverifiable ] || fail "$kind: gate 6 is $st"
}

test_bad_truncated_bundle() { bad_input truncated "truncated bundle header"; }
test_bad_entry_offset_past_end() { bad_input offset-past-end "runs past the end"; }
test_bad_absurd_entry_count() { bad_input absurd-count "absurd entry count"; }
test_bad_corrupt_inner_elf() { bad_input corrupt-elf "program headers lie outside"; }
test_bad_metadata_count_lies() { bad_input bad-metadata "exceeds the remaining"; }
test_bad_ccob_declared_size_too_long() { bad_input ccob-size-lies "runs past the end of the section"; }
test_bad_ccob_declared_size_too_short() { bad_input ccob-size-short "zstd stream is truncated"; }
test_bad_ccob_hash() { bad_input ccob-hash "hash mismatch"; }
test_bad_zip_bomb() { bad_input zip-bomb "exceeds the declared size"; }
test_bad_zip_bomb_declared() { bad_input zip-bomb-declared "more than the 512 MiB"; }
test_bad_garbage() { bad_input garbage "no device code objects"; }

test_bad_wrapper_pointing_at_no_bundle() {
	# .hipFatBinSegment's record points 4096 bytes into the bundle, where none starts
	"$PY" - "$CO/hip-gfx906.so" wrapped.so <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
stroff = struct.unpack_from("<Q", d, shoff + shstrndx * shentsize + 0x18)[0]
for i in range(shnum):
    name, _t, _f, _a, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
    if d[stroff + name:].startswith(b".hipFatBinSegment\0"):
        ptr, = struct.unpack_from("<Q", d, off + 8)
        struct.pack_into("<Q", d, off + 8, ptr + 4096)
open(sys.argv[2], "wb").write(d)
PY
	pg inspect wrapped.so
	assert_eq "$rc" 1
	assert_contains "$out" "where no container was read"
	gate6 "$PWD/wrapped.so" gfx906
	assert_eq "$(gate_status report.json 6)" fail
	assert_eq "$(problem_codes report.json 6)" code-object.malformed
}

# --- agreement with the reference tools on Debian's ROCm libraries ------------------------

need_lib() {
	if [ ! -f "$1" ]; then
		if [ "${CI:-}" = true ]; then fail "$1 is not installed"; fi
		echo "SKIP: $1 is not installed" >&2
		exit 77
	fi
}

# Every bundle cut out of the section: clang-offload-bundler --list prints our ids.
agree_bundles() {
	local lib=$1 every=${2:-1}
	pg inspect --json "$lib"
	assert_eq "$rc" 0 "inspect $lib"
	jq -r '.files[0].code_objects[] | select(.entry == 0) | "\(.bundle) \(.container_offset) \(.container_size)"' \
		<<<"$out" >bundles.txt
	echo "$out" >ours.json
	# every entry's bundle and id, read once (jq over the whole report for each bundle is
	# most of the time on a library of a hundred bundles)
	jq -r '.files[0].code_objects[] | "\(.bundle)\t\(.id)"' ours.json >ids.tsv
	local n=0 b off size
	while read -r b off size; do
		[ $((b % every)) -eq 0 ] || continue
		dd if="$lib" of=cut.bin bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none
		clang-offload-bundler-15 --list --type=o --input=cut.bin | sort >theirs.txt
		awk -F '\t' -v b="$b" '$1 == b { print $2 }' ids.tsv | sort >mine.txt
		diff -u theirs.txt mine.txt || fail "bundle $b of $lib: ids differ"
		n=$((n + 1))
	done <bundles.txt
	[ "$n" -gt 0 ] || fail "no bundle compared"
	echo "compared $n bundles of $lib"
}

# amdhsa.target and kernel symbols of code objects equal llvm-readelf --notes.
agree_notes() {
	local lib=$1 limit=$2
	pg inspect --json --kernels "$lib"
	echo "$out" >ours.json
	jq -r '.files[0].code_objects[] | select(.kind == "amdgpu") | "\(.bundle) \(.entry) \(.offset) \(.size)"' \
		ours.json | awk -v l="$limit" '(NR - 1) % l == 0' >objs.txt
	# every entry's note target and kernel symbols, read once (the report of a big library
	# with --kernels is tens of MB: jq over it for each code object is most of the time)
	jq -r '.files[0].code_objects[] | "\(.bundle)\t\(.entry)\t\(.note_target)"' ours.json >targets.tsv
	jq -r '.files[0].code_objects[] | "\(.bundle)\t\(.entry)\t\((.kernels // [])[] | .symbol)"' \
		ours.json >symbols.tsv
	local n=0 b e off size
	while read -r b e off size; do
		dd if="$lib" of=co.elf bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none
		llvm-readelf-15 --notes co.elf >notes.txt
		local target
		target=$(sed -n 's/^ *amdhsa.target: *//p' notes.txt | tr -d "'\"")
		assert_eq "$(awk -F '\t' -v b="$b" -v e="$e" '$1 == b && $2 == e { print $3 }' targets.tsv)" \
			"$target" "target of bundle $b entry $e"
		sed -n 's/^ *\.symbol: *//p' notes.txt | tr -d "'\"" | sort >theirs.txt
		awk -F '\t' -v b="$b" -v e="$e" '$1 == b && $2 == e { print $3 }' symbols.tsv | sort >mine.txt
		[ -s theirs.txt ] || fail "llvm-readelf printed no kernels for bundle $b entry $e"
		diff -q theirs.txt mine.txt >/dev/null || { diff -u theirs.txt mine.txt | head -20; fail "kernels of bundle $b entry $e differ"; }
		n=$((n + 1))
	done <objs.txt
	[ "$n" -gt 0 ] || fail "no code object compared"
	echo "compared $n code objects of $lib"
}

test_agrees_with_clang_offload_bundler_on_fixtures() {
	need clang-offload-bundler-15
	agree_bundles "$CO/hip-two-tu.so"
	agree_bundles "$CO/hip-multi.so"
}

test_agrees_with_clang_offload_bundler_on_librocrand() {
	need clang-offload-bundler-15
	need_lib /usr/lib/x86_64-linux-gnu/librocrand.so.1.1
	agree_bundles /usr/lib/x86_64-linux-gnu/librocrand.so.1.1
}

test_agrees_with_clang_offload_bundler_on_librocsparse() {
	need clang-offload-bundler-15
	need_lib /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1
	agree_bundles /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1 "${PVG_ROCSPARSE_EVERY:-1}"
}

test_agrees_with_llvm_readelf_notes() {
	need llvm-readelf-15
	agree_notes "$CO/hip-multi.so" 1
	need_lib /usr/lib/x86_64-linux-gnu/librocrand.so.1.1
	agree_notes /usr/lib/x86_64-linux-gnu/librocrand.so.1.1 1
	need_lib /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1
	agree_notes /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1 97
}


# --- code identity: the sha256 of each code object against the reference tools ----------

# agree_digests LIB [EVERY]: each AMDGPU entry's sha256 (inspect --digests) equals sha256sum of
# what clang-offload-bundler-15 --unbundle writes for its id from the bundle cut out of the
# section (every EVERY-th bundle)
agree_digests() {
	local lib=$1 every=${2:-1}
	pg inspect --json --digests "$lib"
	assert_eq "$rc" 0 "inspect --digests $lib"
	jq -r '.files[0].code_objects[] | select(.kind == "amdgpu") |
		"\(.bundle)\t\(.container_offset)\t\(.container_size)\t\(.id)\t\(.sha256)"' \
		<<<"$out" >digests.tsv
	local n=0 b off size id sha last=
	while IFS=$'\t' read -r b off size id sha; do
		[ $((b % every)) -eq 0 ] || continue
		[ "$last" = "$b" ] || dd if="$lib" of=cut.bin bs=1M iflag=skip_bytes,count_bytes \
			skip="$off" count="$size" status=none
		last=$b
		clang-offload-bundler-15 --unbundle --type=o --input=cut.bin --targets="$id" --output=co.elf
		assert_eq "$sha" "$(sha256sum co.elf | cut -d' ' -f1)" "bundle $b $id of $lib"
		n=$((n + 1))
	done <digests.tsv
	[ "$n" -gt 0 ] || fail "no entry compared"
	echo "compared $n entries of $lib"
}

test_digests_agree_with_clang_offload_bundler_unbundle() {
	need clang-offload-bundler-15 jq
	agree_digests "$CO/hip-multi.so"
	agree_digests "$CO/hip-two-tu.so"
	agree_digests "$CO/hip-any.so"
	need_lib /usr/lib/x86_64-linux-gnu/librocrand.so.1.1
	agree_digests /usr/lib/x86_64-linux-gnu/librocrand.so.1.1
	need_lib /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1
	agree_digests /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1 "${PVG_ROCSPARSE_EVERY:-10}"
}

# decompress_ccob FILE OUT: the bundle inside a CCOB, by zstd(1) or Python's zlib, not by us
decompress_ccob() {
	$PY - "$1" "$2" <<'PY'
import struct, subprocess, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:4] == b"CCOB", "no CCOB"
version, method = struct.unpack_from("<HH", d, 4)
head = {1: 20, 2: 24, 3: 32}[version]
end = {1: len(d), 2: struct.unpack_from("<I", d, 8)[0], 3: struct.unpack_from("<Q", d, 8)[0]}[version]
stream = d[head:end]
if method == 0:
    out = zlib.decompressobj().decompress(stream)
else:
    out = subprocess.run(["zstd", "-dc"], input=stream, stdout=subprocess.PIPE, check=True).stdout
open(sys.argv[2], "wb").write(out)
PY
}

# A CCOB entry's identity is of its bytes after decompression: what clang-offload-bundler-15
# unbundles from the bundle that zstd(1) or zlib get out of the CCOB. Every version and codec,
# and 40 CCOBs in one library, where gate 6 decompresses only as far as its arch's entries.
test_ccob_digests_agree_with_decompressed_unbundle() {
	need clang-offload-bundler-15 jq zstd
	local f
	for f in ccob-v1-zlib ccob-v1-zstd ccob-v2-zlib ccob-v2-zstd ccob-v3-zlib ccob-v3-zstd; do
		decompress_ccob "$CO/$f.bin" plain.bin
		clang-offload-bundler-15 --unbundle --type=o --input=plain.bin \
			--targets=hipv4-amdgcn-amd-amdhsa--gfx906 --output=co.elf
		pg inspect --json --digests "$CO/$f.bin"
		assert_eq "$(jq -r '.files[0].code_objects[] | select(.arch == "gfx906") | .sha256' <<<"$out")" \
			"$(sha256sum co.elf | cut -d' ' -f1)" "$f"
	done
	gate6 "$CO/hip-ccob-many.so" gfx906
	assert_eq "$(gate_status report.json 6)" pass "gate 6 ($(problem_codes report.json 6))"
	jq -r '.gates[5].evidence.identities[] | "\(.bundle)\t\(.id)\t\(.sha256)\t\(.compressed)"' \
		report.json >ids.tsv
	jq -r '.gates[5].evidence.code_objects[] | select(.entry == 0) | "\(.bundle)\t\(.container_offset)\t\(.container_size)"' \
		report.json >ccobs.tsv
	local n=0 b id sha z off size
	while IFS=$'\t' read -r b id sha z; do
		read -r off size < <(awk -F '\t' -v b="$b" '$1 == b { print $2, $3 }' ccobs.tsv)
		dd if="$CO/hip-ccob-many.so" of=cut.bin bs=1M iflag=skip_bytes,count_bytes \
			skip="$off" count="$size" status=none
		decompress_ccob cut.bin plain.bin
		clang-offload-bundler-15 --unbundle --type=o --input=plain.bin --targets="$id" --output=co.elf
		assert_eq "$sha" "$(sha256sum co.elf | cut -d' ' -f1)" "CCOB $b $id"
		assert_eq "$z" true "CCOB $b compressed"
		n=$((n + 1))
	done <ids.tsv
	assert_eq "$n" 40 "gfx906 identities of hip-ccob-many.so"
}

# CUDA: each cubin's identity is the cubin ptxas wrote (nvcc -keep), which fatbinary packs as
# it is or compressed (zstd by default in CUDA 13, LZ4 with --compress-mode=speed); no other
# cubin is listed. (NVIDIA's cuobjdump -xelf extracts the same bytes; it is not installed here.)
test_cuda_digests_are_the_cubins_nvcc_wrote() {
	local NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
	need jq "$NVCC"
	local gen="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"
	local mode
	for mode in "-Xfatbin=-compress=false" "-Xfatbin=-compress-all" \
		"-Xfatbin=-compress-all --compress-mode=speed"; do
		rm -rf keep && mkdir keep
		# shellcheck disable=SC2086
		"$NVCC" -O2 -Xcompiler -fPIC -shared -cudart none $gen $mode -keep -keep-dir keep \
			"$CO/kernels.cu" -o k.so 2>nvcc.err || { cat nvcc.err; fail "nvcc $mode"; }
		local c80 c90
		c80=$(sha256sum keep/kernels.compute_80.cubin | cut -d' ' -f1)
		c90=$(sha256sum keep/kernels.compute_90.sm_90.cubin | cut -d' ' -f1)
		gate6 "$PWD/k.so" sm_90
		assert_eq "$(gate_status report.json 6)" pass "gate 6, $mode"
		assert_eq "$(jq -r '[.gates[5].evidence.identities[] | select(.kind == "cubin") | .sha256] | join(" ")' report.json)" \
			"$c90" "sm_90 identity, $mode"
		assert_eq "$(jq -r '.gates[5].evidence.identities[] | select(.kind == "cubin") | .size' report.json)" \
			"$(stat -c %s keep/kernels.compute_90.sm_90.cubin)" "sm_90 size, $mode"
		# compute_90 PTX is listed (kind ptx): the driver of an sm_90 GPU could compile it
		assert_eq "$(jq -r '[.gates[5].evidence.identities[] | .kind] | sort | join(" ")' report.json)" \
			"cubin ptx" "kinds, $mode"
		gate6 "$PWD/k.so" sm_80
		assert_eq "$(jq -r '[.gates[5].evidence.identities[] | .sha256] | join(" ")' report.json)" \
			"$c80" "sm_80 identity, $mode"
		pg inspect --json --digests k.so
		assert_eq "$(jq -r '[.files[0].code_objects[] | select(.kind == "cubin") | .sha256] | sort | join(" ")' <<<"$out")" \
			"$(printf '%s\n' "$c80" "$c90" | sort | paste -sd' ')" "inspect --digests, $mode"
	done
	assert_contains "$(jq -r '.gates[5].evidence.identities[0].compressed' report.json)" true
}

# The summary names the first identity; a relocatable cubin has none
test_gate_summary_and_relocatable_code() {
	gate6 "$CO/hip-gfx906.so" gfx906
	local sha
	sha=$(jq -r '.gates[5].evidence.identities[0].sha256' report.json)
	assert_eq "$(jq -r '.gates[5].evidence.identities | length' report.json)" 1
	assert_contains "$(jq -r '.gates[5].summary' report.json)" "sha256 ${sha:0:12}"
	gate6 "$FIXTURES/cuda-rdc/rdc-both.so" sm_90
	assert_eq "$(jq -r '[.gates[5].evidence.code_objects[] | select(.relocatable and .sha256)] | length' report.json)" 0
	assert_eq "$(jq -r '[.gates[5].evidence.identities[] | .section] | unique | join(" ")' report.json)" .nv_fatbin
}

run_tests
