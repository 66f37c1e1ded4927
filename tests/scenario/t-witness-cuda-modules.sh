#!/usr/bin/env bash
# Code modules in the witness's CUDA front end (lib/witness/cuda.c) without a GPU: the
# stand-in driver and CUPTI (tests/helpers/cuda-standin.c) load real sm_90 cubins
# (tests/fixtures/witness-modules, made by nvcc: make-standin.sh) the way CUDA 13's driver did
# on the H200 (tests/gpu/results/2026-12-04-h200-modules): MODULE_LOADED with a heap copy of
# the ELF, eager libraries loaded inside cuLibraryLoadData, lazy ones inside the first launch
# of one of their CUkernels, a CUkernel's cuFuncGetModule failing. Two libraries hold the
# same extern "C" pvg_dup_kernel with different code (the artifact's and a vendor's older
# copy), each in the mapped data of its own shared object (libstandin-artifact.so,
# libstandin-vendor.so), as a service's libraries hold their fatbins. Digests are checked
# against sha256sum of the cubin files.
source "$PVG_SRC/tests/lib.sh"
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"
SIM="$PVG_BUILD/tests/helpers/cuda-sim"
STANDIN="$PVG_BUILD/tests/helpers/libcuda.so.1"
SO_A="$PVG_BUILD/tests/helpers/libstandin-artifact.so"
SO_V="$PVG_BUILD/tests/helpers/libstandin-vendor.so"
F="$PVG_SRC/tests/fixtures/witness-modules"
[ -x "$SIM" ] || { echo "SKIP: the CUDA front end is not built (no cupti.h): nothing to test" >&2; exit 77; }
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
need readelf
need nm
ART=$(sha256sum "$F/pvgdup.sm_90.cubin" | cut -d' ' -f1)
VEN=$(sha256sum "$F/vendor_ops.sm_90.cubin" | cut -d' ' -f1)
JIT=$(sha256sum "$F/pvgdup.ptx-jit.sm_90.cubin" | cut -d' ' -f1)
PTX=$(sha256sum "$F/pvgdup.sm_90.ptx" | cut -d' ' -f1)

