#!/usr/bin/env bash
# Where the services run: the relocatable bundle and the Debian package, each made by its one
# command from a plain build (meson compile bundle / deb), then used where users use them.
#   - the bundle from any folder: --version says what it holds; its process is provgate
#     (exe, comm, command line); it refuses a 32-bit personality, an old kernel, a library
#     missing from it; the package is lintian clean of errors
#   - Debian 11 (mmdebstrap bullseye, glibc 2.31, Python 3.9) in podman: the bundle certifies
#     the demo's service run by Debian 11's python3, inspects real HIP libraries, and the
#     witness loads into Debian 11's Python and writes its file
#   - the bundle copied into a running container (podman cp) certifies as the inside view does
#   - the package installed by apt into a clean Debian 12 (mmdebstrap bookworm): its Depends
#     bring what it loads; --version, man provgate, the demo's certify
# The build is kept in $PVG_BUILD/t-bundle; the root file systems in $PVG_TEST_CACHE
# (default /var/tmp/provgate-test-cache), made once and reused (delete them to refresh); on a
# fresh machine the download takes minutes (.ci/run starts it before the suite):
# timeout: 900
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/podman.sh"

DIST=$PVG_BUILD/t-bundle
VERSION=$(sed -n "s/^  version : '\(.*\)',$/\1/p" "$PVG_SRC/meson.build" | head -n1)
NAME=provgate-$VERSION-x86_64-linux
ROCSPARSE=$(ls /usr/lib/x86_64-linux-gnu/librocsparse.so.0.* 2>/dev/null | head -n1)

# the root file systems (tests/helpers/rootfs.sh; .ci/run starts them before the suite)
BULLSEYE=(bullseye-python3-venv bullseye python3,python3-venv,python3-pip,python3-pytest) # as t-wheel.sh's
BOOKWORM=(bookworm-python3-man bookworm python3,man-db)
rootfs() { "$PVG_SRC/tests/helpers/rootfs.sh" "$@"; }

# dist: the plain build, its bundle and package (incremental after the first time; made
# once a run of this file), and the root file systems started in the background meanwhile
dist() {
	need meson ninja mmdebstrap podman dpkg-deb dpkg-shlibdeps lintian man setarch flock
	mkdir -p "$DIST"
	( rootfs "${BULLSEYE[@]}" >/dev/null 2>&1 & rootfs "${BOOKWORM[@]}" >/dev/null 2>&1 & )
	(
		flock 9
		[ -f "$DIST/made.$$" ] && exit 0
		rm -f "$DIST"/made.*
		if [ ! -f "$DIST/build/build.ninja" ]; then
			meson setup "$DIST/build" "$PVG_SRC" --prefix=/usr -Dman=enabled >"$DIST/setup.log" 2>&1 ||
				{ cat "$DIST/setup.log" >&2; exit 1; }
		fi
		meson compile -C "$DIST/build" bundle deb >"$DIST/compile.log" 2>&1 ||
			{ tail -40 "$DIST/compile.log" >&2; exit 1; }
		touch "$DIST/made.$$"
	) 9>"$DIST/lock" || fail "building the bundle and the package failed"
	TARBALL=$DIST/build/$NAME.tar.gz DEB=$DIST/build/provgate_${VERSION}_amd64.deb
	[ -s "$TARBALL" ] || fail "no $TARBALL"
	[ -s "$DEB" ] || fail "no $DEB"
}

unpack() { # unpack DIR: the bundle unpacked in DIR; sets B (its root)
	mkdir -p "$1"
	tar -C "$1" -xzf "$TARBALL"
	B=$(cd "$1/$NAME" && pwd)
}

# the demo's chain in $T (as the demo builds it), its config, a stand-in GPU device
demo_chain() {
	need git hipcc jq ss /usr/bin/python3
	W=$T svc=/nonexistent scenario_tag="bdl-$CTR_TAG"
	# shellcheck source=../demo/scenario.sh
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	: >gpu0
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	scenario_config
	cp "$PVG_SRC/tests/helpers/py-demo-service.py" "$T/"
	sleep 0.03 # the start time has clock-tick resolution: start one tick after the install
}

