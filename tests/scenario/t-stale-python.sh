#!/usr/bin/env bash
# Gate 4 and the installed Python of the change set: a real Python service imports its
# dispatch module from a site-packages folder and loads the HIP extension with ctypes; the
# module is then replaced with cp while the service runs. The service still runs the old
# module, so the chain must not be certified until it is restarted (also in exec's
# after-check).
source "$PVG_SRC/tests/lib.sh"

setup() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	tag="pysvc-$$-$RANDOM"
	sleep 0.05
	start_py
	port=0 scenario_config
	# the Python service: no port; its process is the one that runs everything
	jq --arg t "$tag" '.service = {"match": ["py-service.py --tag " + $t]}' provgate.json >p.json
	mv p.json provgate.json
}

py_pid=
start_py() {
	rm -f run/py.pid
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" --tag "$tag" \
		--site "$W/site" --package vllm_demo --module _custom_ops --function use_wvsplitk \
		--lib "$W/site/vllm_demo/_rocm_C.abi3.so" --log "$W/logs/server.log" \
		--pidfile run/py.pid </dev/null >py.out 2>&1 &
	py_pid=$!
	for _ in $(seq 200); do [ -s run/py.pid ] && break; sleep 0.05; done
	[ -s run/py.pid ] || { cat py.out; fail "the Python service did not start"; }
	trap 'kill $py_pid 2>/dev/null || true' EXIT
}

stop_py() { kill "$py_pid" 2>/dev/null || true; wait "$py_pid" 2>/dev/null || true; }

# the dispatch change that never ran: committed, copied into site-packages with cp
change_python() {
	sed -i 's/n % 256 == 0/n % 4096 == 0/' repo/vllm_demo/_custom_ops.py
	git_c commit -qam "dispatch: N % 4096"
	cp repo/vllm_demo/_custom_ops.py site/vllm_demo/_custom_ops.py
}

test_python_replaced_after_start_is_refused() {
	setup
	pg certify --json before.json
	assert_eq "$rc" 0 "certified before the change ($out)"
	sleep 0.05
	change_python
	pg certify --json r.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(gate_status r.json 2)" pass "gate 2: the installed copy is identical"
	assert_eq "$(gate_status r.json 3)" pass
	assert_eq "$(gate_status r.json 4)" fail
	assert_eq "$(problem_codes r.json 4)" process-maps.installed-after-start
	local msg hint
	msg=$(jq -r '.gates[3].problems[0].message' r.json)
	hint=$(jq -r '.gates[3].problems[0].hint' r.json)
	assert_contains "$msg" "$W/site/vllm_demo/_custom_ops.py (changed at"
	assert_contains "$msg" "process $py_pid"
	assert_contains "$hint" "restart the service"
	assert_eq "$(jq -r '.gates[3].evidence.change_set_files.changed_after_start[0].path' r.json)" \
		"$W/site/vllm_demo/_custom_ops.py"
	validate r.json
	# the hint works: after a restart the service runs the new module and is certified
	# (its marker now says the kernel is not selected, which gate 7 reports as such)
	stop_py
	start_py
	pg certify --json after.json
	assert_eq "$(gate_status after.json 4)" pass "gate 4 after the restart ($out)"
	assert_contains "$(problem_codes after.json 7)" dispatch-marker.not-selected
}

test_python_unchanged_since_start_passes_gate_4() {
	setup
	pg run --gates 2,3,4 --json r.json
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].evidence.change_set_files.checked' r.json)" 1
	assert_eq "$(jq -r '.gates[3].evidence.change_set_files.reference_pid' r.json)" "$py_pid"
}

test_exec_after_check_catches_python_replaced_during_benchmark() {
	setup
	# the benchmark copies the (identical) module over the installed one while it runs
	pg exec --out r.json -- sh -c 'sleep 0.05; cp repo/vllm_demo/_custom_ops.py site/vllm_demo/_custom_ops.py'
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(jq -r '.gates[3].status' r.json)" pass "before the command"
	assert_eq "$(jq -r '.after.gates[3].status' r.json)" fail "after the command"
	assert_contains "$(jq -r '[.after.gates[3].problems[].code] | join(" ")' r.json)" \
		process-maps.installed-after-start
}

run_tests
