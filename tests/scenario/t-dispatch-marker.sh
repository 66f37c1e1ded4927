#!/usr/bin/env bash
# Gate 7 dispatch-marker on vLLM-format logs (tests/fixtures/markers/make.sh) written for a
# real process tree: the service is a shell with a child, selected with --pid.
source "$PVG_SRC/tests/lib.sh"
MAKE_LOG="$FIXTURES/markers/make.sh"

# start_service [FILE]: starts the "service", a shell (root) with a child (the EngineCore),
# its stdout and stderr appended to FILE when given. Sets $root, $child.
start_service() {
	local svc='sleep 300 & echo $! >child.pid; wait'
	if [ $# -gt 0 ]; then bash -c "$svc" >>"$1" 2>&1 & else bash -c "$svc" & fi
	root=$!
	for _ in $(seq 100); do [ -s child.pid ] && break; sleep 0.05; done
	child=$(cat child.pid)
	trap 'kill $child $root 2>/dev/null || true' EXIT
	start=$(( $(date +%s) ))
}

write_config() {
	cat >provgate.json <<JSON
{
  "markers": {
    "log": "server.log",
    "prefix": "DCU_KERNEL_DIAG",
    "require": [{"selected": "True", "shape": "(4096, 5120)", "dtype": "torch.bfloat16"}],
    "min_count": ${1:-2},
    "forbid": ["fallback to unified triton"],
    "facts": ["block size = 832", "prefix caching = False"]
  }
}
JSON
}

# gate7 VARIANT: writes the log and runs gate 7; sets $status, $codes, $rc
gate7() {
	[ "$1" = none ] || "$MAKE_LOG" server.log "$child" "$start" "$1"
	pg run -c provgate.json --pid $root --gates 7 --json report.json
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
}

test_live_markers_pass() {
	start_service; write_config
	gate7 good
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$rc" 0 "exit code"
	assert_eq "$(jq -c .chain.markers report.json)" '{"matched":2,"unattributed":1}' "chain.markers"
	assert_eq "$(jq -r '.gates[6].evidence.markers.foreign_pid' report.json)" 1 "earlier run's marker"
}

# Too few live markers, and a matching one of an earlier run beside them: the message says how
# many more matched and why the first of them does not count.
test_too_few_says_why_others_do_not_count() {
	start_service; write_config 3
	gate7 good
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.too-few"
	msg=$(jq -r '.gates[6].problems[0].message' report.json)
	assert_contains "$msg" "2 live markers for {selected=True"
	assert_contains "$msg" "3 required (1 more matching marker does not count: its pid is no process of the service's tree"
	off=$(sed -n 's/.*not count: .*e\.g\. at byte \([0-9]*\)).*/\1/p' <<<"$msg")
	line=$(tail -c +$((off + 1)) server.log | head -1)
	assert_contains "$line" "DCU_KERNEL_DIAG"
	assert_contains "$line" "shape=(4096, 5120)"
	assert_not_contains "$line" "pid=$child)"
}

test_marker_selected_false_fails() {
	start_service; write_config 1
	gate7 not-selected
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.not-selected"
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'selected=False'
	assert_eq "$rc" 1
}

test_wrong_shape_fails() {
	start_service; write_config 1
	gate7 wrong-shape
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.too-few"
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'shape=(4096, 4096)'
}

test_markers_only_from_earlier_run_fail() {
	start_service; write_config 1
	gate7 earlier-only
	assert_eq "$status" fail
	# the facts, too, appear only in the earlier run's lines
	assert_eq "$codes" "dispatch-marker.missing-fact dispatch-marker.missing-fact dispatch-marker.unattributed"
	assert_eq "$(jq -c .chain.markers report.json)" '{"matched":0,"unattributed":1}'
}

test_markers_of_a_foreign_pid_fail() {
	start_service; write_config 1
	gate7 foreign-pid
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.unattributed"
}

test_missing_fact_fails() {
	start_service; write_config
	gate7 missing-fact
	assert_eq "$status" fail
	# the live run wrote no marker; the earlier run's marker does not count
	assert_eq "$codes" "dispatch-marker.missing-fact dispatch-marker.unattributed"
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'block size = 832'
}

test_forbidden_fallback_line_fails() {
	start_service; write_config
	gate7 forbidden
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.forbidden"
}

test_empty_log_fails() {
	start_service; write_config
	: >server.log
	gate7 none
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.empty-log"
}

test_service_writing_elsewhere_is_named() {
	start_service "$T/nohup.out"; write_config
	: >server.log
	gate7 none
	assert_eq "$codes" "dispatch-marker.empty-log"
	assert_contains "$(jq -r '.gates[6].problems[0].hint' report.json)" \
		"the service (pid $root) writes its stdout to $T/nohup.out, not to this log"
	assert_contains "$(jq -r '.gates[6].evidence.service_output_elsewhere' report.json)" "$T/nohup.out"
	# markers of an earlier run only: the same note
	gate7 earlier-only
	assert_eq "$status" fail
	assert_contains "$(jq -r '.gates[6].problems[] | select(.code == "dispatch-marker.unattributed") | .hint' report.json)" \
		"writes its stdout to $T/nohup.out"
	# no log at all
	rm server.log
	gate7 none
	assert_eq "$codes" "dispatch-marker.log-unreadable"
	assert_contains "$(jq -r '.gates[6].problems[0].hint' report.json)" "writes its stdout to $T/nohup.out"
}

test_log_rotated_away_is_named() {
	# logrotate renames the log; the service keeps writing to the renamed file
	: >server.log
	start_service "$T/server.log"; write_config
	mv server.log server.log.1
	: >server.log
	gate7 none
	assert_eq "$codes" "dispatch-marker.empty-log"
	assert_contains "$(jq -r '.gates[6].problems[0].hint' report.json)" "writes its stdout to $T/server.log.1"
	# and deleted after the rename
	rm server.log.1
	gate7 none
	assert_contains "$(jq -r '.gates[6].problems[0].hint' report.json)" "writes its stdout to $T/server.log.1 (deleted)"
}

test_service_writing_to_the_log_gets_no_note() {
	: >server.log
	start_service "$T/server.log"; write_config
	gate7 none
	assert_eq "$codes" "dispatch-marker.empty-log"
	assert_eq "$(jq -r '.gates[6].evidence.service_output_elsewhere' report.json)" null
	case $(jq -r '.gates[6].problems[0].hint' report.json) in
	*"writes its"*) fail "a note although the service writes to the log" ;; esac
}

