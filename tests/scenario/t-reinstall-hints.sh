#!/usr/bin/env bash
# Gate 4's hints never contradict each other: after `pip install --force-reinstall` the
# service maps a deleted copy and is told to restart (not also to warm up); a service that
# started before the install and maps nothing is told to restart; only one that started
# after the install and maps nothing yet is told to warm up. Real venv, real pip, a real
# Python service loading the extension with ctypes.
source "$PVG_SRC/tests/lib.sh"

setup() {
	need /usr/bin/python3 jq cc
	/usr/bin/python3 -m venv --system-site-packages venv || fail "python3 -m venv"
	mkdir -p proj/fastnorm
	: >proj/fastnorm/__init__.py
	printf 'def use_kernel(m, n):\n    return True\n' >proj/fastnorm/ops.py
	echo 'int fastnorm(void) { return 1; }' >k.c
	cc -shared -fPIC -o proj/fastnorm/_C.abi3.so k.c
	cat >proj/pyproject.toml <<-'TOML'
	[build-system]
	requires = ["setuptools"]
	build-backend = "setuptools.build_meta"
	[project]
	name = "fastnorm"
	version = "0.1"
	[tool.setuptools]
	packages = ["fastnorm"]
	[tool.setuptools.package-data]
	fastnorm = ["*.so"]
	TOML
	pip_install
	site=$(venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	[ -f "$site/fastnorm/_C.abi3.so" ] || fail "pip did not install the library"
	tag="hints-$$-$RANDOM"
	cat >provgate.json <<-JSON
	{"build": {"artifact": "proj/fastnorm/_C.abi3.so"},
	 "install": {"python_module": "fastnorm._C", "python": "venv/bin/python3"},
	 "service": {"pidfile": "svc.pid"}}
	JSON
}

pip_install() {
	venv/bin/pip install -q --no-build-isolation --no-deps --no-index "$@" ./proj >pip.log 2>&1 ||
		{ cat pip.log; fail "pip install $*"; }
}

svc_pid=
start_svc() { # [--lib PATH]
	rm -f svc.pid
	/usr/bin/python3 "$PVG_SRC/tests/helpers/py-service.py" --tag "$tag" --site "$site" \
		--package fastnorm --module ops --log "$T/server.log" --pidfile svc.pid "$@" \
		</dev/null >svc.out 2>&1 &
	svc_pid=$!
	trap 'kill $svc_pid 2>/dev/null || true' EXIT
	for _ in $(seq 200); do [ -s svc.pid ] && break; sleep 0.05; done
	[ -s svc.pid ] || { cat svc.out; fail "the service did not start"; }
}

hints() { jq -r '[.gates[3].problems[].hint] | join(" | ")' r.json; }

test_force_reinstall_says_restart_only() {
	setup
	sleep 0.05
	start_svc --lib "$site/fastnorm/_C.abi3.so"
	pg run --gates 3,4 --json r.json
	assert_eq "$rc" 0 "before the reinstall ($out)"
	pip_install --force-reinstall
	pg run --gates 3,4 --json r.json
	assert_eq "$rc" 1 "after the reinstall ($out)"
	assert_contains "$(problem_codes r.json 4)" process-maps.deleted
	assert_contains "$(hints)" "restart the service"
	assert_not_contains "$(hints)" "warm up"
}

test_other_copy_says_restart_not_warm_up() {
	setup
	cp proj/fastnorm/_C.abi3.so other.so
	mkdir -p elsewhere && cp proj/fastnorm/_C.abi3.so elsewhere/_C.abi3.so
	sleep 0.05
	start_svc --lib "$T/elsewhere/_C.abi3.so"
	pg run --gates 3,4 --json r.json
	assert_eq "$rc" 1
	assert_contains "$(problem_codes r.json 4)" process-maps.other-copy
	assert_contains "$(problem_codes r.json 4)" process-maps.not-loaded
	assert_not_contains "$(hints)" "warm up"
}

test_started_before_install_and_maps_nothing_says_restart() {
	setup
	start_svc
	sleep 0.05
	pip_install --force-reinstall
	pg run --gates 3,4 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(problem_codes r.json 4)" process-maps.not-loaded
	assert_eq "$(hints)" "restart the service: it started before the artifact was installed"
}

test_started_after_install_and_maps_nothing_says_warm_up() {
	setup
	sleep 0.05
	start_svc
	pg run --gates 3,4 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(problem_codes r.json 4)" process-maps.not-loaded
	assert_contains "$(hints)" "send one request (warm up)"
}

run_tests
