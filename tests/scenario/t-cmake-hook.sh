#!/usr/bin/env bash
# hooks/provgate-install.cmake in a real CMake project: `cmake --install` runs provgate's
# install phase (gates 1, 2, 3, 6) after the files are in place, and fails the install when
# a gate does not pass. The project installs the demo scenario's real hipcc build.
source "$PVG_SRC/tests/lib.sh"

setup() {
	need cmake hipcc ninja git /usr/bin/python3
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	scenario_built || { cat logs/build.log; fail "build failed"; }
	port=20000 # the install phase never looks at the service
	scenario_config
	mkdir -p proj
	# SO: the file the project installs as the extension
	cat >proj/CMakeLists.txt <<-CMAKE
	cmake_minimum_required(VERSION 3.13)
	project(demo_install NONE)
	set(SO "$W/build/_rocm_C.abi3.so" CACHE FILEPATH "the extension to install")
	install(FILES "$W/repo/vllm_demo/__init__.py" "$W/repo/vllm_demo/_custom_ops.py"
	        DESTINATION site/vllm_demo)
	install(FILES "\${SO}" DESTINATION site/vllm_demo RENAME _rocm_C.abi3.so)
	set(PROVGATE_CONFIG "$W/provgate.json")
	include("$PVG_SRC/hooks/provgate-install.cmake")
	CMAKE
}

# cmake_install [-DVAR=VALUE...]: configure and install into $W; sets rc and out
cmake_install() {
	local bindir
	bindir=$(dirname "$PROVGATE")
	set +e
	out=$(PATH="$bindir:$PATH" cmake -S proj -B proj/b -DCMAKE_INSTALL_PREFIX="$W" "$@" 2>&1 &&
		PATH="$bindir:$PATH" cmake --install proj/b 2>&1)
	rc=$?
	set -e
}

test_install_is_verified_by_the_install_phase() {
	setup
	cmake_install
	assert_eq "$rc" 0 "cmake --install: $out"
	assert_contains "$out" "provgate: verifying the install"
	assert_contains "$out" "3 artifact-hash    PASS"
	[ -f site/vllm_demo/_rocm_C.abi3.so ] || fail "nothing installed"
}

test_install_of_the_wrong_library_fails() {
	setup
	cp build/_rocm_C.abi3.so stale.so
	printf 'old build' >>stale.so
	cmake_install -DSO="$W/stale.so"
	assert_eq "$rc" 1 "cmake --install exit"
	assert_contains "$out" "3 artifact-hash    FAIL"
	assert_contains "$out" "provgate: install not verified (exit 1)"
}

test_install_check_can_be_switched_off() {
	setup
	cp build/_rocm_C.abi3.so stale.so
	printf 'old build' >>stale.so
	cmake_install -DSO="$W/stale.so" -DPROVGATE_INSTALL_CHECK=OFF
	assert_eq "$rc" 0 "cmake --install: $out"
	case $out in *"provgate: verifying"*) fail "the check ran although switched off" ;; esac
}

run_tests
