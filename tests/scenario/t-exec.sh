#!/usr/bin/env bash
# provgate exec: certify, run the benchmark, re-check gates 3, 4, 5, 7 after it, one report.
# Runs the demo's scenario for real: hipify + hipcc build, install, a live service.
source "$PVG_SRC/tests/lib.sh"

setup() {
	need hipcc ninja git ss /usr/bin/python3
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	scenario_start
	request "4096 5120 torch.bfloat16"
	scenario_config
}

test_benchmark_succeeds_and_all_holds() {
	setup
	pg exec --out r.json -- sh -c 'echo benchmark-ran; exit 0'
	assert_eq "$rc" 0 "exit ($out)"
	assert_contains "$out" benchmark-ran
	assert_contains "$out" "CERTIFIED: all seven gates passed, and gates 3, 4, 5, 7 still hold"
	assert_contains "$out" "the benchmark succeeded (exit status 0)"
	assert_eq "$(jq -r '"\(.certified) \(.provenance_certified) \(.exec.ran) \(.exec.outcome)"' r.json)" \
		"true true true succeeded"
	assert_eq "$(jq -c .after.selected_gates r.json)" "[3,4,5,7]"
	assert_eq "$(jq -r '[.after.gates[] | select(.id == 3 or .id == 4 or .id == 5 or .id == 7) | .status] | unique | join(",")' r.json)" pass
	assert_eq "$(jq -r .exec.exit_status r.json)" 0
	assert_eq "$(jq -c .exec.command r.json)" '["sh","-c","echo benchmark-ran; exit 0"]'
	validate r.json
}

# Gates 5, 6 and 7 are prepared while gate 3 hashes; what they report must not depend on it.
test_prepared_gates_report_what_they_report_alone() {
	setup
	pg certify --json all.json
	assert_eq "$rc" 0 "certify ($out)"
	pg run --gates 5 --json g5.json
	# counts and timings of the whole machine's processes may move between two runs
	local e5='.gates[4].evidence | del(.selection, .fd_tables_scanned)'
	assert_eq "$(jq -cS "$e5" all.json)" "$(jq -cS "$e5" g5.json)" "gate 5"
	assert_eq "$(jq -r '.gates[4].evidence.port_owners | length' all.json)" 4
	pg run --gates 6 --json g6.json
	pg run --gates 7 --json g7.json
	assert_eq "$(jq -cS '.gates[5].evidence' all.json)" "$(jq -cS '.gates[5].evidence' g6.json)" "gate 6"
	# the service's start is boot time + start ticks, read anew each run: equal to the ms
	local ev='.gates[6].evidence | .service.start_time |= .[0:23]'
	assert_eq "$(jq -cS "$ev" all.json)" "$(jq -cS "$ev" g7.json)" "gate 7"
	assert_eq "$(jq -r '.gates[6].evidence.markers.matched' all.json)" 1
	# the early reads are timed where they happened: while gate 3 hashed, or in their turn
	assert_eq "$(jq -r '[.gates[4,5,6] | has("prepared_ms")] | all' all.json)" true "prepared in certify"
	assert_eq "$(jq -r '.gates[6] | has("prepared_ms")' g7.json)" false "not prepared alone"
	validate all.json
	validate g7.json
}

test_artifact_swapped_during_benchmark_is_caught_after() {
	setup
	pg exec --out r.json -- sh -c 'install -m 755 build/_rocm_C.abi3.so site/vllm_demo/_rocm_C.abi3.so'
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].status' r.json)" pass "before the command"
	assert_eq "$(jq -r '.after.gates[3].status' r.json)" fail "after the command"
	assert_contains "$(jq -r '[.after.gates[3].problems[].code] | join(" ")' r.json)" process-maps.deleted
	assert_contains "$out" "NOT CERTIFIED: gate 4 process-maps: fail after the command"
	assert_eq "$(jq -r .certified r.json)" false
}

test_service_restarted_during_benchmark_is_caught_after() {
	setup
	# the command restarts the service: a new process that loads the same, correct file
	cat >restart.sh <<-SH
	old=\$(cat run/serve.pid)
	kill "\$old"
	while kill -0 "\$old" 2>/dev/null && ! grep -q '^State:.*Z' /proc/"\$old"/status; do sleep 0.05; done
	rm -f run/serve.pid run/engine.pid
	setsid "$svc" --server --workers 2 --port $port --lib "$W/site/vllm_demo/_rocm_C.abi3.so" \
		--pidfile run/serve.pid --engine-pidfile run/engine.pid --log "$W/logs/server.log" \
		--tag "$scenario_tag" </dev/null >/dev/null 2>&1 &
	while [ ! -s run/serve.pid ]; do sleep 0.05; done
	SH
	pg exec --out r.json -- bash restart.sh
	kill "$(cat run/serve.pid)" 2>/dev/null || true
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].status' r.json)" pass "before the command"
	assert_eq "$(jq -r '.after.gates[3].status' r.json)" fail "after the command"
	assert_contains "$(jq -r '[.after.gates[3].problems[].code] | join(" ")' r.json)" process-maps.service-restarted
}

