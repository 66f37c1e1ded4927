#!/usr/bin/env bash
# Gate 3 artifact-hash on real files in temp folders.
source "$PVG_SRC/tests/lib.sh"

setup() {
	head -c 3000000 /dev/urandom >build.so
	cp build.so inst.so
	cat >provgate.json <<-JSON
	{"name": "t3", "build": {"artifact": "build.so"}, "install": {"artifact": "inst.so"}}
	JSON
}

test_hash_matches_sha256sum() {
	setup
	pg run --gates 3 --json r.json
	assert_eq "$rc" 0 "exit"
	assert_eq "$(gate_status r.json 3)" pass
	assert_eq "$(jq -r .chain.build.sha256 r.json)" "$(sha256sum build.so | cut -d' ' -f1)" "build digest"
	assert_eq "$(jq -r .chain.installed.sha256 r.json)" "$(sha256sum inst.so | cut -d' ' -f1)" "installed digest"
	assert_eq "$(jq -r .chain.build.size r.json)" "3000000" "size as string"
	assert_eq "$(jq -r .chain.installed.inode r.json)" "$(stat -c %i inst.so)" "inode"
	assert_eq "$(jq -r '.chain.installed.inode|type' r.json)" "string"
	assert_eq "$(jq -r '.gates[2].evidence.method' r.json)" \
		"installed hashed; build compared byte for byte with it"
	validate r.json
}

test_one_byte_difference_fails() {
	setup
	printf '\x01' | dd of=inst.so bs=1 seek=1234567 conv=notrunc status=none
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1 "exit"
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(problem_codes r.json 3)" artifact-hash.mismatch
	assert_eq "$(jq -r .chain.build.sha256 r.json)" "$(sha256sum build.so | cut -d' ' -f1)" "build digest"
	assert_eq "$(jq -r .chain.installed.sha256 r.json)" "$(sha256sum inst.so | cut -d' ' -f1)" "installed digest"
	assert_eq "$(jq -r '.gates[2].evidence.first_difference_at' r.json)" 1234567
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "first difference at byte 1234567"
	validate r.json
}

test_missing_installed_fails_with_path() {
	setup
	rm inst.so
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(problem_codes r.json 3)" artifact-hash.installed-missing
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "$T/inst.so"
}

test_missing_build_fails() {
	setup
	rm build.so
	pg run --gates 3 --json r.json
	assert_eq "$(problem_codes r.json 3)" artifact-hash.build-missing
	assert_eq "$rc" 1
}

test_empty_files_are_not_a_pass() {
	: >build.so; : >inst.so
	echo '{"build": {"artifact": "build.so"}, "install": {"artifact": "inst.so"}}' >provgate.json
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(problem_codes r.json 3)" artifact-hash.empty
}

test_directory_is_refused() {
	setup
	rm inst.so; mkdir inst.so
	pg run --gates 3 --json r.json
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(problem_codes r.json 3)" artifact-hash.not-regular-file
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "directory"
}

test_fifo_is_refused_without_hanging() {
	setup
	rm inst.so; mkfifo inst.so
	pg run --gates 3 --json r.json   # would block forever on open() without O_NONBLOCK
	assert_eq "$(gate_status r.json 3)" fail
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "FIFO"
}

# Root reads any file whatever its mode, so the unreadable case runs provgate as nobody.
test_unreadable_file_is_unverifiable() {
	need setpriv
	setup
	chmod 755 "$T"; chmod 644 provgate.json build.so; chmod 000 inst.so
	set +e
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROVGATE" run --gates 3 --json - >r.json 2>err.txt
	rc=$?
	set -e
	assert_eq "$rc" 1 "exit as nobody ($(cat err.txt))"
	assert_eq "$(gate_status r.json 3)" unverifiable
	assert_eq "$(problem_codes r.json 3)" artifact-hash.unreadable
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "Permission denied"
}

test_not_configured_is_unverifiable() {
	echo '{"name": "x"}' >provgate.json
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" unverifiable
	assert_eq "$(problem_codes r.json 3)" artifact-hash.not-configured
}

test_config_holding_only_the_two_artifacts_is_enough() {
	head -c 100 /dev/urandom >b.so; cp b.so i.so
	echo '{"build": {"artifact": "b.so"}, "install": {"artifact": "i.so"}}' >provgate.json
	pg run --gates 3
	assert_eq "$rc" 0 "exit ($out $err)"
	assert_contains "$out" "PASSED"
}

test_one_path_for_both_is_hashed_once() {
	setup
	echo '{"build": {"artifact": "build.so"}, "install": {"artifact": "build.so"}}' >provgate.json
	pg run --gates 3 --json r.json
	assert_eq "$rc" 0
	assert_eq "$(jq -r '.gates[2].evidence.method' r.json)" "one path, hashed once"
	assert_eq "$(jq -r '.gates[2].evidence.same_file' r.json)" true
	assert_eq "$(jq -r .chain.build.sha256 r.json)" "$(sha256sum build.so | cut -d' ' -f1)"
}

test_size_difference_names_no_offset() {
	setup
	head -c 2999999 build.so >inst.so
	pg run --gates 3 --json r.json
	assert_eq "$(problem_codes r.json 3)" artifact-hash.mismatch
	assert_eq "$(jq -r '.gates[2].evidence.first_difference_at' r.json)" null
	assert_eq "$(jq -r .chain.installed.sha256 r.json)" "$(sha256sum inst.so | cut -d' ' -f1)"
}

# Gate 3 begins hashing before gate 1; a gate 1 failure must stop it, not wait for it.
test_early_hash_is_cancelled_when_gate_3_is_blocked() {
	head -c 50000000 /dev/urandom >build.so
	cp build.so inst.so
	echo '{"build": {"artifact": "build.so", "log": "missing.log"}, "install": {"artifact": "inst.so"}}' >provgate.json
	pg run --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 1)" unverifiable
	assert_eq "$(gate_status r.json 3)" blocked
	assert_eq "$(jq -r .chain.installed.sha256 r.json)" null "no digest from a cancelled hash"
}

run_tests
