#!/usr/bin/env bash
# provgate compare: real A/B pairs. Each side is the demo's scenario (hipify + hipcc build,
# install, a live vLLM-like service) certified for real; the service is restarted between the
# sides, with one change declared. Each way to spoil an A/B is refused with its own code.
source "$PVG_SRC/tests/lib.sh"

# One build for every test of this file (it is the slow part); each test starts its own
# services in it, one after the other.
W=$(mktemp -d "${TMPDIR:-/tmp}/pvg-compare.XXXXXX")
trap 'rm -rf "$W"' EXIT

setup() {
	need hipcc ninja git ss jq gcc /usr/bin/python3
	pg_bin=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service"
	cd "$W"
	scenario_tag="cmp-$$-$BASHPID"
	pg=$pg_bin
	source "$PVG_SRC/tests/demo/scenario.sh"
	trap scenario_stop EXIT
	if [ ! -f .built ]; then
		scenario_built || { cat logs/build.log; fail "build failed"; }
		install_extension
		sleep 0.05
		mkdir -p data
		printf '{"prompt": "hello"}\n' >data/prompts.jsonl
		touch .built
	fi
	rm -f ./*.json ./*.xml
}

# start_side SERVE_ARGS [fake-service args...]: the service, restarted; one warm-up request.
start_side() {
	local args=$1
	shift
	scenario_stop
	rm -f run/serve.pid run/engine.pid
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	"$svc" --server --workers 2 --port "$port" --lib "$W/site/vllm_demo/_rocm_C.abi3.so" \
		--pidfile run/serve.pid --engine-pidfile run/engine.pid --log "$W/logs/server.log" \
		--tag "$scenario_tag" --serve-args "$args" "$@" &
	service_pid=$!
	for _ in $(seq 200); do [ -s run/serve.pid ] && break; sleep 0.05; done
	[ -s run/serve.pid ] || fail "the service did not start"
	request "4096 5120 torch.bfloat16"
}

# config BLOCK [jq filter]: provgate.json for this side, claiming "block size = BLOCK"
config() {
	scenario_config
	jq --arg f "block size = $1" '.markers.facts = [$f] | .benchmark.inputs = ["data/prompts.jsonl"]' \
		provgate.json >p.tmp && mv p.tmp provgate.json
	if [ -n "${2:-}" ]; then jq "$2" provgate.json >p.tmp && mv p.tmp provgate.json; fi
}

# certify_side OUT BLOCK [jq filter]: certifies the running service; must be certified
certify_side() {
	config "$2" "${3:-}"
	pg certify --json "$1"
	[ "$rc" = 0 ] || { echo "$out"; fail "$1 not certified"; }
	validate "$1"
}

# the usual pair: baseline block size 784, candidate 832 (one flag, one fact)
baseline() {
	start_side "--block-size 784" "$@"
	certify_side base.json 784
}

declared=(--differ "fact.block size" --differ "service.args.--block-size")

codes() { jq -r '[.problems[].code] | unique | join(" ")' "$1"; }

# a profiler's tool library (Perfworks, loaded when counters are collected) and CUPTI: the
# CUDA toolkit's own where installed, else stand-ins of the same names
profiler_lib() {
	local real
	real=$(ls /usr/local/cuda/lib64/"$1" /usr/local/cuda/lib/"$1" 2>/dev/null | head -n1 || true)
	if [ -n "$real" ]; then readlink -f "$real"; return; fi
	mkdir -p "$W/standin"
	[ -f "$W/standin/$1" ] || echo 'int standin_profiler(void) { return 1; }' |
		gcc -shared -fPIC -x c - -o "$W/standin/$1"
	echo "$W/standin/$1"
}

test_clean_ab_with_one_declared_change_is_like_for_like() {
	setup
	baseline
	start_side "--block-size 832"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json --junit cmp.xml
	assert_eq "$rc" 0 "compare exit ($out)"
	assert_contains "$out" "LIKE FOR LIKE"
	assert_eq "$(jq -r .like_for_like cmp.json)" true
	assert_eq "$(jq -r .schema cmp.json)" provgate.compare/1
	assert_eq "$(jq -r '.fields[] | select(.field == "fact.block size") | "\(.baseline) \(.candidate) \(.verdict)"' cmp.json)" "784 832 declared"
	assert_eq "$(jq -r '[.fields[] | select(.verdict == "declared")] | length' cmp.json)" 2
	# what was compared: the mapped extension by build-id, the dataset by sha256, the tree
	local so
	so=$(jq -r --arg p "$W/site/vllm_demo/_rocm_C.abi3.so" '.fields[] | select(.field == "service.shared_objects." + $p) | .verdict' cmp.json)
	assert_eq "$so" equal "the extension's build-id"
	assert_eq "$(jq -r '.environment.service.shared_objects[] | select(.path | endswith("_rocm_C.abi3.so")) | .build_id' base.json)" \
		"$(readelf -n site/vllm_demo/_rocm_C.abi3.so | sed -n 's/.*Build ID: //p')" "build-id as readelf reads it"
	assert_eq "$(jq -r '.environment.benchmark.inputs[0].sha256' cand.json)" "$(sha256sum <data/prompts.jsonl | cut -d' ' -f1)"
	assert_eq "$(jq -r '.fields[] | select(.field == "service.commands") | .verdict' cmp.json)" equal
	[ "$(jq -r .baseline.service_pid cmp.json)" != "$(jq -r .candidate.service_pid cmp.json)" ] || fail "same pid"
	/usr/bin/python3 "$PVG_SRC/tests/validate-report.py" cmp.json || fail "compare JSON does not validate"
	grep -q 'failures="0"' cmp.xml || fail "JUnit shows a failure"
	# --json - writes the document alone
	pg compare base.json cand.json "${declared[@]}" --json -
	assert_eq "$(echo "$out" | jq -r .like_for_like)" true
}

# compare --attest: the comparison as a signed in-toto Statement whose subjects are the two
# report files; verify-attestation checks it against them, and refuses a refused A/B.
test_compare_attestation_names_both_reports_and_verifies() {
	setup
	need openssl
	openssl genpkey -algorithm ed25519 -out key.pem 2>/dev/null
	chmod 600 key.pem
	openssl pkey -in key.pem -pubout -out pub.pem 2>/dev/null
	baseline
	start_side "--block-size 832"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json --attest cmp.att --sign-key key.pem
	assert_eq "$rc" 0 "compare exit ($out $err)"
	local payload
	payload=$(jq -r .payload cmp.att | base64 -d)
	assert_eq "$(echo "$payload" | jq -r .predicateType)" "https://provgate.dev/attestation/compare/v1"
	assert_eq "$(echo "$payload" | jq -r '[.subject[].name] | join(" ")')" "base.json cand.json"
	assert_eq "$(echo "$payload" | jq -r '.subject[0].digest.sha256')" "$(sha256sum <base.json | cut -d' ' -f1)"
	assert_eq "$(echo "$payload" | jq -c .predicate)" "$(jq -c . cmp.json)" "predicate is the --json document"
	validate cmp.att
	pg verify-attestation cmp.att --key pub.pem --artifact base.json --artifact cand.json
	assert_eq "$rc" 0 "verify ($out $err)"
	# a report edited after the comparison is no longer the one attested
	jq '.name = "edited"' base.json >base2.json && mv base2.json base.json
	pg verify-attestation cmp.att --key pub.pem --artifact base.json
	assert_eq "$rc" 1
	assert_contains "$out" "attestation.artifact-mismatch"
	# a refused comparison is attested as refused, and verifies as not certified
	pg compare cand.json cand.json --attest same.att --sign-key key.pem
	assert_eq "$rc" 1
	pg verify-attestation same.att --key pub.pem
	assert_eq "$rc" 1
	assert_contains "$out" "like_for_like is false"
	# a key file others can read is refused before anything is compared
	chmod 644 key.pem
	pg compare base.json cand.json --attest x.att --sign-key key.pem
	assert_eq "$rc" 2
	[ ! -e x.att ] || fail "an attestation was written with a readable key"
}

test_declared_fact_equal_on_both_sides_is_refused() {
	setup
	start_side "--block-size 832"
	certify_side base.json 832
	start_side "--block-size 832"
	certify_side cand.json 832
	pg compare base.json cand.json --differ "fact.block size" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.declared-equal
	assert_eq "$(jq -r '.fields[] | select(.field == "fact.block size") | .verdict' cmp.json)" declared-equal
	assert_contains "$out" "REFUSED"
	# a declaration that names nothing is refused too
	pg compare base.json cand.json --differ "fact.blocksize" --json cmp2.json
	assert_eq "$rc" 1
	assert_eq "$(codes cmp2.json)" compare.declared-unknown
}

test_undeclared_service_flag_is_refused() {
	setup
	baseline
	start_side "--block-size 832 --enable-prefix-caching"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.cmdline-differs
	assert_eq "$(jq -r '.fields[] | select(.field == "service.args.--enable-prefix-caching") | "\(.baseline) \(.candidate)"' cmp.json)" "null set"
	assert_contains "$out" "service.args.--enable-prefix-caching"
}

test_kernel_steering_variable_changed_is_refused() {
	setup
	baseline
	VLLM_ATTENTION_BACKEND=FLASH_ATTN HF_TOKEN_SECRET_KEY=hunter2 start_side "--block-size 832"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.env-differs
	assert_eq "$(jq -r '.environment.service.env.VLLM_ATTENTION_BACKEND' cand.json)" FLASH_ATTN
	# not a steering variable: not recorded at all; a secret-looking steering one is redacted
	assert_eq "$(jq -r '.environment.service.env | has("HF_TOKEN_SECRET_KEY")' cand.json)" false
	! grep -q hunter2 cand.json || fail "a secret reached the report"
	# declared, it is the change
	pg compare base.json cand.json "${declared[@]}" --differ service.env.VLLM_ATTENTION_BACKEND
	assert_eq "$rc" 0 "declared ($out)"
}

test_secret_steering_values_are_redacted() {
	setup
	CUDA_API_KEY=s3cr3t start_side "--block-size 784"
	certify_side base.json 784
	assert_eq "$(jq -r '.environment.service.env.CUDA_API_KEY' base.json)" "<redacted>"
	! grep -q s3cr3t base.json || fail "a secret reached the report"
}

test_profiler_library_mapped_by_one_service_is_refused() {
	setup
	baseline
	local nvperf
	nvperf=$(profiler_lib libnvperf_host.so)
	start_side "--block-size 832" --lib "$nvperf"
	config 832
	pg certify --json cand.json
	assert_eq "$rc" 1 "a service with a profiler is not certified ($out)"
	assert_eq "$(gate_status cand.json 5)" fail
	assert_contains "$(problem_codes cand.json 5)" stale-service.profiler-attached
	assert_contains "$(jq -r '.gates[4].evidence.profilers[0]' cand.json)" "maps $nvperf"
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp.json)" compare.not-certified
	# a run meant to profile: certified, but never like for like with a clean baseline
	certify_side cand2.json 832 '.service.allow_profiler = true'
	pg compare base.json cand2.json "${declared[@]}" --json cmp2.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp2.json)" compare.profiler-differs
	assert_contains "$(codes cmp2.json)" compare.shared-object-differs
}

test_cupti_alone_is_recorded_not_refused() {
	setup
	# PyTorch preloads libcupti in every CUDA process: mapped alone it proves no profiler
	local cupti
	cupti=$(profiler_lib libcupti.so)
	start_side "--block-size 784" --lib "$cupti"
	certify_side base.json 784
	assert_eq "$(jq -r '.gates[4].evidence.profilers | length' base.json)" 0
	assert_contains "$(jq -r '.gates[4].evidence.profiling_libraries[0]' base.json)" libcupti
}

test_ld_preload_of_a_profiler_on_one_side_is_refused() {
	setup
	baseline
	local cupti
	cupti=$(profiler_lib libcupti.so)
	# (the sanitizer build of the stand-in service must not insist on coming first)
	LD_PRELOAD=$cupti ASAN_OPTIONS=verify_asan_link_order=0 start_side "--block-size 832"
	config 832
	pg certify --json cand.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_contains "$(jq -r '[.gates[4].problems[].message] | join(" ")' cand.json)" "LD_PRELOAD=$cupti"
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp.json)" compare.not-certified
	# allowed to profile, it still differs from the baseline: the variable and the profiler
	certify_side cand2.json 832 '.service.allow_profiler = true'
	pg compare base.json cand2.json "${declared[@]}" --json cmp2.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp2.json)" compare.env-differs
	assert_contains "$(codes cmp2.json)" compare.profiler-differs
}

# provgate's own dispatch witness (libprovgate-witness.so through CUDA_INJECTION64_PATH) is
# known to gate 5: it counts launches without timing them. A pair compares like for like only
# when both sides ran with it.
test_witness_is_allowed_but_needed_on_both_sides() {
	setup
	local lib=$PVG_BUILD/lib/witness/libprovgate-witness.so
	mkdir -p "$W/wdir"
	baseline
	PROVGATE_WITNESS_DIR=$W/wdir CUDA_INJECTION64_PATH=$lib start_side "--block-size 832"
	certify_side cand.json 832
	assert_eq "$(jq -r '.gates[4].evidence.profilers | length' cand.json)" 0
	assert_eq "$(jq -r '.gates[4].evidence.witness[0]' cand.json)" "provgate dispatch witness (CUDA_INJECTION64_PATH)"
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "only the candidate ran with the witness ($out)"
	assert_contains "$(codes cmp.json)" compare.profiler-differs
	PROVGATE_WITNESS_DIR=$W/wdir CUDA_INJECTION64_PATH=$lib start_side "--block-size 784"
	certify_side base2.json 784
	PROVGATE_WITNESS_DIR=$W/wdir CUDA_INJECTION64_PATH=$lib start_side "--block-size 832"
	certify_side cand2.json 832
	pg compare base2.json cand2.json "${declared[@]}" --json cmp2.json
	assert_eq "$rc" 0 "both sides with the witness ($out)"
	assert_eq "$(jq -r '.fields[] | select(.field == "service.profilers") | .baseline' cmp2.json)" "provgate dispatch witness (CUDA_INJECTION64_PATH)"
}

test_dataset_file_edited_between_sides_is_refused() {
	setup
	baseline
	printf '{"prompt": "hello, longer"}\n' >data/prompts.jsonl
	start_side "--block-size 832"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.input-differs
	printf '{"prompt": "hello"}\n' >data/prompts.jsonl
}

test_library_with_another_build_id_is_refused() {
	setup
	# a native dependency rebuilt between the sides: same path, same size, new build-id
	mkdir -p dep
	echo 'int dep_version(void) { return 1; }' | gcc -shared -fPIC -Wl,--build-id -x c - -o dep/libdep.so
	baseline --lib "$W/dep/libdep.so"
	local id1
	id1=$(readelf -n dep/libdep.so | sed -n 's/.*Build ID: //p')
	echo 'int dep_version(void) { return 2; }' | gcc -shared -fPIC -Wl,--build-id -x c - -o dep/libdep.so.new
	mv dep/libdep.so.new dep/libdep.so
	start_side "--block-size 832" --lib "$W/dep/libdep.so"
	certify_side cand.json 832
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.shared-object-differs
	assert_eq "$(jq -r --arg p "$W/dep/libdep.so" '.fields[] | select(.field == "service.shared_objects." + $p) | .baseline' cmp.json)" "$id1"
	# declared by pattern, it is the change
	pg compare base.json cand.json "${declared[@]}" --differ 'service.shared_objects.*/libdep.so'
	assert_eq "$rc" 0 "declared ($out)"
}

