#!/usr/bin/env bash
# Gate 7 on the logs container runtimes keep of a service's stdout, and on times written in
# the service's own zone, with real engines: Debian's podman + runc (k8s-file, json-file,
# none) and Debian's docker.io (a private dockerd, json-file). The service is a real Python
# service (tests/helpers/py-service.py) logging vLLM's head, "(EngineCore_DP0 pid=N) INFO
# MM-DD HH:MM:SS [file:line] message", to stdout, as pid 1 of its container: a restarted
# container gives it the same pid again, so only the time can tell its runs apart.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/podman.sh"

VLLM_FMT='(EngineCore_DP0 pid=%(process)d) %(levelname)s %(asctime)s [ops.py:88] %(message)s'
VLLM_DATE='%m-%d %H:%M:%S'

setup() {
	need jq cc /usr/bin/python3
	ctr_setup
	trap 'ctr_cleanup; docker_cleanup' EXIT
	tag="ctrlog-$CTR_TAG"
	mkdir -p site/fastnorm
	: >site/fastnorm/__init__.py
	printf 'def use_kernel(m, n):\n    return True\n' >site/fastnorm/ops.py
	echo 'int fastnorm(void) { return 1; }' >k.c
	cc -shared -fPIC -o site/fastnorm/_C.so k.c
	cat >provgate.json <<-JSON
	{"service": {"match": ["py-service.py --tag $tag"]},
	 "markers": {"log": "container", "prefix": "DCU_KERNEL_DIAG",
	             "require": [{"selected": "True", "shape": "(4096, 5120)"}],
	             "facts": ["block size = 832"]}}
	JSON
}

# svc_cmd LOG [py-service flags]: the service's command line, for sh -c in the container.
# The marker at start only on the first run: a restarted container's run (the file
# $T/restarted exists) waits for a request.
svc_cmd() {
	local log=$1
	shift
	printf 'rm -f %s/svc.pid; if [ -e %s/restarted ]; then m=--no-marker; else m=; fi; exec /usr/bin/python3 %s --tag %s --site %s/site --package fastnorm --module ops --lib %s/site/fastnorm/_C.so --log %s --pidfile %s/svc.pid --format %q --datefmt %q $m %s' \
		"$T" "$T" "$PVG_SRC/tests/helpers/py-service.py" "$tag" "$T" "$T" "$log" "$T" \
		"$VLLM_FMT" "$VLLM_DATE" "$*"
}

wait_pidfile() {
	local i
	for i in $(seq 250); do [ -s "$T/svc.pid" ] && return 0; sleep 0.02; done
	fail "the service did not start"
}

# start_ctr NAME LOG [--flags "py-service flags"] [podman run options...]
start_ctr() {
	local name=$1 log=$2 flags=""
	shift 2
	if [ "${1:-}" = --flags ]; then flags=$2; shift 2; fi
	ctr_run --name "$name-$CTR_TAG" --network none -v "$T:$T" -v "$PVG_SRC:$PVG_SRC:ro" "$@" -- \
		/bin/sh -c "$(svc_cmd "$log" "$flags")" >/dev/null
	wait_pidfile
}

# restart NAME: the same container again (same log, same pid 1 inside), the earlier run gone
restart_ctr() {
	touch "$T/restarted"
	podman_ stop -t 2 "$1-$CTR_TAG" >/dev/null
	sleep 1.1 # vLLM's head has one-second resolution
	rm -f "$T/svc.pid"
	podman_ start "$1-$CTR_TAG" >/dev/null
	wait_pidfile
}

svc_host_pid() { pgrep -n -f "py-service.py --tag $tag"; }

# request FILE: a marker from the live service, once FILE (its log) shows it
request() {
	local f=$1 before i
	before=$(grep -c 'request done' "$f" || true)
	kill -USR1 "$(svc_host_pid)"
	for i in $(seq 250); do
		[ "$(grep -c 'request done' "$f" || true)" -gt "$before" ] && return 0
		sleep 0.02
	done
	fail "the service did not answer"
}

ev() { jq -r ".gates[6].evidence$2" "$1"; }

# ---- CRI: podman's k8s-file ---------------------------------------------------------------

