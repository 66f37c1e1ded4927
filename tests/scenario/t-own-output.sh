#!/usr/bin/env bash
# Gate 2 never counts provgate's own output: this run's --json/--junit paths, and any file
# that is a provgate report by its content (schema provgate.*, in-toto statements and DSSE
# envelopes with provgate's predicate), whatever its name. Build-tool state in the artifact's
# build folder is no runtime file either; elsewhere the hint says how to ignore it.
source "$PVG_SRC/tests/lib.sh"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.org GIT_CONFIG_NOSYSTEM=1 HOME="${TMPDIR:-/tmp}"
export GIT_CONFIG_GLOBAL=/dev/null

setup_repo() {
	need git jq
	git init -q -b main r
	mkdir -p r/pkg
	echo "v = 1" >r/pkg/mod.py
	git -C r add -A && git -C r commit -qm base
	git -C r checkout -q -b work
	echo "v = 2" >r/pkg/mod.py
	git -C r commit -qam change
	mkdir -p inst && cp -r r/pkg inst/
	cat >r/provgate.json <<-'JSON'
	{"source": {"baseline": "main", "install_map": [{"from": "pkg/", "to": "../inst/pkg/"}]}}
	JSON
}

test_report_in_repo_twice_passes() {
	setup_repo
	cd r
	pg run --gates 2 --json report.json --junit junit.xml
	assert_eq "$rc" 0 "first run ($out)"
	pg run --gates 2 --json report.json --junit junit.xml
	assert_eq "$rc" 0 "second run: its own report is no change ($out)"
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "report.json") | .provgate_output' report.json)" true
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "junit.xml") | .class' report.json)" ignored
	validate report.json
}

test_reports_are_recognised_by_content_not_name() {
	setup_repo
	cd r
	pg run --gates 2 --json report.json
	mkdir -p results
	mv report.json results/old-run.json
	jq '.schema = "provgate.compare/1"' results/old-run.json >results/ab.json
	jq -n '{schema: "provgate.cluster/1", nodes: []}' >results/cluster.json
	# an in-toto statement with provgate's predicate, and the same in a DSSE envelope
	jq -n '{_type: "https://in-toto.io/Statement/v1", subject: [{name: "x", digest: {sha256: "00"}}],
		predicateType: "https://provgate.dev/attestation/report/v1", predicate: {}}' >results/att.json
	jq -n --arg p "$(base64 -w0 results/att.json)" \
		'{payloadType: "application/vnd.in-toto+json", payload: $p, signatures: [{sig: "AA=="}]}' >results/att.dsse.json
	pg run --gates 2 --json ../r.json
	assert_eq "$rc" 0 "reports by content ($out $(jq -c .gates[1].problems ../r.json))"
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.provgate_output) | .path] | join(" ")' ../r.json)" \
		"results/ab.json results/att.dsse.json results/att.json results/cluster.json results/old-run.json"
	# look-alikes are changes like any other
	jq -n '{schema: "other.report/1"}' >results/other.json
	jq -n '{_type: "https://in-toto.io/Statement/v1", predicateType: "https://slsa.dev/provenance/v1"}' >results/slsa.json
	echo '{"schema": "provgate.report/1",' >results/broken.json
	pg run --gates 2 --json ../r.json
	assert_eq "$rc" 1
	assert_eq "$(jq -r '[.gates[1].problems[] | select(.code == "install-scope.unknown-scope") | .message] | length' ../r.json)" 3
}

test_build_state_in_the_artifacts_build_folder_is_ignored() {
	setup_repo
	mkdir -p r/build/CMakeFiles/x.dir
	echo so >r/build/_C.so
	echo "# ninja log v5" >r/build/.ninja_log
	echo "CMAKE=1" >r/build/CMakeCache.txt
	echo "obj" >r/build/CMakeFiles/x.dir/k.cu.o
	jq '.build = {"artifact": "build/_C.so"} | .source.ignore = ["build/_C.so"]' r/provgate.json >p && mv p r/provgate.json
	pg run -c r/provgate.json --gates 2 --json r.json
	assert_eq "$rc" 0 "build state ($out $(jq -c .gates[1].problems r.json))"
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.build_state) | .path] | join(" ")' r.json)" \
		"build/.ninja_log build/CMakeCache.txt build/CMakeFiles/x.dir/k.cu.o"
	# outside the artifact's build folder: a failure whose hint names source.ignore
	mkdir -p r/other
	echo "# ninja log v5" >r/other/.ninja_log
	pg run -c r/provgate.json --gates 2 --json r.json
	assert_eq "$rc" 1
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-scope
	assert_contains "$(jq -r '.gates[1].problems[0].hint' r.json)" 'add "other/**" (its build folder) or "**/.ninja_log" to source.ignore'
	# doing what it says works
	jq '.source.ignore += ["other/**"]' r/provgate.json >p && mv p r/provgate.json
	pg run -c r/provgate.json --gates 2 --json r.json
	assert_eq "$rc" 0 "with the ignore ($out)"
}

test_pre_benchmark_hook_twice_in_the_repo() {
	need hipcc ninja git ss /usr/bin/python3 jq
	pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$T
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	scenario_built || { cat logs/build.log; fail "build failed"; }
	install_extension
	sleep 0.05
	scenario_start
	request "4096 5120 torch.bfloat16"
	scenario_config
	# the hook keeps its reports inside the repository's work tree
	export PROVGATE_REPORT_DIR=$T/repo/provgate-reports
	for i in 1 2; do
		set +e
		PROVGATE=$PROVGATE "$PVG_SRC/hooks/pre-benchmark" -c provgate.json -- true >hook.out 2>&1
		rc=$?
		set -e
		assert_eq "$rc" 0 "hook run $i ($(cat hook.out))"
		sleep 1.1 # one report per second
	done
	assert_eq "$(ls repo/provgate-reports | wc -l)" 2
	# and certify with the report inside the repository, twice
	pg certify --json repo/report.json
	assert_eq "$rc" 0 "first certify ($out)"
	pg certify --json repo/report.json
	assert_eq "$rc" 0 "second certify ($out)"
}

run_tests
