#!/usr/bin/env bash
# install.python in a venv that the service's user owns (SPEC §11): root provgate resolves
# install.python_module by reading that venv's files and never runs anything of it: not its
# bin/python3, not a .pth import line, not a sitecustomize, not an editable finder module.
# Each trap is first sprung by the user, to show it is live, then root must not spring it
# and must still find the module (gate 3 passes on equal bytes).
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"

make_project() { # NAME: a package whose __init__ must never run, with a library in ops/
	local root=$SVC/proj-$1
	mkdir -p "$root/src/$1/ops"
	cat >"$root/pyproject.toml" <<-TOML
	[build-system]
	requires = ["setuptools"]
	build-backend = "setuptools.build_meta"
	[project]
	name = "$1"
	version = "0.1"
	[tool.setuptools]
	packages = ["$1", "$1.ops"]
	package-dir = {"$1" = "src/$1", "$1.ops" = "src/$1/ops"}
	[tool.setuptools.package-data]
	"$1.ops" = ["*.so"]
	TOML
	echo "raise SystemExit('$1/__init__ was imported')" >"$root/src/$1/__init__.py"
	: >"$root/src/$1/ops/__init__.py"
	head -c 8192 /dev/urandom >"$root/src/$1/ops/_C.abi3.so"
}

# The venv is made by root (python3 -m venv, pip), then handed to the user, who arms it.
hostile_venv() { # NAME [-e]
	need /usr/bin/python3 jq
	hostile_setup
	V=$SVC/venv M=$SVC/markers
	/usr/bin/python3 -m venv --system-site-packages "$V" || fail "python3 -m venv failed"
	make_project "$1"
	"$V/bin/pip" install -q --no-build-isolation --no-deps --no-index ${2:-} "$SVC/proj-$1" \
		>pip.log 2>&1 || { cat pip.log; fail "pip install"; }
	chown -R "$HOSTILE_UID:$HOSTILE_GID" "$V" "$SVC/proj-$1"
	SITE=$("$V/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	as_hostile mkdir -m 777 "$M"
	# what the user plants: each trap touches its own marker, whoever runs it
	as_hostile sh -c "echo 'import os; os.system(\"touch $M/pth\")' >'$SITE/aaa-evil.pth'"
	as_hostile sh -c "echo 'import os; open(\"$M/sitecustomize\", \"w\").close()' >'$SITE/sitecustomize.py'"
	as_hostile rm "$V/bin/python3"
	# (argv[0] kept, so that the interpreter still finds its venv)
	as_hostile sh -c "printf '#!/bin/bash\ntouch $M/interpreter\nexec -a \"\$0\" /usr/bin/python3 \"\$@\"\n' >'$V/bin/python3'"
	as_hostile chmod 755 "$V/bin/python3"
}

# a FIFO, a device and a 1 TiB sparse file as .pth files: root must neither block on them,
# nor open the device, nor read the sparse file (the interpreter itself would do all three)
plant_files() {
	as_hostile mkfifo "$SITE/bbb-fifo.pth"
	as_hostile ln -s /dev/zero "$SITE/ccc-device.pth"
	as_hostile truncate -s 1T "$SITE/ddd-huge.pth"
}

# the traps are live: the user's own run of the interpreter springs every one of them
traps_are_live() { # MARKER...
	as_hostile "$V/bin/python3" -I -B -c pass </dev/null || fail "the user's interpreter failed"
	local m
	for m in "$@"; do [ -e "$M/$m" ] || fail "trap $m did not fire for the user"; done
	rm -f "$M"/*
	plant_files
}

no_trap_fired() {
	local left
	left=$(ls "$M")
	assert_eq "$left" "" "markers left by root's run"
}

# Root resolves a regular install in the user's armed venv without running any of it.
test_root_runs_nothing_of_a_user_owned_venv() {
	hostile_venv pvgevil
	# (the venv's sitecustomize stays planted, though Debian's own, earlier on sys.path,
	# shadows it for the user too)
	traps_are_live interpreter pth
	cat >provgate.json <<-JSON
	{"build": {"artifact": "$SVC/proj-pvgevil/src/pvgevil/ops/_C.abi3.so"},
	 "install": {"python_module": "pvgevil.ops._C", "python": "$V/bin/python3"}}
	JSON
	timeout 60 "$PROVGATE" run --gates 3 --json r.json >out.txt 2>&1 || true
	no_trap_fired
	assert_eq "$(gate_status r.json 3)" pass "gate 3 ($(jq -c .gates[2].problems r.json))"
	assert_eq "$(jq -r .chain.installed.path r.json)" "$SITE/pvgevil/ops/_C.abi3.so"
}

# An editable install in the user's venv resolves through its finder's MAPPING, read as
# data: the finder module (armed too) is never imported.
test_editable_finder_is_read_not_run() {
	hostile_venv pvgedevil -e
	local finder
	finder=$(ls "$SITE"/__editable___pvgedevil*_finder.py) ||
		fail "setuptools did not make a finder-based editable install"
	as_hostile sh -c "{ echo 'import os; os.system(\"touch $M/finder\")'; cat '$finder'; } >'$finder.new' && mv '$finder.new' '$finder'"
	traps_are_live interpreter pth finder
	cat >provgate.json <<-JSON
	{"build": {"artifact": "$SVC/proj-pvgedevil/src/pvgedevil/ops/_C.abi3.so"},
	 "install": {"python_module": "pvgedevil.ops._C", "python": "$V/bin/python3"}}
	JSON
	timeout 60 "$PROVGATE" run --gates 3 --json r.json >out.txt 2>&1 || true
	no_trap_fired
	assert_eq "$(gate_status r.json 3)" pass "gate 3 ($(jq -c .gates[2].problems r.json))"
	assert_eq "$(jq -r .chain.installed.path r.json)" "$SVC/proj-pvgedevil/src/pvgedevil/ops/_C.abi3.so"
	assert_eq "$(jq -r .gates[2].evidence.same_file r.json)" true
}

run_tests
