#!/usr/bin/env bash
# timeout: 400
# A root certify under strace -f against the demo's service run by an ordinary user in a root
# of its own (a chroot with the host's /usr read-only), whose environment, root and venv are
# the user's and name host files as bait. What every syscall of provgate and its children
# shows (SPEC §11):
#   - no execve of anything that user can write (the venv's interpreter, its folder);
#   - no open of a device node (the bait links into /dev, TZ=/proc/kmsg's kind);
#   - no open of a path outside the service's root for paths that came from it (its TZ
#     names a root-only host file; a link in its root points at another).
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"

svc_bin="$PVG_BUILD/tests/helpers/fake-service"

setup_root() {
	need strace hipcc ninja chroot
	hostile_setup
	R=$SVC/root
	mkdir -p "$R/usr" "$R/proc" "$R/etc" "$R/tmp" "$R/dev"
	for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done
	mount --bind /usr "$R/usr" && mount -o remount,bind,ro "$R/usr"
	mount -t proc proc "$R/proc"
	trap 'teardown' EXIT
	chmod 1777 "$R/tmp"
	# bait on the host: root-only files the service names from its side
	BAIT=/etc/pvg-bait-$$-$RANDOM
	root_secret "$BAIT"
	root_secret "$BAIT.zone"
	# inside its root: a zone link to the host bait's path and a log link into /dev
	ln -s "$BAIT.zone" "$R/etc/localtime"
	W=$R/w
	mkdir -p "$W"
}

teardown() {
	scenario_stop 2>/dev/null || true
	umount -l "$R/proc" 2>/dev/null || true
	umount -l "$R/usr" 2>/dev/null || true
	rm -f "$BAIT" "$BAIT.zone"
}

# The demo's scenario built and installed by root into a venv the user owns.
build_scenario() {
	cd "$W"
	pg=$PROVGATE
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	/usr/bin/python3 -m venv --without-pip venv || fail "python3 -m venv failed"
	site=$(ls -d venv/lib/python3*/site-packages)
	mkdir -p "$site/vllm_demo" site/vllm_demo
	install -m 644 repo/vllm_demo/*.py site/vllm_demo/
	install -m 755 build/_rocm_C.abi3.so "$site/vllm_demo/_rocm_C.abi3.so"
	cp "$site/vllm_demo/_rocm_C.abi3.so" site/vllm_demo/_rocm_C.abi3.so
	cp "$svc_bin" "$W/fake-service"
	chown -R "$HOSTILE_UID:$HOSTILE_GID" venv logs run
	# the user's venv does what a user may do to their own venv
	echo "import os; open('/tmp/pvg-pth-ran', 'w')" >"$site/pvg-evil.pth"
	chown "$HOSTILE_UID:$HOSTILE_GID" "$site/pvg-evil.pth"
}

# The service, as the user, in its root; TZ names the host bait.
start_service() {
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	# chroot needs CAP_SYS_CHROOT: enter as root, then drop to the user inside
	chroot --userspec="$HOSTILE_UID:$HOSTILE_GID" "$R" /usr/bin/env -i TZ=":$BAIT" HOME=/w \
		/w/fake-service --server --workers 1 --port "$port" \
		--lib "/w/$site/vllm_demo/_rocm_C.abi3.so" \
		--pidfile /w/run/serve.pid --engine-pidfile /w/run/engine.pid \
		--log /w/logs/server.log --tag "$scenario_tag" </dev/null >/dev/null 2>&1 &
	service_pid=$!
	for _ in $(seq 200); do [ -s run/engine.pid ] && break; sleep 0.05; done
	[ -s run/engine.pid ] || fail "the service did not start"
	request "4096 5120 torch.bfloat16" || fail "no request"
}

write_config() {
	scenario_config
	# the install is the venv's module, resolved through the user's interpreter
	jq --arg py "venv/bin/python3" '.install = {"python_module": "vllm_demo._rocm_C", "python": $py}
		| .source.install_map = [{"from": "vllm_demo/", "to": "site/vllm_demo/"}]' \
		provgate.json >p.json && mv p.json provgate.json
}

test_root_certify_runs_nothing_opens_no_device_and_stays_in_the_service_root() {
	# the promise: root's certify execs nothing the service's user can write, opens no
	# device node and opens no host path that a service-side path named
	setup_root
	build_scenario
	start_service
	write_config
	rm -f /tmp/pvg-pth-ran
	set +e
	# LeakSanitizer cannot run under ptrace; the other tests check for leaks
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -yy -s 512 -o "$T/trace" -e trace=execve,execveat,open,openat,openat2 \
		"$PROVGATE" certify -c provgate.json --keep-going --json "$T/report.json" \
		>"$T/out" 2>"$T/err"
	rc=$?
	set -e
	[ -f "$T/report.json" ] || { cat "$T/err"; fail "no report (exit $rc)"; }
	echo "certify exited $rc: $(jq -r '[.gates[] | "\(.id) \(.status)"] | join(", ")' "$T/report.json")"
	echo "syscalls traced: $(wc -l <"$T/trace"), processes: $(cut -d' ' -f1 "$T/trace" | sort -u | wc -l)"
	# every broken promise is listed, not only the first
	broken=
	[ ! -e /tmp/pvg-pth-ran ] && [ ! -e "$R/tmp/pvg-pth-ran" ] || broken+="the venv's .pth ran as root; "
	# 1. execve: the first is provgate itself; every other must not be the user's to write
	while read -r path; do
		[ "$path" = "$PROVGATE" ] && continue
		if as_hostile test -w "$path" || as_hostile test -w "$(dirname "$path")"; then
			broken+="execve of $path, which $HOSTILE_USER can write; "
		fi
	done < <(sed -n 's/^[0-9]* *execve(\(AT_FDCWD<[^>]*>, \)\{0,1\}"\([^"]*\)".*= 0$/\2/p' "$T/trace")
	# 2. no device node was opened (O_PATH resolves without opening)
	devs=$(grep -E '= [0-9]+<[^>]*<(char|block) [0-9]+:[0-9]+>>' "$T/trace" |
		grep -v 'O_PATH' || true)
	[ -z "$devs" ] || broken+="device nodes opened: $devs; "
	# 3. the host's bait files were never opened
	bait=$(grep -F "$BAIT" "$T/trace" | grep -E '= [0-9]+<' || true)
	[ -z "$bait" ] || broken+="a host file named from the service side was opened: $bait; "
	! grep -q "root-secret" "$T/report.json" || broken+="the report holds the bait's text; "
	[ -z "$broken" ] || fail "$broken"
	# the chain itself still closes: nothing of this costs a real certification
	[ "$rc" = 0 ] && [ "$(jq -r .certified "$T/report.json")" = true ] || {
		jq '.gates[] | select(.status != "pass")' "$T/report.json"
		fail "not certified (exit $rc)"; }
}

run_tests
