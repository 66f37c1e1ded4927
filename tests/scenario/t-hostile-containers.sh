#!/usr/bin/env bash
# Container runtimes believed by owner, not by name (SPEC §11), against a real service (the
# fake vLLM engine) that an ordinary user runs: a process of that user renamed "conmon" or
# "dockerd" names a root-only file as the container's log, and root's gate 7 (markers.log
# "container") must not open it, nor copy its size, times or lines into the report. The
# service's cgroup is named as podman's or docker's would be (libpod-ID, docker-ID), which
# a user with a delegated cgroup can do.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"

svc_bin="$PVG_BUILD/tests/helpers/fake-service"

setup() {
	need jq strace /usr/bin/python3
	hostile_setup
	ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	CG=
	local base name=pvg-hostile-$$-$RANDOM
	for base in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup; do
		if [ -w "$base" ] && mkdir "$base/$name" 2>/dev/null; then
			CG=$base/$name
			break
		fi
	done
	[ -n "$CG" ] || { echo "SKIP: no cgroup hierarchy to make a container's cgroup in" >&2; exit 77; }
	trap teardown EXIT
	cp "$svc_bin" "$SVC/fake-service"
	# the user's own "runtime": a Python process that calls itself conmon or dockerd (prctl,
	# as any program may), starts the service and waits; with --drop UID:GID SVC_UID it is
	# started by root, forks the service as SVC_UID and then drops to UID itself (a runtime
	# of one user above a service of another, as a setuid program in between would give)
	cat >"$SVC/runtime.py" <<-'PY'
	import ctypes, os, sys
	args = sys.argv[1:]
	name = args.pop(0)
	drop = None
	if args[0] == "--drop":
	    drop = (args[1], int(args[2]))
	    args = args[3:]
	ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
	cmd = args[args.index("--") + 1:]
	pid = os.fork()
	if pid == 0:
	    if drop:
	        os.setgroups([])
	        os.setgid(drop[1])
	        os.setuid(drop[1])
	    os.execv(cmd[0], cmd)
	if drop:
	    uid, gid = map(int, drop[0].split(":"))
	    os.setgroups([])
	    os.setresgid(gid, gid, gid)
	    os.setresuid(uid, uid, uid)
	os.waitpid(pid, 0)
	PY
	chmod 755 "$SVC/runtime.py"
	cat >provgate.json <<-JSON
	{"markers": {"log": "container", "prefix": "DCU_KERNEL_DIAG",
	             "require": [{"selected": "True", "shape": "(4096, 5120)"}]}}
	JSON
}

