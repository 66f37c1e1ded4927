#!/usr/bin/env bash
# Gate 5: a service started with a torch-profiler trace folder (vLLM's VLLM_TORCH_PROFILER_DIR,
# SGLang's SGLANG_TORCH_PROFILER_DIR) that holds traces written since it started is a profiled
# service, not a benchmark service. Real processes, started with the variables; traces named
# as torch.profiler's tensorboard_trace_handler names them.
source "$PVG_SRC/tests/lib.sh"
need jq

# start VAR VALUE: a service process started with VAR=VALUE (cwd: the test's folder)
start() {
	env "$1=$2" sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	sleep 0.05
}

gate5() {
	echo "{ \"service\": { \"pid\": $svc ${1:-} } }" >provgate.json
	pg run -c provgate.json --gates 5 --json r.json
	status=$(gate_status r.json 5)
	codes=$(problem_codes r.json 5)
}

dirs() { jq -c ".gates[4].evidence.profiler_trace_dirs$1" r.json; }

test_traces_since_start_fail() {
	mkdir traces
	touch -d '-1 hour' traces/old_rank0.1700000000000000000.pt.trace.json.gz
	start VLLM_TORCH_PROFILER_DIR "$PWD/traces"
	echo x >traces/dp0_pp0_tp0_dcp0_ep0_rank0.1733000000000000000.pt.trace.json.gz
	gate5
	assert_eq "$status" fail "status ($codes)"
	assert_eq "$codes" stale-service.profiler-traces
	assert_contains "$(jq -r '.gates[4].problems[0].message' r.json)" \
		"pid $svc was started with VLLM_TORCH_PROFILER_DIR=$PWD/traces, and 1 torch-profiler trace was written there since it started: dp0_pp0_tp0_dcp0_ep0_rank0.1733000000000000000.pt.trace.json.gz"
	assert_eq "$(dirs '[0].traces_before_start')" '"1"'
	validate r.json
	gate5 ', "allow_profiler": true'
	assert_eq "$status" pass "allowed ($codes)"
	assert_eq "$(dirs '[0].traces_since_start')" '"1"'
}

test_sglang_relative_folder_is_the_services() {
	mkdir -p prof
	start SGLANG_TORCH_PROFILER_DIR prof
	echo x >prof/1733-TP-0.trace.json.gz
	gate5
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$(jq -r '.gates[4].problems[0].message' r.json)" "SGLANG_TORCH_PROFILER_DIR=prof"
	assert_contains "$(jq -r '.gates[4].problems[0].message' r.json)" "1733-TP-0.trace.json.gz"
}

test_variable_without_traces_is_noted() {
	start VLLM_TORCH_PROFILER_DIR "$PWD/not-yet"
	gate5
	assert_eq "$status" pass "status ($codes)"
	assert_contains "$(dirs '[0].note')" "no trace was written since it started"
	mkdir traces2
	kill $svc
	start VLLM_TORCH_PROFILER_DIR "$PWD/traces2"
	echo x >traces2/notes.txt
	gate5
	assert_eq "$status" pass "other files are no traces ($codes)"
}

# A trace named like one but a link (to a file elsewhere) is no trace; a folder that is a
# link out of the service's root is resolved inside it (and is not there).
test_links_are_not_followed() {
	mkdir real traces
	echo x >real/a.pt.trace.json.gz
	start VLLM_TORCH_PROFILER_DIR "$PWD/traces"
	ln -s ../real/a.pt.trace.json.gz traces/b.pt.trace.json.gz
	gate5
	assert_eq "$status" pass "a link is no trace ($codes)"
	assert_eq "$(dirs '[0].traces_since_start')" '"0"'
}

run_tests