test_cri_log_of_a_restarted_container_counts_only_the_live_run() {
	setup
	start_ctr svc /dev/stdout --log-driver k8s-file
	local path
	path=$(podman_ inspect -f '{{.HostConfig.LogConfig.Path}}' "svc-$CTR_TAG")
	restart_ctr svc
	pg run --gates 7 --json early.json
	assert_eq "$rc" 1 "only the earlier run's marker ($out)"
	assert_eq "$(problem_codes early.json 7)" dispatch-marker.unattributed
	assert_eq "$(ev early.json .log_format)" cri
	assert_eq "$(ev early.json .log_file)" "$path" "the log podman keeps"
	assert_eq "$(ev early.json .container_log.driver)" k8s-file
	assert_contains "$(ev early.json .container_log.found_in)" conmon
	# the earlier run's line has the live pid (1) and a head in the same second's range:
	# the runtime's nanosecond time says it is from before the start
	assert_eq "$(ev early.json .markers.before_start)" 1
	assert_eq "$(ev early.json .markers.live)" 0
	grep -q 'stdout F (EngineCore_DP0 pid=1) INFO' "$path" || fail "the log holds pid 1's lines"
	request "$path"
	pg run --gates 7 --json live.json
	assert_eq "$rc" 0 "the live run's marker counts ($out $(jq -c .gates[6].problems live.json))"
	assert_eq "$(ev live.json .markers.matched)" 1
	assert_eq "$(ev live.json .markers.before_start)" 1
	validate live.json
}

test_cri_partial_lines_are_joined() {
	setup
	start_ctr svc /dev/stdout --flags "--no-marker --partial" --log-driver json-file
	local path
	path=$(podman_ inspect -f '{{.HostConfig.LogConfig.Path}}' "svc-$CTR_TAG")
	request "$path"
	grep -q ' stdout P (EngineCore_DP0 pid=1) INFO .* DCU_KERNEL_DIAG selected=True$' "$path" ||
		{ cat "$path"; fail "the runtime wrote the marker's first part as a P record"; }
	pg run --gates 7 --json r.json
	assert_eq "$rc" 0 "the joined marker matches ($out $(jq -c .gates[6].problems r.json))"
	assert_eq "$(ev r.json .log_format)" cri "podman's json-file is CRI too"
	[ "$(ev r.json .runtime_records.joined)" -ge 1 ] || fail "no record was joined"
	assert_eq "$(ev r.json .runtime_records.malformed)" 0
	# the same log named by its path: recognised by its content all the same
	jq --arg p "$path" '.markers.log = $p' provgate.json >plain.json
	pg run -c plain.json --gates 7 --json r2.json
	assert_eq "$rc" 0 "the path names the same log ($out)"
	assert_eq "$(ev r2.json .log_format)" cri
}

test_container_without_a_log_file_is_unverifiable() {
	setup
	start_ctr svc /dev/stdout --log-driver none
	pg run --gates 7 --json r.json
	assert_eq "$rc" 1 "no log file ($out)"
	assert_eq "$(gate_status r.json 7)" unverifiable
	assert_eq "$(problem_codes r.json 7)" dispatch-marker.container-log
	assert_contains "$(jq -r .gates[6].problems[0].message r.json)" "log driver: none"
	assert_contains "$(jq -r .gates[6].problems[0].hint r.json)" "--log-driver k8s-file"
	validate r.json
}

test_service_outside_any_container_is_unverifiable() {
	setup
	/usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" --tag "$tag" --site "$T/site" \
		--package fastnorm --module ops --lib "$T/site/fastnorm/_C.so" --log "$T/h.log" \
		--pidfile "$T/svc.pid" </dev/null >/dev/null 2>&1 &
	local p=$!
	wait_pidfile
	pg run --gates 7 --json r.json
	kill "$p"; wait "$p" 2>/dev/null || true
	assert_eq "$(gate_status r.json 7)" unverifiable "($out)"
	assert_eq "$(problem_codes r.json 7)" dispatch-marker.container-log
	assert_contains "$(jq -r .gates[6].problems[0].message r.json)" "runs in no container"
}

# ---- times in the service's zone (a log file the service writes, bind-mounted) -----------

