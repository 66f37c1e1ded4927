#!/usr/bin/env bash
# The wheel, made by `meson compile wheel` (cmd/dist/wheel.py) from a plain build, then
# installed by pip where Python users are:
#   - made without the network (in a network namespace of its own); a zip whose RECORD
#     digests, WHEEL tag, METADATA and console script are as the wheel spec says; the
#     bundle inside it byte for byte; the tag's claims read with readelf (a static launcher,
#     the bundle's loader and libraries, a witness of glibc 2.17); the same bytes twice; a
#     bundle that breaks a claim is refused
#   - a fresh venv of Debian 12's /usr/bin/python3 (3.11): pip install --no-index, the
#     console script, python -m provgate, certify of the demo, pip uninstall leaving no file;
#     then tests/python/test_provgate.py (pytest) against the demo's live chain
#   - the same in podman on Debian 11 (mmdebstrap bullseye: glibc 2.31, Python 3.9, pip 20.3)
#     and on Debian 12 (mmdebstrap bookworm: glibc 2.36, Python 3.11), with the demo's service
#     run by that system's python3
# The plain build is t-bundle.sh's ($PVG_BUILD/t-bundle, under its lock); the Debian 11
# and Debian 12 root file systems are kept in $PVG_TEST_CACHE (tests/helpers/rootfs.sh).
# timeout: 900
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/podman.sh"

DIST=$PVG_BUILD/t-bundle
VERSION=$(sed -n "s/^  version : '\(.*\)',$/\1/p" "$PVG_SRC/meson.build" | head -n1)
NAME=provgate-$VERSION-x86_64-linux
WHEEL_NAME=provgate-$VERSION-py3-none-manylinux_2_17_x86_64.whl
BULLSEYE=(bullseye-python3-venv bullseye python3,python3-venv,python3-pip,python3-pytest)
BOOKWORM=(bookworm-python3-venv bookworm python3,python3-venv,python3-pip,python3-pytest)
rootfs() { "$PVG_SRC/tests/helpers/rootfs.sh" "$@"; }
PY=/usr/bin/python3 # Debian's (the python3 on PATH may be another)

# dist: the plain build's bundle and wheel, made once a run of this file, offline
dist() {
	need meson ninja mmdebstrap podman readelf unshare flock unzip "$PY"
	"$PY" -c 'import pytest, venv, ensurepip' 2>/dev/null ||
		fail "Debian's python3-pytest and python3-venv are needed"
	[ "$(id -u)" = 0 ] || { [ "${CI:-}" = true ] && fail "needs root (unshare -n)"; echo "SKIP: needs root" >&2; exit 77; }
	mkdir -p "$DIST"
	( rootfs "${BULLSEYE[@]}" >/dev/null 2>&1 & rootfs "${BOOKWORM[@]}" >/dev/null 2>&1 & )
	(
		flock 9
		[ -f "$DIST/wheel-made.$$" ] && exit 0
		rm -f "$DIST"/wheel-made.*
		if [ ! -f "$DIST/build/build.ninja" ]; then
			meson setup "$DIST/build" "$PVG_SRC" --prefix=/usr -Dman=enabled >"$DIST/setup.log" 2>&1 ||
				{ cat "$DIST/setup.log" >&2; exit 1; }
		fi
		# (meson compile looks the target up before ninja regenerates a changed build)
		ninja -C "$DIST/build" build.ninja >/dev/null 2>&1 &&
		unshare --net -- meson compile -C "$DIST/build" wheel >"$DIST/wheel.log" 2>&1 ||
			{ tail -40 "$DIST/wheel.log" >&2; exit 1; }
		touch "$DIST/wheel-made.$$"
	) 9>"$DIST/lock" || fail "building the wheel failed"
	WHEEL=$DIST/build/$WHEEL_NAME TARBALL=$DIST/build/$NAME.tar.gz
	[ -s "$WHEEL" ] || fail "no $WHEEL"
}

# the demo's chain in $T (as the demo builds it) and its config
demo_chain() {
	need git hipcc jq ss
	W=$T svc="$PVG_BUILD/tests/helpers/fake-service" pg=$PROVGATE
	scenario_tag=${scenario_tag:-whl-$$-$RANDOM}
	# shellcheck source=../demo/scenario.sh
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.03 # the start time has clock-tick resolution: start one tick after the install
}

