#!/usr/bin/env bash
# Gate 7's compile-cache rule: a torch.compile graph the live service loaded from vLLM's cache
# is no older than the changed Python files it traced. The demo's scenario for real (hipify +
# hipcc build, install, a live service whose engine and workers carry vLLM's process names);
# the cache folders are made by tests/helpers/vllm-compile-cache.py as vLLM lays them out
# (a computation_graph.py printed by torch.fx itself), and the engine's workers' torch.compile
# lines are written to the service log with their pids, in vLLM's words
# (vllm/compilation/backends.py: "Using cache directory: %s for vLLM's torch.compile",
# "Directly load the compiled graph(s) for dynamic shape from the cache, took %.3f s",
# "Compiling a graph for dynamic shape takes %.2f s"; the tag is vLLM's multiproc executor's
# "(VllmWorker rank=R pid=N)").
source "$PVG_SRC/tests/lib.sh"

MAKE="$PVG_SRC/tests/helpers/vllm-compile-cache.py"

setup() { # [VLLM_CACHE_ROOT]
	need hipcc ninja git ss jq /usr/bin/python3
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	VLLM_CACHE_ROOT=${1:-$W/vcache} scenario_start
	request "4096 5120 torch.bfloat16"
	scenario_config
	engine=$(cat run/engine.pid)
	mapfile -t workers < <(pgrep -P "$engine" | sort -n)
	[ "${#workers[@]}" -ge 2 ] || fail "the engine has no two workers"
}

# vLLM's log line of worker RANK: "(VllmWorker rank=R pid=N) INFO MM-DD HH:MM:SS [file] TEXT"
line() {
	printf '(VllmWorker rank=%s pid=%s) INFO %s [backends.py:%s] %s\n' "$1" "${workers[$1]}" \
		"$(date '+%m-%d %H:%M:%S')" "$2" "$3" >>logs/server.log
}
# a cache folder of RANK written at WHEN (date -d) whose graph traced FILES
cache() {
	local rank=$1 when=$2; shift 2
	/usr/bin/python3 "$MAKE" "$W/vcache" 5d3a9e0c7b "$rank" 0 backbone "$(date -d "$when" +%s)" "$@"
}
used() { line "$1" 540 "Using cache directory: $2 for vLLM's torch.compile"; }
loaded() { line "$1" 161 "Directly load the compiled graph(s) for dynamic shape from the cache, took 1.212 s"; }
compiled() { line "$1" 215 "Compiling a graph for dynamic shape takes 7.01 s"; }
g7() { jq -r ".gates[6] | $1" r.json; }

test_graph_loaded_from_a_cache_older_than_a_changed_traced_file_is_refused() {
	setup
	# rank 0's graph traced the changed _custom_ops.py and was written an hour before it was
	# installed; rank 1 compiled its own
	d0=$(cache 0 "-1 hour" "$W/site/vllm_demo/_custom_ops.py")
	d1=$(cache 1 "-1 hour" "$W/site/vllm_demo/_custom_ops.py")
	touch "$d1/computation_graph.py" "$d1/vllm_compile_cache.py" # written by this run
	used 0 "$d0"; used 1 "$d1"; loaded 0; compiled 1
	pg certify --json r.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_contains "$out" "NOT CERTIFIED"
	assert_eq "$(g7 .status)" fail
	assert_eq "$(g7 '[.problems[].code] | join(" ")')" dispatch-marker.compile-cache-stale
	assert_contains "$(g7 '.problems[0].message')" "loaded compiled graphs from $d0"
	assert_contains "$(g7 '.problems[0].message')" "vllm_demo/_custom_ops.py (traced: named in computation_graph.py)"
	assert_contains "$(g7 '.problems[0].hint')" "VLLM_DISABLE_COMPILE_CACHE=1"
	assert_contains "$(g7 .summary)" "compile cache: the service loaded compiled graphs"
	assert_eq "$(g7 '.evidence.compile_cache.folders | length')" 2
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].pid')" "${workers[0]}"
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].traced_changes[0]')" vllm_demo/_custom_ops.py
	assert_eq "$(g7 '.evidence.compile_cache.folders[1].loaded')" false
	validate r.json
}