test_same_service_process_on_both_sides_is_refused() {
	setup
	start_side "--block-size 832"
	certify_side base.json 832
	certify_side cand.json 832
	pg compare base.json cand.json --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.same-process
}

test_driver_version_changed_between_sides_is_refused() {
	setup
	# a stand-in sysfs: the DKMS amdgpu driver's version file, upgraded between the sides
	mkdir -p sysA/module/amdgpu sysB/module/amdgpu
	echo 6.8.5 >sysA/module/amdgpu/version
	echo 6.10.5 >sysB/module/amdgpu/version
	start_side "--block-size 784"
	PROVGATE_SYSFS=$W/sysA certify_side base.json 784
	start_side "--block-size 832"
	PROVGATE_SYSFS=$W/sysB certify_side cand.json 832
	assert_eq "$(jq -r .environment.gpu.driver.amdgpu.version base.json)" 6.8.5
	assert_eq "$(jq -r .environment.roots.sysfs base.json)" "$W/sysA"
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1 "exit ($out)"
	assert_eq "$(codes cmp.json)" compare.driver-differs
}

test_exec_reports_compare_and_a_failed_benchmark_is_refused() {
	setup
	start_side "--block-size 784"
	config 784
	pg exec --out base.json -- sh -c 'exit 0'
	assert_eq "$rc" 0 "exec ($out)"
	start_side "--block-size 832"
	config 832
	pg exec --out cand.json -- sh -c 'exit 0'
	assert_eq "$rc" 0 "exec ($out)"
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 0 "exec pair ($out)"
	assert_eq "$(jq -r '.fields[] | select(.field == "benchmark.command") | .verdict' cmp.json)" equal
	start_side "--block-size 832"
	config 832
	pg exec --out bad.json -- sh -c 'exit 3'
	assert_eq "$rc" 3
	pg compare base.json bad.json "${declared[@]}" --json cmp2.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp2.json)" compare.exec-failed
}

