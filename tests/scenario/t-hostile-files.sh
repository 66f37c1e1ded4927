#!/usr/bin/env bash
# timeout: 600
# Files the service's user controls (SPEC §11): a real service run by an unprivileged user
# owns its log, its installed artifact and its witness folder, and makes them sparse
# terabytes, FIFOs, links to devices, or swaps the folder for a link to a root-only one.
# Root's provgate answers each within seconds, opens no device or FIFO, and creates and reads
# nothing outside the folder it was given.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"
need jq python3 mkfifo

TIB=$((1 << 40))
fifo_writer=

# svc_start [VAR=VALUE...]: the service, the hostile user's process that only waits; sets
# $svc_pid
svc_start() {
	rm -f "$SVC/ready"
	as_hostile env "$@" /usr/bin/python3 -c '
import os, time
open(os.environ["HOME"] + "/ready", "w").write(str(os.getpid()))
time.sleep(300)' </dev/null >"$SVC/out" 2>&1 &
	svc_launcher=$!
	trap 'kill $(cat "$SVC/ready" 2>/dev/null) $svc_launcher 2>/dev/null || true; kill $fifo_writer 2>/dev/null || true' EXIT
	for _ in $(seq 200); do [ -s "$SVC/ready" ] && break; sleep 0.05; done
	[ -s "$SVC/ready" ] || { cat "$SVC/out"; fail "the service did not start"; }
	svc_pid=$(cat "$SVC/ready")
	sleep 1.1 # the log's lines are stamped in a second after the service's start
}

# timed_run SECONDS ARGS...: provgate ARGS, killed after SECONDS; sets $rc and $elapsed_ms
timed_run() {
	local limit=$1 t0
	shift
	t0=$(date +%s%N)
	set +e
	timeout -k 5 "$limit" "$PROVGATE" "$@" >run.out 2>&1
	rc=$?
	set -e
	elapsed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "provgate $* -> rc $rc in $elapsed_ms ms"
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "provgate still running after $limit s"
}

# marker LINES: vLLM-style lines of the service's pid, stamped now
markers() {
	local i
	for i in $(seq "$1"); do
		printf '(EngineCore_DP0 pid=%s) INFO %s [k.py:1] KMARK kernel=k%s selected=True\n' \
			"$svc_pid" "$(date +%m-%d\ %H:%M:%S)" "$i"
	done
}

markers_config() { # MIN_COUNT
	cat >provgate.json <<JSON
{ "markers": { "log": "$SVC/server.log", "prefix": "KMARK", "min_count": $1 } }
JSON
}

# fifo_opened FIFO: starts a writer (as the user) that blocks until someone opens FIFO for
# reading, and then writes FIFO.opened: the proof that it was opened
fifo_watch() {
	as_hostile /usr/bin/python3 -c '
import sys
f = open(sys.argv[1], "w")
open(sys.argv[1] + ".opened", "w").close()' "$1" 2>/dev/null &
	fifo_writer=$!
}

# A 1 TiB sparse log whose real lines lie on both sides of the hole gets its answer in
# seconds, and the markers after the hole count.
test_sparse_markers_log_is_read_by_its_data() {
	hostile_setup
	svc_start
	markers 2 >"$T/head"
	markers 3 >"$T/tail"
	chmod 644 "$T/head" "$T/tail"
	as_hostile /usr/bin/python3 -c '
import sys
with open(sys.argv[1], "wb") as f:
    f.write(open(sys.argv[2], "rb").read() + b"(EngineCore_DP0 pid=1) a line cut by the hole")
    f.seek(int(sys.argv[4]))
    f.write(open(sys.argv[3], "rb").read())' "$SVC/server.log" "$T/head" "$T/tail" "$TIB"
	[ "$(stat -c %s "$SVC/server.log")" -gt "$TIB" ] || fail "no sparse log"
	markers_config 5
	timed_run 60 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "a sparse terabyte took $elapsed_ms ms"
	assert_eq "$(gate_status r.json 7)" pass "$(problem_codes r.json 7)"
	assert_eq "$(jq -r '.gates[6].evidence.markers.live' r.json)" 5 "markers on both sides of the hole"
	[ "$(jq -r '.gates[6].evidence.hole_bytes' r.json)" -ge $((TIB - 65536)) ] || fail "holes not counted"
}

# A markers log replaced by a link to a device is refused with its own code, unopened.
test_markers_log_link_to_a_device_is_refused() {
	hostile_setup
	svc_start
	as_hostile ln -s /dev/null "$SVC/server.log"
	markers_config 1
	timed_run 30 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	assert_eq "$(problem_codes r.json 7)" dispatch-marker.log-device
	assert_eq "$(gate_status r.json 7)" unverifiable
}

# A markers log that is a FIFO is refused with its own code, without waiting for a writer
# and without ever being opened (a writer blocked on it stays blocked).
test_markers_log_fifo_is_refused_and_never_opened() {
	hostile_setup
	svc_start
	as_hostile mkfifo "$SVC/server.log"
	fifo_watch "$SVC/server.log"
	markers_config 1
	timed_run 30 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "took $elapsed_ms ms"
	assert_eq "$(problem_codes r.json 7)" dispatch-marker.log-fifo
	sleep 0.2
	[ ! -e "$SVC/server.log.opened" ] || fail "root opened the FIFO"
}

