#!/usr/bin/env bash
# The runner and the command line: config discovery and errors, phases, --gates, blocked,
# --keep-going, exit codes, report files, colour.
source "$PVG_SRC/tests/lib.sh"

artifacts() {
	head -c 5000 /dev/urandom >b.so; cp b.so i.so
	echo '{"name": "rc", "build": {"artifact": "b.so"}, "install": {"artifact": "i.so"}}' >provgate.json
}

expect_config_error() { # CONFIG-TEXT NEEDLE
	printf '%s' "$1" >bad.json
	pg run -c bad.json --gates 3
	assert_eq "$rc" 2 "exit for config [$1]"
	assert_contains "$err" "bad.json" "message names the file"
	assert_contains "$err" "$2"
	assert_eq "$out" "" "no gate output on a config error"
}

test_config_errors_exit_2_and_name_the_problem() {
	expect_config_error '{"build": {"artifact": "x", "lgo": "y"}}' 'unknown key "build.lgo"'
	expect_config_error '{"service": {"port": "8000"}}' 'service.port: expected an integer'
	expect_config_error '{"build": {"artifact": "x",}' 'malformed JSON'
	expect_config_error '{"name": "a"} {"name": "b"}' 'unexpected content after the JSON object'
	expect_config_error '{"markers": {"min_count": true}}' 'markers.min_count'
	pg run -c does-not-exist.json
	assert_eq "$rc" 2
	assert_contains "$err" "does-not-exist.json"
	assert_contains "$err" "No such file"
	head -c 3000 /dev/urandom >garbage.json
	pg run -c garbage.json
	assert_eq "$rc" 2
}

test_config_discovery_order() {
	artifacts
	mkdir sub
	echo '{"name": "from-env", "build": {"artifact": "../b.so"}, "install": {"artifact": "../i.so"}}' >sub/env.json
	pg run --gates 3 --json -
	assert_eq "$(echo "$out" | jq -r .name)" rc "./provgate.json is the default"
	PROVGATE_CONFIG=sub/env.json pg run --gates 3 --json -
	assert_eq "$(echo "$out" | jq -r .name)" from-env "PROVGATE_CONFIG beats ./provgate.json"
	assert_eq "$rc" 0 "relative paths resolve against the config's folder"
	PROVGATE_CONFIG=sub/env.json pg run -c provgate.json --gates 3 --json -
	assert_eq "$(echo "$out" | jq -r .name)" rc "-c beats PROVGATE_CONFIG"
	mkdir empty && cd empty
	pg run
	assert_eq "$rc" 2
	assert_contains "$err" "no config"
	assert_contains "$err" "provgate init" "the no-config error says where to start"
}

# Where a newcomer starts: --help names init and the three steps.
test_help_names_init() {
	pg --help
	assert_eq "$rc" 0
	assert_contains "$out" "provgate init"
	assert_contains "$out" "TODO"
	assert_contains "$out" "provgate certify"
}

# -v evidence: indented JSON at a terminal, one line per gate otherwise.
test_verbose_evidence_is_pretty_at_a_terminal_only() {
	artifacts
	pg run --gates 3 -v
	assert_eq "$(grep -c 'evidence:' <<<"$out")" 1 "one evidence line"
	grep 'evidence:' <<<"$out" | sed 's/.*evidence: //' | jq -e . >/dev/null || fail "evidence is one JSON line: $out"
	local tty
	tty=$(/usr/bin/python3 - "$PROVGATE" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.environ["NO_COLOR"] = "1"
    os.execv(sys.argv[1], [sys.argv[1], "run", "--gates", "3", "-v"])
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
os.waitpid(pid, 0)
sys.stdout.write(out.decode().replace("\r\n", "\n"))
PY
)
	local ev
	ev=$(sed -n '/evidence:$/,/^      }$/p' <<<"$tty")
	[ "$(wc -l <<<"$ev")" -gt 3 ] || fail "no indented evidence at a terminal: $tty"
	sed 1d <<<"$ev" | jq -e .build >/dev/null || fail "the indented evidence is not JSON: $ev"
}

# --junit -: stdout holds the XML alone; the text goes to stderr. With --json - too, a usage error.
test_junit_to_stdout_moves_the_text_to_stderr() {
	artifacts
	pg run --gates 3 --junit -
	assert_eq "$rc" 0 "$err"
	/usr/bin/python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parseString(sys.stdin.read())' <<<"$out" ||
		fail "stdout is not one XML document: $out"
	assert_contains "$err" "PASSED: 1 of 1 selected gates passed"
	pg run --gates 3 --json - --junit -
	assert_eq "$rc" 2
	assert_contains "$err" "--junit -"
	assert_eq "$out" ""
}

test_relative_paths_do_not_depend_on_cwd() {
	artifacts
	cd /
	pg run -c "$T/provgate.json" --gates 3
	assert_eq "$rc" 0 "$out $err"
}

