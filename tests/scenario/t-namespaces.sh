#!/usr/bin/env bash
# The container cases with bare kernel namespaces (unshare), where a container engine adds
# nothing: a service in its own pid namespace (log prefixes and pidfile hold its pids there),
# its own mount namespace (the install bound at another path), its own network namespace
# (the port is listened on there). Each case builds the demo's chain and certifies it.
source "$PVG_SRC/tests/lib.sh"

SVC="$PVG_BUILD/tests/helpers/fake-service"

stop_all() {
	local p i
	for p in $(pgrep -f "$scenario_tag" || true); do kill -TERM "$p" 2>/dev/null || true; done
	for i in $(seq 100); do pgrep -f "$scenario_tag" >/dev/null || break; sleep 0.02; done
	for p in $(pgrep -f "$scenario_tag" || true); do kill -KILL "$p" 2>/dev/null || true; done
}

setup() {
	need git hipcc jq ss unshare /usr/bin/python3
	[ "$(id -u)" = 0 ] || { [ "${CI:-}" = true ] && fail "needs root for unshare"; echo "SKIP: needs root" >&2; exit 77; }
	[ -x "$SVC" ] || fail "fake-service is not built"
	W=$T svc=$SVC scenario_tag="ns-${T##*.}-$$"
	trap stop_all EXIT
	# shellcheck source=../demo/scenario.sh
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	: >gpu0
	export PROVGATE_GPU_DEVICES="$T/gpu*"
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	scenario_config
	sleep 0.03
}

# start_in UNSHARE-OPTS... -- SETUP: the service as pid 1 of new namespaces; SETUP runs first
# (inside them); LIB is the library path it loads.
start_in() {
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	local pre=$1
	timeout -k 5 120 unshare "${opts[@]}" -- /bin/sh -c "$pre
		exec $SVC --server --workers 2 --port $port --lib ${LIB:-$T/site/vllm_demo/_rocm_C.abi3.so} \
		--device $T/gpu0 --log $T/logs/server.log --pidfile $T/run/serve.pid \
		--engine-pidfile $T/run/engine.pid --tag $scenario_tag" >"$T/svc.out" 2>&1 &
	local i
	for i in $(seq 250); do [ -s run/serve.pid ] && return 0; sleep 0.02; done
	cat "$T/svc.out" >&2
	fail "the service did not start"
}

host_pid_of() { pgrep -f "^$1 $scenario_tag" | head -n1; }

request_host() { # signal the engine by its host pid
	printf '%s\n' "$@" >logs/server.log.request
	local before i
	before=$(grep -c 'request [0-9]* done' logs/server.log || true)
	kill -USR1 "$(host_pid_of VLLM::EngineCore)"
	for i in $(seq 250); do
		[ "$(grep -c 'request [0-9]* done' logs/server.log || true)" -gt "$before" ] && return 0
		sleep 0.02
	done
	fail "the engine did not answer"
}

test_own_pid_and_mount_namespace_with_bind_mount_certified() {
	setup
	mkdir -p elsewhere # empty here; the install is bound onto it inside the namespace only
	LIB="$T/elsewhere/_rocm_C.abi3.so" start_in --pid --fork --mount-proc --mount \
		--propagation private -- "mount --bind $T/site/vllm_demo $T/elsewhere &&"
	request_host "4096 5120 torch.bfloat16"
	assert_eq "$(cat run/serve.pid)" 1 "the API server is pid 1 of its namespace"
	[ ! -e elsewhere/_rocm_C.abi3.so ] || fail "the bind mount leaked to the host"
	pg certify --json r.json
	jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' r.json >&2
	assert_eq "$rc" 0 "certified"
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	local pj; pj=$(jq -c --argjson p "$engine" '.chain.processes[] | select(.pid == $p)' r.json)
	assert_eq "$(jq -r .maps_path <<<"$pj")" "$T/elsewhere/_rocm_C.abi3.so" "path in its namespace"
	assert_eq "$(jq -r .host_path <<<"$pj")" "$T/site/vllm_demo/_rocm_C.abi3.so" "host path"
	assert_eq "$(jq -r .ns_pid <<<"$pj")" "$(cat run/engine.pid)" "pid in its namespace"
	assert_eq "$(jq -r .container <<<"$pj")" null "no container engine"
	assert_eq "$(jq -r .environment.container r.json)" null "environment.container"
	# provgate maps reads the path where the process sees it: not stale
	pg maps "$engine"
	assert_eq "$rc" 0 "provgate maps ($out)"
	assert_contains "$out" ", 0 stale" "maps summary"
	# the same with the pidfile written inside the namespace (it says 1)
	jq '.service = {pidfile: "run/serve.pid", port: .service.port, family: .service.family}' \
		provgate.json >p2.json
	pg certify -c p2.json --json r2.json
	assert_eq "$rc" 0 "certified by the pidfile"
	assert_eq "$(jq -r '.gates[3].evidence.selection.primary' r2.json)" \
		"$(host_pid_of 'vllm serve fixture')" "pidfile pid resolved to the host pid"
	# Without service.family, pid 1 is also the host's init. When init sees the same
	# pidfile (or its root cannot be entered to tell), which one wrote it cannot be told,
	# and that is said, never guessed; when it does not, the service is the only writer.
	jq '.service = {pidfile: "run/serve.pid"}' provgate.json >p3.json
	pg run -c p3.json --gates 4 --json r3.json
	local seen; seen=$(stat -L -c %d:%i /proc/1/root"$T"/run/serve.pid 2>&1 || true)
	if [ "$seen" = "$(stat -c %d:%i run/serve.pid)" ] || [[ $seen == *"ermission denied"* ]]; then
		assert_eq "$(gate_status r3.json 4)" unverifiable "gate 4 with an ambiguous pidfile"
		assert_eq "$(problem_codes r3.json 4)" process-maps.pidfile-ambiguous "codes"
	else
		assert_eq "$(gate_status r3.json 4)" pass "gate 4: init cannot see the pidfile"
		assert_eq "$(jq -r '.gates[3].evidence.selection.primary' r3.json)" \
			"$(host_pid_of 'vllm serve fixture')" "the writer that sees the pidfile"
	fi
}