# ZONE WHAT: a container in ZONE writes vLLM's local heads to a log file; the earlier run's
# marker must be refused after a restart (same pid 1), the live run's must count.
zone_earlier_then_live() {
	local zone=$1
	setup
	jq '.markers.log = "server.log"' provgate.json >p.json && mv p.json provgate.json
	start_ctr svc "$T/server.log" -e "TZ=$zone"
	restart_ctr svc
	pg run --gates 7 --json early.json
	assert_eq "$rc" 1 "the earlier run's marker does not count ($out)"
	assert_eq "$(problem_codes early.json 7)" dispatch-marker.unattributed
	assert_eq "$(ev early.json .markers.before_start)" 1
	assert_eq "$(ev early.json .service.time_zone.zone)" "$zone"
	assert_contains "$(ev early.json .service.time_zone.source)" "TZ=$zone in its environment"
	assert_eq "$(ev early.json .log_format)" plain
	request "$T/server.log"
	pg run --gates 7 --json live.json
	assert_eq "$rc" 0 "the live run's marker counts ($out $(jq -c .gates[6].problems live.json))"
	assert_eq "$(ev live.json .markers.matched)" 1
	validate live.json
}

test_zone_ahead_of_provgates() { zone_earlier_then_live Asia/Shanghai; }
test_zone_behind_provgates() { zone_earlier_then_live America/Los_Angeles; }

test_unknown_zone_decides_nothing_by_time() {
	setup
	jq '.markers.log = "server.log"' provgate.json >p.json && mv p.json provgate.json
	start_ctr svc "$T/server.log" -e TZ=Asia/Atlantis
	restart_ctr svc
	request "$T/server.log"
	pg run --gates 7 --json r.json
	assert_eq "$rc" 1 "neither run's time can be read ($out)"
	assert_eq "$(ev r.json .markers.time_undecided)" 2
	assert_eq "$(ev r.json .markers.live)" 0
	assert_eq "$(ev r.json .service.time_zone.zone)" null
	assert_contains "$(ev r.json .service.time_zone.unknown)" "TZ=Asia/Atlantis"
	# the live run's marker may be one of them: that cannot be decided, not failed
	assert_eq "$(gate_status r.json 7)" unverifiable
	local p
	p=$(jq -r '.gates[6].problems[] | select(.code == "dispatch-marker.time-undecided") | "\(.message) | \(.hint)"' r.json)
	assert_contains "$p" "time zone cannot be known"
	assert_contains "$p" "set TZ in the service's environment"
}

test_runtime_times_need_no_zone() {
	setup
	start_ctr svc /dev/stdout -e TZ=Asia/Atlantis --log-driver k8s-file
	restart_ctr svc
	request "$(podman_ inspect -f '{{.HostConfig.LogConfig.Path}}' "svc-$CTR_TAG")"
	pg run --gates 7 --json r.json
	assert_eq "$rc" 0 "the runtime's UTC times decide ($out $(jq -c .gates[6].problems r.json))"
	assert_eq "$(ev r.json .markers.before_start)" 1
	assert_eq "$(ev r.json .markers.time_undecided)" 0
	assert_eq "$(ev r.json .service.time_zone.zone)" null
}

# ---- docker's json-file, a private dockerd --------------------------------------------------