# py_service CTR: the demo's service by the container's python3, in container CTR; waits for it
py_service() {
	ctr_exec -d "$1" python3 "$T/py-demo-service.py" --port "$port" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--device "$T/gpu0" --log "$T/logs/server.log" --pidfile "$T/run/serve.pid" \
		--engine-pidfile "$T/run/engine.pid" --tag "$scenario_tag"
	local i
	for i in $(seq 300); do [ -s run/serve.pid ] && break; sleep 0.02; done
	[ -s run/serve.pid ] || fail "the Python service in $1 did not start"
	printf '4096 5120 torch.bfloat16\n' >logs/server.log.request
	ctr_exec "$1" /bin/sh -c "kill -USR1 \$(cat $T/run/engine.pid)" || fail "cannot signal the engine"
	for i in $(seq 300); do grep -q 'request 1 done' logs/server.log && return 0; sleep 0.02; done
	fail "the engine did not answer"
}


# kfd_tree PID...: a stand-in for amdgpu's list of GPU processes (pids of the host's namespace)
kfd_tree() {
	mkdir -p "$T/sys/class/kfd/kfd/proc"
	local p; for p in "$@"; do mkdir -p "$T/sys/class/kfd/kfd/proc/$p"; done
}
host_pid_of() { pgrep -n -f "^$1 $scenario_tag"; }
show() { jq -r '.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"' "$1" >&2; }

# ---- the bundle and the package as made ---------------------------------------------------

test_bundle_runs_from_any_folder_and_says_what_it_holds() {
	dist
	unpack "$T/some where"
	mkdir elsewhere && cd elsewhere
	out=$("$B/bin/provgate" --version) || fail "--version from the bundle"
	assert_contains "$out" "provgate $VERSION"
	assert_contains "$out" "running from the bundle at $B"
	assert_contains "$out" "loader: libexec/provgate/lib/ld-linux-x86-64.so.2 (glibc "
	# every library the program loads is in the bundle and its manifest (with its package),
	# and the launcher is static
	local l n=0
	for l in $(ldd "$DIST/build/cmd/provgate" | awk '$2 == "=>" {print $1}'); do
		[ -f "$B/libexec/provgate/lib/$l" ] || fail "$l is not in the bundle"
		assert_contains "$out" "    $l (" "the manifest's libraries"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ] || fail "ldd listed $n libraries"
	assert_contains "$out" "    libcrypto.so.3 (libssl3 "
	# procps' libproc2 reads the process table; Debian 11 and RHEL have no procps 4
	assert_contains "$out" "    libproc2.so.0 (libproc2-0 "
	! readelf -l "$B/bin/provgate" | grep -q INTERP || fail "the launcher has a loader"
	assert_eq "$(readelf -l "$B/libexec/provgate/provgate" | sed -n 's/.*interpreter: \(.*\)]/\1/p')" \
		ld-linux-x86-64.so.2 "the program's PT_INTERP"
	# through a symbolic link on PATH, a relative path, with LD_LIBRARY_PATH pointing elsewhere
	mkdir bin && ln -s "$B/bin/provgate" bin/provgate
	assert_contains "$(PATH="$PWD/bin:$PATH" LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu provgate --version)" \
		"running from the bundle at $B"
	assert_contains "$(cd "$B/.." && "./$NAME/bin/provgate" --version)" "running from the bundle at $B"
	# its own files: the schema init names, the witness exec --witness prints
	mkdir proj && (cd proj && "$B/bin/provgate" init >/dev/null 2>&1) || true
	[ -f proj/provgate.json ] && assert_contains "$(cat proj/provgate.json)" "$B/share/provgate/config.schema.json"
	assert_contains "$("$B/bin/provgate" exec --witness "$T/w" 2>&1 || true)" \
		"$B/lib/provgate/libprovgate-witness.so"
	MANWIDTH=80 man -M "$B/share/man" provgate 2>/dev/null | grep -q '^NAME' || fail "man -M ROOT/share/man provgate"
	# the tarball and its size, for the README
	echo "bundle $(stat -c %s "$TARBALL") bytes, unpacked $(du -sk "$B" | cut -f1) KiB" >&2
}