# files VENV: every path in the venv, with its type, sorted
files() { (cd "$1" && find . -printf '%y %p\n' | sort); }

# ---- the wheel as made ----------------------------------------------------------------------

test_wheel_is_made_offline_as_the_spec_says() {
	dist
	mkdir x && (cd x && unzip -q "$WHEEL")
	# RECORD: every file once, with its sha256 (urlsafe base64, no padding) and size
	"$PY" - "$WHEEL" <<-'PY' || fail "RECORD"
	import base64, csv, hashlib, io, sys, zipfile
	z = zipfile.ZipFile(sys.argv[1])
	names = z.namelist()
	assert len(names) == len(set(names)), "a name twice"
	rec = [n for n in names if n.endswith(".dist-info/RECORD")]
	assert len(rec) == 1, rec
	rows = list(csv.reader(io.StringIO(z.read(rec[0]).decode())))
	assert sorted(r[0] for r in rows) == sorted(names), "RECORD lists other files"
	for path, digest, size in rows:
	    if path == rec[0]:
	        assert (digest, size) == ("", ""), "RECORD's own row"
	        continue
	    data = z.read(path)
	    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
	    assert digest == want, path + ": digest"
	    assert int(size) == len(data), path + ": size"
	print(len(rows), "files in RECORD", file=sys.stderr)
	PY
	local di=x/provgate-$VERSION.dist-info
	assert_eq "$(sed -n 's/^Tag: //p' "$di/WHEEL")" py3-none-manylinux_2_17_x86_64 "WHEEL's Tag"
	assert_contains "$(cat "$di/WHEEL")" "Root-Is-Purelib: false"
	assert_contains "$(cat "$di/WHEEL")" "Wheel-Version: 1.0"
	assert_eq "$(sed -n 's/^Name: //p;s/^Version: /v/p' "$di/METADATA" | tr '\n' ' ')" "provgate v$VERSION " "METADATA"
	assert_eq "$(cat "$di/entry_points.txt")" "$(printf '[console_scripts]\nprovgate = provgate._cli:main')"
	[ -f x/provgate/py.typed ] || fail "no py.typed"
	assert_eq "$(cat x/provgate/_version.py | sed -n 's/^__version__ = //p')" "\"$VERSION\""
	# the bundle, whole and byte for byte, with the modes that matter
	mkdir t && tar -C t -xzf "$TARBALL"
	diff -r "t/$NAME" x/provgate/_bundle || fail "the wheel's bundle differs from the tarball"
	local f
	for f in bin/provgate libexec/provgate/provgate libexec/provgate/lib/ld-linux-x86-64.so.2; do
		unzip -Z "$WHEEL" "provgate/_bundle/$f" | grep -q '^-rwxr-xr-x' || fail "$f is not executable in the zip"
	done
	# the tag's claims: nothing of the host's glibc for provgate, 2.17 for the witness
	local b=x/provgate/_bundle
	! readelf -lW "$b/bin/provgate" | grep -Eq '^\s*(INTERP|DYNAMIC)' || fail "the launcher is not static"
	assert_eq "$(readelf -lW "$b/libexec/provgate/provgate" | sed -n 's/.*interpreter: \(.*\)]/\1/p')" \
		ld-linux-x86-64.so.2 "the program's loader"
	assert_contains "$(readelf -dW "$b/libexec/provgate/provgate")" "Library rpath: [\$ORIGIN/lib]"
	local lib n=0
	for f in "$b/libexec/provgate/provgate" "$b"/libexec/provgate/lib/*; do
		for lib in $(readelf -dW "$f" | sed -n 's/.*(NEEDED).*\[\([^]]*\)\].*/\1/p'); do
			[ -f "$b/libexec/provgate/lib/$lib" ] || fail "$f needs $lib, not in the bundle"
			n=$((n + 1))
		done
	done
	[ "$n" -ge 10 ] || fail "only $n DT_NEEDED read"
	assert_eq "$(readelf -VW "$b/lib/provgate/libprovgate-witness.so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)" \
		GLIBC_2.17 "the witness's newest glibc symbol"
	# the same bytes again, from the same tarball
	"$PVG_SRC/cmd/dist/wheel.py" again.whl "$TARBALL" "$VERSION" "$PVG_SRC" || fail "wheel.py"
	cmp again.whl "$WHEEL" || fail "a second wheel differs"
	echo "wheel $(stat -c %s "$WHEEL") bytes, $(unzip -Z1 "$WHEEL" | wc -l) files" >&2
}

