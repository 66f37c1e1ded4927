#!/usr/bin/env bash
# Certifying a service that runs in a container, from the host and from inside (podman exec),
# with a real engine: Debian's podman + runc, rootful, a private storage and config, and an
# image imported from a local rootfs tarball. Each case builds the demo's chain (git repo,
# hipify + hipcc build, install), starts the stand-in vLLM service (API server "vllm serve",
# engine VLLM::EngineCore logging "(EngineCore_DP0 pid=N)" with N its pid inside the
# container, two workers) in a container and asserts provgate's status and problem codes.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/podman.sh"

SVC="$PVG_BUILD/tests/helpers/fake-service"
SITE=/opt/venv/lib/python3.11/site-packages # the service's install path inside images

# setup: the chain in $T (as the demo builds it), a private podman, a stand-in GPU device.
setup() {
	need git hipcc jq ss /usr/bin/python3
	[ -x "$SVC" ] || fail "fake-service is not built"
	ctr_setup
	trap ctr_cleanup EXIT
	W=$T svc=$SVC scenario_tag="ctr-$CTR_TAG"
	# shellcheck source=../demo/scenario.sh
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	: >gpu0
	export PROVGATE_GPU_DEVICES="$T/gpu*"
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	scenario_config
	sleep 0.03 # the start time has clock-tick resolution: start one tick after the install
}