# The change touches nothing the graph traced (its kernel's body is in the .so, called by name
# at run time; the graph's Python is a file the change left alone): reusing the cache is no
# stale code.
test_reuse_of_a_graph_the_change_did_not_trace_is_certified() {
	setup
	d0=$(cache 0 "-1 hour" "$W/site/vllm_demo/__init__.py")
	used 0 "$d0"; loaded 0
	pg certify --json r.json
	assert_eq "$rc" 0 "exit ($out)"
	assert_contains "$out" "CERTIFIED"
	assert_eq "$(g7 .status)" pass
	assert_eq "$(g7 .evidence.compile_cache.applies)" true
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].loaded')" true
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].graph_read')" true
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].traced_changes | length')" 0
	validate r.json
}

# The loaded folder's computation_graph.py is no file to read (a FIFO, a link out of it): which
# files its graph traced is not known, and a changed file is newer than it.
test_unreadable_graph_file_is_unverifiable() {
	setup
	d0=$(cache 0 "-1 hour" "$W/site/vllm_demo/__init__.py")
	rm "$d0/computation_graph.py"
	mkfifo "$d0/computation_graph.py"
	touch -d "-1 hour" "$d0/computation_graph.py"
	used 0 "$d0"; loaded 0
	pg certify --json r.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(g7 .status)" unverifiable
	assert_eq "$(g7 '[.problems[].code] | join(" ")')" dispatch-marker.compile-cache-undecided
	assert_contains "$(g7 '.problems[0].message')" "computation_graph.py: a FIFO"
	assert_eq "$(g7 '.evidence.compile_cache.folders[0].graph_read')" false
	rm "$d0/computation_graph.py"
	ln -s "$W/site/vllm_demo/__init__.py" "$d0/computation_graph.py"
	pg certify --json r.json
	assert_eq "$(g7 .status)" unverifiable
	assert_contains "$(g7 '.problems[0].message')" "computation_graph.py: "
	validate r.json
}

# A cache folder is there for the service, and its log says nothing about which graph it loaded.
test_cache_in_use_with_no_telling_line_is_unverifiable() {
	setup
	cache 0 "-1 hour" "$W/site/vllm_demo/_custom_ops.py" >/dev/null
	pg certify --json r.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(g7 .status)" unverifiable
	assert_eq "$(g7 '[.problems[].code] | join(" ")')" dispatch-marker.compile-cache-untold
	assert_contains "$(g7 '.problems[0].message')" "a torch.compile cache is in use ($W/vcache)"
	assert_eq "$(g7 .evidence.compile_cache.service_is_vllm)" true
	assert_eq "$(g7 .evidence.compile_cache.cache_root_exists)" true
	validate r.json
}

test_no_cache_the_rule_does_not_apply() {
	setup "$T/no-such-cache"
	pg certify --json r.json
	assert_eq "$rc" 0 "exit ($out)"
	assert_eq "$(g7 .status)" pass
	assert_eq "$(g7 .evidence.compile_cache.applies)" false
	assert_eq "$(g7 .evidence.compile_cache.not_applied_because)" "no torch.compile cache in use"
	assert_eq "$(g7 .evidence.compile_cache.cache_root)" "$T/no-such-cache"
	validate r.json
}

# init says whether the rule applies to the service it sees, and proposes the changed Python
# files as compile_cache.traced where a cache is in use.
test_init_says_whether_the_rule_applies() {
	setup
	rm -f provgate.json
	pg init
	assert_eq "$rc" 0 "init ($err)"
	assert_contains "$out" "compile-cache rule does not apply now: no torch.compile cache at $W/vcache/torch_compile_cache"
	assert_eq "$(sed '/^\/\//d' provgate.json | jq -c .compile_cache)" null
	cache 0 "-1 hour" "$W/site/vllm_demo/_custom_ops.py" >/dev/null
	pg init --force
	assert_eq "$rc" 0 "init ($err)"
	assert_contains "$out" "compile_cache.traced: the 1 changed Python file installed (the vLLM service uses the torch.compile cache at $W/vcache/torch_compile_cache"
	assert_eq "$(sed '/^\/\//d' provgate.json | jq -c .compile_cache.traced)" '["vllm_demo/_custom_ops.py"]'
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" provgate.json || fail "config does not validate"
}

run_tests