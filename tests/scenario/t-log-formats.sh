#!/usr/bin/env bash
# Gate 7 reads the common log formats without configuration. Each format is written by a real
# Python service through Python logging (tests/helpers/py-service.py): an earlier run of the
# service writes a marker, exits, and a new run with the same log starts. The earlier run's
# marker must not count (its pid is another, or its time is before the start), the new run's
# must; lines with neither pid nor time count only in a log created after the start.
source "$PVG_SRC/tests/lib.sh"

svc_pid=
start_svc() { # FORMAT DATEFMT [py-service flags...]
	local f=$1 d=$2
	shift 2
	rm -f svc.pid
	/usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" --tag "$tag" --site "$T/site" \
		--package fastnorm --module ops --lib "$lib" --log "$T/server.log" --pidfile svc.pid \
		--format "$f" ${d:+--datefmt "$d"} "$@" </dev/null >svc.out 2>&1 &
	svc_pid=$!
	for _ in $(seq 200); do [ -s svc.pid ] && break; sleep 0.05; done
	[ -s svc.pid ] || { cat svc.out; fail "the service did not start"; }
}
stop_svc() { kill "$svc_pid" 2>/dev/null || true; wait "$svc_pid" 2>/dev/null || true; }
request() { # a marker from the live service, once it is in the log
	local before
	before=$(grep -c 'request done' server.log || true)
	kill -USR1 "$svc_pid"
	for _ in $(seq 200); do
		[ "$(grep -c 'request done' server.log || true)" -gt "$before" ] && return 0
		sleep 0.05
	done
	fail "no answer"
}

setup() {
	need /usr/bin/python3 jq cc
	tag="logfmt-$$-$RANDOM"
	mkdir -p site/fastnorm
	: >site/fastnorm/__init__.py
	printf 'def use_kernel(m, n):\n    return True\n' >site/fastnorm/ops.py
	echo 'int fastnorm(void) { return 1; }' >k.c
	cc -shared -fPIC -o site/fastnorm/_C.so k.c
	lib=$T/site/fastnorm/_C.so
	cat >provgate.json <<-JSON
	{"service": {"match": ["py-service.py --tag $tag"]},
	 "markers": {"log": "server.log", "prefix": "DCU_KERNEL_DIAG",
	             "require": [{"selected": "True", "shape": "(4096, 5120)"}],
	             "facts": ["block size = 832"]}}
	JSON
	if [ -n "${markers_extra:-}" ]; then
		jq "$markers_extra" provgate.json >p.tmp && mv p.tmp provgate.json
	fi
	trap stop_svc EXIT
}

# FORMAT DATEFMT WHAT [flags]: the earlier run's marker is refused as WHAT (foreign_pid or
# before_start), the live run's counts.
earlier_then_live() {
	local f=$1 d=$2 what=$3
	shift 3
	setup
	start_svc "$f" "$d" "$@"
	stop_svc
	sleep 1.1 # timestamps have one-second resolution
	start_svc "$f" "$d" --no-marker "$@"
	pg run --gates 7 --json early.json
	assert_eq "$rc" 1 "only the earlier run's marker ($out)"
	assert_eq "$(problem_codes early.json 7)" dispatch-marker.unattributed
	assert_eq "$(jq -r ".gates[6].evidence.markers.$what" early.json)" 1 "$what"
	assert_eq "$(jq -r '.gates[6].evidence.markers.live' early.json)" 0
	assert_not_contains "$(jq -r '.gates[6].problems[0].hint' early.json)" "rm, not truncate"
	request
	pg run --gates 7 --json live.json
	assert_eq "$rc" 0 "the live run's marker counts ($out $(jq -c .gates[6].problems live.json))"
	assert_eq "$(jq -r '.gates[6].evidence.markers.matched' live.json)" 1
	assert_eq "$(jq -r ".gates[6].evidence.markers.$what" live.json)" 1
	validate live.json
}