test_log_created_after_start_attributes_plain_lines() {
	start_service; write_config 1
	sleep 1.1 # the log's birth must follow the service's start
	gate7 plain
	if [ "$(jq -r '.gates[6].evidence.log_created' report.json)" = null ]; then
		echo "SKIP: this file system records no birth time" >&2; exit 77
	fi
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(jq -r '.gates[6].evidence.markers.unknown_origin' report.json)" 0
}

test_plain_lines_in_a_log_older_than_the_service_fail() {
	write_config 1
	child=4242 start=$(date +%s)
	"$MAKE_LOG" server.log "$child" "$start" plain
	sleep 1.5 # /proc/stat's btime is whole seconds: keep clear of that rounding
	start_service
	pg run -c provgate.json --pid $root --gates 7 --json report.json
	if [ "$(jq -r '.gates[6].evidence.log_created' report.json)" = null ]; then
		echo "SKIP: this file system records no birth time" >&2; exit 77
	fi
	assert_eq "$(gate_status report.json 7)" fail
	assert_eq "$(jq -r '.gates[6].evidence.markers.unknown_origin' report.json)" 1
	assert_eq "$(problem_codes report.json 7)" \
		"dispatch-marker.missing-fact dispatch-marker.missing-fact dispatch-marker.unattributed"
}