test_bundled_process_is_provgate_itself() {
	dist
	unpack "$T"
	[ -f "$ROCSPARSE" ] || fail "no librocsparse.so.0 (librocsparse0)"
	# provgate blocked writing to a full pipe: its process, as other tools and gate 5 see it
	mkfifo fifo
	"$B/bin/provgate" inspect "$ROCSPARSE" >fifo &
	p=$!
	local first
	exec 3<fifo
	# its first line says the program runs past its start (cmd/dist/bundle.c): comm is
	# "provgate" from the launcher's exec on, and exe is the program's from the second exec
	# on, but until the program returns to the caller's folder its cwd is the bundle's lib/
	IFS= read -r -t 60 -u 3 first || fail "no output from the bundle's provgate"
	assert_eq "$first" "$ROCSPARSE:" "its first line"
	assert_eq "$(cat /proc/$p/comm)" provgate "comm"
	assert_eq "$(readlink /proc/$p/exe)" "$B/libexec/provgate/provgate" "/proc/PID/exe"
	assert_eq "$(tr '\0' ' ' </proc/$p/cmdline)" "$B/bin/provgate inspect $ROCSPARSE " "command line"
	assert_eq "$(readlink /proc/$p/cwd)" "$T" "working directory"
	! tr '\0' '\n' </proc/$p/maps | awk '$6 ~ /^\//' | grep -v "^.* $B/" | grep -q . ||
		fail "maps a file from outside the bundle: $(awk '$6 ~ /^\// {print $6}' /proc/$p/maps | grep -v "^$B/" | sort -u)"
	# another run of it is provgate, not a process of a service: maps PATTERN does not pick it
	bash -c "exec -a 'svc inspect $ROCSPARSE' sleep 300" &
	s=$!
	trap 'kill $s $p 2>/dev/null || true' EXIT
	out=$("$B/bin/provgate" maps "inspect $ROCSPARSE" 2>&1) || true
	assert_contains "$out" "pid $s" "the sleep is a match"
	assert_not_contains "$out" "pid $p " "the other provgate is not"
	kill $s; exec 3<&-; wait $p 2>/dev/null || true
}

test_bundle_refuses_what_it_cannot_run_on() {
	dist
	unpack "$T"
	set +e
	e=$(setarch i686 "$B/bin/provgate" --version 2>&1); rc=$?
	set -e
	assert_eq "$rc" 3 "exit on a 32-bit personality"
	assert_contains "$e" "this bundle is for x86_64 Linux; this machine is i686"
	set +e
	e=$(setarch "$(uname -m)" --uname-2.6 "$B/bin/provgate" --version 2>&1); rc=$?
	set -e
	assert_eq "$rc" 3 "exit on a kernel that says 2.6"
	assert_contains "$e" "is too old: this bundle needs Linux 4.1 or newer"
	# a library missing from the bundle is not taken from the host (this host has them all)
	mv "$B/libexec/provgate/lib/libgit2.so.1.5" "$T/"
	set +e
	e=$("$B/bin/provgate" --version 2>&1); rc=$?
	set -e
	assert_eq "$rc" 3 "exit with a library missing"
	assert_contains "$e" "is not whole: /"
	assert_contains "$e" "libgit2.so.1.5 was loaded from the host"
	assert_not_contains "$e" "provgate $VERSION" "nothing ran"
	# the program started without the launcher
	mv "$T/libgit2.so.1.5" "$B/libexec/provgate/lib/"
	set +e
	e=$(cd "$B/libexec/provgate/lib" && ../provgate --version 2>&1); rc=$?
	set -e
	assert_eq "$rc" 3 "the program by itself"
	assert_contains "$e" "start $B/bin/provgate"
}