test_python_asctime_with_serve_pid() {
	earlier_then_live "%(asctime)s %(levelname)s [serve pid=%(process)d] %(message)s" "" foreign_pid
}
test_python_asctime_without_pid() {
	earlier_then_live "%(asctime)s - %(name)s - %(levelname)s - %(message)s" "" before_start
}
test_iso8601_utc_with_fraction() {
	earlier_then_live "%(asctime)s.%(msecs)03dZ %(levelname)s %(message)s" "%Y-%m-%dT%H:%M:%S" \
		before_start --utc
}
test_iso8601_with_offset_in_another_zone() {
	# the service writes Shanghai time with its offset; provgate reads it in UTC
	export TZ=Asia/Shanghai
	earlier_then_live "%(asctime)s %(message)s" "%Y-%m-%dT%H:%M:%S%z" before_start
}
test_syslog_style() {
	earlier_then_live "%(asctime)s myhost serve[%(process)d]: %(message)s" "%b %d %H:%M:%S" foreign_pid
}
test_glog_style() {
	earlier_then_live "I%(asctime)s.%(msecs)03d000 %(thread)d ops.cc:12] %(message)s" "%m%d %H:%M:%S" before_start
}
test_sglang_style() {
	earlier_then_live "[%(asctime)s TP0] %(message)s" "%Y-%m-%d %H:%M:%S" before_start
}
test_vllm_style() {
	earlier_then_live "(EngineCore_DP0 pid=%(process)d) %(levelname)s %(asctime)s [ops.py:12] %(message)s" \
		"%m-%d %H:%M:%S" foreign_pid
}
test_pid_only_prefix() {
	earlier_then_live "[pid %(process)d] %(message)s" "" foreign_pid
}

# The service's zone file refused (TZ naming a folder): the zone is unknown, which matters
# only for lines without an offset. Markers with their offset decide the gate alone: it
# passes, with the reason in the evidence; without an offset the lines are undecided and
# the gate is unverifiable, the refusal among its problems.
zone_refused_run() { # FORMAT DATEFMT REPORT
	setup
	mkdir -p zonedir
	start_svc "$1" "$2"
	stop_svc
	sleep 1.1 # timestamps have one-second resolution
	TZ=$T/zonedir start_svc "$1" "$2" --no-marker
	request
	pg run --gates 7 --json "$3"
	assert_contains "$(jq -r '.gates[6].evidence.service.time_zone.unknown' "$3")" "$T/zonedir" \
		"the zone's reason in the evidence"
}
test_refused_zone_file_leaves_markers_with_offsets_passing() {
	zone_refused_run "%(asctime)s %(levelname)s [serve pid=%(process)d] %(message)s" \
		"%Y-%m-%dT%H:%M:%S%z" offset.json
	assert_eq "$(gate_status offset.json 7)" pass "markers with their offset ($out)"
	assert_eq "$(problem_codes offset.json 7)" "" "problems"
	assert_eq "$rc" 0 "exit status"
	assert_eq "$(jq -r '.gates[6].evidence.markers.matched' offset.json)" 1
	assert_eq "$(jq -r '.gates[6].evidence.markers.time_undecided' offset.json)" 0
	validate offset.json
}
test_refused_zone_file_is_told_where_lines_are_undecided() {
	zone_refused_run "%(asctime)s %(levelname)s %(message)s" "%Y-%m-%d %H:%M:%S" plain.json
	assert_eq "$(gate_status plain.json 7)" unverifiable "lines without an offset ($out)"
	assert_contains "$(problem_codes plain.json 7)" dispatch-marker.time-undecided
	assert_contains "$(problem_codes plain.json 7)" dispatch-marker.zone-file-refused
	validate plain.json
}

