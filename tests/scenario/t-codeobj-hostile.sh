#!/usr/bin/env bash
# timeout: 600
# Gate 6 on hostile variants of the real code-object fixtures (tests/fixtures/codeobj/
# hostile.py says what each changes): sizes and offsets that lie, compressed entries that
# claim gigabytes from kilobytes, headers that name the same bytes thousands of times. Each
# gets a clear message and a status other than pass, in bounded time and memory; a code
# object the reader cannot decompress is one whose identity is not known, and gate 7 then
# leaves other bytes undecided.
source "$PVG_SRC/tests/lib.sh"
CO="$FIXTURES/codeobj"
PY=/usr/bin/python3
TOOL=$PVG_BUILD/tests/helpers/witness-tool
BOOT=$(cat /proc/sys/kernel/random/boot_id)

# variant NAME [N]: the variant in $PWD/NAME.bin
variant() { need zstd; "$PY" "$CO/hostile.py" "$1" "$1.bin" ${2:+"$2"} || fail "hostile.py $1"; }

# gate6 NAME ARCH [SECONDS]: gate 6 alone on NAME.bin, at most SECONDS (default 60) of wall
# time; sets status, codes, msgs, secs and kib (peak RSS)
gate6() {
	jq -n --arg a "$PWD/$1.bin" --arg arch "$2" '{arch: $arch, install: {artifact: $a}}' >cfg.json
	local limit=${3:-60} t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f %M -o rss timeout -k 5 "$limit" "$PROVGATE" run -c cfg.json --gates 6 \
		--json report.json >/dev/null 2>err || true
	t1=$(date +%s%N)
	secs=$(((t1 - t0) / 1000000000))
	kib=$(tail -n1 rss)
	[ -s report.json ] || fail "no report within ${limit}s ($(tail -n3 err))"
	if grep -qE 'AddressSanitizer|runtime error:|LeakSanitizer' err; then cat err >&2; fail "sanitizer"; fi
	status=$(gate_status report.json 6)
	codes=$(problem_codes report.json 6)
	msgs=$(jq -r '.gates[5].problems[].message' report.json)
	validate report.json
}

test_notes_named_again_and_again_are_read_once() {
	variant amdgpu-notes
	gate6 amdgpu-notes gfx906 30
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "note segments add up to more than the code object's"
	[ "$secs" -lt 10 ] || fail "took ${secs}s"
}

test_kernel_names_cannot_outgrow_their_cubin() {
	variant cubin-names
	gate6 cubin-names sm_90
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "kernel names add up to more than the cubin's"
	# 4096 names of 64 KiB each would be 256 MiB
	[ "$kib" -lt 200000 ] || fail "peak RSS ${kib} KiB"
}

test_bundle_entries_sharing_bytes_are_refused() {
	variant bundle-overlap
	gate6 bundle-overlap gfx906 30
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "share bytes"
	[ "$secs" -lt 10 ] || fail "took ${secs}s"
	# the same inside a CCOB: its decompressed bundle is parsed by the same reader
	variant ccob-overlap
	gate6 ccob-overlap gfx906 30
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "share bytes"
	[ "$secs" -lt 10 ] || fail "took ${secs}s"
}

test_two_entries_of_one_id_are_refused() {
	variant bundle-dup-id
	gate6 bundle-dup-id gfx906
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "two entries have the id hipv4-amdgcn-amd-amdhsa--gfx906"
}

test_sections_naming_the_same_bytes_are_read_once() {
	variant sections-overlap
	gate6 sections-overlap gfx906 30
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "is not read: another section of that name, .hip_fatbin"
	[ "$secs" -lt 10 ] || fail "took ${secs}s"
	# one code object listed: the bytes are read once
	assert_eq "$(jq '.gates[5].evidence.identities | length' report.json)" 1
}

