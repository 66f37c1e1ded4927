#!/usr/bin/env bash
# install.python_module is resolved by reading the interpreter's files (lib/sys/pymodule.c),
# never by running it. These tests hold that reading to the interpreter's own answer: for
# real venvs and real pip installs (regular, editable through setuptools' finder, editable
# through a .pth path line), a .pth path line, namespace packages, suffix precedence, the
# standard library and the errors, provgate's answer must be the one that the interpreter's
# sys.meta_path finders give (tests/helpers/py-finder.py, run here by the test on venvs it
# owns; provgate itself runs no Python).
source "$PVG_SRC/tests/lib.sh"

make_project() { # NAME FOLDER [src]: a package whose __init__ must never run
	local root=proj-$1
	mkdir -p "$root/$2/ops"
	cat >"$root/pyproject.toml" <<-TOML
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
	echo "raise SystemExit('$1/__init__ was imported')" >"$root/$2/__init__.py"
	echo "raise SystemExit('$1.ops/__init__ was imported')" >"$root/$2/ops/__init__.py"
	head -c 4096 /dev/urandom >"$root/$2/ops/_C.abi3.so"
}

make_src_project() { # NAME: src layout, which setuptools installs editable as a .pth path line
	local root=proj-$1
	mkdir -p "$root/src/$1/ops"
	cat >"$root/pyproject.toml" <<-TOML
	[build-system]
	requires = ["setuptools"]
	build-backend = "setuptools.build_meta"
	[project]
	name = "$1"
	version = "0.1"
	[tool.setuptools]
	package-dir = {"" = "src"}
	packages = ["$1", "$1.ops"]
	TOML
	echo "raise SystemExit('$1/__init__ was imported')" >"$root/src/$1/__init__.py"
	echo "raise SystemExit('$1.ops/__init__ was imported')" >"$root/src/$1/ops/__init__.py"
	head -c 4096 /dev/urandom >"$root/src/$1/ops/_C.abi3.so"
}

pip_install() {
	"$VENV"/bin/pip install -q --no-build-isolation --no-deps --no-index "$@" >pip.log 2>&1 ||
		{ cat pip.log; fail "pip install $*"; }
}

# provgate's answer, as gate 3's evidence holds it: "OK<TAB>path" or "ERR<TAB>message"
provgate_answer() { # PYTHON MODULE
	jq -n --arg py "$1" --arg m "$2" \
		'{"build": {"artifact": "provgate.json"}, "install": {"python_module": $m, "python": $py}}' \
		>provgate.json
	pg run --gates 3 --json r.json
	local resolved
	resolved=$(jq -r '.gates[2].evidence.python_module.resolved // empty' r.json)
	if [ -n "$resolved" ]; then
		printf 'OK\t%s\n' "$resolved"
	else
		printf 'ERR\t%s\n' "$(jq -r '.gates[2].evidence.python_module.answer' r.json)"
	fi
}

mismatches=0
# the same file, or the same error up to its "(searched ...)" detail
same_answer() { # PYTHON MODULE...
	local py=$1 m want got
	shift
	for m in "$@"; do
		want=$("$py" -I -B "$PVG_SRC/tests/helpers/py-finder.py" "$m" 2>&1 || true)
		got=$(provgate_answer "$py" "$m")
		if [ "${want%% (*}" != "${got%% (*}" ]; then
			echo "MISMATCH $m with $py:"
			echo "  python:   $want"
			echo "  provgate: $got"
			mismatches=$((mismatches + 1))
		else
			echo "same: $m -> ${got#*	}"
		fi
	done
}