# sim [VAR=VALUE...] < SCRIPT: a whole run, the witness file written at its exit
sim() {
	mkdir -p wdir
	env "$@" PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB \
		PROVGATE_WITNESS_CUPTI=$STANDIN "$SIM" >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	out=$("$TOOL" dump wdir/*.pvgw)
}
# the module line with digest $1, and its index
mod() { grep "^module index=[0-9]* sha256=$1 " <<<"$out"; }
idx() { mod "$1" | sed 's/^module index=\([0-9]*\) .*/\1/'; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
# the record of pvg_dup_kernel launched count times
rec() { grep "^record name=\"pvg_dup_kernel\".* count=$1 " <<<"$out"; }
# the file offset of standin_image in shared object $1 (its PT_LOAD segment's mapping)
image_offset() {
	local va type off vaddr paddr fsz rest
	va=$((16#$(nm -D "$1" | awk '$3 == "standin_image" { print $1 }')))
	while read -r type off vaddr paddr fsz rest; do
		[ "$type" = LOAD ] || continue
		if [ "$va" -ge $((vaddr)) ] && [ "$va" -lt $((vaddr + fsz)) ]; then
			echo $((va - vaddr + off))
		fi
	done < <(readelf -lW "$1")
}

test_eager_duplicates_bind_each_launch_to_its_own_library() {
	sim CUDA_MODULE_LOADING=EAGER <<EOF
init
dlimage A $SO_A
dlimage V $SO_V
libload LA A
libload LV V
rtkernel KA LA pvg_dup_kernel
rtkernel KV LV pvg_dup_kernel
launchv KA 4 128
launchv KV 4 128
launchv KA 4 128
launchv KA 4 128
launchv KV 4 128
EOF
	assert_contains "$out" 'modules n=2 loaded=2 dropped=0'
	a=$(idx "$ART"); v=$(idx "$VEN")
	assert_eq "$([ -n "$a" ] && [ -n "$v" ] && [ "$a" != "$v" ] && echo yes)" yes "two modules: $out"
	assert_contains "$(mod "$ART")" "size=$(stat -c %s "$F/pvgdup.sm_90.cubin") "
	assert_contains "$(mod "$VEN")" "size=$(stat -c %s "$F/vendor_ops.sm_90.cubin") "
	# each launch bound by its CUkernel's library's module, never ambiguous
	assert_contains "$(rec 3)" "code=$a bind=1"
	assert_contains "$(rec 2)" "code=$v bind=1"
	assert_not_contains "$out" 'bind=4'
}

test_lazy_vendor_copy_alone_is_loaded_and_bound() {
	sim <<EOF
init
dlimage A $SO_A
dlimage V $SO_V
libload LA A
libload LV V
rtkernel KV LV pvg_dup_kernel
launchv KV 8 64
launchv KV 8 64
launchv KV 8 64
launchv KV 1 32
EOF
	# the artifact's copy was registered but never loaded
	assert_contains "$out" 'modules n=1 loaded=1 dropped=0'
	assert_eq "$(idx "$VEN")" 1
	assert_eq "$(mod "$VEN" | field origin)" 4 "origin embedded"
	# the first record: the module loaded inside its launch; the next: by the handle
	# learnt then
	assert_contains "$(rec 3)" 'code=1 bind=2'
	assert_contains "$(rec 1)" 'code=1 bind=1'
}

test_lazily_loaded_module_names_its_shared_object() {
	sim <<EOF
init
dlimage A $SO_A
dlimage V $SO_V
libload LA A
libload LV V
rtkernel KV LV pvg_dup_kernel
launchv KV 8 64
EOF
	m=$(mod "$VEN")
	assert_eq "$(field origin <<<"$m")" 4 "origin embedded"
	assert_eq "$(field path <<<"$m")" "\"$SO_V\"" "the vendor's shared object"
	assert_eq "$(field file_offset <<<"$m")" "$(image_offset "$SO_V")" "offset of its image"
	# the bytes there are the vendor's cubin
	off=$(field file_offset <<<"$m")
	assert_eq "$(tail -c +$((off + 1)) "$SO_V" | head -c "$(stat -c %s "$F/vendor_ops.sm_90.cubin")" | sha256sum | cut -d' ' -f1)" "$VEN"
	assert_not_contains "$out" "$SO_A"
}

test_module_loaded_in_library_get_kernel_names_its_shared_object() {
	sim <<EOF
init
dlimage A $SO_A
libload LA A
libkernel K LA pvg_dup_kernel
kfunc F K
launchv F 2 32
EOF
	m=$(mod "$ART")
	assert_eq "$(field origin <<<"$m")" 4 "origin embedded"
	assert_eq "$(field path <<<"$m")" "\"$SO_A\""
	assert_eq "$(field file_offset <<<"$m")" "$(image_offset "$SO_A")"
	assert_contains "$(rec 1)" 'code=1 bind=1'
}

test_eager_registration_names_its_shared_object() {
	sim CUDA_MODULE_LOADING=EAGER <<EOF
init
dlimage V $SO_V
libload LV V
EOF
	m=$(mod "$VEN")
	assert_eq "$(field origin <<<"$m")" 1 "origin file"
	assert_eq "$(field path <<<"$m")" "\"$SO_V\""
	assert_eq "$(field file_offset <<<"$m")" "$(image_offset "$SO_V")"
}

test_own_driver_calls_are_not_traced_back() {
	# at cuLibraryLoadData's exit the witness asks cuLibraryGetModule itself: traced back
	# into it, that call would end the load's state before the module got its handle
	sim CUDA_MODULE_LOADING=EAGER <<EOF
init
dlimage A $SO_A
libload LA A
libkernel K LA pvg_dup_kernel
kfunc F K
launchv F 2 32
EOF
	assert_contains "$out" 'modules n=1 loaded=1 dropped=0'
	assert_not_contains "$(mod "$ART")" 'handle=0x0 '
	assert_contains "$(rec 1)" 'code=1 bind=1'
}

test_ptx_is_compiled_code_of_origin_ptx_jit() {
	sim <<EOF
init
file P $F/pvgdup.sm_90.ptx
jit $F/pvgdup.ptx-jit.sm_90.cubin
modload M P
modfunc FP M pvg_dup_kernel
launchv FP 1 32
file C $F/vendor_ops.sm_90.cubin
modload MC C
EOF
	assert_contains "$out" 'modules n=2 loaded=2 dropped=0'
	# the digest is the compiled ELF's, not the PTX text's nor ptxas -O3's (nvcc -cubin)
	assert_not_contains "$out" "$PTX"
	assert_not_contains "$out" "$ART"
	assert_eq "$(mod "$JIT" | field origin)" 3 "origin ptx-jit"
	assert_eq "$(mod "$JIT" | field size)" "$(stat -c %s "$F/pvgdup.ptx-jit.sm_90.cubin")"
	assert_eq "$(mod "$JIT" | field path)" '""'
	assert_contains "$(rec 1)" "code=$(idx "$JIT") bind=1"
	# a cubin from memory: origin memory, no path
	assert_eq "$(mod "$VEN" | field origin)" 2 "origin memory"
	assert_eq "$(mod "$VEN" | field path)" '""'
}

test_unload_is_recorded_and_ends_binding() {
	sim <<EOF
init
file C $F/vendor_ops.sm_90.cubin
modload M C
modfunc FM M pvg_dup_kernel
launchv FM 3 32
modunload M
launch pvg_dup_kernel 5 32
EOF
	m=$(mod "$VEN")
	load=$(field load_ns <<<"$m"); unload=$(field unload_ns <<<"$m")
	assert_eq "$([ "$unload" -gt 0 ] && [ "$unload" -ge "$load" ] && echo yes)" yes "unload_ns $unload after load_ns $load"
	assert_contains "$(grep 'grid=3,1,1' <<<"$out")" 'code=1 bind=1'
	# after the unload no loaded module defines the name
	assert_contains "$(grep 'grid=5,1,1' <<<"$out")" 'code=0 bind=0'
}

run_tests