test_package_is_lintian_clean_of_errors() {
	dist
	lintian --no-cfg "$DEB" >lintian.txt 2>&1 || true
	cat lintian.txt >&2
	assert_eq "$(grep -c '^E:' lintian.txt)" 0 "lintian errors"
	local deps; deps=$(dpkg-deb -f "$DEB" Depends)
	# (that every library it needs is in Depends is checked where apt installs it, below)
	for p in libc6 libelf1 libssl3 libgit2 libcjson1 libproc2-0; do
		assert_contains "$deps" "$p" "Depends"
	done
	dpkg-deb -c "$DEB" | grep -q ' ./usr/lib/x86_64-linux-gnu/provgate/libprovgate-witness.so$' || fail "no witness"
	dpkg-deb -c "$DEB" | grep -q ' ./usr/share/man/man1/provgate.1.gz$' || fail "no man page"
	dpkg-deb -c "$DEB" | grep -q ' ./usr/lib/x86_64-linux-gnu/pkgconfig/provgate.pc$' || fail "no pkg-config file"
	[ ! -e "$PVG_SRC/debian" ] || fail "a debian/ folder at the top of the tree"
}

# ---- Debian 11 ------------------------------------------------------------------------------

test_debian11_bundle_certifies_inspects_and_loads_the_witness() {
	dist
	[ -f "$ROCSPARSE" ] || fail "no librocsparse.so.0 (librocsparse0)"
	ctr_setup
	local tar; tar=$(rootfs "${BULLSEYE[@]}") || fail "mmdebstrap bullseye failed"
	podman_ import -q "$tar" "localhost/pvg-bullseye-$CTR_TAG:1" >/dev/null ||
		fail "podman import"
	unpack "$T/b"
	demo_chain
	local c=deb11-$CTR_TAG
	podman_ run -d --name "$c" --label "pvg-test=$CTR_TAG" --network host --cap-add SYS_PTRACE \
		-v "$T:$T" -v "$B:/opt/provgate:ro" -v "$ROCSPARSE:/opt/rocm/lib/librocsparse.so.0:ro" \
		"localhost/pvg-bullseye-$CTR_TAG:1" sleep 600 >/dev/null || fail "podman run"
	in_ctr "$c" /bin/sh -c 'ldd --version | head -n1; python3 --version'
	assert_contains "$out" "2.31" "Debian 11's glibc"
	assert_contains "$out" "Python 3.9" "Debian 11's Python"
	py_service "$c"
	kfd_tree "$(host_pid_of VLLM::EngineCore)"
	in_ctr "$c" /opt/provgate/bin/provgate certify --json "$T/r.json"
	show r.json
	assert_eq "$rc" 0 "certified in Debian 11 ($err)"
	assert_contains "$out" "CERTIFIED: all seven gates passed"
	validate r.json
	assert_eq "$(jq -r .view.kind r.json)" container "view"
	assert_eq "$(jq -r '[.chain.processes[].pid] | length' r.json)" 3 "engine and two workers"
	# inspect: the demo's hipcc build and Debian 12's librocsparse, as the host's build sees them
	in_ctr "$c" /opt/provgate/bin/provgate inspect "$T/build/_rocm_C.abi3.so" /opt/rocm/lib/librocsparse.so.0
	assert_eq "$rc" 0 "inspect in Debian 11 ($err)"
	pg inspect "$T/build/_rocm_C.abi3.so" "$ROCSPARSE"
	assert_eq "$(sed "s|/opt/rocm/lib/librocsparse.so.0|$ROCSPARSE|" <<<"$out")" "$out" "inspect's output"
	local host_out=$out
	in_ctr "$c" /opt/provgate/bin/provgate inspect "$T/build/_rocm_C.abi3.so" /opt/rocm/lib/librocsparse.so.0
	assert_eq "$(sed "s|/opt/rocm/lib/librocsparse.so.0|$ROCSPARSE|" <<<"$out")" "$host_out" "the same as the host's"
	assert_contains "$out" gfx90a "the demo's code object"
	# the witness, loaded by Debian 11's Python (ctypes: dlopen), records a launch and writes
	mkdir -p wdir
	in_ctr "$c" env PROVGATE_WITNESS_DIR="$T/wdir" python3 -c '
import ctypes
w = ctypes.CDLL("/opt/provgate/lib/provgate/libprovgate-witness.so")
class Launch(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_uint64), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("via", ctypes.c_uint32),
                ("name", ctypes.c_char_p), ("module_of", ctypes.c_void_p),
                ("code_of", ctypes.c_void_p)]  # struct pvg_launch (lib/witness/witness.h)