# A benchmark that failed is no certified run: the provenance was certified, the run was not,
# and both facts are in the report and on the verdict line.
test_command_failure_status_comes_back() {
	setup
	pg exec --out r.json -- sh -c 'exit 7'
	assert_eq "$rc" 7
	assert_eq "$(jq -r .exec.exit_status r.json)" 7
	assert_eq "$(jq -r '"\(.certified) \(.provenance_certified) \(.exec.ran) \(.exec.outcome)"' r.json)" \
		"false true true failed"
	assert_contains "$out" "PROVENANCE CERTIFIED, but the benchmark failed: exit status 7"
	assert_not_contains "$out" "
CERTIFIED"
	validate r.json
	pg exec --out r.json -- sh -c 'kill -KILL $$'
	assert_eq "$rc" 137
	assert_eq "$(jq -r '"\(.certified) \(.exec.signal) \(.exec.outcome)"' r.json)" "false 9 failed"
	assert_contains "$out" "the benchmark failed: killed by signal 9 (SIGKILL)"
	validate r.json
}

# A command that cannot start never ran: ran is false, and the shell's statuses come back
# (127 not found, 126 found but not executable).
test_command_that_cannot_start_did_not_run() {
	setup
	pg exec --out r.json -- no-such-benchmark-command --flag
	assert_eq "$rc" 127 "exit ($out $err)"
	assert_eq "$(jq -r '"\(.certified) \(.provenance_certified) \(.exec.ran) \(.exec.outcome) \(.exec.exit_status)"' r.json)" \
		"false true false not-started 127"
	assert_contains "$(jq -r .exec.error r.json)" "No such file or directory"
	assert_contains "$out" "PROVENANCE CERTIFIED, but the benchmark did not run: cannot run no-such-benchmark-command: No such file or directory"
	assert_not_contains "$out" "still hold after the command"
	assert_eq "$(jq -r .after r.json)" null "nothing ran: nothing to re-check"
	validate r.json
	printf '#!/bin/sh\nexit 0\n' >not-executable.sh
	chmod 644 not-executable.sh
	pg exec --out r.json -- ./not-executable.sh
	assert_eq "$rc" 126 "exit ($out $err)"
	assert_eq "$(jq -r '"\(.exec.ran) \(.exec.outcome)"' r.json)" "false not-started"
	assert_contains "$(jq -r .exec.error r.json)" "Permission denied"
}

test_signals_are_forwarded_to_the_command() {
	setup
	"$PROVGATE" exec --out r.json -- sh -c 'trap "exit 42" TERM; touch started; while :; do sleep 0.05; done' >o.txt 2>&1 &
	epid=$!
	for _ in $(seq 200); do [ -f started ] && break; sleep 0.05; done
	[ -f started ] || fail "command did not start: $(cat o.txt)"
	kill -TERM "$epid"
	set +e; wait "$epid"; rc=$?; set -e
	assert_eq "$rc" 42 "exit after SIGTERM ($(cat o.txt))"
	assert_eq "$(jq -r .exec.exit_status r.json)" 42
}

test_terminal_interrupt_reaches_the_command_once() {
	# ^C on a terminal goes to the whole foreground process group, CMD included; provgate
	# must not send it a second time (a second KeyboardInterrupt breaks Python cleanups)
	setup
	/usr/bin/python3 - "$PROVGATE" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "exec", "--out", "r.json", "--", "sh", "-c",
             'trap "echo int >>ints" INT; touch started; i=0; '
             'while [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done; exit 5'])
sent, done, deadline = False, 0, time.time() + 60
while time.time() < deadline:
    if not sent and os.path.exists("started"):
        time.sleep(0.2)
        os.write(fd, b"\x03")
        sent = True
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            if not os.read(fd, 65536):
                break
        except OSError:
            break
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    os.kill(pid, 9)
    sys.exit("provgate exec did not finish")
if not done:
    _, status = os.waitpid(pid, 0)
if not sent:
    sys.exit("the command never started")
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 5:
    sys.exit(f"provgate exec ended with wait status {status}, not exit 5")
PY
	assert_eq "$(cat ints)" "int" "SIGINTs the command saw"
	assert_eq "$(jq -r .exec.exit_status r.json)" 5
}

test_command_status_survives_an_ignored_sigchld() {
	# SIG_IGN for SIGCHLD is inherited across exec; with it the kernel would reap CMD and
	# its status would be lost
	setup
	set +e
	/usr/bin/python3 -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$PROVGATE" exec --out r.json -- sh -c 'exit 3' >o.txt 2>&1
	rc=$?
	set -e
	assert_eq "$rc" 3 "$(cat o.txt)"
	assert_eq "$(jq -r .exec.exit_status r.json)" 3
}