test_wheel_refuses_a_bundle_that_breaks_the_tag() {
	dist
	set +e
	mkdir t && tar -C t -xzf "$TARBALL"
	# a launcher that uses the host's glibc
	cp /bin/true "t/$NAME/bin/provgate"
	tar -C t -czf dyn.tar.gz "$NAME"
	e=$("$PVG_SRC/cmd/dist/wheel.py" dyn.whl dyn.tar.gz "$VERSION" "$PVG_SRC" 2>&1); rc=$?
	assert_eq "$rc" 1 "a dynamic launcher"
	assert_contains "$e" "bin/provgate is not static"
	# a library missing: the host's would be loaded
	rm -rf t && mkdir t && tar -C t -xzf "$TARBALL"
	rm "t/$NAME/libexec/provgate/lib/libgit2.so.1.5"
	tar -C t -czf nolib.tar.gz "$NAME"
	e=$("$PVG_SRC/cmd/dist/wheel.py" nolib.whl nolib.tar.gz "$VERSION" "$PVG_SRC" 2>&1); rc=$?
	assert_eq "$rc" 1 "a library missing"
	assert_contains "$e" "needs libgit2.so.1.5, which is not in the bundle"
	# a symbolic link (a wheel holds files only)
	rm -rf t && mkdir t && tar -C t -xzf "$TARBALL"
	ln -s provgate "t/$NAME/bin/pg"
	tar -C t -czf link.tar.gz "$NAME"
	e=$("$PVG_SRC/cmd/dist/wheel.py" link.whl link.tar.gz "$VERSION" "$PVG_SRC" 2>&1); rc=$?
	assert_eq "$rc" 1 "a symbolic link"
	assert_contains "$e" "bin/pg: only files and folders go into a wheel"
	set -e
	[ ! -e dyn.whl ] && [ ! -e nolib.whl ] && [ ! -e link.whl ] || fail "a wheel was written"
}

# ---- Debian 12 ------------------------------------------------------------------------------