test_every_report_lists_seven_gates_in_order() {
	artifacts
	pg run --phase install --keep-going --json r.json
	assert_eq "$(jq -c '[.gates[].id]' r.json)" "[1,2,3,4,5,6,7]"
	assert_eq "$(jq -c '[.gates[].name]' r.json)" '["build-log","install-scope","artifact-hash","process-maps","stale-service","code-object","dispatch-marker"]'
	validate r.json
}

test_phases_select_their_gates() {
	artifacts
	pg run --phase install --keep-going --json r.json
	assert_eq "$(jq -c .selected_gates r.json)" "[1,2,3,6]"
	for g in 4 5 7; do assert_eq "$(gate_status r.json $g)" skipped "install gate $g"; done
	pg run --phase prestart --keep-going --json r.json
	assert_eq "$(jq -c .selected_gates r.json)" "[1,2,3,5,6]"
	assert_eq "$(gate_status r.json 4)" skipped
	pg run --keep-going --json r.json
	assert_eq "$(jq -c .selected_gates r.json)" "[1,2,3,4,5,6,7]"
	assert_eq "$(jq -r .phase r.json)" live
	pg run --phase prestart --gates 5 --json r.json
	assert_eq "$(jq -c .selected_gates r.json)" "[5]"
	assert_eq "$(jq -r .phase r.json)" prestart
}

test_gates_outside_the_phase_are_a_usage_error() {
	artifacts
	pg run --phase install --gates 4
	assert_eq "$rc" 2
	assert_contains "$err" "selects no gate of phase install"
	pg run --gates 9
	assert_eq "$rc" 2
	pg run --gates 3-1
	assert_eq "$rc" 2
	pg run --phase nope
	assert_eq "$rc" 2
	pg certify --gates 3
	assert_eq "$rc" 2
	assert_contains "$err" "certify always evaluates all seven gates"
}

test_gate_lists_accept_ranges_and_names() {
	artifacts
	pg run --gates 3-4,artifact-hash,code-object --keep-going --json r.json
	assert_eq "$(jq -c .selected_gates r.json)" "[3,4,6]"
}

test_first_non_pass_blocks_the_rest_unless_keep_going() {
	artifacts
	echo x >>i.so
	pg run --gates 3,6 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(gate_status r.json 6)" blocked
	assert_contains "$(jq -r .gates[5].summary r.json)" "gate 3 artifact-hash"
	pg run --gates 3,6 --keep-going --json r.json
	assert_eq "$rc" 1
	[ "$(gate_status r.json 6)" != blocked ] || fail "keep-going still blocked gate 6"
	[ "$(gate_status r.json 6)" != skipped ] || fail "gate 6 skipped"
}

test_certify_is_never_certified_by_a_subset() {
	artifacts
	pg run --gates 3 --json r.json
	assert_eq "$rc" 0
	assert_eq "$(jq -r .certified r.json)" false
	pg certify --json r.json
	assert_eq "$rc" 1
	assert_eq "$(jq -r .certified r.json)" false
	assert_contains "$out" "NOT CERTIFIED"
}

test_json_dash_writes_only_json_to_stdout() {
	artifacts
	pg run --gates 3 --json -
	echo "$out" | jq -e . >/dev/null || fail "stdout is not JSON: $out"
	assert_eq "$(echo "$out" | jq -r .schema)" "provgate.report/1"
}

test_report_file_is_written_whole_and_text_still_printed() {
	artifacts
	pg run --gates 3 --out rep.json
	assert_contains "$out" "artifact-hash"
	jq -e . rep.json >/dev/null
	[ -z "$(ls | grep '\.tmp\.')" ] || fail "temp file left behind"
	pg run --gates 3 --json /nonexistent-dir/r.json
	assert_eq "$rc" 2
	assert_contains "$err" "cannot write report"
}

# A report path that is no file is written into, never replaced: a device (as root, a rename
# onto /dev/null would make it a file for every process on the machine; the test uses a
# device node of its own), a FIFO (a reader waiting on >(jq .)), our own standard output named
# through a link (/dev/stdout is one); a link to a file keeps the link and replaces the file.
test_report_paths_that_are_no_files_are_written_into() {
	artifacts
	[ "$(id -u)" = 0 ] && { mknod null c 1 3 || fail "mknod"; }
	if [ -c null ]; then
		pg run --gates 3 --json null --junit null
		assert_eq "$rc" 0 "exit ($err)"
		[ -c null ] || fail "the device node was replaced: $(stat -c %F null)"
		[ -z "$(ls null.tmp.* 2>/dev/null)" ] || fail "a temp file was left beside the device"
	fi
	mkfifo fifo
	timeout 30 cat fifo >from-fifo &
	reader=$!
	pg run --gates 3 --json fifo
	assert_eq "$rc" 0 "exit ($err)"
	wait "$reader"
	[ -p fifo ] || fail "the FIFO was replaced: $(stat -c %F fifo)"
	assert_eq "$(jq -r .name from-fifo)" rc "the reader got the report"
	ln -s /proc/self/fd/1 to-stdout
	"$PROVGATE" run --gates 3 --json to-stdout >captured 2>/dev/null
	[ -L to-stdout ] || fail "the link to standard output was replaced"
	assert_eq "$(grep -c '^{' captured)" 1 "the report went to standard output"
	assert_eq "$(sed -n '/^{/,$p' captured | jq -r .name)" rc
	"$PROVGATE" run --gates 3 --json /dev/fd/1 >captured2 2>/dev/null
	assert_eq "$(sed -n '/^{/,$p' captured2 | jq -r .name)" rc "/dev/fd/1 is standard output"
	ln -s real.json link.json
	pg run --gates 3 --json link.json
	[ -L link.json ] || fail "the link to a report file was replaced"
	assert_eq "$(jq -r .name real.json)" rc "the file the link names holds the report"
}

