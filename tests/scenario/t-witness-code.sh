#!/usr/bin/env bash
# Gate 7 counts a launch by the bytes of its code, and requires the change's own kernels with
# no config (SPEC §12), on a real build: the "moe" scenario of multi-ext.sh (the change edits
# csrc/moe/moe_align_sum_kernels.cu; PyTorch's hipify, then hipcc for gfx906 and gfx90a into
# _C, _moe_C and _rocm_C), installed, and a live service that dlopens them. The code objects'
# digests are those of the real objects: each .hip_fatbin is cut out with objcopy, unbundled
# with clang-offload-bundler-15 and sha256sum'd here; the witness files naming them are
# built from a description (witness-tool build) and given the identity of the live engine (restamp).
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/scenario/multi-ext.sh"
TOOL=$PVG_BUILD/tests/helpers/witness-tool
BOOT=$(cat /proc/sys/kernel/random/boot_id)
CHANGED=csrc/moe/moe_align_sum_kernels.cu
KERNEL=moe_align_block_size_kernel

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }

# digest OBJECT ARCH: sha256 of OBJECT's code object for ARCH, as clang-offload-bundler
# unbundles it from the .hip_fatbin section (the first bundle there)
digest() {
	objcopy -O binary --only-section=.hip_fatbin "$1" fb.bin
	clang-offload-bundler-15 --unbundle --type=o --input=fb.bin \
		--targets="hipv4-amdgcn-amd-amdhsa--$2" --output=co.bin
	sha256sum co.bin | cut -c1-64
	rm -f fb.bin co.bin
}

# scenario: the generated "moe" scenario, installed and running with the witness variables
scenario() {
	need hipcc cmake ninja git jq ss objcopy clang-offload-bundler-15 sha256sum /usr/bin/python3
	W=$PWD svc="$PVG_BUILD/tests/helpers/fake-service"
	trap mx_stop EXIT
	local dir
	dir=$(mx_cache)/scenarios
	mx_generate "$dir" || fail "the scenario's build failed"
	mx_use "$dir" moe
	mx_install _C _moe_C _rocm_C
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$W/wdir CUDA_INJECTION64_PATH=$PVG_BUILD/lib/witness/libprovgate-witness.so \
		mx_start _C _moe_C _rocm_C
	engine=$(cat run/engine.pid)
	mx_config "$(mx_entry _C)" "$(mx_entry _moe_C)" "$(mx_entry _rocm_C)"
	# the change's object, and the baseline build's copy of the same kernel (other bytes)
	OBJ=$W/build/CMakeFiles/_moe_C.dir/csrc/moe/moe_align_sum_kernels.hip.o
	NEW=$(digest "$OBJ" gfx90a)
	objcopy -O binary --only-section=.hip_fatbin "$W/old/_moe_C.abi3.so" old-fb.bin
	OLD=$(digest_old)
	[ "$NEW" != "$OLD" ] || fail "the baseline's code object has the change's bytes"
}

# digest_old: the baseline _moe_C's code object for gfx90a holding KERNEL: its .hip_fatbin
# holds one bundle per object (4096-aligned); the one whose gfx90a object defines KERNEL
digest_old() {
	local off size=$(stat -c %s old-fb.bin)
	for ((off = 0; off < size; off += 4096)); do
		dd if=old-fb.bin of=b.bin bs=4096 skip=$((off / 4096)) status=none
		head -c 24 b.bin | grep -q __CLANG_OFFLOAD_BUNDLE__ || continue
		clang-offload-bundler-15 --unbundle --type=o --input=b.bin \
			--targets=hipv4-amdgcn-amd-amdhsa--gfx90a --output=co.bin 2>/dev/null || continue
		if grep -q "$KERNEL" co.bin; then sha256sum co.bin | cut -c1-64; return; fi
	done
	fail "no code object of the baseline's _moe_C defines $KERNEL"
}