test_debian12_venv_installs_certifies_and_uninstalls() {
	dist
	demo_chain
	trap scenario_stop EXIT
	scenario_start
	request "4096 5120 torch.bfloat16"
	scenario_config
	"$PY" -m venv v
	files v >before.txt
	v/bin/pip install -q --no-index "$WHEEL" || fail "pip install --no-index"
	assert_eq "$(v/bin/pip list --format=freeze 2>/dev/null | sed 's/==.*//' | grep -v '^\(pip\|setuptools\)$')" \
		provgate "what pip installed"
	local out
	out=$(v/bin/provgate --version) || fail "provgate --version"
	assert_eq "$(head -n1 <<<"$out")" "provgate $VERSION"
	assert_contains "$out" "running from the bundle at $T/v/lib/python3.11/site-packages/provgate/_bundle"
	out=$(v/bin/python -m provgate --version) || fail "python -m provgate --version"
	assert_eq "$(head -n1 <<<"$out")" "provgate $VERSION"
	# the console script's process is the bundle's provgate itself (exec, not a child)
	# (blocked writing a large output to a pipe nobody reads yet)
	local rocsparse; rocsparse=$(ls /usr/lib/x86_64-linux-gnu/librocsparse.so.0.* | head -n1)
	[ -f "$rocsparse" ] || fail "no librocsparse.so.0 (librocsparse0)"
	mkfifo fifo
	v/bin/provgate inspect "$rocsparse" >fifo &
	local p=$! i
	exec 3<fifo
	local exe=$T/v/lib/python3.11/site-packages/provgate/_bundle/libexec/provgate/provgate
	# (the script's interpreter is "provgate" in comm too: wait for the exec)
	for i in $(seq 200); do [ "$(readlink /proc/$p/exe)" = "$exe" ] && break; sleep 0.02; done
	assert_eq "$(readlink /proc/$p/exe)" "$exe" "the console script's process"
	assert_eq "$(cat /proc/$p/comm)" provgate "its comm"
	! awk '$6 ~ /^\// {print $6}' /proc/$p/maps | grep -v "^$T/v/lib/python3.11/site-packages/provgate/_bundle/" | grep -q . ||
		fail "maps a file from outside the bundle"
	exec 3<&-; wait $p || true
	set +e
	v/bin/provgate certify -c /nonexistent.json 2>/dev/null; rc=$?
	set -e
	assert_eq "$rc" 2 "the console script's exit status"
	out=$(v/bin/python -c 'import provgate, sys; r = provgate.certify(sys.argv[1]); print(r.certified, [g.status for g in r.gates])' "$T/provgate.json") ||
		fail "provgate.certify in Debian 12's venv"
	assert_eq "$out" "True ['pass', 'pass', 'pass', 'pass', 'pass', 'pass', 'pass']"
	v/bin/pip uninstall -q -y provgate || fail "pip uninstall"
	files v >after.txt
	diff before.txt after.txt >&2 || fail "pip uninstall left files behind"
	# the API's tests (pytest, Debian's) in a venv that also sees the system's packages
	"$PY" -m venv --system-site-packages pv
	pv/bin/pip install -q --no-index "$WHEEL" || fail "pip install into the pytest venv"
	cp "$PVG_SRC/tests/python/test_provgate.py" .
	PVG_DEMO_CONFIG=$T/provgate.json PVG_VERSION=$VERSION pv/bin/python -m pytest -p no:cacheprovider \
		-v test_provgate.py >pytest.log 2>&1 || { cat pytest.log >&2; fail "pytest in Debian 12"; }
	grep -E ' (PASSED|FAILED|SKIPPED|ERROR)' pytest.log >&2
	tail -n1 pytest.log >&2
	! grep -Eq 'FAILED|SKIPPED|ERROR|xfail' pytest.log || fail "pytest did not pass every test"
	assert_eq "$(grep -c ' PASSED' pytest.log)" "$(grep -c '^def test_' test_provgate.py)" "tests passed"
}

# ---- Debian 11 and 12 root file systems ---------------------------------------------------


