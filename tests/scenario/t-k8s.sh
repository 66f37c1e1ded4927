#!/usr/bin/env bash
# provgate's OCI image (meson compile image) as the sidecar of hooks/k8s/pod.yaml, run by
# Debian's podman kube play (which honours shareProcessNamespace, the capabilities and the
# read-only root): the demo's service in one container, provgate in another of the same
# pod, both with the work folder bound in. The sidecar, with the manifest's capabilities,
# certifies the service; after the library is reinstalled from inside the service's
# container it refuses (gate 4). Sidecars without SYS_PTRACE cannot read the service's maps:
# never a pass. A service of uid 1000 needs all four of the manifest's capabilities.
# The plain build is shared with t-bundle.sh ($PVG_BUILD/t-bundle); the first run builds it:
# timeout: 900
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/podman.sh"

DIST=$PVG_BUILD/t-bundle
VERSION=$(sed -n "s/^  version : '\(.*\)',$/\1/p" "$PVG_SRC/meson.build" | head -n1)
SVC=$PVG_BUILD/tests/helpers/fake-service
PGIMG=localhost/provgate:$VERSION

# image: the plain build's OCI archive (made once a run of this file), loaded into the
# test's private podman; sets OCI
image() {
	need meson ninja podman busybox readelf
	mkdir -p "$DIST"
	(
		flock 9
		[ -f "$DIST/image.$$" ] && exit 0
		rm -f "$DIST"/image.*
		if [ ! -f "$DIST/build/build.ninja" ]; then
			meson setup "$DIST/build" "$PVG_SRC" --prefix=/usr -Dman=enabled >"$DIST/setup.log" 2>&1 ||
				{ cat "$DIST/setup.log" >&2; exit 1; }
		fi
		meson compile -C "$DIST/build" image >"$DIST/image.log" 2>&1 ||
			{ tail -40 "$DIST/image.log" >&2; exit 1; }
		touch "$DIST/image.$$"
	) 9>"$DIST/lock" || fail "building the image failed"
	OCI=$DIST/build/provgate-$VERSION-oci.tar
	[ -s "$OCI" ] || fail "no $OCI"
	podman_ load -q -i "$OCI" >/dev/null || fail "podman load $OCI"
}

# setup: the image, the demo's chain in $T, a stand-in GPU device, the config
setup() {
	need git hipcc jq ss /usr/bin/python3
	[ -x "$SVC" ] || fail "fake-service is not built"
	ctr_setup
	image
	W=$T svc=$SVC scenario_tag="k8s-$CTR_TAG"
	# shellcheck source=../demo/scenario.sh
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	: >gpu0
	port=$(( 20000 + RANDOM % 12000 ))
	scenario_config
	POD=pvg-$CTR_TAG
	sleep 0.03 # the start time has clock-tick resolution: start one tick after the install
}

# play [SIDECAR=CAPS]...: the committed manifest with the demo's service, by podman kube
# play; waits for the service and makes one request
play() {
	/usr/bin/python3 "$PVG_SRC/tests/helpers/k8s-pod.py" "$PVG_SRC/hooks/k8s/pod.yaml" pod.yaml \
		"$POD" "$PGIMG" "$CTR_IMAGE" "$T" "$PVG_BUILD" "$@" -- \
		"$SVC" --server --workers 2 --port "$port" --host 127.0.0.1 \
		--lib "$T/site/vllm_demo/_rocm_C.abi3.so" --device "$T/gpu0" --log "$T/logs/server.log" \
		--pidfile "$T/run/serve.pid" --engine-pidfile "$T/run/engine.pid" --tag "$scenario_tag" ||
		fail "cannot make the pod's manifest"
	podman_ kube play pod.yaml >play.log 2>&1 || { cat play.log >&2; fail "podman kube play"; }
	local i
	for i in $(seq 250); do [ -s run/engine.pid ] && break; sleep 0.02; done
	[ -s run/engine.pid ] || { podman_ logs "$POD-service" >&2; fail "the service did not start"; }
	# a log older than the service: its lines' times (no zone) must be after the start's second
	[ -z "${PLAY_LATER:-}" ] || sleep 1.1
	printf '4096 5120 torch.bfloat16\n' >logs/server.log.request
	ctr_exec "$POD-service" /bin/sh -c "kill -USR1 \$(cat $T/run/engine.pid)" ||
		fail "cannot signal the engine"
	for i in $(seq 250); do grep -q 'request 1 done' logs/server.log && break; sleep 0.02; done
	grep -q 'request 1 done' logs/server.log || fail "the engine did not answer"
	# amdgpu's list of GPU processes (host pids), for gate 5 from the sidecar
	mkdir -p sys/class/kfd/kfd/proc/"$(pgrep -n -f "^VLLM::EngineCore $scenario_tag")"
}

# in_sidecar NAME ARGS...: provgate in the sidecar; sets rc, out, err
in_sidecar() {
	local c=$1 o e
	shift
	o=$(mktemp) e=$(mktemp)
	set +e
	ctr_exec -w "$T" -e NO_COLOR=1 -e "PROVGATE_GPU_DEVICES=$T/gpu*" -e "PROVGATE_SYSFS=$T/sys" \
		"$POD-$c" provgate "$@" >"$o" 2>"$e"
	rc=$?
	set -e
	out=$(cat "$o") err=$(cat "$e")
	rm -f "$o" "$e"
}

show() { jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' "$1" >&2; }

test_sidecar_certifies_then_refuses_a_reinstall() {
	setup
	# the image as made: its annotations and labels, and nothing but the bundle and busybox
	local tmp; tmp=$(mktemp -d)
	tar -C "$tmp" -xf "$OCI" index.json
	local m; m=$(jq -r '.manifests[0].digest' "$tmp/index.json" | cut -d: -f2)
	tar -C "$tmp" -xf "$OCI" "blobs/sha256/$m"
	assert_eq "$(jq -r '.annotations["org.opencontainers.image.version"]' "$tmp/blobs/sha256/$m")" \
		"$VERSION" "version annotation"
	assert_eq "$(jq -r '.annotations["org.opencontainers.image.revision"]' "$tmp/blobs/sha256/$m" |
		sed 's/-dirty$//')" "$(git -C "$PVG_SRC" rev-parse HEAD)" "revision annotation"
	[ -n "$(jq -r '.annotations["org.opencontainers.image.source"] // empty' "$tmp/blobs/sha256/$m")" ] ||
		fail "no source annotation"
	assert_eq "$(podman_ image inspect -f '{{index .Labels "org.opencontainers.image.version"}}' "$PGIMG")" \
		"$VERSION" "version label"
	rm -rf "$tmp"
	play
	# what podman made of the manifest: one pid namespace, the sidecar's capabilities and root
	assert_contains "$(ctr_exec "$POD-provgate" ps -o pid,args)" "VLLM::EngineCore $scenario_tag" \
		"the sidecar sees the service"
	assert_eq "$(ctr_exec "$POD-provgate" grep CapEff /proc/self/status | cut -f2)" 00000000000800c4 \
		"the sidecar's capabilities: SYS_PTRACE, DAC_READ_SEARCH, SETGID, SETUID (bits 19, 2, 6, 7)"
	! ctr_exec "$POD-provgate" sh -c ': >/provgate-write-test' 2>/dev/null || fail "the root is writable"
	in_sidecar provgate --version
	assert_contains "$out" "running from the bundle at /opt/provgate" "--version ($err)"
	in_sidecar provgate certify --json "$T/r.json"
	show r.json
	assert_eq "$rc" 0 "certified from the sidecar ($out $err)"
	assert_eq "$(jq -r .certified r.json)" true "certified"
	validate r.json
	assert_eq "$(jq -r .view.kind r.json)" container "view"
	assert_eq "$(gate_status r.json 4)" pass "gate 4"
	assert_eq "$(jq -r '[.chain.processes[].pid] | length' r.json)" 3 "engine and two workers"
	assert_eq "$(jq -r '.gates[4].evidence.gpu_driver.source' r.json)" kfd "gate 5's driver list"
	# a reinstall inside the service's container: new inodes, the engine maps the old ones
	ctr_exec "$POD-service" /usr/bin/install -m 755 "$T/build/_rocm_C.abi3.so" "$T/site/vllm_demo/_rocm_C.abi3.so" ||
		fail "reinstall in the service's container"
	in_sidecar provgate certify --json "$T/r2.json"
	show r2.json
	assert_eq "$rc" 1 "refused after the reinstall ($out)"
	assert_eq "$(gate_status r2.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r2.json 4)" process-maps.deleted "gate 4 codes"
	podman_ kube down pod.yaml >/dev/null 2>&1 || fail "podman kube down"
}

# The same pod with sidecars of other capabilities: without SYS_PTRACE the service's maps
# cannot be read, and gate 4 cannot pass (a false pass would be the defect).
test_sidecar_without_sys_ptrace_is_never_certified() {
	setup
	play nocaps=none dac=DAC_READ_SEARCH ckpt=CHECKPOINT_RESTORE
	local c
	for c in nocaps dac ckpt; do
		in_sidecar "$c" certify --json "$T/$c.json"
		echo "sidecar $c:" >&2
		show "$c.json"
		assert_eq "$rc" 1 "$c: not certified ($out $err)"
		[ "$(gate_status "$c.json" 4)" != pass ] || fail "$c: gate 4 passed without reading the maps"
		assert_eq "$(jq -r .certified "$c.json")" false "$c: certified"
		assert_eq "$(gate_status "$c.json" 4)" unverifiable "$c: gate 4"
		assert_contains "$(problem_codes "$c.json" 4)" process-maps.permission-denied "$c: codes"
		assert_contains "$(jq -r '.gates[3].problems[0].hint' "$c.json")" \
			"provgate runs as root without CAP_SYS_PTRACE" "$c: the hint names the capability"
	done
	podman_ kube down pod.yaml >/dev/null 2>&1 || fail "podman kube down"
}