# start_service NAME [--lib PATH] [PODMAN-OPTS...]: the service in container NAME; waits for
# its pidfile. Default: host network, $T bound at the same path.
start_service() {
	local name=$1 lib="$T/site/vllm_demo/_rocm_C.abi3.so" extra=()
	shift
	if [ "${1:-}" = --lib ]; then lib=$2; shift 2; fi
	extra=("$@")
	[ ${#extra[@]} -gt 0 ] || extra=(--network host -v "$T:$T")
	ctr_run --image "${CTR_IMG:-$CTR_IMAGE}" --name "$name-$CTR_TAG" -v "$PVG_BUILD:$PVG_BUILD:ro" "${extra[@]}" -- \
		"$SVC" --server --workers 2 --port "$port" --host "${HOST_ADDR:-127.0.0.1}" \
		--lib "$lib" --device "$T/gpu0" --log "$T/logs/server.log" \
		--pidfile "$T/run/serve.pid" --engine-pidfile "$T/run/engine.pid" \
		--tag "$scenario_tag" >/dev/null
	local i
	for i in $(seq 250); do [ -s run/serve.pid ] && return 0; sleep 0.02; done
	podman_ logs "$name-$CTR_TAG" >&2 || true
	fail "the service in $name did not start"
}

# request CTR SHAPES...: one request to the engine, signalled from inside its container (the
# pid in run/engine.pid is a pid of that namespace); waits until the engine logged it.
request_in() {
	local ctr=$1; shift
	printf '%s\n' "$@" >logs/server.log.request
	local before i
	before=$(grep -c 'request [0-9]* done' logs/server.log || true)
	ctr_exec "$ctr-$CTR_TAG" /bin/sh -c "kill -USR1 \$(cat $T/run/engine.pid)" ||
		fail "cannot signal the engine"
	for i in $(seq 250); do
		[ "$(grep -c 'request [0-9]* done' logs/server.log || true)" -gt "$before" ] && return 0
		sleep 0.02
	done
	fail "the engine did not answer"
}

host_pid_of() { pgrep -n -f "^$1 $scenario_tag"; } # TITLE -> host pid of the newest
ctr_id() { podman_ inspect -f '{{.Id}}' "$1-$CTR_TAG"; }

# pg_inside CTR ARGS...: provgate run inside the container by podman exec
pg_inside() {
	local ctr=$1; shift
	local o e
	o=$(mktemp) e=$(mktemp)
	set +e
	ctr_exec -w "$T" -e NO_COLOR=1 -e LC_ALL=C.UTF-8 -e "ASAN_OPTIONS=$ASAN_OPTIONS" \
		-e "UBSAN_OPTIONS=$UBSAN_OPTIONS" -e "PROVGATE_GPU_DEVICES=$PROVGATE_GPU_DEVICES" \
		${PROVGATE_SYSFS:+-e "PROVGATE_SYSFS=$PROVGATE_SYSFS"} \
		${PROVGATE_NVML_LIBRARY:+-e "PROVGATE_NVML_LIBRARY=$PROVGATE_NVML_LIBRARY"} \
		${PVG_FAKE_NVML:+-e "PVG_FAKE_NVML=$PVG_FAKE_NVML"} \
		"$ctr-$CTR_TAG" "$PROVGATE" "$@" >"$o" 2>"$e"
	rc=$?
	set -e
	out=$(cat "$o"); err=$(cat "$e")
	rm -f "$o" "$e"
	case "$err" in *"ERROR: AddressSanitizer"*|*"runtime error:"*|*"ERROR: LeakSanitizer"*)
		echo "$err" >&2; fail "sanitizer report from provgate inside $ctr";; esac
	return 0
}

# kfd_tree PID...: a stand-in for amdgpu's /sys/class/kfd/kfd/proc, one entry per GPU process
# (the driver names them by their pid in the initial namespace)
kfd_tree() {
	mkdir -p "$T/sys/class/kfd/kfd/proc"
	local p
	for p in "$@"; do mkdir -p "$T/sys/class/kfd/kfd/proc/$p"; done
	export PROVGATE_SYSFS="$T/sys"
}

show() { jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' "$1" >&2; }

# ---- from the host -----------------------------------------------------------------------

test_host_network_same_paths_certified() {
	setup
	start_service svc
	request_in svc "4096 5120 torch.bfloat16"
	pg certify --json r.json
	show r.json
	assert_eq "$rc" 0 "certify exit ($err)"
	assert_eq "$(jq -r .certified r.json)" true "certified"
	validate r.json
	# provgate's view, and the target's container as podman names it
	assert_eq "$(jq -r .view.kind r.json)" host "view"
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	local pj; pj=$(jq -c --argjson p "$engine" '.chain.processes[] | select(.pid == $p)' r.json)
	assert_eq "$(jq -r .container.engine <<<"$pj")" podman "engine"
	assert_eq "$(jq -r .container.id <<<"$pj")" "$(ctr_id svc)" "container id"
	# the environment section's container, which provgate compare checks for an A/B pair
	assert_eq "$(jq -r .environment.container.id r.json)" "$(ctr_id svc)" "environment.container"
	assert_eq "$(jq -r .environment.container.engine r.json)" podman "environment engine"
	assert_eq "$(jq -r .ns_pid <<<"$pj")" "$(cat run/engine.pid)" "pid in its namespace"
	assert_eq "$(jq -r .namespaces.pid <<<"$pj")" \
		"$(readlink /proc/"$engine"/ns/pid | tr -dc 0-9)" "pid namespace"
	assert_eq "$(jq -r .namespaces.net <<<"$pj")" "$(readlink /proc/self/ns/net | tr -dc 0-9)" \
		"host network"
	# the markers carry the engine's pid inside the container, not its host pid
	grep -q "(EngineCore_DP0 pid=$(cat run/engine.pid))" logs/server.log || fail "log prefix"
	[ "$(cat run/engine.pid)" != "$engine" ] || fail "the engine has its own pid namespace"
}

test_pidfile_written_inside_the_container_resolves() {
	setup
	start_service svc
	request_in svc "4096 5120 torch.bfloat16"
	# the pidfile holds the API server's pid in the container (1): not the host's init
	assert_eq "$(cat run/serve.pid)" 1 "pid written inside"
	jq '.service = {pidfile: "run/serve.pid", port: .service.port, family: .service.family}' \
		provgate.json >p2.json
	pg certify -c p2.json --json r.json
	show r.json
	assert_eq "$rc" 0 "certify with the container's pidfile ($err)"
	assert_eq "$(jq -r '.gates[3].evidence.selection.primary' r.json)" \
		"$(host_pid_of 'vllm serve fixture')" "the API server's host pid"
}

test_bind_mount_at_another_path_certified() {
	setup
	start_service svc --lib "$SITE/vllm_demo/_rocm_C.abi3.so" --network host \
		-v "$T/site/vllm_demo:$SITE/vllm_demo:ro" -v "$T/logs:$T/logs" -v "$T/run:$T/run" \
		-v "$T/gpu0:$T/gpu0"
	request_in svc "4096 5120 torch.bfloat16"
	pg certify --json r.json
	show r.json
	assert_eq "$rc" 0 "certify exit"
	assert_eq "$(problem_codes r.json 4)" "" "gate 4 problems"
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	grep -q " $SITE/vllm_demo/_rocm_C.abi3.so" /proc/"$engine"/maps || fail "not mapped there"
	local pj; pj=$(jq -c --argjson p "$engine" '.chain.processes[] | select(.pid == $p)' r.json)
	assert_eq "$(jq -r .maps_path <<<"$pj")" "$SITE/vllm_demo/_rocm_C.abi3.so" "path inside"
	assert_eq "$(jq -r .host_path <<<"$pj")" "$T/site/vllm_demo/_rocm_C.abi3.so" "host path"
}

test_own_copy_at_the_installed_path_fails_gate_4() {
	setup
	# the image holds another build at the very path the host installed to
	mkdir -p img/"$T/site/vllm_demo"
	cp "$FIXTURES/procs/libpvgfixture.so" img/"$T/site/vllm_demo/_rocm_C.abi3.so"
	ctr_image "localhost/pvg-own-$CTR_TAG:1" img
	CTR_IMG="localhost/pvg-own-$CTR_TAG:1" start_service svc --network host -v "$T/logs:$T/logs" -v "$T/run:$T/run" \
		-v "$T/gpu0:$T/gpu0"
	request_in svc "4096 5120 torch.bfloat16"
	pg certify --json r.json
	show r.json
	assert_eq "$rc" 1 "not certified"
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.other-copy "gate 4 codes"
	assert_not_contains "$(jq -r '.gates[3].problems[].hint' r.json)" "warm up" "hint"
}

# A/B in two containers: a new container of the same image is the same environment for
# provgate compare (its id differs, its root's image layers do not); another image is not.
test_new_container_of_one_image_compares_equal() {
	setup
	start_service a
	request_in a "4096 5120 torch.bfloat16"
	pg certify --json a.json
	assert_eq "$rc" 0 "a certified ($err)"
	podman_ rm -f -t 0 "a-$CTR_TAG" >/dev/null
	rm -f run/serve.pid run/engine.pid
	start_service b
	request_in b "4096 5120 torch.bfloat16"
	pg certify --json b.json
	assert_eq "$rc" 0 "b certified ($err)"
	assert_eq "$(jq -r .environment.container.id b.json)" "$(ctr_id b)" "b's id"
	[ "$(jq -r .environment.container.id a.json)" != "$(jq -r .environment.container.id b.json)" ] ||
		fail "two containers, one id"
	assert_eq "$(jq -r .environment.container.rootfs.fstype a.json)" overlay "root fstype"
	assert_eq "$(jq -r .environment.container.rootfs.layers a.json)" 1 "the imported image's one layer"
	assert_eq "$(jq -r .environment.container.rootfs.unresolved a.json)" 0 "l/ link read"
	# the layer is the directory the root's lowerdir link points to, read here with awk and
	# readlink (the container is gone: its successor has the same lower layer)
	local pid lower top
	pid=$(podman_ inspect -f '{{.State.Pid}}' "b-$CTR_TAG")
	lower=$(awk '$5 == "/"' "/proc/$pid/mountinfo" | tail -1 | sed -n 's/.*lowerdir=\([^,]*\).*/\1/p')
	top=$(basename "$(dirname "$(readlink -f "$lower")")")
	[ -d "$(dirname "$(readlink -f "$lower")")" ] || fail "lowerdir $lower resolves to no layer"
	assert_eq "$(jq -r .environment.container.rootfs.layers_sha256 a.json)" \
		"$(printf '%s\n' "$top" | sha256sum | cut -d' ' -f1)" "layers_sha256 of podman's top layer"
	assert_eq "$(jq -r .environment.container.rootfs.layers_sha256 b.json)" \
		"$(jq -r .environment.container.rootfs.layers_sha256 a.json)" "same image, same layers"
	validate a.json
	pg compare a.json b.json --json ab.json
	assert_eq "$(jq -r '.fields[] | select(.field == "container") | .verdict' ab.json)" equal \
		"container verdict ($out)"
	assert_not_contains "$(cat ab.json)" compare.container-differs
	# a container of another image
	podman_ rm -f -t 0 "b-$CTR_TAG" >/dev/null
	rm -f run/serve.pid run/engine.pid
	mkdir -p img/etc && echo other >img/etc/pvg-other
	ctr_image "localhost/pvg-other-$CTR_TAG:1" img
	CTR_IMG="localhost/pvg-other-$CTR_TAG:1" start_service c
	request_in c "4096 5120 torch.bfloat16"
	pg certify --json c.json
	assert_eq "$rc" 0 "c certified ($err)"
	[ "$(jq -r .environment.container.rootfs.layers_sha256 c.json)" != \
		"$(jq -r .environment.container.rootfs.layers_sha256 a.json)" ] || fail "another image, same layers"
	pg compare a.json c.json --json ac.json
	assert_contains "$(cat ac.json)" compare.container-differs
	assert_contains "$(jq -r '.fields[] | select(.field == "container") | .baseline' ac.json)" "podman, image layers sha256:"
}

test_reinstall_under_the_running_container_fails_gate_4() {
	setup
	start_service svc
	request_in svc "4096 5120 torch.bfloat16"
	pg certify --json before.json
	assert_eq "$rc" 0 "certified before the reinstall"
	install_extension # new inodes; the service still maps the old ones
	pg certify --json r.json
	show r.json
	assert_eq "$rc" 1 "not certified"
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.deleted "gate 4 codes"
}

test_bridge_network_published_port_certified() {
	setup
	HOST_ADDR=0.0.0.0 start_service svc --network bridge -p "$port:$port" -v "$T:$T"
	request_in svc "4096 5120 torch.bfloat16"
	local fwd; fwd=$(ss -Htlnp "sport = :$port" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
	[ -n "$fwd" ] || fail "nothing holds the published port on the host"
	pg certify --json r.json
	show r.json
	assert_eq "$rc" 0 "certify exit"
	# the host side of the port is podman's forwarder, named as such
	assert_eq "$(jq -r '.gates[4].evidence.port_forwarders[].pid' r.json | sort -u)" "$fwd" \
		"forwarder pid (ss -ltnp)"
	assert_eq "$(jq -r '.gates[4].evidence.port_forwarders[0].comm' r.json)" conmon "forwarder"
	# the service's own listener, read in its network namespace
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	local netns; netns=$(readlink /proc/"$engine"/ns/net | tr -dc 0-9)
	[ "$netns" != "$(readlink /proc/self/ns/net | tr -dc 0-9)" ] || fail "own netns"
	assert_eq "$(jq -r '.gates[4].evidence.listeners_netns' r.json)" "$netns" "netns read"
	# the API server's socket (its children inherit it), in the tree
	assert_eq "$(jq -r '[.gates[4].evidence.port_owners[] | select(.in_tree | not)] | length' r.json)" 0 \
		"no foreign owner inside"
	assert_contains "$(jq -r '.gates[4].evidence.port_owners[].pid' r.json)" \
		"$(host_pid_of 'vllm serve fixture')" "the API server owns the port inside"
}

# start_stale: an engine of an earlier run, left in its own container, holding the GPU
start_stale() {
	ctr_run --name stale-"$CTR_TAG" -v "$PVG_BUILD:$PVG_BUILD:ro" -v "$T:$T" -- \
		"$SVC" --device "$T/gpu0" --tag "$scenario_tag" --engine-pidfile "$T/run/stale.pid" \
		>/dev/null
	local i; for i in $(seq 250); do [ -s run/stale.pid ] && return 0; sleep 0.02; done
	fail "the stale engine did not start"
}

test_stale_engine_in_sibling_container_fails_gate_5() {
	setup
	start_stale
	sleep 0.03 # the service starts later: it is the newest match
	start_service svc
	request_in svc "4096 5120 torch.bfloat16"
	pg certify --keep-going --json r.json
	show r.json
	assert_eq "$rc" 1 "not certified"
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	local codes; codes=$(problem_codes r.json 5)
	assert_contains "$codes" stale-service.gpu-holder "gate 5 codes"
	assert_contains "$codes" stale-service.orphan "gate 5 codes"
	local stale; stale=$(pgrep -f "^VLLM::EngineCore $scenario_tag" |
		grep -vx "$(jq -r '.gates[4].evidence.selection.primary' r.json)")
	assert_eq "$(cat run/stale.pid)" 1 "the stale engine is pid 1 of its container"
	assert_contains "$(jq -r '.gates[4].problems[].message' r.json)" "process $stale " "stale pid"
}

test_markers_from_another_container_with_colliding_pids_are_ignored() {
	setup
	start_service svc
	local engine; engine=$(host_pid_of VLLM::EngineCore)
	# Another container appends to the same log, from a process whose pid in its own
	# namespace is the service engine's host pid; its kernel falls back for every shape.
	ctr_run --name other-"$CTR_TAG" --privileged -v "$PVG_BUILD:$PVG_BUILD:ro" -v "$T:$T" -- \
		/bin/sh -c "echo $((engine - 1)) >/proc/sys/kernel/ns_last_pid && \
		$SVC --title VLLM::EngineCore --tag other-$CTR_TAG --multiple 1000 \
		--log $T/logs/server.log --engine-pidfile $T/run/other.pid" >/dev/null
	local i; for i in $(seq 250); do [ -s run/other.pid ] && break; sleep 0.02; done
	assert_eq "$(cat run/other.pid)" "$engine" "the other writer's pid collides"
	request_in svc "4096 5120 torch.bfloat16"
	ctr_exec other-"$CTR_TAG" /bin/sh -c "kill -USR1 $engine"
	for i in $(seq 250); do grep -q "pid=$engine).*selected=False" logs/server.log && break; sleep 0.02; done
	grep -q "(EngineCore_DP0 pid=$engine).*selected=False" logs/server.log || fail "no colliding marker"
	pg certify --keep-going --json r.json
	show r.json
	assert_eq "$(gate_status r.json 7)" pass "gate 7 ($(problem_codes r.json 7))"
	[ "$(jq -r '.gates[6].evidence.markers.foreign_pid' r.json)" -ge 1 ] || fail "not counted as foreign"
	assert_eq "$rc" 0 "certified"
}

# ---- from inside the container -------------------------------------------------------------

test_inside_the_container_certified_with_driver_list() {
	setup
	start_service svc --network host -v "$T:$T" --cap-add SYS_PTRACE
	request_in svc "4096 5120 torch.bfloat16"
	kfd_tree "$(host_pid_of VLLM::EngineCore)"
	pg_inside svc certify --json "$T/r.json"
	show r.json
	assert_eq "$rc" 0 "certified inside ($err)"
	validate r.json
	assert_eq "$(jq -r .view.kind r.json)" container "view"
	assert_eq "$(jq -r .view.container.id r.json)" "$(ctr_id svc)" "own container id"
	assert_eq "$(jq -r .environment.container.id r.json)" "$(ctr_id svc)" "environment.container"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.source' r.json)" kfd "driver list"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.processes' r.json)" 1 "driver count"
	# the same service certified from the host gives the same verdict
	pg certify --json host.json
	assert_eq "$rc" 0 "certified from the host"
}

test_inside_sibling_stale_not_certified() {
	setup
	start_stale
	sleep 0.03
	start_service svc --network host -v "$T:$T" --cap-add SYS_PTRACE
	request_in svc "4096 5120 torch.bfloat16"
	local stale; stale=$(pgrep -f "^VLLM::EngineCore $scenario_tag" | grep -vx "$(host_pid_of VLLM::EngineCore)")
	kfd_tree "$(host_pid_of VLLM::EngineCore)" "$stale"
	pg_inside svc certify --keep-going --json "$T/r.json"
	show r.json
	assert_eq "$rc" 1 "not certified inside"
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	assert_contains "$(problem_codes r.json 5)" stale-service.gpu-holder-outside-view "codes"
	# without any driver list the check cannot be made: unverifiable, never a pass
	unset PROVGATE_SYSFS
	PROVGATE_SYSFS="$T/nosys" pg_inside svc certify --keep-going --json "$T/r2.json"
	assert_eq "$(gate_status r2.json 5)" unverifiable "gate 5 without a driver list"
	assert_contains "$(problem_codes r2.json 5)" stale-service.gpu-holders-unverifiable "codes"
	assert_not_contains "$(jq -r '.gates[4].summary' r2.json)" "no foreign GPU holder" "summary"
}

# NVIDIA: NVML lists only the caller's namespace (a stand-in with the H200's measured
# behaviour: tests/helpers/fake-nvml.c); the memory in use shows the holder outside.
test_inside_nvml_memory_shows_a_holder_outside() {
	setup
	start_stale
	sleep 0.03
	start_service svc --network host -v "$T:$T" --cap-add SYS_PTRACE
	request_in svc "4096 5120 torch.bfloat16"
	export PROVGATE_SYSFS="$T/nosys" PVG_FAKE_NVML="$T/nvml.state" \
		PROVGATE_NVML_LIBRARY="$PVG_BUILD/tests/helpers/fake-nvml.so"
	# what NVML answers inside: the engine, by its pid there; the stale engine is not listed
	echo "$(cat run/engine.pid) 582" >nvml.state
	pg_inside svc run --gates 5 --json "$T/alone.json"
	assert_eq "$(gate_status alone.json 5)" pass "gate 5 with only the service on the GPU"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.source' alone.json)" nvml "source"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.unaccounted_mib' alone.json)" 8 "unaccounted"
	echo "- 582" >>nvml.state # the stale engine outside, holding a context
	pg_inside svc run --gates 5 --json "$T/r.json"
	show r.json
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	assert_contains "$(problem_codes r.json 5)" stale-service.gpu-holder-outside-view "codes"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.unaccounted_mib' r.json)" 598 "unaccounted"
}

test_overlay_root_inside_then_copy_up_fails_gate_4() {
	setup
	# the image carries the install (an overlay lower layer); provgate runs inside
	mkdir -p img/"$SITE"
	cp -a site/vllm_demo img/"$SITE"/
	ctr_image "localhost/pvg-inst-$CTR_TAG:1" img
	CTR_IMG="localhost/pvg-inst-$CTR_TAG:1" start_service svc --lib "$SITE/vllm_demo/_rocm_C.abi3.so" \
		--network host -v "$T:$T" --cap-add SYS_PTRACE
	request_in svc "4096 5120 torch.bfloat16"
	kfd_tree "$(host_pid_of VLLM::EngineCore)"
	jq --arg s "$SITE/vllm_demo" '.install.artifact = ($s + "/_rocm_C.abi3.so") |
		.source.install_map = [{from: "vllm_demo/", to: ($s + "/")}]' provgate.json >inside.json
	pg_inside svc certify -c "$T/inside.json" --json "$T/r.json"
	show r.json
	assert_eq "$rc" 0 "certified inside on the overlay root ($err)"
	# an in-place reinstall inside the container copies the file up: a new inode
	ctr_exec svc-"$CTR_TAG" /bin/sh -c "cp $T/build/_rocm_C.abi3.so $SITE/vllm_demo/_rocm_C.abi3.so"
	pg_inside svc certify -c "$T/inside.json" --json "$T/r2.json"
	show r2.json
	assert_eq "$rc" 1 "not certified after the copy-up"
	assert_eq "$(gate_status r2.json 4)" fail "gate 4"
	# overlayfs keeps the inode number across a copy-up: the kernel reports it as the same
	# file written after the start (its change time), or as another file
	case "$(problem_codes r2.json 4)" in
	*process-maps.overwritten-after-start*|*process-maps.replaced*) ;;
	*) fail "gate 4 codes: $(problem_codes r2.json 4)";;
	esac
}

run_tests