test_junit_has_one_testcase_per_gate() {
	artifacts
	echo x >>i.so
	pg run --gates 3 --junit j.xml
	/usr/bin/python3 - j.xml <<-'PY'
	import sys, xml.etree.ElementTree as ET
	root = ET.parse(sys.argv[1]).getroot()
	cases = root.findall(".//testcase")
	assert len(cases) == 7, len(cases)
	assert cases[2].find("failure") is not None, "gate 3 should fail"
	assert cases[0].find("skipped") is not None
	PY
}

test_non_utf8_paths_are_escaped_in_json() {
	name=$(printf 'b\xff.so')
	head -c 100 /dev/urandom >"$name"; cp "$name" i.so
	printf '{"build": {"artifact": "%s"}, "install": {"artifact": "i.so"}}' "$name" >provgate.json
	pg run --gates 3 --json r.json
	# the config is not valid UTF-8 JSON text for cJSON either way; accept either outcome
	# but never raw bytes in the report
	if [ -f r.json ]; then
		/usr/bin/python3 -c 'import sys; open(sys.argv[1], encoding="utf-8", errors="strict").read()' r.json ||
			fail "report holds invalid UTF-8"
	fi
	ln -s "$T/$name" link.so
	echo '{"build": {"artifact": "link.so"}, "install": {"artifact": "missing/i.so"}}' >provgate.json
	pg run --gates 3 --json r.json
	/usr/bin/python3 -c 'import sys; open(sys.argv[1], encoding="utf-8", errors="strict").read()' r.json
}

test_colour_only_on_a_terminal_and_never_with_no_color() {
	need script
	artifacts
	pg run --gates 3
	assert_not_contains "$out" $'\033[' "piped output"
	env -u NO_COLOR script -qec "$PROVGATE run --gates 3" /dev/null >tty.txt
	grep -q $'\033\[' tty.txt || fail "no colour on a terminal"
	NO_COLOR=1 script -qec "$PROVGATE run --gates 3" /dev/null >tty2.txt
	! grep -q $'\033\[' tty2.txt || fail "colour despite NO_COLOR"
}

test_progress_on_a_terminal_when_hashing_takes_over_a_second() {
	need script
	# written zeros (a sparse file is refused unread: artifact-hash.sparse): 1 MiB hashes in
	# well under the second after which progress shows, so that run stays quiet; 96 MiB
	# shows it with PROVGATE_PROGRESS_AFTER_MS=0
	echo '{"build": {"artifact": "b.so"}, "install": {"artifact": "i.so"}}' >provgate.json
	head -c 1M /dev/zero >b.so; cp --sparse=never b.so i.so
	script -qec "$PROVGATE run --gates 3" /dev/null >quiet.txt 2>&1
	! grep -q "hashing [bi].so:" quiet.txt || fail "a hash of well under a second showed progress"
	head -c 96M /dev/zero >b.so; cp --sparse=never b.so i.so
	PROVGATE_PROGRESS_AFTER_MS=0 script -qec "$PROVGATE run --gates 3" /dev/null >tty.txt 2>&1
	# the lines in between come at most every 100 ms, so a short hash may show only the last
	grep -q "hashed [bi].so (96.0 MiB)" tty.txt ||
		fail "no progress on a terminal: $(tr '\r' '\n' <tty.txt | head -5)"
	PROVGATE_PROGRESS_AFTER_MS=0 pg run --gates 3
	assert_eq "$rc" 0
	assert_not_contains "$err" "hashing [bi].so" "stderr when not a terminal"
}

test_help_and_version() {
	pg --version
	assert_eq "$rc" 0
	assert_contains "$out" "provgate 0.1.0"
	pg --help
	assert_eq "$rc" 0
	for v in run certify exec inspect maps; do assert_contains "$out" "provgate $v"; done
	pg run --help
	assert_eq "$rc" 0
	assert_contains "$out" "--keep-going"
	pg frobnicate
	assert_eq "$rc" 2
	pg
	assert_eq "$rc" 2
	pg run --no-such-flag
	assert_eq "$rc" 2
}

test_flags_override_config_keys() {
	artifacts
	head -c 10 /dev/urandom >other.so
	pg run --gates 3 --installed other.so --json r.json
	assert_eq "$rc" 1
	assert_eq "$(jq -r .chain.installed.path r.json)" "$T/other.so"
	pg run --gates 3 --port notaport
	assert_eq "$rc" 2
	pg run --gates 3 --arch gfx9zz:bad
	assert_eq "$rc" 2
}

run_tests