# A service run as uid 1000 with no capability (an image's USER line, a pod's runAsUser), as
# vLLM pods often are, appending to a log made before it started (so its lines' times, which
# have no zone, are placed by the service's time zone, read as its user in its root).
# Sidecars that lack a capability are never certified, and say which one: without
# DAC_READ_SEARCH the user's /proc/PID/fd and environ cannot be read (gate 5: unverifiable,
# not a GPU holder outside the container); without SETUID or SETGID provgate cannot take on
# the user to read its zone (gate 7: unverifiable, naming the capability, never read as root
# instead). The manifest's sidecar, with all four, certifies it; the service's own user with
# none reads its files without changing identity.
test_sidecar_of_a_non_root_service() {
	setup
	chmod 755 "$T"
	: >logs/server.log
	chown 1000:1000 logs run logs/server.log
	PLAY_LATER=1 play service@1000 ptr=SYS_PTRACE ptrdac=SYS_PTRACE,DAC_READ_SEARCH \
		nouid=SYS_PTRACE,DAC_READ_SEARCH,SETGID nogid=SYS_PTRACE,DAC_READ_SEARCH,SETUID \
		same=none@1000
	assert_eq "$(awk '$1 == "Uid:" { print $2 }' "/proc/$(pgrep -n -f "^VLLM::EngineCore $scenario_tag")/status")" 1000 \
		"the engine's user"
	local c
	for c in ptr ptrdac nouid nogid provgate same; do
		in_sidecar "$c" certify --json -
		printf '%s\n' "$out" >"r-$c.json"
		echo "sidecar $c:" >&2
		show "r-$c.json"
	done
	# the service's own user reads no other user's open files: the pod's infrastructure
	# process (Kubernetes' pause) and the other containers' cannot be ruled out as GPU
	# holders (gate 5); what it reads as that user, it reads without changing identity
	in_sidecar same run --gates 7 --json -
	printf '%s\n' "$out" >r-same7.json
	# SYS_PTRACE alone (the root service's set): the engine's open files are unreadable
	assert_eq "$(jq -r .certified r-ptr.json)" false "ptr: certified"
	assert_eq "$(gate_status r-ptr.json 4)" pass "ptr: gate 4"
	assert_eq "$(gate_status r-ptr.json 5)" unverifiable "ptr: gate 5"
	assert_not_contains "$(problem_codes r-ptr.json 5)" gpu-holder-outside-view "ptr: gate 5 codes"
	assert_contains "$(problem_codes r-ptr.json 5)" stale-service.permission-denied "ptr: gate 5 codes"
	assert_contains "$(jq -r '.gates[4].problems[0].hint' r-ptr.json)" \
		"provgate runs as root without CAP_DAC_READ_SEARCH" "ptr: the hint names the capability"
	# without SETUID and SETGID, or one of them: the zone is not read, and not read as root
	local x missing
	for x in ptrdac:"CAP_SETUID and CAP_SETGID" nouid:"CAP_SETUID," nogid:"CAP_SETGID,"; do
		c=${x%%:*} missing=${x#*:}
		assert_eq "$(jq -r .certified "r-$c.json")" false "$c: certified"
		assert_eq "$(gate_status "r-$c.json" 5)" pass "$c: gate 5"
		assert_eq "$(gate_status "r-$c.json" 6)" pass "$c: gate 6"
		assert_eq "$(gate_status "r-$c.json" 7)" unverifiable "$c: gate 7"
		assert_contains "$(problem_codes "r-$c.json" 7)" dispatch-marker.time-undecided "$c: codes"
		assert_contains "$(problem_codes "r-$c.json" 7)" dispatch-marker.zone-file-refused "$c: codes"
		assert_eq "$(jq -r '.gates[6].evidence.service.time_zone.zone' "r-$c.json")" null "$c: zone"
		assert_contains "$(jq -r '.gates[6].evidence.service.time_zone.unknown' "r-$c.json")" \
			"/etc/localtime in its root was not opened: provgate lacks $missing" "$c: why"
		assert_contains "$(jq -r '.gates[6].problems[].hint' "r-$c.json")" \
			"give provgate ${missing%,}" "$c: hint"
	done
	# all four, and the service's own user with no capability: the zone is read as that user
	for c in provgate same7; do
		assert_eq "$(jq -r '.gates[6].evidence.service.time_zone.zone' "r-$c.json")" UTC "$c: zone"
		assert_eq "$(gate_status "r-$c.json" 7)" pass "$c: gate 7"
	done
	assert_eq "$(jq -r .certified r-provgate.json)" true "the manifest's sidecar: certified"
	assert_eq "$(gate_status r-same.json 4)" pass "same: gate 4"
	assert_eq "$(gate_status r-same.json 5)" unverifiable "same: gate 5"
	assert_eq "$(problem_codes r-same.json 5)" stale-service.permission-denied "same: gate 5 codes"
	assert_eq "$(jq -r '.gates[4].evidence.fds_unreadable[0]' r-same.json)" 1 "same: pid 1 unread"
	assert_eq "$(ctr_exec "$POD-same" grep CapEff /proc/self/status | cut -f2)" 0000000000000000 \
		"same: no capability"
	podman_ kube down pod.yaml >/dev/null 2>&1 || fail "podman kube down"
}

run_tests