# many entries each just under the 512 MiB bound, 16 KiB each in the file: a total budget
# (32 times the file, at least 1 GiB) stops them, and what is left has no known identity
test_decompression_has_a_budget_for_the_whole_file() {
	variant cuda-zstd-many 200
	gate6 cuda-zstd-many sm_90 60
	assert_eq "$status" unverifiable "status ($codes: $msgs)"
	assert_eq "$codes" code-object.identity-unknown
	assert_contains "$msgs" "198 sm_90 code objects of"
	assert_contains "$msgs" "not decompressed: the file's compressed code would decode to more than 1024 MiB"
	[ "$secs" -lt 30 ] || fail "took ${secs}s"
	# the two decoded: the real cubin with its zeros, one identity each
	assert_eq "$(jq '.gates[5].evidence.identities | length' report.json)" 2
	# CCOB v1: no length in the header, the walk stops where the budget does
	variant ccob-v1-many 200
	gate6 ccob-v1-many gfx906 60
	assert_eq "$status" unverifiable "status ($codes: $msgs)"
	assert_contains "$msgs" "not every code object of"
	assert_contains "$msgs" "and what follows it in the section are not read: not decompressed"
	[ "$secs" -lt 30 ] || fail "took ${secs}s"
	variant ccob-v3-many 200
	gate6 ccob-v3-many gfx906 60
	assert_eq "$status" unverifiable "status ($codes: $msgs)"
	assert_contains "$msgs" "198 gfx906 code objects of"
	[ "$secs" -lt 30 ] || fail "took ${secs}s"
}

test_sizes_that_lie_are_malformed() {
	local v
	for v in cuda-zstd-endless:sm_90:"does not decode to its declared" \
		cuda-zstd-fcs:sm_90:"zstd-compressed entry does not decode" \
		cuda-lz4-lying:sm_90:"LZ4-compressed entry does not decode to its declared 536870911 bytes" \
		ccob-v3-lying:gfx906:"but the header declares 536870912" \
		bundle-huge-count:gfx906:"absurd entry count 4294967296" \
		bundle-past-end:gfx906:"runs past the end"; do
		IFS=: read -r name arch text <<<"$v"
		variant "$name"
		gate6 "$name" "$arch" 30
		assert_eq "$status" fail "$name: status ($codes: $msgs)"
		assert_contains "$codes" code-object.malformed "$name"
		assert_contains "$msgs" "$text" "$name"
	done
}

# gate 7 with an artifact whose sm_90 entry does not decompress (cuda-lz4-bad.fatbin, a real
# nvcc fatbin with its LZ4 block damaged): a launch of bytes that are none of its identities
# may be that entry's code, which the driver may decode where this reader cannot; it is
# undecided, never "other code"
test_undecodable_entry_leaves_other_bytes_undecided() {
	need jq
	cp "$CO/cuda-lz4-bad.fatbin" art.bin
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	local ticks
	ticks=$(awk '{sub(/.*\) /, ""); print $20}' "/proc/$svc/stat")
	printf 'module sha256=%s size=5592 origin=file arch=90\nrecord name=pvg_k grid=8 block=128 count=4 module=1\n' \
		"$(printf other | sha256sum | cut -c1-64)" >w.txt
	"$TOOL" build w.txt w.pvgw >/dev/null || fail "witness-tool build failed"
	"$TOOL" restamp w.pvgw wdir "$svc" "$svc" 1 "$ticks" "$BOOT" >/dev/null || fail "restamp failed"
	jq -n --arg a "$PWD/art.bin" \
		'{arch: "sm_90", install: {artifact: $a}, witness: {dir: "wdir", require: [{kernel: "pvg_k"}]}}' >cfg.json
	pg run -c cfg.json --pid "$svc" --gates 7 --json r.json
	pg run -c cfg.json --pid "$svc" --gates 6 --json r6.json
	assert_eq "$(gate_status r6.json 6)" fail "gate 6"
	assert_contains "$(problem_codes r6.json 6)" code-object.malformed
	assert_eq "$(gate_status r.json 7)" unverifiable "gate 7 ($(problem_codes r.json 7): $(jq -r '.gates[6].problems[].message' r.json))"
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].code' r.json)" undecided
	assert_contains "$(jq -r '.gates[6].problems[].message' r.json)" "is not known"
}

run_tests