test_report_not_certified_is_refused() {
	setup
	baseline
	start_side "--block-size 832"
	config 832 '.arch = "gfx942"'
	pg certify --json cand.json
	assert_eq "$rc" 1
	pg compare base.json cand.json "${declared[@]}" --json cmp.json
	assert_eq "$rc" 1
	assert_contains "$(codes cmp.json)" compare.not-certified
	assert_contains "$out" "candidate cand.json is not certified"
}

test_bad_input_is_a_clear_refusal() {
	setup
	baseline
	printf 'garbage\n' >garbage.json
	head -c 300 base.json >truncated.json
	echo '{"schema": "something/else"}' >other.json
	: >empty.json
	local f
	for f in garbage truncated other empty; do
		pg compare base.json $f.json --json cmp-$f.json
		assert_eq "$rc" 1 "$f"
		assert_eq "$(codes cmp-$f.json)" compare.bad-report "$f"
	done
	assert_contains "$(jq -r '.problems[0].message' cmp-truncated.json)" "truncated"
	pg compare base.json missing.json
	assert_eq "$rc" 2 "a file that does not exist is a usage error"
	assert_contains "$err" "cannot read missing.json"
	pg compare base.json
	assert_eq "$rc" 2 "one report"
	pg compare --bogus base.json base.json
	assert_eq "$rc" 2 "unknown option"
	# an old report: no environment
	jq 'del(.environment)' base.json >old.json
	pg compare old.json base.json --json cmp-old.json
	assert_eq "$rc" 1
	assert_eq "$(codes cmp-old.json)" compare.no-environment
}

