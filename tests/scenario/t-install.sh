#!/usr/bin/env bash
# meson install places every file; the installed library and header work from a C program;
# the man pages render without warnings; the hooks run provgate.
source "$PVG_SRC/tests/lib.sh"

test_meson_install_places_every_file_and_the_api_works() {
	need meson ninja pkg-config cc
	meson setup b "$PVG_SRC" --prefix=/usr -Dman=enabled >setup.log 2>&1 || { cat setup.log; fail "meson setup"; }
	ninja -C b >build.log 2>&1 || { tail -30 build.log; fail "build"; }
	DESTDIR="$T/dd" meson install -C b --no-rebuild >install.log 2>&1 || { cat install.log; fail "install"; }
	for f in usr/bin/provgate usr/include/provgate.h usr/share/man/man1/provgate.1 \
		usr/share/man/man5/provgate.json.5 usr/share/man/man7/provgate-witness.7 \
		usr/share/bash-completion/completions/provgate usr/share/zsh/vendor-completions/_provgate \
		usr/share/provgate/hooks/post-install usr/share/provgate/hooks/pre-benchmark \
		usr/share/provgate/provgate-install.cmake usr/share/provgate/ci/gitlab-ci.yml \
		usr/share/provgate/ci/github-actions.yml usr/share/provgate/report.schema.json \
		usr/share/provgate/attestation.schema.json usr/share/man/man7/provgate-attestation.7 \
		usr/share/provgate/cluster.schema.json usr/share/provgate/hooks/slurm/provgate.sbatch \
		usr/share/provgate/compare.schema.json usr/share/provgate/hooks/ab; do
		[ -e "dd/$f" ] || fail "not installed: $f"
	done
	ls dd/usr/lib/*/libprovgate.so.0* >/dev/null || fail "library not installed"
	ls dd/usr/lib/*/provgate/libprovgate-witness.so >/dev/null || fail "witness library not installed"
	# the injection library needs nothing of libprovgate's dependencies
	! ldd dd/usr/lib/*/provgate/libprovgate-witness.so | grep -E 'libgit2|libproc2|libcjson|libelf|libcrypto' ||
		fail "the witness library links libprovgate's dependencies"
	pc=$(ls dd/usr/lib/*/pkgconfig/provgate.pc) || fail "pkg-config file not installed"
	[ -x dd/usr/share/provgate/hooks/post-install ] || fail "hook not executable"
	[ -x dd/usr/share/provgate/hooks/slurm/provgate.sbatch ] || fail "sbatch hook not executable"
	libdir=$(dirname "$(ls dd/usr/lib/*/libprovgate.so)")
	cat >api.c <<-'C'
	#include <provgate.h>
	#include <stdio.h>
	#include <stdlib.h>
	int main(int argc, char **argv) {
		struct pvg_config *cfg; struct pvg_error err;
		if (pvg_config_load(argv[1], &cfg, &err) < 0) { fprintf(stderr, "%s\n", err.message); return 2; }
		struct pvg_run *run = pvg_run_new(cfg, PVG_PHASE_LIVE, PVG_GATE_BIT(3), false);
		int r = pvg_run_execute(run);
		printf("%d %s %s\n", r, pvg_status_name(pvg_run_gate_status(run, 3)), pvg_version());
		char *json = pvg_run_report_json(run); free(json);
		pvg_run_free(run); pvg_config_free(cfg);
		return 0;
	}
	C
	cc -Wall -Werror -o api api.c -I dd/usr/include -L "$libdir" -lprovgate || fail "compile against the installed header"
	head -c 100 /dev/urandom >x.so; cp x.so y.so
	echo '{"build": {"artifact": "x.so"}, "install": {"artifact": "y.so"}}' >c.json
	assert_eq "$(LD_LIBRARY_PATH="$libdir" ./api c.json)" "0 pass 0.1.0"
	grep -q '^Libs: .*-lprovgate' "$pc" || fail "pkg-config Libs"
}