test_own_network_namespace_port_read_there() {
	setup
	start_in --net --pid --fork --mount-proc -- "ip link set lo up &&"
	request_host "4096 5120 torch.bfloat16"
	! ss -Htln "sport = :$port" | grep -q . || fail "the port is listened on in the host's namespace"
	pg certify --json r.json
	jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' r.json >&2
	assert_eq "$rc" 0 "certified"
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	assert_eq "$(jq -r '.gates[4].evidence.listeners_netns' r.json)" \
		"$(readlink /proc/"$engine"/ns/net | tr -dc 0-9)" "listeners read in the service's netns"
	assert_eq "$(jq -r '.gates[4].evidence.host_side_listeners' r.json)" 0 "nothing on the host side"
	assert_eq "$(jq -r '.gates[4].evidence.port_owners[0].pid' r.json)" \
		"$(host_pid_of 'vllm serve fixture')" "the API server owns the port"
}

# A process of another pid namespace whose pid there equals the engine's pid on the host
# writes markers to the same log: they are not the service's.
test_colliding_pid_from_another_namespace_is_not_attributed() {
	setup
	start_in --pid --fork --mount-proc -- ":;"
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	timeout -k 5 60 unshare --pid --fork --mount-proc -- /bin/sh -c \
		"echo $((engine - 1)) >/proc/sys/kernel/ns_last_pid && $SVC --tag other-$scenario_tag \
		--multiple 1000 --log $T/logs/server.log --engine-pidfile $T/run/other.pid" &
	local i; for i in $(seq 250); do [ -s run/other.pid ] && break; sleep 0.02; done
	assert_eq "$(cat run/other.pid)" "$engine" "the other writer's pid collides"
	request_host "4096 5120 torch.bfloat16"
	kill -USR1 "$(pgrep -f "^VLLM::EngineCore other-$scenario_tag")"
	for i in $(seq 250); do grep -q "pid=$engine).*selected=False" logs/server.log && break; sleep 0.02; done
	pg certify --keep-going --json r.json
	jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' r.json >&2
	assert_eq "$(gate_status r.json 7)" pass "gate 7"
	[ "$(jq -r '.gates[6].evidence.markers.foreign_pid' r.json)" -ge 1 ] || fail "foreign not counted"
}

# start_collider ARGS...: a stand-in engine in a pid namespace of its own whose pid there is
# the service engine's host pid, appending to the service's log
start_collider() {
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	timeout -k 5 60 unshare --pid --fork --mount-proc -- /bin/sh -c \
		"echo $((engine - 1)) >/proc/sys/kernel/ns_last_pid && $SVC --tag other-$scenario_tag \
		--log $T/logs/server.log --engine-pidfile $T/run/other.pid $*" >/dev/null 2>&1 &
	local i; for i in $(seq 250); do [ -s run/other.pid ] && break; sleep 0.02; done
	assert_eq "$(cat run/other.pid)" "$engine" "the other writer's pid collides"
}

# Only the other namespace's process wrote matching markers: not the service's, and the hint
# says another process writes the log, not that the service writes its output elsewhere
# (its stdout goes to another file here, svc.out).
test_markers_only_from_a_colliding_pid_fail_with_a_true_hint() {
	setup
	start_in --pid --fork --mount-proc -- ":;"
	start_collider
	printf '%s\n' "4096 5120 torch.bfloat16" >logs/server.log.request
	kill -USR1 "$(pgrep -f "^VLLM::EngineCore other-$scenario_tag")"
	local i; for i in $(seq 250); do grep -q 'selected=True' logs/server.log && break; sleep 0.02; done
	pg run --gates 7 --json r.json
	assert_eq "$(gate_status r.json 7)" fail "gate 7"
	assert_contains "$(problem_codes r.json 7)" dispatch-marker.unattributed "codes"
	local hints; hints=$(jq -r '.gates[6].problems[].hint' r.json)
	assert_not_contains "$hints" "writes its stdout" "hint"
	assert_contains "$hints" "another process writes markers to this log" "hint"
}

run_tests
