#!/usr/bin/env bash
# Gates 4 process-maps and 5 stale-service, and `provgate maps`, against real processes: a
# stand-in vLLM service (tests/helpers/fake-service) that dlopens a real HIP library, renames
# itself VLLM::EngineCore, listens on a port, forks workers and holds a stand-in GPU device.
# Every verdict is compared with what grep /proc/PID/maps and ss -ltnp say in the same test.
source "$PVG_SRC/tests/lib.sh"

FAKE="$PVG_BUILD/tests/helpers/fake-service"
LIB="$FIXTURES/procs/libpvgfixture.so"

# ---- helpers -----------------------------------------------------------------------------

started=()
cleanup() {
	local p i
	for p in "${started[@]}" $(cat "$T"/*.epid 2>/dev/null); do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${started[@]}" $(cat "$T"/*.epid 2>/dev/null); do
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.02; done
		kill -KILL "$p" 2>/dev/null || true
	done
}

# A free port from a random high range (ss tells which are taken).
free_port() {
	local p i
	for i in $(seq 50); do
		# below the ephemeral range (32768 and up), and in no state at all here
		p=$((20000 + RANDOM % 12000))
		ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return 0; }
	done
	fail "no free port found"
}

# wait_file PATH: until the pidfile exists (the service writes it once ready).
wait_file() {
	local i
	for i in $(seq 500); do [ -s "$1" ] && return 0; sleep 0.02; done
	fail "$1 did not appear"
}

# start NAME ARGS...: starts a fake service tagged for this test; NAME.pid is the top
# process, NAME.epid the engine.
start() {
	local name=$1; shift
	"$FAKE" --tag "$TAG" --pidfile "$T/$name.pid" --engine-pidfile "$T/$name.epid" "$@" \
		>"$T/$name.log" 2>&1 &
	started+=("$!")
	wait_file "$T/$name.pid"
	wait_file "$T/$name.epid"
}

setup() {
	need ss jq pgrep
	[ -x "$FAKE" ] || fail "fake-service is not built"
	TAG="fixture-${T##*.}" # unique per test: the mktemp suffix
	trap cleanup EXIT
	mkdir -p build inst other
	cp "$LIB" build/libpvgfixture.so
	cp build/libpvgfixture.so inst/libpvgfixture.so
	: >gpu0
	export PROVGATE_GPU_DEVICES="$T/gpu*"
	# the start time has clock-tick resolution: begin one tick after the install
	sleep 0.03
}

# config SERVICE_JSON: provgate.json for the fixture with the given service block.
config() {
	cat >provgate.json <<-J
	{
	  "build": {"artifact": "build/libpvgfixture.so"},
	  "install": {"artifact": "inst/libpvgfixture.so"},
	  "service": $1
	}
	J
}

maps_lines() { grep -c "$2" "/proc/$1/maps" || true; }
ss_pids() { ss -Htlnp "sport = :$1" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u; }

# ---- gate 4 ------------------------------------------------------------------------------

test_clean_service_passes_gates_4_and_5() {
	setup
	local port; port=$(free_port)
	start svc --server --lib "$T/inst/libpvgfixture.so" --port "$port" --workers 2 \
		--device "$T/gpu0"
	config "{\"pidfile\": \"svc.pid\", \"port\": $port, \"family\": [\"$TAG\"]}"
	pg run --gates 3-5 --keep-going --json r.json
	assert_eq "$(gate_status r.json 4)" pass "gate 4"
	assert_eq "$(gate_status r.json 5)" pass "gate 5 ($(problem_codes r.json 5))"
	assert_eq "$rc" 0 "exit status"
	# gate 4 saw exactly the processes that grep finds the library in
	local engine; engine=$(cat svc.epid)
	local want have
	want=$(for p in $(pgrep -f "$TAG"); do
		[ "$(maps_lines "$p" inst/libpvgfixture.so)" -gt 0 ] && echo "$p"; done | sort -n)
	have=$(jq -r '.chain.processes[] | select(.maps_path != null) | .pid' r.json | sort -n)
	assert_eq "$have" "$want" "processes mapping the library"
	assert_contains "$have" "$engine" "engine in the chain"
	[ "$(echo "$have" | wc -l)" -eq 3 ] || fail "expected engine + 2 workers, got $have"
	# the port owner ss reports is in the tree gate 5 describes
	local owners; owners=$(jq -r '.gates[4].evidence.port_owners[].pid' r.json | sort -un)
	assert_eq "$owners" "$(ss_pids "$port")" "port owners vs ss -ltnp"
	# 64-bit values are strings, pids numbers
	assert_eq "$(jq -r '.chain.processes[0].pid | type' r.json)" number "pid type"
	assert_eq "$(jq -r '.gates[3].evidence.installed_inode | type' r.json)" string "inode type"
}

test_match_selects_engine_by_truncated_comm() {
	setup
	# Only the 15-byte comm carries the name (as VLLM::EngineCore shows as VLLM::EngineCor);
	# a name unique to this test keeps other engines on the machine out of it.
	local name; name="E${T##*.}::EngineCore"
	start svc --lib "$T/inst/libpvgfixture.so" --title "python3 -m engine" --comm "$name"
	assert_eq "$(cat /proc/"$(cat svc.epid)"/comm)" "${name:0:15}" "kernel comm"
	assert_not_contains "$(tr '\0' ' ' </proc/"$(cat svc.epid)"/cmdline)" "$name" "cmdline"
	config "{\"match\": [\"$name\"], \"family\": [\"$TAG\"]}"
	pg run --gates 4 --json r.json
	assert_eq "$(jq -r '.gates[3].evidence.selection.primary' r.json)" "$(cat svc.epid)" \
		"selected engine"
	assert_eq "$(gate_status r.json 4)" pass "gate 4"
	# the same through ps: what a grep on the command column would miss
	ps -eo pid,comm | grep -qF "${name:0:15}" || fail "ps does not show the comm"
}

test_maps_reports_deleted_after_reinstall() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	install -m 0755 build/libpvgfixture.so inst/libpvgfixture.so # unlink + create
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.deleted "codes"
	[ "$(maps_lines "$(cat svc.pid)" 'libpvgfixture.so (deleted)')" -gt 0 ] ||
		fail "grep does not see (deleted) in maps"
	pg maps "$(cat svc.pid)"
	assert_eq "$rc" 1 "maps exit status"
	assert_contains "$out" "deleted" "maps output"
}

test_maps_reports_replaced_by_mv() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	cp build/libpvgfixture.so inst/.new && mv inst/.new inst/libpvgfixture.so
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.deleted "codes"
}

test_maps_reports_inplace_overwrite() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	local ino; ino=$(stat -c %i inst/libpvgfixture.so)
	sleep 0.03 # one clock tick after the start, so the order is unambiguous
	cp build/libpvgfixture.so inst/libpvgfixture.so # same inode, new ctime
	assert_eq "$(stat -c %i inst/libpvgfixture.so)" "$ino" "cp kept the inode"
	assert_eq "$(maps_lines "$(cat svc.pid)" '(deleted)')" 0 "grep sees no (deleted)"
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.overwritten-after-start "codes"
	pg maps --json "$(cat svc.pid)"
	assert_eq "$(echo "$out" | jq -r '.[0].files[] | select(.path | endswith("inst/libpvgfixture.so")) | .state')" \
		overwritten "maps state"
}

test_maps_reports_bytes_changed_in_place() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	sleep 0.03
	# new bytes written into the same inode: the page cache the process maps changes too
	printf 'X' | dd of=inst/libpvgfixture.so bs=1 seek=100 conv=notrunc status=none
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.bytes-mismatch "codes"
	assert_contains "$(problem_codes r.json 4)" process-maps.overwritten-after-start "codes"
}

test_maps_reports_replaced_by_bind_mount() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	cp build/libpvgfixture.so other/libpvgfixture.so
	# the path now names another inode, while the mapping is not "(deleted)"
	mount --bind other/libpvgfixture.so inst/libpvgfixture.so 2>/dev/null || {
		echo "SKIP: bind mounts are not permitted here" >&2; exit 77; }
	trap 'cleanup; umount -l "$T/inst/libpvgfixture.so"' EXIT
	assert_eq "$(maps_lines "$(cat svc.pid)" '(deleted)')" 0 "grep sees no (deleted)"
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.replaced "codes"
	pg maps "$(cat svc.pid)"
	assert_contains "$out" "replaced" "maps output"
}

# Kernels that show the real (lower/upper) device of an overlayfs file in maps: the inode
# agrees, the device does not. The maps text is the real one with the device rewritten.
test_overlayfs_device_number_quirk_is_tolerated() {
	setup
	mkdir lower upper work merged
	cp build/libpvgfixture.so lower/
	mount -t overlay overlay -o "lowerdir=$T/lower,upperdir=$T/upper,workdir=$T/work" \
		"$T/merged" 2>/dev/null || { echo "SKIP: overlay mounts are not permitted here" >&2; exit 77; }
	trap 'cleanup; umount -l "$T/merged"' EXIT
	sleep 0.03
	start svc --lib "$T/merged/libpvgfixture.so"
	local pid; pid=$(cat svc.pid)
	local lower_dev; lower_dev=$(stat -c '%Hd:%Ld' lower/libpvgfixture.so)
	mkdir -p "fakeproc/$pid"
	ln -s /proc/net fakeproc/net
	ln -s "/proc/$pid/map_files" "fakeproc/$pid/map_files"
	awk -v d="$(printf '%02x:%02x' "${lower_dev%%:*}" "${lower_dev##*:}")" \
		'/merged\/libpvgfixture.so/ { $4 = d } { print }' "/proc/$pid/maps" >"fakeproc/$pid/maps"
	grep -q "$(printf '%02x:%02x' "${lower_dev%%:*}" "${lower_dev##*:}")" "fakeproc/$pid/maps" ||
		fail "maps fixture"
	cat >provgate.json <<-J
	{"build": {"artifact": "build/libpvgfixture.so"},
	 "install": {"artifact": "merged/libpvgfixture.so"}, "service": {"pidfile": "svc.pid"}}
	J
	PROVGATE_PROCFS="$T/fakeproc" pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" pass "gate 4 ($(problem_codes r.json 4))"
	assert_eq "$(jq -r '.gates[3].evidence.processes[0].mappings[0].device_number_quirk' r.json)" \
		true "quirk recorded"
}

# An inode number is unique only within one file system. The installed file sits on an
# overlayfs (a container's root); the service maps an older copy from another file system
# whose file has the same inode number (tmpfs numbers its inodes from 2 up, so a few files
# reach it). provgate runs as root with CAP_SYS_PTRACE but neither CAP_SYS_ADMIN nor
# CAP_CHECKPOINT_RESTORE (a Kubernetes sidecar, podman --cap-add SYS_PTRACE): the links in
# map_files cannot be followed, so that device and inode number in maps are all it has.
test_same_inode_number_on_another_file_system_is_not_the_installed_file() {
	setup
	need capsh
	mkdir layers elsewhere merged
	mount -t tmpfs tmpfs layers 2>/dev/null || { echo "SKIP: mounts are not permitted here" >&2; exit 77; }
	trap 'cleanup; umount -l "$T/merged" 2>/dev/null; umount -l "$T/layers" "$T/elsewhere" 2>/dev/null' EXIT
	mount -t tmpfs tmpfs elsewhere
	mkdir layers/lower layers/upper layers/work
	cp build/libpvgfixture.so layers/lower/
	mount -t overlay overlay -o "lowerdir=$T/layers/lower,upperdir=$T/layers/upper,workdir=$T/layers/work" \
		"$T/merged" 2>/dev/null || { echo "SKIP: overlay mounts are not permitted here" >&2; exit 77; }
	local ino; ino=$(stat -c %i merged/libpvgfixture.so)
	# an older build: other bytes, at a path whose inode number is the installed file's
	local i=0
	while [ "$(stat -c %i "elsewhere/f$i" 2>/dev/null || echo 0)" != "$ino" ]; do
		i=$((i + 1)); [ "$i" -lt 1000 ] || fail "no inode number $ino on the tmpfs"
		: >"elsewhere/f$i"
	done
	cp build/libpvgfixture.so "elsewhere/f$i"
	printf 'X' >>"elsewhere/f$i" # a byte past the ELF's end: it loads, and hashes differently
	assert_eq "$(stat -c %i "elsewhere/f$i")" "$ino" "same inode number"
	[ "$(stat -c %d "elsewhere/f$i")" != "$(stat -c %d merged/libpvgfixture.so)" ] ||
		fail "same device"
	cmp -s "elsewhere/f$i" merged/libpvgfixture.so && fail "same bytes"
	sleep 0.03
	start svc --lib "$T/elsewhere/f$i"
	[ "$(maps_lines "$(cat svc.pid)" merged/libpvgfixture.so)" -eq 0 ] || fail "grep: installed mapped"
	[ "$(maps_lines "$(cat svc.pid)" "elsewhere/f$i")" -gt 0 ] || fail "grep: copy not mapped"
	cat >provgate.json <<-J
	{"build": {"artifact": "build/libpvgfixture.so"},
	 "install": {"artifact": "merged/libpvgfixture.so"}, "service": {"pidfile": "svc.pid"}}
	J
	local o
	o=$(capsh --drop=cap_sys_admin,cap_checkpoint_restore -- -c \
		'"$0" run --gates 4 --json -' "$PROVGATE" 2>"$T/err") || true
	echo "$o" >r.json
	assert_not_contains "$(cat "$T/err")" "Sanitizer" "stderr"
	assert_eq "$(gate_status r.json 4)" fail "gate 4 without map_files ($(problem_codes r.json 4))"
	assert_contains "$(problem_codes r.json 4)" process-maps.not-loaded "codes"
	assert_eq "$(jq -r '.gates[3].evidence.processes[0].mappings | length' r.json)" 0 \
		"the copy is no mapping of the installed file"
	# as full root, map_files says which file it is
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4 as root"
	assert_eq "$(problem_codes r.json 4)" process-maps.not-loaded "codes as root"
	# the installed file itself, mapped through the overlay, is known without map_files
	start good --lib "$T/merged/libpvgfixture.so"
	cat >provgate.json <<-J
	{"build": {"artifact": "build/libpvgfixture.so"},
	 "install": {"artifact": "merged/libpvgfixture.so"}, "service": {"pidfile": "good.pid"}}
	J
	o=$(capsh --drop=cap_sys_admin,cap_checkpoint_restore -- -c \
		'"$0" run --gates 4 --json -' "$PROVGATE" 2>"$T/err") || true
	echo "$o" >r.json
	assert_eq "$(gate_status r.json 4)" pass "installed file without map_files ($(problem_codes r.json 4))"
	assert_eq "$(jq -r '.gates[3].evidence.processes[0].mappings[0].bytes_from' r.json)" \
		"installed file (map_files not readable)" "bytes from"
}

# btrfs shows its file system's device in maps for the file of every subvolume, and a
# snapshot keeps its subvolume's inode numbers: a service that runs from a snapshot of the
# install (an older venv, a container root on btrfs storage) maps the same device and inode
# numbers as the installed file, with older bytes. Only the map_files link tells them apart.
test_btrfs_snapshot_of_the_install_is_not_the_installed_file() {
	setup
	need capsh mkfs.btrfs btrfs
	truncate -s 200M btrfs.img
	mkfs.btrfs -q btrfs.img >/dev/null 2>&1 || fail "mkfs.btrfs"
	mkdir mnt
	mount -o loop btrfs.img mnt 2>/dev/null || { echo "SKIP: loop mounts are not permitted here" >&2; exit 77; }
	trap 'cleanup; umount -l "$T/mnt"' EXIT
	btrfs -q subvolume create mnt/venv
	# the old build installed, the venv snapshotted, the new build copied over it in place
	cp build/libpvgfixture.so mnt/venv/libpvgfixture.so
	printf 'X' >>mnt/venv/libpvgfixture.so
	btrfs -q subvolume snapshot mnt/venv mnt/old
	cp build/libpvgfixture.so mnt/venv/libpvgfixture.so
	cmp -s mnt/old/libpvgfixture.so mnt/venv/libpvgfixture.so && fail "same bytes"
	assert_eq "$(stat -c %i mnt/old/libpvgfixture.so)" "$(stat -c %i mnt/venv/libpvgfixture.so)" "inode numbers"
	sleep 0.03
	start svc --lib "$T/mnt/old/libpvgfixture.so"
	local pid; pid=$(cat svc.pid)
	# maps shows the numbers the installed file shows in a mapping of its own
	local mine; mine=$(python3 -c 'import mmap, sys
f = open(sys.argv[1], "rb"); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print(*[" ".join(l.split()[3:5]) for l in open("/proc/self/maps") if sys.argv[1] in l], sep="\n")' \
		"$T/mnt/venv/libpvgfixture.so" | head -n1)
	assert_eq "$(awk '/old\/libpvgfixture.so/ { print $4, $5; exit }' "/proc/$pid/maps")" "$mine" \
		"maps numbers of the snapshot's file and the installed file"
	cat >provgate.json <<-J
	{"build": {"artifact": "build/libpvgfixture.so"},
	 "install": {"artifact": "mnt/venv/libpvgfixture.so"}, "service": {"pidfile": "svc.pid"}}
	J
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4 as root"
	assert_contains "$(problem_codes r.json 4)" process-maps.other-copy "codes as root"
	# without map_files: the numbers cannot tell, so the bytes are not the installed file's
	local o
	o=$(capsh --drop=cap_sys_admin,cap_checkpoint_restore -- -c \
		'"$0" run --gates 4 --json -' "$PROVGATE" 2>"$T/err") || true
	echo "$o" >r.json
	assert_not_contains "$(cat "$T/err")" "Sanitizer" "stderr"
	assert_eq "$(gate_status r.json 4)" unverifiable "gate 4 without map_files ($(problem_codes r.json 4))"
	assert_eq "$(problem_codes r.json 4)" process-maps.permission-denied "codes without map_files"
	assert_contains "$(jq -r '.gates[3].problems[0].message' r.json)" "snapshot" "message"
}

test_maps_reports_never_loaded() {
	setup
	start svc
	assert_eq "$(maps_lines "$(cat svc.pid)" libpvgfixture)" 0 "grep finds no mapping"
	config "{\"match\": [\"VLLM::EngineCore $TAG\"]}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.not-loaded "codes"
	assert_contains "$(jq -r '.gates[3].problems[0].hint' r.json)" "warm up" "hint"
}

test_maps_reports_second_copy() {
	setup
	cp build/libpvgfixture.so other/libpvgfixture.so
	sleep 0.03 # a clock tick between this copy and the start
	start svc --lib "$T/other/libpvgfixture.so"
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4 (only the other copy)"
	assert_contains "$(problem_codes r.json 4)" process-maps.other-copy "codes"
	assert_contains "$(problem_codes r.json 4)" process-maps.not-loaded "codes"
	[ "$(maps_lines "$(cat svc.pid)" other/libpvgfixture.so)" -gt 0 ] || fail "grep"
}

test_maps_reports_installed_and_second_copy_together() {
	setup
	cp build/libpvgfixture.so other/libpvgfixture.so
	sleep 0.03 # a clock tick between this copy and the start
	start svc --lib "$T/inst/libpvgfixture.so" --lib "$T/other/libpvgfixture.so"
	[ "$(maps_lines "$(cat svc.pid)" other/libpvgfixture.so)" -gt 0 ] || fail "grep other"
	[ "$(maps_lines "$(cat svc.pid)" inst/libpvgfixture.so)" -gt 0 ] || fail "grep inst"
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.other-copy "codes"
	pg maps --json "$(cat svc.pid)"
	assert_eq "$(echo "$out" | jq -r '[.[0].files[] | select(.state == "duplicate")] | length')" 2 \
		"maps duplicates"
}

test_maps_verb_lists_what_proc_maps_lists() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	local pid; pid=$(cat svc.pid)
	pg maps --json "$pid"
	assert_eq "$rc" 0 "nothing stale"
	local have want
	have=$(echo "$out" | jq -r '.[0].files[].path' | sort -u)
	want=$(awk '$6 ~ /^\// { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' \
		"/proc/$pid/maps" | sort -u)
	assert_eq "$have" "$want" "files vs /proc/$pid/maps"
	assert_eq "$(echo "$out" | jq -r '[.[0].files[] | select(.state != "ok")] | length')" 0 "states"
	pg maps --all "$pid"
	assert_contains "$out" "$T/inst/libpvgfixture.so" "--all lists healthy files"
	pg maps "$pid"
	assert_not_contains "$out" "libpvgfixture.so" "without --all only stale files"
	pg maps --bogus
	assert_eq "$rc" 2 "usage error"
}

# ---- gate 5 ------------------------------------------------------------------------------

test_stale_service_reports_orphan_engine() {
	setup
	start old --server --lib "$T/inst/libpvgfixture.so"
	local orphan; orphan=$(cat old.epid)
	kill -KILL "$(cat old.pid)"
	local i
	for i in $(seq 250); do
		[ "$(ps -o ppid= -p "$orphan" | tr -d ' ')" != "$(cat old.pid)" ] && break
		sleep 0.02
	done
	start svc --server --lib "$T/inst/libpvgfixture.so"
	config "{\"pidfile\": \"svc.pid\", \"family\": [\"$TAG\"]}"
	pg run --gates 4,5 --keep-going --json r.json
	assert_eq "$(gate_status r.json 4)" pass "gate 4 (the live tree is fine)"
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	assert_contains "$(problem_codes r.json 5)" stale-service.orphan "codes"
	assert_contains "$(jq -r '.gates[4].problems[0].message' r.json)" "$orphan" "names the orphan"
	# ps agrees: the orphan's parent is not the new server
	[ "$(ps -o ppid= -p "$orphan" | tr -d ' ')" != "$(cat svc.pid)" ] || fail "ps"
	pg run --phase prestart --gates 5 --json p.json
	assert_eq "$(gate_status p.json 5)" fail "prestart"
	assert_contains "$(problem_codes p.json 5)" stale-service.alive "prestart codes"
}

test_stale_service_reports_second_instance() {
	setup
	start old --server --lib "$T/inst/libpvgfixture.so" --workers 1
	start svc --server --lib "$T/inst/libpvgfixture.so"
	config "{\"pidfile\": \"svc.pid\", \"family\": [\"$TAG\"]}"
	pg run --gates 5 --json r.json
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	# the old server hangs off a non-service parent; its engine and worker off the old server
	assert_eq "$(jq -r '[.gates[4].problems[].code] | sort | unique | join(" ")' r.json)" \
		"stale-service.orphan stale-service.outside-tree" "codes"
	local listed; listed=$(jq -r '.gates[4].evidence.outside_tree[].pid' r.json | sort -n)
	local want; want=$(pgrep -f "$TAG" | while read -r p; do
		[ "$p" = "$(cat svc.pid)" ] || [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = "$(cat svc.pid)" ] ||
			echo "$p"; done | sort -n)
	assert_eq "$listed" "$want" "processes outside the tree vs pgrep"
}

test_stale_service_reports_port_not_listening() {
	setup
	local port; port=$(free_port)
	start svc --server --lib "$T/inst/libpvgfixture.so"
	config "{\"pidfile\": \"svc.pid\", \"port\": $port, \"family\": [\"$TAG\"]}"
	pg run --gates 5 --json r.json
	assert_eq "$(problem_codes r.json 5)" stale-service.port-not-listening "codes"
	assert_eq "$(ss_pids "$port")" "" "ss -ltnp sees no listener"
}

test_stale_service_reports_port_held_by_stranger() {
	setup
	local port; port=$(free_port)
	start stranger --title "stranger-httpd" --port "$port"
	start svc --server --lib "$T/inst/libpvgfixture.so"
	config "{\"pidfile\": \"svc.pid\", \"port\": $port, \"family\": [\"VLLM::EngineCore $TAG\"]}"
	pg run --gates 5 --json r.json
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	assert_eq "$(problem_codes r.json 5)" stale-service.port-foreign "codes"
	assert_eq "$(ss_pids "$port")" "$(cat stranger.pid)" "ss -ltnp owner"
	assert_contains "$(jq -r '.gates[4].problems[0].message' r.json)" "$(cat stranger.pid)" "msg"
	pg run --phase prestart --gates 5 --json p.json
	assert_contains "$(problem_codes p.json 5)" stale-service.port-held "prestart codes"
}

test_stale_service_passes_when_tree_holds_port() {
	setup
	local port; port=$(free_port)
	start svc --server --lib "$T/inst/libpvgfixture.so" --port "$port" --workers 1
	config "{\"match\": [\"VLLM::EngineCore $TAG\"], \"port\": $port, \"family\": [\"$TAG\"]}"
	pg run --gates 5 --json r.json
	assert_eq "$(gate_status r.json 5)" pass "gate 5 ($(problem_codes r.json 5))"
	# the tree climbs from the engine to the server that holds the port
	assert_eq "$(jq -r '.gates[4].evidence.selection.tree_root' r.json)" "$(cat svc.pid)" "root"
	assert_contains "$(ss_pids "$port")" "$(cat svc.pid)" "ss -ltnp owner"
	pg run --phase prestart --gates 5 --json p.json
	assert_eq "$(gate_status p.json 5)" fail "prestart with the service up"
	# a pidfile naming a live process is a live service, family or not
	config "{\"pidfile\": \"svc.pid\"}"
	pg run --phase prestart --gates 5 --json p.json
	assert_eq "$(problem_codes p.json 5)" stale-service.alive "prestart by pidfile"
}

test_stale_service_reports_gpu_holder_outside_tree() {
	setup
	start stranger --title "stranger-trainer" --device "$T/gpu0"
	start svc --server --lib "$T/inst/libpvgfixture.so" --device "$T/gpu0"
	config "{\"pidfile\": \"svc.pid\", \"family\": [\"$TAG\"]}"
	pg run --gates 5 --json r.json
	assert_eq "$(gate_status r.json 5)" fail "gate 5"
	assert_contains "$(problem_codes r.json 5)" stale-service.gpu-holder "codes"
	# exactly the stranger, as ls -l /proc/PID/fd shows
	assert_eq "$(jq -r '.gates[4].evidence.gpu_holders_outside_tree[].pid' r.json)" \
		"$(cat stranger.epid)" "holders"
	ls -l "/proc/$(cat stranger.epid)/fd" | grep -q "$T/gpu0" || fail "ls does not agree"
}

test_prestart_passes_when_nothing_runs() {
	setup
	local port; port=$(free_port)
	config "{\"match\": [\"VLLM::EngineCore $TAG\"], \"port\": $port, \"family\": [\"$TAG\"]}"
	pg run --phase prestart --gates 5 --json p.json
	assert_eq "$(gate_status p.json 5)" pass "prestart"
	# provgate itself never counts, even when its command line matches
	pg maps "$TAG"
	assert_eq "$rc" 1 "maps finds nothing"
}

test_other_users_process_is_unverifiable_not_pass() {
	setup
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to drop to another user" >&2; exit 77; }
	need setpriv
	local port; port=$(free_port)
	start svc --server --lib "$T/inst/libpvgfixture.so" --port "$port"
	config "{\"pidfile\": \"svc.pid\", \"port\": $port, \"family\": [\"$TAG\"]}"
	chmod 755 "$T"
	chmod 644 provgate.json svc.pid
	# provgate as nobody: the root-owned service's maps and fds cannot be read
	local o
	o=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$PROVGATE" run --gates 4,5 --keep-going --json - 2>"$T/err") || true
	echo "$o" >r.json
	assert_not_contains "$(cat "$T/err")" "Sanitizer" "stderr"
	assert_eq "$(gate_status r.json 4)" unverifiable "gate 4"
	assert_contains "$(problem_codes r.json 4)" process-maps.permission-denied "codes 4"
	assert_eq "$(gate_status r.json 5)" unverifiable "gate 5"
	assert_contains "$(problem_codes r.json 5)" stale-service.permission-denied "codes 5"
	# the same unread fd tables leave the port's owner and the GPU holders open: one
	# problem that says both, not the same code twice
	assert_eq "$(jq '[.gates[4].problems[] | select(.code == "stale-service.permission-denied")] | length' r.json)" 1 "permission-denied problems"
	assert_contains "$(jq -r '.gates[4].problems[] | select(.code == "stale-service.permission-denied") | .message' r.json)" \
		"a foreign owner of the port or a GPU holder outside the tree cannot be ruled out"
	# and the text says once, at the top, that provgate is not root and what that means
	o=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$PROVGATE" run --gates 4,5 --keep-going 2>"$T/err") || true
	assert_eq "$(grep -c '^not root:' <<<"$o")" 1 "not-root lines ($o)"
	assert_eq "$(sed -n 2p <<<"$o" | cut -c1-9)" "not root:" "second line, before the gates"
	assert_contains "$o" "provgate runs as uid 65534, not root, and the service (pid $(cat svc.pid)) as uid 0"
	assert_eq "$(jq -r '.environment.reader | "\(.uid) \(.root) \(.service_uid)"' r.json)" "65534 false 0"
	validate r.json
}

# ---- selection failures ------------------------------------------------------------------

test_pidfile_to_dead_pid_fails() {
	setup
	sleep 0 &
	local dead=$!
	wait "$dead"
	echo "$dead" >dead.pid
	config "{\"pidfile\": \"dead.pid\", \"family\": [\"$TAG\"]}"
	pg run --gates 4,5 --keep-going --json r.json
	assert_eq "$(gate_status r.json 4)" fail "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.target-not-running "codes 4"
	assert_eq "$(problem_codes r.json 5)" stale-service.target-not-running "codes 5"
	assert_contains "$(jq -r '.gates[3].problems[0].message' r.json)" "not running" "message"
	config "{\"pidfile\": \"missing.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(problem_codes r.json 4)" process-maps.pidfile-missing "missing pidfile"
	printf 'garbage\n' >bad.pid
	config "{\"pidfile\": \"bad.pid\"}"
	pg run --gates 4 --json r.json
	assert_eq "$(problem_codes r.json 4)" process-maps.pidfile-invalid "bad pidfile"
}

test_process_exiting_while_scanned_is_unverifiable() {
	setup
	start svc --lib "$T/inst/libpvgfixture.so"
	# /proc as provgate's text readers see it, minus the target: it exited after the
	# process table was read and before its maps were
	mkdir fakeproc
	ln -s /proc/net fakeproc/net
	config "{\"pidfile\": \"svc.pid\"}"
	PROVGATE_PROCFS="$T/fakeproc" pg run --gates 4 --json r.json
	assert_eq "$(gate_status r.json 4)" unverifiable "gate 4"
	assert_eq "$(problem_codes r.json 4)" process-maps.exited "codes"
}

test_churning_workers_never_crash_or_lie() {
	setup
	local port; port=$(free_port)
	# the engine forks a worker that exits at once, every millisecond
	start svc --lib "$T/inst/libpvgfixture.so" --port "$port" --churn
	config "{\"pidfile\": \"svc.pid\", \"port\": $port, \"family\": [\"$TAG\"]}"
	local i s4 s5
	for i in $(seq 15); do
		pg run --gates 4,5 --keep-going --json r.json
		case $rc in 0|1) ;; *) fail "exit status $rc: $err";; esac
		s4=$(gate_status r.json 4) s5=$(gate_status r.json 5)
		case "$s4/$s5" in pass/pass|unverifiable/*|*/unverifiable) ;;
		*) fail "run $i: gate 4 $s4, gate 5 $s5: $(problem_codes r.json 4) $(problem_codes r.json 5)";;
		esac
	done
	pg maps "$(cat svc.pid)"
	case $rc in 0|1) ;; *) fail "maps exit $rc";; esac
}

run_tests