test_ab_hook_runs_both_sides_and_compares() {
	setup
	port=$(( 20000 + RANDOM % 12000 ))
	while ss -tanH "sport = :$port" | grep -q .; do port=$(( 20000 + RANDOM % 12000 )); done
	config 784
	mv provgate.json base-cfg.json
	config 832
	mv provgate.json cand-cfg.json
	# a start command as a user writes one: the service on that build, ready, left running
	cat >start.sh <<-SH
	#!/bin/sh
	rm -f run/serve.pid run/engine.pid
	setsid "$svc" --server --workers 2 --port $port --lib "$W/site/vllm_demo/_rocm_C.abi3.so" \
		--pidfile run/serve.pid --engine-pidfile run/engine.pid --log "$W/logs/server.log" \
		--tag "$scenario_tag" --serve-args "--block-size \$1" </dev/null >/dev/null 2>&1 &
	while [ ! -s run/serve.pid ] || [ ! -s run/engine.pid ]; do sleep 0.05; done
	before=\$(grep -c 'request [0-9]* done' logs/server.log)
	echo "4096 5120 torch.bfloat16" >logs/server.log.request
	kill -USR1 "\$(cat run/engine.pid)"
	while [ "\$(grep -c 'request [0-9]* done' logs/server.log)" -le "\$before" ]; do sleep 0.05; done
	SH
	cat >stop.sh <<-'SH'
	#!/bin/sh
	[ -s run/serve.pid ] || exit 0
	p=$(cat run/serve.pid)
	kill "$p" 2>/dev/null || exit 0
	while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	SH
	chmod +x start.sh stop.sh
	set +e
	PROVGATE=$PROVGATE "$PVG_SRC/hooks/ab" --baseline base-cfg.json --candidate cand-cfg.json \
		--start-baseline "./start.sh 784" --start-candidate "./start.sh 832" --stop ./stop.sh \
		"${declared[@]}" --out ab -- sh -c 'echo bench-ran' >ab.txt 2>&1
	rc=$?
	set -e
	[ "$rc" = 0 ] || { cat ab.txt; fail "ab exit $rc"; }
	assert_eq "$(grep -cx bench-ran ab.txt)" 2 "the benchmark ran on each side"
	assert_eq "$(jq -r .like_for_like ab/compare.json)" true
	assert_eq "$(jq -r .exec.exit_status ab/baseline.json)" 0
	[ ! -s run/serve.pid ] || ! kill -0 "$(cat run/serve.pid)" 2>/dev/null || fail "ab left the service running"
	# the same, candidate started like the baseline: the declared change is not there
	set +e
	PROVGATE=$PROVGATE "$PVG_SRC/hooks/ab" --baseline base-cfg.json --candidate base-cfg.json \
		--start-baseline "./start.sh 784" --start-candidate "./start.sh 784" --stop ./stop.sh \
		"${declared[@]}" --out ab2 -- true >ab2.txt 2>&1
	rc=$?
	set -e
	assert_eq "$rc" 1 "refused ($(tail -n 3 ab2.txt))"
	assert_eq "$(jq -r '[.problems[].code] | unique | join(" ")' ab2/compare.json)" compare.declared-equal
}

run_tests