# artifact_config: a real build file and the installed one in the user's folder
artifact_config() {
	head -c 100000 /dev/urandom >build.so
	cat >provgate.json <<JSON
{ "build": { "artifact": "$T/build.so" }, "install": { "artifact": "$SVC/inst.so" } }
JSON
}

# A 1 TiB sparse installed artifact is refused from its size within seconds, with its code,
# and fails: the build, which was read, has another size.
test_sparse_terabyte_artifact_is_refused_from_its_size() {
	hostile_setup
	artifact_config
	as_hostile truncate -s 1T "$SVC/inst.so"
	timed_run 60 run -c provgate.json --gates 3 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "a sparse terabyte took $elapsed_ms ms"
	assert_eq "$(problem_codes r.json 3)" artifact-hash.too-large
	assert_eq "$(gate_status r.json 3)" fail
}

# An installed artifact within the bound but mostly holes is refused as sparse, unread; the
# bound is the config's install.max_artifact_size ("2TiB" lets the terabyte through to the
# sparse check).
test_mostly_holes_artifact_is_refused_as_sparse() {
	hostile_setup
	artifact_config
	jq '.install.max_artifact_size = "2TiB"' provgate.json >p2.json
	as_hostile truncate -s 1T "$SVC/inst.so"
	timed_run 60 run -c p2.json --gates 3 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "took $elapsed_ms ms"
	assert_eq "$(problem_codes r.json 3)" artifact-hash.sparse
	assert_contains "$(jq -r '.gates[2].problems[0].message' r.json)" "0 are data"
}

# witness_service: the service started with the witness in its own folder $SVC/wdir
witness_service() {
	as_hostile mkdir "$SVC/wdir"
	svc_start PROVGATE_WITNESS_DIR="$SVC/wdir" CUDA_INJECTION64_PATH=/nonexistent/libw.so
	cat >provgate.json <<JSON
{ "witness": { "dir": "$SVC/wdir", "require": [{"kernel": "k"}], "api": "cuda" } }
JSON
}

# 4096 sparse 9 MiB witness files are skipped from their size, unread: the run takes well
# under the 70 s that reading each to the 8 MiB cap, twice, cost.
test_oversized_witness_files_are_skipped_unread() {
	hostile_setup
	witness_service
	as_hostile /usr/bin/python3 -c '
import os, sys
for i in range(4096):
    os.truncate(os.open("%s/w-%04d.pvgw" % (sys.argv[1], i), os.O_CREAT | os.O_WRONLY, 0o644), 9 << 20)' \
		"$SVC/wdir"
	timed_run 120 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "4096 sparse witness files took $elapsed_ms ms"
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.too_large' r.json)" 4096
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.unreadable' r.json)" 0
}

# The witness folder replaced by a link to a root-only folder is refused with its code:
# nothing is created in that folder (its times stay as they were) and nothing in it is read.
test_witness_folder_swapped_for_a_link_is_refused() {
	hostile_setup
	witness_service
	mkdir -m 700 "$T/rootonly"
	head -c 4096 /dev/urandom >"$T/rootonly/secret.pvgw"
	chmod 600 "$T/rootonly/secret.pvgw"
	before=$(stat -c '%y %z' "$T/rootonly")
	as_hostile rmdir "$SVC/wdir"
	as_hostile ln -s "$T/rootonly" "$SVC/wdir"
	sleep 0.02
	timed_run 30 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	assert_contains "$(problem_codes r.json 7)" dispatch-marker.witness-dir-link
	assert_eq "$(gate_status r.json 7)" unverifiable
	assert_eq "$(stat -c '%y %z' "$T/rootonly")" "$before" "the root-only folder was written"
	assert_eq "$(ls "$T/rootonly")" secret.pvgw
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files // "none"' r.json)" none \
		"entries of the root-only folder were read"
}

# Witness entries that are a link to a device and a FIFO are skipped unread: the FIFO is
# never opened (its blocked writer stays blocked), and both are counted.
test_witness_entries_that_are_no_files_are_never_opened() {
	hostile_setup
	witness_service
	as_hostile ln -s /dev/zero "$SVC/wdir/dev.pvgw"
	as_hostile mkfifo "$SVC/wdir/fifo.pvgw"
	fifo_watch "$SVC/wdir/fifo.pvgw"
	timed_run 30 run -c provgate.json --pid "$svc_pid" --gates 7 --json r.json
	[ "$elapsed_ms" -lt 5000 ] || fail "took $elapsed_ms ms"
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.not_regular' r.json)" 2
	assert_eq "$(jq -r '.gates[6].evidence.witness.ignored_files.unreadable' r.json)" 0
	sleep 0.2
	[ ! -e "$SVC/wdir/fifo.pvgw.opened" ] || fail "root opened the FIFO"
}

run_tests
