#!/usr/bin/env bash
# The service's time zone file (TZ in its environment, else /etc/localtime in its root) is
# opened as the service's user could open it, in its root, and only as a regular file
# (SPEC §11), against a real service (the fake vLLM engine writing its log) that an ordinary
# user runs with a TZ of their choosing; root's gate 7 reads it.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"

svc_bin="$PVG_BUILD/tests/helpers/fake-service"

setup() {
	need jq strace
	hostile_setup
	cp "$svc_bin" "$SVC/fake-service"
	trap 'stop_service; [ -n "${writer:-}" ] && kill "$writer" 2>/dev/null; true' EXIT
	cat >provgate.json <<-JSON
	{"markers": {"log": "$SVC/server.log", "prefix": "DCU_KERNEL_DIAG",
	             "require": [{"selected": "True", "shape": "(4096, 5120)"}]}}
	JSON
}

stop_service() {
	[ -n "${svc:-}" ] && kill "$svc" 2>/dev/null
	for _ in $(seq 50); do [ -n "${svc:-}" ] && kill -0 "$svc" 2>/dev/null || break; sleep 0.05; done
	svc=
	return 0
}

# start_service TZ [root]: the engine, as the user (or as root), with TZ in its environment
start_service() {
	stop_service
	rm -f "$SVC/svc.pid"
	local cmd=(env TZ="$1" "$SVC/fake-service" --pidfile "$SVC/svc.pid" --log "$SVC/server.log")
	if [ "${2:-}" = root ]; then
		setsid "${cmd[@]}" </dev/null >/dev/null 2>&1 &
	else
		as_hostile "${cmd[@]}" </dev/null >/dev/null 2>&1 &
	fi
	svc=$!
	for _ in $(seq 200); do [ -s "$SVC/svc.pid" ] && break; sleep 0.05; done
	[ -s "$SVC/svc.pid" ] || { pkill -KILL -P "$svc"; fail "the service did not start"; }
	svc=$(cat "$SVC/svc.pid")
}

# zone_of TZ [root]: root's gate 7 (under strace, bounded in time) on a service with TZ; sets
# $why (the zone's "unknown" text, or "known: NAME") and $codes
zone_of() {
	start_service "$@"
	rm -f report.json
	set +e
	strace -f -yy -s 256 -o "$T/trace" -e trace=open,openat,openat2,read \
		timeout 60 "$PROVGATE" run -c provgate.json --pid "$svc" --gates 7 --json report.json \
		>"$T/out" 2>"$T/err"
	local rc=$?
	set -e
	[ "$rc" != 124 ] || fail "gate 7 hung on TZ=$1"
	[ -f report.json ] || { cat "$T/err"; fail "no report (exit $rc)"; }
	why=$(jq -r '.gates[6].evidence.service.time_zone | if .zone then "known: " + .zone else .unknown end' report.json)
	codes=$(problem_codes report.json 7)
}

# never_opened PATH: nothing opened PATH (or a descriptor of it) other than as O_PATH
never_opened() {
	local opened
	# the name as an argument (openat2 in a root takes it without its leading "/") or as
	# what a descriptor returned is
	opened=$(grep -E "(\"/?${1#/}\"|= [0-9]+<$1(<[^>]*>)?>)" "$T/trace" | grep -v O_PATH |
		grep -E '= [0-9]+' || true)
	[ -z "$opened" ] || fail "$1 was opened: $opened"
	opened=$(grep -E "^[0-9]+ +read\([0-9]+<$1" "$T/trace" || true)
	[ -z "$opened" ] || fail "$1 was read: $opened"
}

# The promise: whether a path the service's TZ names exists, and what it holds, is told in
# the report only as far as the service's user could learn it by trying it themselves.
test_zone_errors_tell_the_user_only_what_they_could_learn() {
	setup
	mkdir -m 700 "$T/rootonly"
	root_secret "$T/rootonly/exists"
	root_secret "$T/secret" # /etc/shadow's shape: root's 0600 file in a folder all may search
	# in a folder the user may not search, an existing and a missing file are alike to them
	zone_of "$T/rootonly/exists"
	local exists=${why//exists/NAME}
	zone_of "$T/rootonly/missing"
	assert_eq "${why//missing/NAME}" "$exists" "a root-only folder's file against a missing one"
	assert_contains "$why" "not readable by the service's user"
	# root's 0600 file reads to the user as their own unreadable file does
	zone_of "$T/secret"
	local secret=${why//$T\/secret/NAME}
	! grep -q root-secret report.json || fail "the report holds the root-only file's text"
	printf 'TZif2' >"$SVC/mine"
	chown "$HOSTILE_UID:$HOSTILE_GID" "$SVC/mine"
	chmod 000 "$SVC/mine"
	zone_of "$SVC/mine"
	assert_eq "${why//$SVC\/mine/NAME}" "$secret" "root's file against the user's own unreadable one"
	assert_contains "$secret" "not readable by the service's user"
	# /etc/shadow itself: what the user's own open says, and no more
	as_hostile head -c0 /etc/shadow 2>/dev/null && fail "the user can read /etc/shadow"
	zone_of /etc/shadow
	assert_contains "$why" "not readable by the service's user"
	assert_contains "$codes" "dispatch-marker.zone-file-refused"
	never_opened /etc/shadow
	zone_of /etc/pvg-missing-$$
	assert_contains "$why" "No such file or directory"
	for f in "$T/rootonly/exists" "$T/secret"; do
		grep -qF "$(cat "$f")" report.json && fail "the report holds $f's text"
	done
	return 0
}

# The promise: a TZ naming a device (here through a link in the service's root), a FIFO or
# /proc/kmsg is refused without a device being opened, without waiting on the FIFO and
# without the kernel log being read, each refusal saying what it was.
test_zone_devices_fifos_and_kmsg_are_refused_unopened() {
	setup
	as_hostile mkfifo "$SVC/fifo"
	as_hostile ln -s /dev/zero "$SVC/zone"
	zone_of ":$SVC/zone"
	never_opened /dev/zero
	assert_contains "$why" "a device node"
	assert_contains "$codes" "dispatch-marker.zone-file-refused"
	# the service's own C library blocks on the FIFO until a writer comes and goes: one
	# keeps coming (provgate must never wait on it, nor take what is written)
	as_hostile sh -c 'echo $$ >"$0.writer"; while :; do : >"$0"; done' "$SVC/fifo" \
		</dev/null >/dev/null 2>&1 &
	for _ in $(seq 100); do [ -s "$SVC/fifo.writer" ] && break; sleep 0.02; done
	writer=$(cat "$SVC/fifo.writer")
	zone_of "$SVC/fifo"
	kill "$writer"
	writer=
	never_opened "$SVC/fifo"
	assert_contains "$why" "a FIFO"
	zone_of /proc/kmsg
	never_opened /proc/kmsg
	assert_contains "$why" "a kernel interface file"
	# a root service's kmsg: root could open it, but a kernel file is refused unopened
	zone_of /proc/kmsg root
	never_opened /proc/kmsg
	assert_contains "$why" "a kernel interface file"
	assert_contains "$codes" "dispatch-marker.zone-file-refused"
	grep -qE "read\([0-9]+</proc/kmsg>" "$T/trace" && fail "/proc/kmsg was read: $(grep kmsg "$T/trace")"
	return 0
}

run_tests