# venv_in_rootfs ROOTFS-ARRAY DEBIAN GLIBC PYTHON: the wheel in a fresh venv of that root file
# system's python3, in podman: install, --version, certify of the demo, uninstall, pytest
venv_in_rootfs() {
	local -n spec=$1
	local deb=$2 glibc=$3 pyver=$4
	dist
	ctr_setup
	local tar; tar=$(rootfs "${spec[@]}") || fail "mmdebstrap ${spec[1]} failed"
	local image="localhost/pvg-${spec[1]}-venv-$CTR_TAG:1"
	podman_ import -q "$tar" "$image" >/dev/null || fail "podman import"
	scenario_tag="whl$deb-$CTR_TAG"
	demo_chain
	: >gpu0
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	scenario_config
	cp "$PVG_SRC/tests/helpers/py-demo-service.py" "$PVG_SRC/tests/python/test_provgate.py" "$WHEEL" "$T/"
	local c=whl$deb-$CTR_TAG
	# CTR_TIMEOUT bounds each podman call: pip and pytest take a while in a container
	CTR_TIMEOUT=300
	podman_ run -d --name "$c" --label "pvg-test=$CTR_TAG" --network none --cap-add SYS_PTRACE \
		-v "$T:$T" "$image" sleep 900 >/dev/null || fail "podman run"
	in_ctr "$c" /bin/sh -c 'ldd --version | head -n1; python3 --version; python3 -m pip --version'
	assert_contains "$out" "$glibc" "Debian $deb's glibc"
	assert_contains "$out" "Python $pyver" "Debian $deb's Python"
	in_ctr "$c" /bin/sh -c 'python3 -m venv /opt/v && cd /opt/v && find . -printf "%y %p\n" | sort'
	assert_eq "$rc" 0 "venv ($err)"
	local before=$out
	in_ctr "$c" /opt/v/bin/pip install -q --no-index "$T/$WHEEL_NAME"
	assert_eq "$rc" 0 "pip install --no-index in Debian $deb ($out $err)"
	in_ctr "$c" /opt/v/bin/provgate --version
	assert_eq "$rc" 0 "provgate --version in Debian $deb ($err)"
	assert_eq "$(head -n1 <<<"$out")" "provgate $VERSION"
	assert_contains "$out" "running from the bundle at /opt/v/lib/python$pyver/site-packages/provgate/_bundle"
	in_ctr "$c" /opt/v/bin/python -m provgate --version
	assert_eq "$(head -n1 <<<"$out")" "provgate $VERSION" "python -m provgate in Debian $deb"
	# the demo's service, run by the root file system's python3 in the container
	ctr_exec -d "$c" python3 "$T/py-demo-service.py" --port "$port" --lib "$T/site/vllm_demo/_rocm_C.abi3.so" \
		--device "$T/gpu0" --log "$T/logs/server.log" --pidfile "$T/run/serve.pid" \
		--engine-pidfile "$T/run/engine.pid" --tag "$scenario_tag"
	local i
	for i in $(seq 300); do [ -s run/serve.pid ] && break; sleep 0.02; done
	[ -s run/serve.pid ] || fail "the Python service did not start"
	printf '4096 5120 torch.bfloat16\n' >logs/server.log.request
	ctr_exec "$c" /bin/sh -c "kill -USR1 \$(cat $T/run/engine.pid)" || fail "cannot signal the engine"
	for i in $(seq 300); do grep -q 'request 1 done' logs/server.log && break; sleep 0.02; done
	grep -q 'request 1 done' logs/server.log || fail "the engine did not answer"
	# a stand-in for amdgpu's list of GPU processes (pids of the host's namespace)
	mkdir -p "$T/sys/class/kfd/kfd/proc/$(pgrep -n -f "^VLLM::EngineCore $scenario_tag")"
	in_ctr "$c" /opt/v/bin/python -c 'import provgate, sys; r = provgate.certify(sys.argv[1]); print(r.certified, [g.status for g in r.gates])' "$T/provgate.json"
	assert_eq "$rc" 0 "provgate.certify in Debian $deb ($err)"
	assert_eq "$out" "True ['pass', 'pass', 'pass', 'pass', 'pass', 'pass', 'pass']"
	in_ctr "$c" /opt/v/bin/pip uninstall -q -y provgate
	assert_eq "$rc" 0 "pip uninstall ($err)"
	in_ctr "$c" /bin/sh -c 'cd /opt/v && find . -printf "%y %p\n" | sort'
	assert_eq "$out" "$before" "the venv after pip uninstall"
	# the API's tests with Debian $deb's pytest
	in_ctr "$c" /bin/sh -c "python3 -m venv --system-site-packages /opt/pv && /opt/pv/bin/pip install -q --no-index $T/$WHEEL_NAME"
	assert_eq "$rc" 0 "the pytest venv ($err)"
	in_ctr -e "PVG_DEMO_CONFIG=$T/provgate.json" -e "PVG_VERSION=$VERSION" "$c" \
		/opt/pv/bin/python -m pytest -p no:cacheprovider -v "$T/test_provgate.py"
	echo "$out" | grep -E ' (PASSED|FAILED|SKIPPED|ERROR)' >&2 || true
	echo "$out" | tail -n1 >&2
	[ "$rc" = 0 ] || { echo "$out" >&2; echo "$err" >&2; fail "pytest in Debian $deb"; }
	! grep -Eq 'FAILED|SKIPPED|ERROR' <<<"$out" || fail "pytest did not pass every test"
	assert_eq "$(grep -c ' PASSED' <<<"$out")" "$(grep -c '^def test_' test_provgate.py)" "tests passed"
}


test_debian11_venv_installs_certifies_and_uninstalls() {
	venv_in_rootfs BULLSEYE 11 2.31 3.9
}

# the same in a Debian 12 root file system, not this machine's own Debian 12
test_debian12_rootfs_venv_installs_certifies_and_uninstalls() {
	venv_in_rootfs BOOKWORM 12 2.36 3.11
}

run_tests