# witness DESC: a witness file of the live engine in wdir, built from DESC
witness() {
	printf '%s\n' "$1" >w.txt
	"$TOOL" build w.txt w.pvgw || fail "witness-tool build failed"
	rm -f wdir/*.pvgw
	"$TOOL" restamp w.pvgw wdir "$engine" "$engine" 1 "$(ticks_of "$engine")" "$BOOT" >/dev/null ||
		fail "restamp failed"
}

# with_witness JQ: the config with "witness" (dir wdir) merged with JQ's object, no markers
with_witness() {
	jq "del(.markers) | .witness = ({dir: \"wdir\", answer_ms: 200} + $1)" provgate.json >p.json
	mv p.json provgate.json
}

gate7() {
	pg run -c provgate.json --gates 7 --json r.json
	status=$(gate_status r.json 7)
	codes=$(problem_codes r.json 7)
	msgs=$(jq -r '.gates[6].problems[].message' r.json)
	validate r.json
}

# the default requirement's one source, as the evidence lists it
source_ev() { jq -c --arg s "$CHANGED" '.gates[6].evidence.witness.changed_sources[] | select(.source == $s)' r.json; }

test_changed_source_kernels_are_read_from_its_object() {
	scenario
	witness "record name=$KERNEL grid=1 block=256 count=3"
	with_witness '{}'
	gate7
	# what the build log compiled from the changed source, and the kernel in it for gfx90a
	assert_eq "$(source_ev | jq -r .state)" required
	assert_eq "$(source_ev | jq -r .kernels_from)" objects
	assert_eq "$(source_ev | jq -c .kernels)" "[\"$KERNEL\"]"
	assert_eq "$(source_ev | jq -r '.objects[0].path')" "$OBJ"
	# the unchanged sources are not required
	assert_eq "$(jq '.gates[6].evidence.witness.changed_sources | length' r.json)" 1
}

test_old_format_witness_is_linked_by_name_only() {
	scenario
	witness "version 2
record name=$KERNEL grid=1 block=256 count=3"
	with_witness '{}'
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-name-only
	assert_contains "$msgs" "changed source $CHANGED: its kernels ($KERNEL) were launched 3 times, linked by name only"
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].code' r.json)" name-only
	assert_eq "$(source_ev | jq -r .launches.name_only)" 3
}

test_changed_source_never_launched_fails_naming_it() {
	scenario
	# the service ran the other kernels of _moe_C, not the changed one
	witness "record name=topkGatingSoftmax grid=4 block=256 count=9"
	with_witness '{}'
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-source-not-launched
	assert_eq "$msgs" "changed source $CHANGED: none of its kernels ($KERNEL) was launched by the live service: nothing of that name ran"
}

test_exempt_source_passes_with_its_reason() {
	scenario
	witness "record name=topkGatingSoftmax grid=4 block=256 count=9"
	with_witness "{require: [{kernel: \"topkGatingSoftmax\"}],
		changed_sources: {\"$CHANGED\": {exempt: \"aligns only at startup, before the benchmark\"}}}"
	gate7
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(source_ev | jq -r .state)" exempt
	assert_eq "$(source_ev | jq -r .exempt)" "aligns only at startup, before the benchmark"
	assert_eq "$codes" ""
	assert_contains "$(jq -r '.gates[6].summary' r.json)" "0 of 0 changed device sources launched from the artifact (1 exempt: $CHANGED: aligns only at startup, before the benchmark)"
}

test_kernels_named_in_the_config_replace_the_objects() {
	scenario
	witness "record name=topkGatingSoftmax grid=4 block=256 count=9"
	with_witness "{changed_sources: {\"$CHANGED\": {kernels: [\"moe_align_*\", \"other_one\"]}}}"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_eq "$(source_ev | jq -r .kernels_from)" config
	assert_contains "$msgs" "none of its kernels (moe_align_*, other_one) was launched"
}

test_missing_object_is_unverifiable() {
	scenario
	rm "$OBJ"
	witness "record name=$KERNEL grid=1 block=256 count=3"
	with_witness '{}'
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-source-kernels-unknown
	assert_contains "$msgs" "its kernels are not known: object CMakeFiles/_moe_C.dir/csrc/moe/moe_align_sum_kernels.hip.o (compile line "
	assert_eq "$(source_ev | jq -r '.objects[0].error')" "not found in the build folders the log names"
	assert_contains "$msgs" "not found in the build folders the log names"
}

test_corrupt_or_fifo_object_is_unverifiable() {
	scenario
	witness "record name=$KERNEL grid=1 block=256 count=3"
	with_witness '{}'
	# the object cut short: its section headers (at its end) are gone, and with them the
	# device code it holds; never taken for a host-only object that requires nothing
	head -c 6000 "$OBJ" >cut.o && mv cut.o "$OBJ"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-source-kernels-unknown
	assert_contains "$(source_ev | jq -r .why)" "holds no device code, though it was compiled from a device source"
	# garbage where the object was
	head -c 3000 /dev/urandom >"$OBJ"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$(source_ev | jq -r '.objects[0].error')" "cannot be read"
	# a FIFO where the object was: refused unopened, never waited on
	rm "$OBJ" && mkfifo "$OBJ"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$(source_ev | jq -r '.objects[0].error')" "refused: a FIFO"
}

test_the_artifacts_copy_launched_passes() {
	scenario
	witness "module sha256=$NEW size=4440 origin=embedded path=$W/site/vllm/_moe_C.abi3.so
record name=$KERNEL grid=1 block=256 count=3 module=1"
	with_witness "{require: [{kernel: \"$KERNEL\", min_count: 3}]}"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].sha256' r.json)" "$NEW"
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].artifact' r.json)" _moe_C
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].origin' r.json)" embedded
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].code' r.json)" artifact
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].module' r.json)" 0
	assert_eq "$(source_ev | jq -r .launches.from_artifact)" 3
	assert_eq "$(jq -c .chain.witness r.json)" '{"live_files":1,"required_met":1,"required":1,"forbidden_seen":0,"changed_sources_met":1,"changed_sources":1}'
}

# The changed source is linked into _moe_C (the build log says so); a launch of its kernel's
# name from another configured artifact's code (_C's) is not its code: it fails, naming _C.
test_the_name_from_another_artifact_is_not_the_sources_code() {
	scenario
	local other
	other=$(digest "$W/build/_C.abi3.so" gfx90a)
	[ ${#other} = 64 ] && [ "$other" != "$NEW" ] || fail "no other gfx90a digest in _C: '$other'"
	witness "module sha256=$other size=4440 origin=embedded path=$W/site/vllm/_C.abi3.so
record name=$KERNEL grid=1 block=256 count=3 module=1"
	with_witness '{}'
	gate7
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_eq "$codes" dispatch-marker.witness-source-other-code
	assert_contains "$msgs" "$W/site/vllm/_C.abi3.so"
	# the module is one of _C's code objects: the evidence says so, and the source's count
	# puts it elsewhere
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].artifact' r.json)" _C
	assert_eq "$(source_ev | jq -r .launches.from_artifact)" 0
}

test_the_same_name_from_other_bytes_fails_naming_it() {
	scenario
	# the baseline build's copy of the kernel, loaded from the old library: same name, other
	# bytes
	witness "module sha256=$OLD size=4440 origin=file path=$W/old/_moe_C.abi3.so
record name=$KERNEL grid=1 block=256 count=5 module=1"
	with_witness "{require: [{kernel: \"$KERNEL\"}]}"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_eq "$codes" "dispatch-marker.witness-other-code dispatch-marker.witness-source-other-code"
	assert_contains "$msgs" "{$KERNEL}: 0 launches from the artifact's code, 1 required; $KERNEL ran 5 times from other code, e.g. 5 from $W/old/_moe_C.abi3.so (file, sha256 ${OLD:0:12}…)"
	assert_contains "$msgs" "changed source $CHANGED: none of its kernels ($KERNEL) was launched from the artifact; $KERNEL ran 5 times from other code: $W/old/_moe_C.abi3.so (file, sha256 ${OLD:0:12}…)"
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].artifact' r.json)" null
	# both loaded: the artifact's copy ran too, so both pass
	witness "module sha256=$OLD size=4440 origin=file path=$W/old/_moe_C.abi3.so
module sha256=$NEW size=4440 origin=embedded path=$W/site/vllm/_moe_C.abi3.so
record name=$KERNEL grid=1 block=256 count=5 module=1
record name=$KERNEL grid=2 block=256 count=1 module=2"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
}

test_ambiguous_and_ptx_jit_are_unverifiable() {
	scenario
	witness "module sha256=$NEW size=4440 origin=embedded path=$W/site/vllm/_moe_C.abi3.so
record name=$KERNEL grid=1 block=256 count=2 module=1 bind=ambiguous"
	with_witness '{}'
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-code-unknown
	assert_contains "$msgs" "2 launches of a name several loaded modules define, none told"
	witness "module sha256=$NEW size=4440 origin=ptx-jit
record name=$KERNEL grid=1 block=256 count=2 module=1"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$msgs" "compiled from PTX"
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].origin' r.json)" ptx-jit
}

test_init_proposes_the_changed_sources_and_their_kernels() {
	scenario
	rm provgate.json
	pg init .
	assert_eq "$rc" 0 "init ($err)"
	assert_eq "$(grep -v '^//' provgate.json | jq -c .witness.changed_sources)" "{\"$CHANGED\":{\"kernels\":[\"$KERNEL\"]}}"
	assert_contains "$(cat provgate.json)" "// guessed: witness.changed_sources $CHANGED: 1 kernel for gfx9"
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" provgate.json || fail "config does not validate"
}

test_config_refuses_a_source_with_both_or_neither() {
	need jq
	printf '{"witness": {"changed_sources": {"csrc/a.cu": {"kernels": ["k"], "exempt": "x"}}}}' >c.json
	pg run -c c.json --gates 7
	assert_eq "$rc" 2
	assert_contains "$err" 'witness.changed_sources."csrc/a.cu": needs exactly one of "kernels"'
	printf '{"witness": {"changed_sources": {"/abs/a.cu": {"exempt": "x"}}}}' >c.json
	pg run -c c.json --gates 7
	assert_eq "$rc" 2
	assert_contains "$err" 'a source is named by its path in source.repo'
	printf '{"witness": {"changed_sources": {"csrc/a.cu": {"kernel": ["k"]}}}}' >c.json
	pg run -c c.json --gates 7
	assert_eq "$rc" 2
	assert_contains "$err" 'unknown key "witness.changed_sources."csrc/a.cu".kernel" (known: kernels, exempt)'
}

# ---- CUDA: nvcc objects (a .nv_fatbin); the cubin's digest is that of the file ptxas wrote
# (nvcc -keep), which fatbinary packs as it is (NVIDIA's cuobjdump, which would cut it out of
# the object, is not installed here) ----

NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

# cuda_scenario: repo/ with a change to csrc/moe/align.cu, built by nvcc for sm_90 under
# ninja -v (as t-build-log-cuda-multi.sh), installed; a live process started with the
# witness variables, and the config for gate 7 with it
cuda_scenario() {
	need git jq ninja "$NVCC" sha256sum
	git init -q -b main repo
	mkdir -p repo/csrc/moe build inst wdir keep
	cat >repo/csrc/moe/align.cu <<-'CU'
	extern "C" __global__ void moe_align_k(int *out, const int *ids, int n)
	{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = ids[i] & 63; }
	extern "C" int moe_align_launch(int *out, const int *ids, int n)
	{ moe_align_k<<<(n + 63) / 64, 64>>>(out, ids, n); return 0; }
	CU
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	git -C repo tag base
	echo "// tuned" >>repo/csrc/moe/align.cu
	git -C repo -c user.name=t -c user.email=t@t commit -qam "moe: align"
	cat >build/build.ninja <<-NINJA
	rule cuda_compile
	  command = $NVCC -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 -keep -keep-dir $PWD/keep -c \$in -o \$out
	rule link
	  command = g++ -shared \$in -L/usr/local/cuda/lib64 -lcudart -o \$out
	build ${OBJ_NAME:-$PWD/build/align.o}: cuda_compile $PWD/repo/csrc/moe/align.cu
	build _moe_C.so: link ${OBJ_NAME:-$PWD/build/align.o}
	NINJA
	(cd build && ninja -v -j1) >build.log 2>&1 || { cat build.log; fail "nvcc build failed"; }
	cp build/_moe_C.so inst/
	CUBIN=$(sha256sum keep/align.cubin | cut -c1-64)
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$PVG_BUILD/lib/witness/libprovgate-witness.so sleep 300 &
	engine=$!
	trap 'kill $engine 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$engine/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	cat >provgate.json <<JSON
{ "arch": "sm_90", "build": {"log": "build.log"},
  "artifacts": [{"name": "_moe_C", "build": "build/_moe_C.so", "install": "inst/_moe_C.so"}],
  "source": {"repo": "repo", "baseline": "base", "compiled": ["csrc/**"]},
  "service": {"pid": $engine},
  "witness": {"dir": "wdir", "answer_ms": 200} }
JSON
}

test_cuda_changed_source_kernels_from_the_nvcc_object() {
	cuda_scenario
	CHANGED=csrc/moe/align.cu
	witness "record name=moe_align_k grid=2 block=64 count=4"
	gate7
	assert_eq "$(source_ev | jq -c .kernels)" '["moe_align_k"]'
	assert_eq "$(source_ev | jq -r '.objects[0].path')" "$PWD/build/align.o"
	# a launch without module identity: a claim
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-name-only
	# the cubin the object holds, launched: the artifact's bytes
	witness "module sha256=$CUBIN size=1 origin=embedded path=$PWD/inst/_moe_C.so
record name=moe_align_k grid=2 block=64 count=4 module=1"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].artifact' r.json)" _moe_C
	# the same cubin compiled by the driver from PTX: never the artifact's bytes
	witness "module sha256=$CUBIN size=1 origin=ptx-jit
record name=moe_align_k grid=2 block=64 count=4 module=1"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-code-unknown
}

# torch.utils.cpp_extension's layout (as the H200 run's build): "ninja -v" alone, objects and
# the library named relative to a build folder the log names nowhere; the folder is that of
# the configured build artifact, which holds ninja's log
test_cuda_objects_named_relative_to_the_artifacts_ninja_folder() {
	OBJ_NAME=align.cuda.o cuda_scenario
	grep -q -- " -o align.cuda.o" build.log || fail "the log names the object by a relative path"
	! grep -q "Entering directory\|cd " build.log || fail "the log names its folder"
	CHANGED=csrc/moe/align.cu
	witness "module sha256=$CUBIN size=1 origin=embedded path=$PWD/inst/_moe_C.so
record name=moe_align_k grid=2 block=64 count=4 module=1"
	gate7
	assert_eq "$(source_ev | jq -c .kernels)" '["moe_align_k"]'
	assert_eq "$(source_ev | jq -r '.objects[0].path')" "$PWD/build/align.cuda.o"
	assert_eq "$status" pass "status ($codes: $msgs)"
}

test_built_file_reads_back() {
	need jq
	printf 'module sha256=%s size=10 origin=file path=/x/y.so\nrecord name=k grid=2,3 block=64 count=4 module=1 bind=only-name\n' \
		"$(printf '%064d' 7)" >w.txt
	"$TOOL" build w.txt w.pvgw
	out=$("$TOOL" dump w.pvgw)
	assert_contains "$out" 'record name="k" demangled="" module="" grid=2,3,1 block=64,1,1 via=1 flags=0 count=4'
	assert_contains "$out" ' code=1 bind=3'
	assert_contains "$out" "module index=1 sha256=$(printf '%064d' 7) size=10 origin=1 flags=0"
	assert_contains "$out" 'path="/x/y.so"'
}

run_tests