# provgate as an ordinary user against a root service: the service's environment (its time
# zone) cannot be read, so whether its zone-less timestamps are before its start cannot be
# decided. That is unverifiable, with the cause, never a failure that blames "an earlier run".
test_not_root_against_a_root_service_is_unverifiable_with_the_cause() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to drop to another user" >&2; exit 77; }
	need setpriv useradd
	local user=pvg-newcomer
	id -u "$user" >/dev/null 2>&1 ||
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
			"$user" 2>/dev/null || id -u "$user" >/dev/null || fail "cannot create $user"
	setpriv --reuid="$user" --regid="$user" --clear-groups -- test -x "$PROVGATE" ||
		{ echo "SKIP: $user cannot reach $PROVGATE" >&2; exit 77; }
	write_config 2
	: >server.log # created before the service: only the lines' own times can attribute them
	sleep 1.5
	start_service
	sleep 1.1
	"$MAKE_LOG" new.log "$child" "$start" good
	cat new.log >>server.log
	chmod 755 "$T"
	chmod 644 provgate.json server.log
	local o
	setpriv --reuid="$user" --regid="$user" --clear-groups -- \
		"$PROVGATE" run -c provgate.json --pid $root --gates 7 --json - >report.json 2>err.txt || true
	o=$(setpriv --reuid="$user" --regid="$user" --clear-groups -- \
		"$PROVGATE" run -c provgate.json --pid $root --gates 7 2>>err.txt) || true
	assert_not_contains "$(cat err.txt)" "Sanitizer" "stderr"
	if [ "$(jq -r '.gates[6].evidence.log_created' report.json)" = null ]; then
		echo "SKIP: this file system records no birth time" >&2; exit 77
	fi
	assert_eq "$(gate_status report.json 7)" unverifiable "gate 7 ($o)"
	assert_eq "$(problem_codes report.json 7)" \
		"dispatch-marker.time-undecided dispatch-marker.time-undecided dispatch-marker.time-undecided"
	assert_eq "$(jq -r '.gates[6].evidence.markers.time_undecided' report.json)" 2
	local p
	p=$(jq -r '.gates[6].problems[] | "\(.message) | \(.hint)"' report.json)
	assert_contains "$p" "environ) cannot be read: Permission denied"
	assert_contains "$p" "run provgate as root or as the service's user"
	assert_not_contains "$p" "earlier run"
	assert_eq "$(grep -c '^not root:' <<<"$o")" 1 "said once at the top ($o)"
	# root reads the zone, and the same log passes
	pg run -c provgate.json --pid $root --gates 7 --json root.json
	assert_eq "$(gate_status root.json 7)" pass "as root ($out)"
}

test_missing_log_and_no_service_are_unverifiable() {
	start_service; write_config
	pg run -c provgate.json --pid $root --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" unverifiable
	assert_eq "$(problem_codes report.json 7)" dispatch-marker.log-unreadable
	"$MAKE_LOG" server.log "$child" "$start" good
	pg run -c provgate.json --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" unverifiable
	assert_eq "$(problem_codes report.json 7)" dispatch-marker.no-service
	assert_eq "$rc" 1
}

test_service_pid_and_pidfile_from_the_config() {
	start_service
	"$MAKE_LOG" server.log "$child" "$start" good
	write_config
	jq --argjson pid "$root" '.service = {"pid": $pid}' provgate.json >by-pid.json
	pg run -c by-pid.json --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" pass "service.pid ($(problem_codes report.json 7))"
	echo "$root" >service.pid
	jq '.service = {"pidfile": "service.pid"}' provgate.json >by-pidfile.json
	pg run -c by-pidfile.json --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" pass "service.pidfile"
	kill "$child" "$root" 2>/dev/null; wait "$root" 2>/dev/null || true
	pg run -c by-pidfile.json --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" unverifiable "service gone"
	assert_eq "$(problem_codes report.json 7)" dispatch-marker.no-service
}

test_garbage_and_10mb_lines_do_not_crash_or_hang() {
	start_service; write_config
	head -c 3000000 /dev/urandom >server.log
	printf '\n(EngineCore_DP0 pid=%s) INFO 01-01 00:00:00 [x.py:1] DCU_KERNEL_DIAG shape=(' "$child" >>server.log
	head -c 10485760 /dev/zero | tr '\0' '7' >>server.log
	printf '\n' >>server.log
	"$MAKE_LOG" good.log "$child" "$start" good
	cat good.log >>server.log
	timeout 60 "$PROVGATE" run -c provgate.json --pid $root --gates 7 --json report.json >/dev/null 2>err.txt || true
	assert_eq "$(gate_status report.json 7)" pass "status ($(problem_codes report.json 7))"
	assert_eq "$(jq -r '.gates[6].evidence.overlong_lines' report.json)" 1
	# garbage alone: no marker, never a pass
	head -c 3000000 /dev/urandom >server.log
	pg run -c provgate.json --pid $root --gates 7 --json report.json
	assert_eq "$(gate_status report.json 7)" fail
}

run_tests