l = Launch(7, (4, 1, 1), (64, 1, 1), 1, b"wvSplitK", None, None)
for _ in range(3):
    w.pvg_witness_record(ctypes.byref(l))
print("flush", w.pvg_witness_flush())'
	assert_eq "$rc" 0 "the witness in Debian 11's Python ($err)"
	assert_eq "$out" "flush 0"
	local f; f=$(ls wdir/*.pvgw) || fail "no witness file"
	out=$("$PVG_BUILD/tests/helpers/witness-tool" dump "$f")
	assert_contains "$out" "launches=3"
	assert_contains "$out" 'record name="wvSplitK"'
	assert_contains "$out" 'grid=4,1,1 block=64,1,1 via=1 flags=0 count=3'
}

# ---- podman cp into a running container -----------------------------------------------------

test_bundle_copied_into_a_running_container_certifies_as_inside() {
	dist
	ctr_setup
	unpack "$T/b"
	demo_chain
	local c=svc-$CTR_TAG
	ctr_run --name "$c" --network host -v "$T:$T" --cap-add SYS_PTRACE -v "$PVG_BUILD:$PVG_BUILD:ro" -- \
		"$PVG_BUILD/tests/helpers/fake-service" --server --workers 2 --port "$port" \
		--lib "$T/site/vllm_demo/_rocm_C.abi3.so" --device "$T/gpu0" --log "$T/logs/server.log" \
		--pidfile "$T/run/serve.pid" --engine-pidfile "$T/run/engine.pid" --tag "$scenario_tag" >/dev/null
	local i; for i in $(seq 250); do [ -s run/serve.pid ] && break; sleep 0.02; done
	printf '4096 5120 torch.bfloat16\n' >logs/server.log.request
	ctr_exec "$c" /bin/sh -c "kill -USR1 \$(cat $T/run/engine.pid)"
	for i in $(seq 250); do grep -q 'request 1 done' logs/server.log && break; sleep 0.02; done
	kfd_tree "$(host_pid_of VLLM::EngineCore)"
	ctr_exec "$c" mkdir -p /opt
	podman_ cp "$B" "$c:/opt/provgate" || fail "podman cp"
	in_ctr "$c" /opt/provgate/bin/provgate certify --json "$T/bundle.json"
	show bundle.json
	assert_eq "$rc" 0 "the copied bundle certified inside ($err)"
	assert_eq "$(jq -r .view.kind bundle.json)" container "view"
	# the meson build's provgate inside the same container (today's inside view)
	in_ctr -e "ASAN_OPTIONS=$ASAN_OPTIONS" -e "UBSAN_OPTIONS=$UBSAN_OPTIONS" "$c" "$PROVGATE" certify --json "$T/build.json"
	assert_eq "$rc" 0 "the build's provgate inside ($err)"
	local q='[.certified, .view.kind, .view.container.id, (.gates[] | "\(.id) \(.status) \([.problems[].code] | join(","))"), (.chain.processes | map(.pid) | sort)] | tostring'
	assert_eq "$(jq -r "$q" bundle.json)" "$(jq -r "$q" build.json)" "the two verdicts"
	assert_eq "$(jq -r .view.container.id bundle.json)" "$(podman_ inspect -f '{{.Id}}' "$c")" "container id"
}

# ---- the package in a clean Debian 12 -------------------------------------------------------

test_package_installs_into_a_clean_debian12() {
	dist
	ctr_setup
	# a minimal bookworm (python3 and man-db for the demo's service and man), where apt
	# installs the package with what its Depends name, from the Debian archive
	local tar; tar=$(rootfs "${BOOKWORM[@]}") || fail "mmdebstrap bookworm failed"
	podman_ import -q "$tar" "localhost/pvg-bookworm-$CTR_TAG:1" >/dev/null || fail "podman import"
	demo_chain
	local c=deb12-$CTR_TAG
	podman_ run -d --name "$c" --label "pvg-test=$CTR_TAG" --network host --cap-add SYS_PTRACE -v "$T:$T" \
		"localhost/pvg-bookworm-$CTR_TAG:1" sleep 600 >/dev/null || fail "podman run"
	in_ctr "$c" /bin/sh -c 'command -v provgate || echo none'
	assert_eq "$out" none "provgate before the install"
	podman_ cp "$DEB" "$c:/tmp/provgate.deb"
	in_ctr -e DEBIAN_FRONTEND=noninteractive "$c" /bin/sh -c \
		'apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/provgate.deb'
	assert_eq "$rc" 0 "apt-get install ./provgate.deb ($out $err)"
	# each library provgate and libprovgate name (DT_NEEDED) belongs to a package of Depends
	dpkg-deb -x "$DEB" x
	local needed soname path p deps; deps=$(dpkg-deb -f "$DEB" Depends)
	needed=$(for f in x/usr/bin/provgate x/usr/lib/*/libprovgate.so.*.*; do readelf -d "$f"; done |
		sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
	[ -n "$needed" ] || fail "no DT_NEEDED read"
	in_ctr "$c" ldd /usr/bin/provgate /usr/lib/x86_64-linux-gnu/libprovgate.so.0
	local ldd_out=$out
	for soname in $needed; do
		case $soname in
		ld-linux-*) path=/lib64/$soname ;; # ldd names the loader without "=>"
		*) path=$(awk -v s="$soname" '$1 == s && $3 ~ /^\// {print $3; exit}' <<<"$ldd_out") ;;
		esac
		[ -n "$path" ] || fail "$soname is not found in the container: $ldd_out"
		in_ctr "$c" /bin/sh -c "dpkg -S '$path' 2>/dev/null || dpkg -S \"\$(readlink -f '$path')\""
		p=${out%%:*}
		[ -n "$p" ] || fail "no package holds $path"
		assert_contains "$deps" "$p" "Depends (provgate needs $soname of $p)"
	done
	in_ctr "$c" provgate --version
	assert_eq "$out" "provgate $VERSION" "--version of the package"
	in_ctr "$c" env MANWIDTH=80 man provgate
	assert_eq "$rc" 0 "man provgate ($err)"
	assert_contains "$out" "NAME"
	assert_contains "$out" "provgate"
	in_ctr "$c" /bin/sh -c 'test -f /usr/share/provgate/config.schema.json && test -f /usr/lib/x86_64-linux-gnu/provgate/libprovgate-witness.so && echo ok'
	assert_eq "$out" ok "schemas and witness installed"
	py_service "$c"
	kfd_tree "$(host_pid_of VLLM::EngineCore)"
	in_ctr "$c" provgate certify --json "$T/r.json"
	show r.json
	assert_eq "$rc" 0 "the package's provgate certified the demo ($err)"
	assert_contains "$out" "CERTIFIED: all seven gates passed"
	in_ctr "$c" dpkg -r provgate
	assert_eq "$rc" 0 "dpkg -r"
	in_ctr "$c" /bin/sh -c 'command -v provgate || echo none'
	assert_eq "$out" none "provgate after dpkg -r"
}

run_tests