# The public API can say "re-check": pvg_run_recheck evaluates the re-checked gates again on
# the system as it is now, and the run is no longer certified when one of them fails.
test_api_recheck_sees_a_change_after_the_run() {
	need cc
	cat >api.c <<-'C'
	#include <provgate.h>
	#include <stdio.h>
	#include <stdlib.h>
	int main(int argc, char **argv) {
		struct pvg_config *cfg; struct pvg_error err;
		(void)argc;
		if (pvg_config_load(argv[1], &cfg, &err) < 0) { fprintf(stderr, "%s\n", err.message); return 2; }
		struct pvg_run *run = pvg_run_new(cfg, PVG_PHASE_INSTALL, PVG_GATE_BIT(3), false);
		int first = pvg_run_execute(run);
		int pin = pvg_run_pin(run);
		if (system(argv[2]) != 0) return 3;
		int again = pvg_run_recheck(run);
		char *json = pvg_run_report_json(run);
		printf("%d %d %d %d %s\n", first, pin, again, (int)pvg_run_certified(run),
		       (pvg_recheck_gates() & PVG_GATE_BIT(3)) ? "3-rechecked" : "3-not-rechecked");
		fputs(json, stderr);
		free(json);
		pvg_run_free(run); pvg_config_free(cfg);
		return 0;
	}
	C
	cc -Wall -Werror -fsanitize=address,undefined -o api api.c -I "$PVG_SRC/lib" \
		-L "$PVG_BUILD" -lprovgate -Wl,-rpath,"$PVG_BUILD" || fail "compile against the build tree"
	head -c 100 /dev/urandom >x.so; cp x.so y.so
	echo '{"build": {"artifact": "x.so"}, "install": {"artifact": "y.so"}}' >c.json
	out=$(./api c.json 'echo changed >>y.so' 2>report.json)
	assert_eq "$out" "0 0 1 0 3-rechecked" "first run, pin, re-check, certified"
	assert_eq "$(jq -r '.after.gates[2].status' report.json)" fail "gate 3 after"
}

test_man_pages_render_without_warnings() {
	need man scdoc
	for page in provgate.1.scd provgate.json.5.scd provgate-attestation.7.scd provgate-witness.7.scd; do
		"$PVG_SRC/man/assemble.sh" "$T/page" "$PVG_SRC/man/$page" "$PVG_SRC/man/codes"
		warn=$(MANWIDTH=80 man --warnings -l "$T/page" 2>&1 >/dev/null)
		assert_eq "$warn" "" "man warnings for $page"
		MANWIDTH=80 man -l "$T/page" >text 2>/dev/null
		grep -q NAME text || fail "$page rendered nothing"
	done
}

test_every_problem_code_in_the_code_is_documented() {
	codes=$(grep -rhoE '"(build-log|install-scope|artifact-hash|process-maps|stale-service|code-object|dispatch-marker|attestation|compare)\.[a-z0-9-]+"' \
		"$PVG_SRC/checks" "$PVG_SRC/lib" | tr -d '"' | sort -u)
	[ -n "$codes" ] || fail "no codes found"
	for c in $codes; do
		grep -rqF "*$c*" "$PVG_SRC/man" || fail "problem code $c is not in man/"
	done
}

