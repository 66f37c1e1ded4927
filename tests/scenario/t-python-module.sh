#!/usr/bin/env bash
# install.python_module: resolved by the interpreter's finders without importing anything.
# Real venvs and real pip installs (regular and editable); every parent __init__ raises.
source "$PVG_SRC/tests/lib.sh"

make_project() { # NAME FOLDER: a package whose __init__ must never run
	mkdir -p "proj/$2"
	cat >proj/pyproject.toml <<-TOML
	[build-system]
	requires = ["setuptools"]
	build-backend = "setuptools.build_meta"
	[project]
	name = "$1"
	version = "0.1"
	[tool.setuptools]
	packages = ["$1", "$1.ops"]
	package-dir = {"$1" = "$2", "$1.ops" = "$2/ops"}
	[tool.setuptools.package-data]
	"$1.ops" = ["*.so"]
	TOML
	echo "raise SystemExit('$1/__init__ was imported')" >"proj/$2/__init__.py"
	mkdir -p "proj/$2/ops"
	echo "raise SystemExit('$1.ops/__init__ was imported')" >"proj/$2/ops/__init__.py"
	head -c 4096 /dev/urandom >"proj/$2/ops/_C.abi3.so"
}

make_venv() {
	need /usr/bin/python3
	/usr/bin/python3 -m venv --system-site-packages venv || fail "python3 -m venv failed (python3-venv missing?)"
}

pip_install() {
	venv/bin/pip install -q --no-build-isolation --no-deps --no-index "$@" >pip.log 2>&1 || { cat pip.log; fail "pip install $*"; }
}

test_regular_install_resolves_without_running_init() {
	make_venv
	make_project pvgpkg src
	pip_install ./proj
	site=$(venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	[ -f "$site/pvgpkg/ops/_C.abi3.so" ] || fail "pip did not install the .so"
	# importlib's find_spec would import the parents and fail:
	if venv/bin/python3 -c 'import importlib.util; importlib.util.find_spec("pvgpkg.ops._C")' 2>/dev/null; then
		fail "find_spec should have run pvgpkg/__init__.py"
	fi
	cat >provgate.json <<-JSON
	{"build": {"artifact": "proj/src/ops/_C.abi3.so"},
	 "install": {"python_module": "pvgpkg.ops._C", "python": "venv/bin/python3"}}
	JSON
	pg run --gates 3 --json r.json
	assert_eq "$rc" 0 "exit: $err $(jq -c .gates[2].problems r.json)"
	assert_eq "$(jq -r .chain.installed.path r.json)" "$site/pvgpkg/ops/_C.abi3.so"
	assert_eq "$(jq -r .gates[2].evidence.same_file r.json)" false
}

test_editable_install_is_found_through_its_finder() {
	make_venv
	make_project pvgedit code_dir
	pip_install -e ./proj
	ls venv/lib/python3*/site-packages/__editable___pvgedit*finder.py >/dev/null 2>&1 ||
		fail "setuptools did not create a finder-based editable install"
	cat >provgate.json <<-JSON
	{"build": {"artifact": "proj/code_dir/ops/_C.abi3.so"},
	 "install": {"python_module": "pvgedit.ops._C", "python": "venv/bin/python3"}}
	JSON
	pg run --gates 3 --json r.json
	assert_eq "$rc" 0 "exit: $(jq -c .gates[2] r.json)"
	assert_eq "$(jq -r .chain.installed.path r.json)" "$T/proj/code_dir/ops/_C.abi3.so"
	assert_eq "$(jq -r .gates[2].evidence.same_file r.json)" true
}

test_environment_of_the_caller_does_not_leak() {
	make_venv
	make_project pvgpkg src
	pip_install ./proj
	mkdir -p decoy/pvgpkg/ops
	: >decoy/pvgpkg/__init__.py; : >decoy/pvgpkg/ops/__init__.py
	cp proj/src/ops/_C.abi3.so decoy/pvgpkg/ops/_C.abi3.so
	cat >provgate.json <<-JSON
	{"build": {"artifact": "proj/src/ops/_C.abi3.so"},
	 "install": {"python_module": "pvgpkg.ops._C", "python": "venv/bin/python3"}}
	JSON
	PYTHONPATH="$T/decoy" PYTHONHOME=/nonexistent pg run --gates 3 --json r.json
	assert_eq "$rc" 0
	assert_not_contains "$(jq -r .chain.installed.path r.json)" decoy
}

test_missing_module_fails_with_interpreters_answer() {
	make_venv
	cat >provgate.json <<-JSON
	{"build": {"artifact": "provgate.json"},
	 "install": {"python_module": "nosuchpkg._C", "python": "venv/bin/python3"}}
	JSON
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" fail
	assert_eq "$(problem_codes r.json 3)" artifact-hash.module-not-found
	assert_contains "$(jq -r .gates[2].problems[0].message r.json)" "No module named 'nosuchpkg'"
}

test_module_that_is_not_a_package() {
	make_venv
	cat >provgate.json <<-JSON
	{"build": {"artifact": "provgate.json"},
	 "install": {"python_module": "json.decoder.x", "python": "venv/bin/python3"}}
	JSON
	pg run --gates 3 --json r.json
	assert_eq "$(gate_status r.json 3)" fail
	assert_contains "$(jq -r .gates[2].problems[0].message r.json)" "not a package"
}

test_missing_interpreter_is_unverifiable() {
	cat >provgate.json <<-JSON
	{"build": {"artifact": "provgate.json"},
	 "install": {"python_module": "a.b", "python": "/nonexistent/python3"}}
	JSON
	pg run --gates 3 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 3)" unverifiable
	assert_eq "$(problem_codes r.json 3)" artifact-hash.python-failed
	assert_contains "$(jq -r .gates[2].problems[0].message r.json)" "/nonexistent/python3"
}

run_tests