DK=
docker_cleanup() {
	[ -n "$DK" ] || return 0
	DOCKER_HOST=unix://$DK/docker.sock timeout 30 docker rm -f -v $(DOCKER_HOST=unix://$DK/docker.sock docker ps -aq 2>/dev/null) >/dev/null 2>&1 || true
	[ -s "$DK/docker.pid" ] && kill "$(cat "$DK/docker.pid")" 2>/dev/null
	local i
	for i in $(seq 100); do [ -e "$DK/docker.pid" ] || break; sleep 0.1; done
	local m
	for m in $(awk -v d="$DK/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$DK"
}

docker_setup() {
	need dockerd docker containerd
	DK=$(mktemp -d /tmp/pvg-dk.XXXXXX)
	dockerd --iptables=false --ip6tables=false --bridge=none --data-root "$DK/root" \
		--exec-root "$DK/exec" -H "unix://$DK/docker.sock" --pidfile "$DK/docker.pid" \
		>"$DK/dockerd.log" 2>&1 &
	export DOCKER_HOST=unix://$DK/docker.sock
	local i
	for i in $(seq 150); do docker version >/dev/null 2>&1 && break; sleep 0.2; done
	docker version >/dev/null 2>&1 || { tail -5 "$DK/dockerd.log"; fail "dockerd did not start"; }
	local r=$DK/rootfs
	mkdir -p "$r"
	ctr_rootfs "$r"
	tar -C "$r" -cf "$DK/rootfs.tar" .
	docker import "$DK/rootfs.tar" "pvg-$CTR_TAG:1" >/dev/null
}

test_docker_json_file_restarted_container_and_split_lines() {
	setup
	docker_setup
	# a marker line past docker's 16 KiB: its fields are split across records
	docker run -d --name "svc-$CTR_TAG" --network none -v /usr:/usr:ro -v "$T:$T" \
		-v "$PVG_SRC:$PVG_SRC:ro" "pvg-$CTR_TAG:1" /bin/sh -c "$(svc_cmd /dev/stdout --pad 20000)" >/dev/null
	wait_pidfile
	local path
	path=$(docker inspect -f '{{.LogPath}}' "svc-$CTR_TAG")
	[ "$(head -c 8 "$path")" = '{"log":"' ] || fail "docker wrote its json-file"
	touch "$T/restarted"
	docker stop -t 2 "svc-$CTR_TAG" >/dev/null
	sleep 1.1
	rm -f "$T/svc.pid"
	docker start "svc-$CTR_TAG" >/dev/null
	wait_pidfile
	pg run --gates 7 --json early.json
	assert_eq "$rc" 1 "only the earlier run's marker ($out $(jq -c .gates[6].problems early.json))"
	assert_eq "$(problem_codes early.json 7)" dispatch-marker.unattributed
	assert_eq "$(ev early.json .log_format)" docker-json
	assert_eq "$(ev early.json .log_file)" "$path"
	assert_eq "$(ev early.json .container_log.engine)" docker
	assert_contains "$(ev early.json .container_log.found_in)" config.v2.json
	assert_eq "$(ev early.json .markers.before_start)" 1
	request "$path"
	pg run --gates 7 --json live.json
	assert_eq "$rc" 0 "the live run's split marker counts ($out $(jq -c .gates[6].problems live.json))"
	assert_eq "$(ev live.json .markers.matched)" 1
	[ "$(ev live.json .runtime_records.joined)" -ge 2 ] || fail "the split lines were not joined"
	assert_eq "$(ev live.json .runtime_records.malformed)" 0
	validate live.json
	docker stop -t 2 "svc-$CTR_TAG" >/dev/null
}

# ---- provgate init on a containerized service ----------------------------------------------

# A real hipcc build log and its library (tests/fixtures), the library installed and loaded by
# the service in a podman container that logs to stdout: init names the container's log, and
# reads the marker prefix from the runtime's records.
test_init_names_the_containers_log() {
	setup
	mkdir -p node/logs node/site/ext
	cp "$FIXTURES/buildlog/hip-gfx936.log" node/logs/build.log
	cp "$FIXTURES/codeobj/hip-multi.so" node/_ext_C.abi3.so
	cp node/_ext_C.abi3.so node/site/ext/_ext_C.abi3.so
	: >node/site/ext/__init__.py
	printf 'def use_kernel(m, n):\n    return True\n' >node/site/ext/ops.py
	ctr_run --name "svc-$CTR_TAG" --network none -v "$T:$T" -v "$PVG_SRC:$PVG_SRC:ro" \
		--log-driver k8s-file -- /usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" \
		--tag "$tag" --site "$T/node/site" --package ext --module ops \
		--lib "$T/node/site/ext/_ext_C.abi3.so" --log /dev/stdout --pidfile "$T/svc.pid" \
		--format "$VLLM_FMT" --datefmt "$VLLM_DATE" >/dev/null
	wait_pidfile
	pg init node -o node/cfg.json
	assert_eq "$rc" 0 "init ($err)"
	echo "$out"
	local j
	j=$(sed '/^\/\//d' node/cfg.json)
	assert_eq "$(jq -r .markers.log <<<"$j")" container
	assert_eq "$(jq -r .markers.prefix <<<"$j")" DCU_KERNEL_DIAG
	assert_contains "$out" "markers.log container: the log podman keeps of the service's container"
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" node/cfg.json || fail "config does not validate"
}

run_tests