# a .pth path line, namespace portions in two folders, and suffix precedence
extra_layouts() { # SITE
	mkdir -p extra/pthpkg/sub ns1/nsp/a ns2/nsp/b prec/dual prec/modpick
	echo "$T/extra" >"$1/pvg-extra.pth"
	printf '# a comment\n\n%s\n%s\n/nonexistent/folder\n' "$T/ns1" "$T/ns2" >"$1/pvg-ns.pth"
	echo "$T/prec" >"$1/zz-prec.pth"
	: >extra/pthpkg/__init__.py; : >extra/pthpkg/sub/__init__.py
	head -c 64 /dev/urandom >extra/pthpkg/sub/_k.abi3.so
	: >ns1/nsp/a/__init__.py; : >ns1/nsp/a/mod.py
	: >ns2/nsp/b/__init__.py; head -c 64 /dev/urandom >ns2/nsp/b/_x.so
	# a folder without __init__ beside a module of its name: the module
	: >prec/dual.py
	# the interpreter's own tag before .abi3.so before .so before .py
	local tag
	tag=$("$VENV/bin/python3" -I -c 'import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])')
	: >"prec/modpick/__init__.py"
	for s in "$tag" .abi3.so .so .py .pyc; do : >"prec/modpick/first$s"; done
	for s in .abi3.so .so .py; do : >"prec/modpick/second$s"; done
	for s in .so .py; do : >"prec/modpick/third$s"; done
	# a package's __init__.py wins over a module file of the package's name
	mkdir -p prec/both && : >prec/both/__init__.py && : >prec/both.py
}

MODULES_COMMON=(json json.decoder email.mime.text json.decoder.x nosuchpkg nosuchpkg.ops
	pthpkg pthpkg.sub pthpkg.sub._k pthpkg.nothere nsp nsp.a nsp.a.mod nsp.b nsp.b._x nsp.c
	dual dual.x modpick modpick.first modpick.second modpick.third both 'bad-name.x')

# A venv with the system's site-packages: pip's regular and editable installs, and the rest.
test_file_reading_matches_the_interpreter_in_a_venv() {
	need /usr/bin/python3 jq
	VENV=$T/venv
	/usr/bin/python3 -m venv --system-site-packages "$VENV" || fail "python3 -m venv failed"
	make_project pvgpkg src
	make_project pvgedit code_dir
	make_src_project pvgsrc
	pip_install ./proj-pvgpkg
	pip_install -e ./proj-pvgedit
	ls "$VENV"/lib/python3*/site-packages/__editable___pvgedit*finder.py >/dev/null ||
		fail "setuptools did not make a finder-based editable install"
	pip_install -e ./proj-pvgsrc
	grep -qx "$T/proj-pvgsrc/src" "$VENV"/lib/python3*/site-packages/__editable__.pvgsrc*.pth ||
		fail "setuptools did not make a path-line editable install of the src layout"
	local site
	site=$("$VENV/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	extra_layouts "$site"
	same_answer "$VENV/bin/python3" pvgpkg pvgpkg.ops pvgpkg.ops._C pvgpkg.ops._D \
		pvgedit pvgedit.ops pvgedit.ops._C pvgedit.nothere pvgsrc pvgsrc.ops._C \
		setuptools setuptools.command.editable_wheel _distutils_hack pip._internal \
		"${MODULES_COMMON[@]}"
	# the same venv named through its other links
	same_answer "$VENV/bin/python" pvgpkg.ops._C pvgedit.ops._C json.decoder
	assert_eq "$mismatches" 0 "answers that differ from the interpreter's"
}

# A venv of its own (no system site-packages), and the system interpreter itself.
test_file_reading_matches_the_interpreter_without_system_site() {
	need /usr/bin/python3 jq
	VENV=$T/venv
	/usr/bin/python3 -m venv --without-pip "$VENV" || fail "python3 -m venv failed"
	local site
	site=$("$VENV/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	extra_layouts "$site"
	same_answer "$VENV/bin/python3" setuptools _distutils_hack "${MODULES_COMMON[@]}"
	same_answer /usr/bin/python3 json.decoder email.mime.text setuptools \
		setuptools.command.editable_wheel _distutils_hack nosuchpkg json.decoder.x
	assert_eq "$mismatches" 0 "answers that differ from the interpreter's"
}

run_tests