teardown() {
	set +e
	[ -n "${rt_pid:-}" ] && kill "$rt_pid" 2>/dev/null
	[ -s "$T/svc.pid" ] && kill "$(cat "$T/svc.pid")" 2>/dev/null
	sleep 0.2
	local d
	for d in "$CG"/*/ "$CG"; do
		[ -d "$d" ] || continue
		xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null
		sleep 0.1
		rmdir "$d" 2>/dev/null
	done
	return 0
}

# start_runtime NAME [--drop UID:GID SVC_UID] ARGS...: the fake runtime (as the user unless
# --drop) with ARGS as its command line, its child the service, both in cgroup $CG/$CTR
# (moved there by root, as an engine's would be); sets $svc and $rt_pid (the runtime)
start_runtime() {
	local name=$1
	shift
	mkdir -p "$CG/$CTR"
	local svc_cmd=("$SVC/fake-service" --pidfile "$SVC/svc.pid" --log "$SVC/server.log"
		--tag "hostile-$ID")
	if [ "${1:-}" = --drop ]; then
		chmod 777 "$SVC"
		( echo "$BASHPID" >"$CG/$CTR/cgroup.procs"
		  exec /usr/bin/python3 "$SVC/runtime.py" "$name" "$@" -- "${svc_cmd[@]}" ) \
			</dev/null >/dev/null 2>&1 &
	else
		( echo "$BASHPID" >"$CG/$CTR/cgroup.procs"
		  as_hostile /usr/bin/python3 "$SVC/runtime.py" "$name" "$@" -- "${svc_cmd[@]}" ) \
			</dev/null >/dev/null 2>&1 &
	fi
	for _ in $(seq 200); do [ -s "$SVC/svc.pid" ] && break; sleep 0.05; done
	[ -s "$SVC/svc.pid" ] || fail "the service did not start"
	svc=$(cat "$SVC/svc.pid")
	cp "$SVC/svc.pid" "$T/svc.pid"
	rt_pid=$(awk '{print $4}' "/proc/$svc/stat")
	[ "$(cat "/proc/$rt_pid/comm")" = "$name" ] || fail "the service's parent is not $name"
	grep -q "$ID" "/proc/$svc/cgroup" || fail "the service is not in the container's cgroup: $(cat /proc/$svc/cgroup)"
}

# gate7_traced: root's gate 7 on the service under strace; sets $status, $codes, $msg
gate7_traced() {
	set +e
	strace -f -yy -s 256 -o "$T/trace" -e trace=open,openat,openat2 \
		timeout 60 "$PROVGATE" run -c provgate.json --pid "$svc" --gates 7 --json report.json \
		>"$T/out" 2>"$T/err"
	rc=$?
	set -e
	[ -f report.json ] || { cat "$T/err"; fail "no report (exit $rc)"; }
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
	msg=$(jq -r '.gates[6].problems[0].message' report.json)
}

# no_open_of PATH: provgate (and its children) never opened PATH other than as O_PATH
no_open_of() {
	local opened
	opened=$(grep -F "$1" "$T/trace" | grep -v O_PATH | grep -E '= [0-9]+' || true)
	[ -z "$opened" ] || fail "$1 was opened: $opened"
	opened=$(grep -E "= [0-9]+<$1>" "$T/trace" | grep -v O_PATH || true)
	[ -z "$opened" ] || fail "$1 was opened through a descriptor: $opened"
}

# the secret's text, size and birth time appear nowhere in the report
report_keeps_secret() {
	local secret=$1 text size
	text=$(cat "$secret")
	! grep -qF "$text" report.json || fail "the report holds the root-only file's text"
	! grep -qF "root-secret" report.json || fail "the report holds a root-only line"
	size=$(stat -c %s "$secret")
	assert_eq "$(jq -r '.gates[6].evidence.bytes // "none"' report.json)" none "bytes read"
	assert_eq "$(jq -r '.gates[6].evidence.log_created // "none"' report.json)" none "log birth time"
	! grep -qE "\"$size\"" report.json || fail "the report holds the root-only file's size"
}

# The promise: a conmon of the service's own user (rootless podman's shape) that names a
# root-only file as the log gets nothing of it: the file is not the runtime's user's own, and
# it is opened only as that user would open it.
test_users_own_conmon_naming_a_root_only_log_gets_nothing() {
	setup
	root_secret "$T/secret"
	CTR=libpod-$ID
	start_runtime conmon --api-version 1 -c "$ID" -u "$ID" -l "k8s-file:$T/secret" --log-level warning
	gate7_traced
	assert_eq "$status" unverifiable "status ($codes: $msg)"
	assert_eq "$codes" dispatch-marker.container-log-refused
	assert_contains "$msg" "not by its runtime's user (uid $HOSTILE_UID)"
	no_open_of "$T/secret"
	report_keeps_secret "$T/secret"
}

# The promise: a marker line inside a 0600 root-only file that the user's conmon names as the
# log is never copied into the report (nor counted).
test_marker_line_of_a_root_only_file_is_never_copied() {
	setup
	CTR=libpod-$ID
	# a CRI record of the service's pid, stamped now: were the file read, it would be live
	printf '%s stdout F (EngineCore_DP0 pid=%s) INFO DCU_KERNEL_DIAG selected=True shape=(1, 1) root-secret-%s\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" 1 "$RANDOM$RANDOM" >"$T/marker-secret"
	chmod 600 "$T/marker-secret"
	start_runtime conmon -c "$ID" -l "k8s-file:$T/marker-secret"
	# now with the real pid and a time after the start
	printf '%s stdout F (EngineCore_DP0 pid=%s) INFO DCU_KERNEL_DIAG selected=True shape=(1, 1) root-secret-%s\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$svc" "$RANDOM$RANDOM" >>"$T/marker-secret"
	gate7_traced
	assert_eq "$codes" dispatch-marker.container-log-refused "codes ($msg)"
	assert_eq "$(jq -r '.gates[6].evidence.markers // "none"' report.json)" none "markers counted"
	no_open_of "$T/marker-secret"
	report_keeps_secret "$T/marker-secret"
}

# The promise: a conmon that runs as neither root nor the service's user is not believed as
# its runtime: nothing it names is opened, and the report says which process it was and whose.
test_conmon_of_another_user_is_not_believed() {
	setup
	CTR=libpod-$ID
	# a log the runtime's user owns, with a live-looking marker: believed, it would count
	printf 'DCU_KERNEL_DIAG selected=True shape=(4096, 5120)\n' >"$SVC/ctr.log"
	chown "$HOSTILE_UID:$HOSTILE_GID" "$SVC/ctr.log"
	start_runtime conmon --drop "$HOSTILE_UID:$HOSTILE_GID" 65534 -c "$ID" -l "k8s-file:$SVC/ctr.log"
	[ "$(stat -c %u "/proc/$svc")" = 65534 ] || fail "the service does not run as uid 65534"
	gate7_traced
	assert_eq "$status" unverifiable "status ($codes: $msg)"
	assert_eq "$codes" dispatch-marker.runtime-not-trusted
	assert_contains "$msg" "conmon (pid $rt_pid)"
	assert_contains "$msg" "runs as uid $HOSTILE_UID"
	assert_eq "$(jq -r '.gates[6].evidence.log_file // "none"' report.json)" none "log file"
	no_open_of "$SVC/ctr.log"
}

# The promise: a "dockerd" of the user whose --data-root holds a config.v2.json naming a
# root-only LogPath gets nothing of it: the state is read as that user, and the log must be
# theirs.
test_users_own_dockerd_naming_a_root_only_log_gets_nothing() {
	setup
	root_secret "$T/secret"
	CTR=docker-$ID.scope
	local dr=$SVC/docker
	mkdir -p "$dr/containers/$ID"
	printf '{"LogPath": "%s"}\n' "$T/secret" >"$dr/containers/$ID/config.v2.json"
	printf '{"LogConfig": {"Type": "json-file", "Config": {}}}\n' >"$dr/containers/$ID/hostconfig.json"
	chown -R "$HOSTILE_UID:$HOSTILE_GID" "$dr"
	start_runtime dockerd --data-root "$dr"
	gate7_traced
	assert_eq "$status" unverifiable "status ($codes: $msg)"
	assert_eq "$codes" dispatch-marker.container-log-refused
	no_open_of "$T/secret"
	report_keeps_secret "$T/secret"
}

run_tests