# A format of the service's own that no built-in form reads: markers.pid_pattern and
# markers.time_pattern + time_format read it; without them its lines cannot be attributed.
own_format="<%(process)d@%(asctime)s> %(message)s"
own_datefmt="%d.%m.%Y/%H.%M.%S"
test_own_format_read_by_pid_and_time_patterns() {
	markers_extra='.markers.pid_pattern = "^<([0-9]+)@" | .markers.time_pattern = "@([0-9]{2}[.][0-9]{2}[.][0-9]{4}/[0-9.]{8})>" | .markers.time_format = "%d.%m.%Y/%H.%M.%S"'
	earlier_then_live "$own_format" "$own_datefmt" foreign_pid
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" provgate.json || fail "config does not validate"
}
test_own_format_time_pattern_alone_dates_the_lines() {
	markers_extra='.markers.time_pattern = "@([^>]+)>" | .markers.time_format = "%d.%m.%Y/%H.%M.%S"'
	earlier_then_live "$own_format" "$own_datefmt" before_start
}
test_own_format_without_patterns_is_not_attributed() {
	setup
	start_svc "$own_format" "$own_datefmt"
	stop_svc
	start_svc "$own_format" "$own_datefmt" --no-marker
	request
	pg run --gates 7 --json own.json
	assert_eq "$rc" 1 "no pattern reads this head ($out)"
	assert_eq "$(jq -r '.gates[6].evidence.markers.unknown_origin' own.json)" 2
	assert_eq "$(jq -r '.gates[6].evidence.markers.live' own.json)" 0
}
test_bad_patterns_are_config_errors_with_their_place() {
	setup
	jq '.markers.pid_pattern = "pid=([0-9"' provgate.json >bad.json
	pg run -c bad.json --gates 7
	assert_eq "$rc" 2 "unbalanced bracket"
	assert_contains "$err" "markers.pid_pattern"
	assert_contains "$err" "not a POSIX extended regular expression"
	assert_contains "$err" "bad.json:"
	jq '.markers.pid_pattern = "pid=[0-9]+"' provgate.json >bad.json
	pg run -c bad.json --gates 7
	assert_eq "$rc" 2 "no group"
	assert_contains "$err" "exactly one group"
	jq '.markers.time_pattern = "^([0-9:]+)"' provgate.json >bad.json
	pg run -c bad.json --gates 7
	assert_eq "$rc" 2 "time_pattern alone"
	assert_contains "$err" "markers.time_pattern: time_pattern needs time_format"
	jq '.markers.time_pattern = "^([0-9:]+)" | .markers.time_format = "HH:MM"' provgate.json >bad.json
	pg run -c bad.json --gates 7
	assert_eq "$rc" 2 "a format without a conversion"
	assert_contains "$err" "markers.time_format"
}

# No pid, no time: a truncated log is not a new log; the hint says what works, and it does.
test_plain_lines_in_truncated_log_need_a_new_file() {
	setup
	start_svc "%(message)s" ""
	stop_svc
	: >server.log
	start_svc "%(message)s" ""
	pg run --gates 7 --json trunc.json
	assert_eq "$rc" 1 "truncated log ($out)"
	assert_contains "$(problem_codes trunc.json 7)" dispatch-marker.unattributed
	assert_eq "$(jq -r '.gates[6].evidence.markers.unknown_origin' trunc.json)" 1
	local p
	p=$(jq -r '.gates[6].problems[] | select(.code == "dispatch-marker.unattributed") | "\(.message) | \(.hint)"' trunc.json)
	assert_contains "$p" "no pid or timestamp in the line, and the log file was created before the service started"
	assert_contains "$p" "remove the log (rm, not truncate) before starting the service"
	# the fact line, too, says what was seen and what works
	p=$(jq -r '.gates[6].problems[] | select(.code == "dispatch-marker.missing-fact") | "\(.message) | \(.hint)"' trunc.json)
	assert_contains "$p" "no pid or timestamp in the line"
	assert_contains "$p" "rm, not truncate"
	# doing what the hint says: remove the log, restart
	stop_svc
	rm server.log
	start_svc "%(message)s" ""
	pg run --gates 7 --json fresh.json
	assert_eq "$rc" 0 "a log created after the start ($out $(jq -c .gates[6].problems fresh.json))"
}

run_tests