test_post_install_hook_runs_the_install_phase() {
	head -c 100 /dev/urandom >x.so; cp x.so y.so
	echo '{"build": {"artifact": "x.so"}, "install": {"artifact": "y.so"}}' >provgate.json
	set +e
	PROVGATE="$PROVGATE" PROVGATE_REPORT_DIR="$T/reports" "$PVG_SRC/hooks/post-install" --keep-going >o.txt 2>&1
	rc=$?
	set -e
	[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "hook exit $rc: $(cat o.txt)"
	rep=$(ls reports/install-*.json) || fail "no report written"
	assert_eq "$(jq -c .selected_gates "$rep")" "[1,2,3,6]"
	assert_eq "$(gate_status "$rep" 3)" pass
	# two more runs in the same second keep their own reports
	PROVGATE="$PROVGATE" PROVGATE_REPORT_DIR="$T/reports" "$PVG_SRC/hooks/post-install" --keep-going >/dev/null 2>&1 &
	PROVGATE="$PROVGATE" PROVGATE_REPORT_DIR="$T/reports" "$PVG_SRC/hooks/post-install" --keep-going >/dev/null 2>&1 &
	wait
	assert_eq "$(ls reports | wc -l)" 3 "three runs, three reports"
}

test_ci_templates_are_valid_and_run() {
	need /usr/bin/python3 jq
	head -c 100 /dev/urandom >x.so; cp x.so y.so
	echo '{"build": {"artifact": "x.so"}, "install": {"artifact": "y.so"}}' >provgate.json
	# structure: full history, logs/ made before tee writes there, pipefail, the provgate line
	/usr/bin/python3 - "$PVG_SRC/hooks/ci" >cmds.txt <<'PY'
import sys, yaml
d = sys.argv[1]
gl = yaml.safe_load(open(f"{d}/gitlab-ci.yml"))
job = gl["provgate-install"]
assert job["variables"]["GIT_DEPTH"] == "0", "GitLab: shallow clone"
script = job["script"]
assert script.index("set -o pipefail") < script.index("mkdir -p logs") < \
    min(i for i, l in enumerate(script) if "tee" in l), "GitLab: pipefail and logs/ before tee"
assert job["artifacts"]["reports"]["junit"] == "provgate-junit.xml"
gh = yaml.safe_load(open(f"{d}/github-actions.yml"))
j = gh["jobs"]["install-phase"]
assert j["defaults"]["run"]["shell"] == "bash", "GitHub: default shell lacks pipefail"
steps = j["steps"]
assert steps[0]["with"]["fetch-depth"] == 0, "GitHub: shallow clone"
build = next(s["run"] for s in steps if s.get("name") == "build")
assert build.index("mkdir -p logs") < build.index("tee"), "GitHub: logs/ before tee"
for line in script + [s.get("run", "") for s in steps]:
    if line.startswith("provgate "):
        print(line)
PY
	[ "$(wc -l <cmds.txt)" = 2 ] || fail "expected one provgate line per template: $(cat cmds.txt)"
	# each template's provgate command is accepted by this provgate and writes both files
	local line
	while read -r line; do
		rm -f provgate-report.json provgate-junit.xml
		set +e
		PATH="$(dirname "$PROVGATE"):$PATH" bash -c "$line" >o.txt 2>&1
		rc=$?
		set -e
		assert_eq "$rc" 1 "$line: gates 1, 2, 6 are not configured here ($(cat o.txt))"
		assert_eq "$(problem_codes provgate-report.json 1)" build-log.not-configured "$line"
		assert_eq "$(/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E
print(len(list(E.parse(sys.argv[1]).getroot().iter("testcase"))))' provgate-junit.xml)" 7 \
			"$line: JUnit testcases"
	done <cmds.txt
}

test_bash_completion_offers_verbs() {
	need bash
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate ce); COMP_CWORD=1; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "certify"
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate run --phase p); COMP_CWORD=3; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "prestart"
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate ver); COMP_CWORD=1; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "verify-attestation"
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate verify-attestation a.json --ar); COMP_CWORD=3; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "--artifact"
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate certify --sign); COMP_CWORD=2; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "--sign-key"
	out=$(bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate me); COMP_CWORD=1; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "merge"
	out=$(cd "$T" && bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate merge --max); COMP_CWORD=2; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "--max-skew"	# --log takes a file, or the word "container"
	out=$(cd "$T" && bash -c "source '$PVG_SRC/hooks/provgate.bash-completion'; COMP_WORDS=(provgate run --log cont); COMP_CWORD=3; _provgate; echo \${COMPREPLY[*]}")
	assert_eq "$out" "container"
}

# The suite builds with -O0 and the sanitizers, a user's plain build is debugoptimized (-O2);
# the GPU staging scripts build with buildtype=release (-O3), where gcc's flow warnings
# (use-after-free, maybe-uninitialized) see across inlined calls. -Werror holds there too.
test_release_build_has_no_warnings() {
	need meson ninja cc
	meson setup rel "$PVG_SRC" -Dbuildtype=release >setup.log 2>&1 || { cat setup.log; fail "meson setup"; }
	ninja -C rel cmd/provgate lib/witness/libprovgate-witness.so tests/helpers/witness-tool \
		>build.log 2>&1 || { grep -B2 -A12 -m3 -e 'error:' -e FAILED build.log; fail "release build"; }
	out=$(rel/cmd/provgate --version) || fail "the release binary does not run"
	assert_contains "$out" provgate
}

run_tests