test_not_certified_before_means_the_command_does_not_run() {
	setup
	head -c 64 /dev/urandom >>site/vllm_demo/_rocm_C.abi3.so
	pg exec --out r.json -- touch ran
	assert_eq "$rc" 1
	[ ! -e ran ] || fail "the benchmark ran on a broken chain"
	assert_eq "$(jq -r .exec.ran r.json)" false
	pg exec --run-anyway --out r.json -- touch ran
	assert_eq "$rc" 1 "still not certified"
	[ -e ran ] || fail "--run-anyway did not run the command"
}

test_pre_benchmark_hook_keeps_one_report_per_run() {
	setup
	local i pids=()
	# three runs started together: the same second, so the time alone cannot tell them apart
	for i in 1 2 3; do
		PROVGATE=$PROVGATE PROVGATE_REPORT_DIR=reports "$PVG_SRC/hooks/pre-benchmark" \
			-c provgate.json -- sh -c "exit $i" >o$i.txt 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3; do
		set +e
		wait "${pids[$((i - 1))]}"
		rc=$?
		set -e
		assert_eq "$rc" "$i" "the benchmark's status comes back ($(cat o$i.txt))"
	done
	assert_eq "$(ls reports | wc -l)" 3 "three runs, three reports"
	assert_eq "$(jq -s -r 'map(.exec.exit_status) | sort | join(" ")' reports/*.json)" "1 2 3"
	validate reports/*.json
}

test_report_is_written_before_the_command_runs() {
	setup
	# the command copies the report as it is while it runs
	pg exec --out r.json -- cp r.json during.json
	assert_eq "$rc" 0 "$out $err"
	assert_eq "$(jq -r '"\(.exec.state) \(.certified) \(.after)"' during.json)" "running false null" \
		"interim report: a run in progress is never certified"
	assert_eq "$(jq -r '[.gates[].status] | unique | join(" ")' during.json)" pass
	validate during.json
	jq '.certified = true' during.json >forged.json
	if /usr/bin/python3 "$PVG_SRC/tests/validate-report.py" forged.json >/dev/null 2>&1; then
		fail "the schema accepts a certified report of a run in progress"
	fi
	assert_eq "$(jq -r '"\(.exec.state) \(.certified) \(.exec.exit_status)"' r.json)" "finished true 0"
	validate r.json
}

test_unwritable_report_means_the_command_does_not_run() {
	setup
	pg exec --out no/such/dir/r.json -- touch ran
	assert_eq "$rc" 2
	assert_contains "$err" "cannot write report no/such/dir/r.json"
	[ ! -e ran ] || fail "the benchmark ran although its report cannot be written"
	pg exec --out r.json --junit no/such/dir/j.xml -- touch ran
	assert_eq "$rc" 2
	assert_contains "$err" "cannot write JUnit report"
	[ ! -e ran ] || fail "the benchmark ran although its JUnit report cannot be written"
	ls no 2>/dev/null && fail "left files behind"
	pg exec --out r.json --junit j.xml -- touch ran
	assert_eq "$rc" 0
	[ -e ran ] && [ -s j.xml ] || fail "a writable pair of reports must run the command"
	assert_eq "$(ls | grep -c '\.tmp\.')" 0 "no temp files left"
}

test_closed_stdout_does_not_lose_the_report() {
	# provgate certify | head: the reader is gone (here before provgate starts); the report
	# must still be written, and exec's command still sees SIGPIPE as the caller set it
	setup
	/usr/bin/python3 - "$PROVGATE" <<'PY'
import json, os, subprocess, sys
pg = sys.argv[1]
def closed_stdout(args):
    r, w = os.pipe()
    os.close(r)
    # restore_signals (the default) gives provgate SIGPIPE's default action
    p = subprocess.run([pg] + args, stdout=w, stderr=subprocess.PIPE, timeout=120)
    os.close(w)
    return p
p = closed_stdout(["certify", "-v", "--json", "c.json"])
assert p.returncode == 0, f"certify ended with {p.returncode}: {p.stderr[-400:]!r}"
assert json.load(open("c.json"))["certified"] is True
p = closed_stdout(["exec", "--out", "e.json", "--", "sh", "-c", "echo benchmark output"])
rep = json.load(open("e.json"))
assert rep["exec"]["state"] == "finished", rep["exec"]
# the command was killed by SIGPIPE writing to the closed pipe, as it would be unwrapped
assert rep["exec"].get("signal") == 13, rep["exec"]
assert p.returncode == 141, f"exec ended with {p.returncode}"
PY
}

test_usage_errors() {
	echo '{}' >provgate.json
	pg exec
	assert_eq "$rc" 2
	pg exec --json - -- true
	assert_eq "$rc" 2
	assert_contains "$err" "--out FILE"
}

run_tests
