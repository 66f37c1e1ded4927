#!/usr/bin/env bash
# The dispatch witness's CUDA front end (lib/witness/cuda.c) on a stand-in driver and CUPTI
# (tests/helpers/cuda-standin.c, loaded as libcuda.so.1; no GPU here): graph replays counted
# per kernel node and compared with what the stand-in itself ran, graph exec updates and
# child graphs, what is not itemized; then gate 7 on a live process driven through a FIFO
# (tests/helpers/cuda-sim): "via", and the request that makes every launch made before the
# check visible (a process that answers, one that has exited, one that never answers).
source "$PVG_SRC/tests/lib.sh"
need jq
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"
SIM="$PVG_BUILD/tests/helpers/cuda-sim"
STANDIN="$PVG_BUILD/tests/helpers/libcuda.so.1"
BOOT=$(cat /proc/sys/kernel/random/boot_id)
[ -x "$SIM" ] || { echo "SKIP: the CUDA front end is not built (no cupti.h): nothing to test" >&2; exit 77; }
# the stand-in's graphs live as long as the process: not leaks worth a report
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

# sim < SCRIPT: a whole run, the witness file written at its exit
sim() {
	mkdir -p wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_CUPTI=$STANDIN \
		"$SIM" "$@"
}

# the witness file's records as the stand-in's "ran" lines, sorted
witnessed() {
	"$TOOL" dump wdir/*.pvgw | awk '/^record/ {
		name = $2; sub(/^name="/, "", name); sub(/"$/, "", name)
		for (i = 2; i <= NF; i++) {
			if ($i ~ /^grid=/) g = $i; if ($i ~ /^block=/) b = $i
			if ($i ~ /^via=/) v = ($i == "via=4") ? "graph" : "eager"; if ($i ~ /^count=/) c = $i
		}
		print "ran", v, name, g, b, c }' | sort
}
truth() { grep '^ran ' sim.out | sort; }
header() { "$TOOL" dump wdir/*.pvgw | sed -n 1p; }
graphs() { "$TOOL" dump wdir/*.pvgw | sed -n 2p; }

test_replays_are_counted_per_kernel_node() {
	cat >s.txt <<'EOF'
init
launch _Z5eagerPf 4 128
# captured from a stream: two kernels, the graph replayed 5 times
stream s
capture s
launch _Z3barPf 8,2 64 s
launch _Z3bazv 2 32 s
endcapture s g
instantiate e g
replay e 5
# built by hand: the same kernel twice, an empty node, and a child graph with a child graph
graph c2
kernel c2 deep _Z4deepv 1 1
graph c1
kernel c1 k _Z5innerv 3 96
child c1 n2 c2
graph top
kernel top t1 _Z3topv 1 32
kernel top t2 _Z3topv 1 32
empty top nop
child top n1 c1
instantiate e2 top
replay e2 3
truth
EOF
	sim <s.txt >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	assert_eq "$(witnessed)" "$(truth)" "witness records against what ran"
	assert_contains "$(truth)" 'ran graph _Z3topv grid=1,1,1 block=32,1,1 count=6'
	assert_contains "$(truth)" 'ran graph _Z4deepv grid=1,1,1 block=1,1,1 count=3'
	assert_contains "$(header)" 'launches=9 dropped=0 graph_launches=8 nested_driver=0 captured=2 records=6'
	# 2 x 5 + 5 x 3 kernel runs; every replay itemized
	assert_eq "$(graphs)" 'graphs itemized=8 opaque=0 partial=0 kernel_launches=22 execs=2 opaque_why=0x0 answered=0'
	assert_contains "$("$TOOL" dump wdir/*.pvgw)" 'name="_Z3barPf" demangled="bar(float*)" module="" grid=8,2,1 block=64,1,1 via=4 flags=0 count=5'
}

test_updates_and_enabling_are_followed() {
	cat >s.txt <<'EOF'
init
graph c
kernel c ck _Z6childAv 2 32
graph g
kernel g a _Z4fastv 16 256
kernel g b _Z4normv 16 256
child g n c
instantiate e g
replay e 2
# one node's kernel changed: the next replays run the fallback
setk e a _Z8fallbackv 32 128
replay e 3
# a node disabled runs nothing, then enabled again
enable e b 0
replay e 4
enable e b 1
replay e 1
# the child graph's parameters from another graph of the same shape
graph c2
kernel c2 ck2 _Z6childBv 4 64
setchild e n c2
replay e 2
truth
EOF
	sim <s.txt >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	assert_eq "$(witnessed)" "$(truth)" "witness records against what ran"
	assert_contains "$(truth)" 'ran graph _Z4fastv grid=16,1,1 block=256,1,1 count=2'
	assert_contains "$(truth)" 'ran graph _Z8fallbackv grid=32,1,1 block=128,1,1 count=10'
	assert_contains "$(truth)" 'ran graph _Z4normv grid=16,1,1 block=256,1,1 count=8'
	assert_contains "$(truth)" 'ran graph _Z6childBv grid=4,1,1 block=64,1,1 count=2'
	assert_eq "$(graphs)" 'graphs itemized=12 opaque=0 partial=0 kernel_launches=32 execs=5 opaque_why=0x0 answered=0'
}

# cuGraphExecUpdate: the exec runs the new graph's parameters, but stays paired with the
# graph it was instantiated from; a later per-node change names a node of that graph, which
# the witness (holding the new graph's nodes) cannot place: from then on the exec is opaque.
test_exec_update_then_unplaceable_node_is_opaque() {
	cat >s.txt <<'EOF'
init
graph g
kernel g a _Z3onev 1 32
instantiate e g
replay e 2
graph g2
kernel g2 a2 _Z3twov 1 32
update e g2
replay e 3
setk e a _Z5threev 1 32
replay e 4
truth
EOF
	sim <s.txt >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	out=$("$TOOL" dump wdir/*.pvgw)
	assert_contains "$out" 'name="_Z3onev" demangled="one()" module="" grid=1,1,1 block=32,1,1 via=4 flags=0 count=2'
	assert_contains "$out" 'name="_Z3twov" demangled="two()" module="" grid=1,1,1 block=32,1,1 via=4 flags=0 count=3'
	# _Z5threev ran 4 times, unseen: counted as opaque replays, never as a kernel
	assert_contains "$(truth)" 'ran graph _Z5threev grid=1,1,1 block=32,1,1 count=4'
	assert_not_contains "$out" _Z5threev
	assert_eq "$(graphs)" 'graphs itemized=5 opaque=4 partial=0 kernel_launches=5 execs=2 opaque_why=0x2 answered=0'
}

test_what_is_not_itemized_is_said() {
	cat >s.txt <<'EOF'
init
# a conditional node: its body runs a number of times decided on the GPU
graph body
kernel body bk _Z4bodyv 1 32
graph g
kernel g a _Z6alwaysv 1 32
conditional g cn body 3
instantiate e g
replay e 2
# a device-launchable exec (CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
graph d
kernel d dk _Z3devv 1 32
instantiate ed d 4
replay ed 1
# an exec CUPTI's resource callback alone tells of is read there
graph q
kernel q qk _Z5quietv 1 32
quiet-instantiate eq q
replay eq 2
# then one of its nodes changes behind the calls the witness follows: opaque
quiet-set eq qk _Z6hiddenv
replay eq 5
truth
EOF
	sim <s.txt >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	out=$("$TOOL" dump wdir/*.pvgw)
	assert_contains "$out" 'name="_Z6alwaysv" demangled="always()" module="" grid=1,1,1 block=32,1,1 via=4 flags=0 count=2'
	assert_not_contains "$out" _Z4bodyv
	assert_contains "$(truth)" 'ran graph _Z4bodyv grid=1,1,1 block=32,1,1 count=6'
	assert_contains "$out" 'name="_Z3devv" demangled="dev()" module="" grid=1,1,1 block=32,1,1 via=4 flags=0 count=1'
	assert_contains "$out" 'name="_Z5quietv" demangled="quiet()" module="" grid=1,1,1 block=32,1,1 via=4 flags=0 count=2'
	assert_not_contains "$out" _Z6hiddenv
	# partial: the conditional exec's 2 replays and the device-launchable one's
	assert_eq "$(graphs)" 'graphs itemized=5 opaque=5 partial=3 kernel_launches=5 execs=3 opaque_why=0x4 answered=0'
}

# cuGraphLaunch into a stream being captured runs nothing: the exec's graph becomes a child
# node of the captured graph, counted when that one is replayed.
test_graph_launched_into_a_capture_is_not_a_replay() {
	cat >s.txt <<'EOF'
init
graph g
kernel g a _Z5innerv 1 32
instantiate e g
stream s
capture s
replay e 1 s
launch _Z5afterv 2 32 s
endcapture s outer
instantiate eo outer
replay eo 3
destroy e
truth
EOF
	sim <s.txt >sim.out
	assert_eq "$(grep -c '^error' sim.out || true)" 0 "sim errors: $(grep error sim.out)"
	assert_eq "$(witnessed)" "$(truth)"
	assert_contains "$(header)" 'graph_launches=3 nested_driver=0 captured=2'
	assert_eq "$(graphs)" 'graphs itemized=3 opaque=0 partial=0 kernel_launches=6 execs=2 opaque_why=0x0 answered=0'
}

# ---- gate 7 on a live process ---------------------------------------------------------------

# start_live: cuda-sim reading its commands from a FIFO (fd 3); send CMD... waits for "ok"
start_live() {
	mkdir -p wdir
	mkfifo in
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB PROVGATE_WITNESS_CUPTI=$STANDIN \
		PROVGATE_WITNESS_INTERVAL_MS=${INTERVAL_MS:-60000} "$SIM" <in >sim.out 2>sim.err &
	svc=$!
	exec 3>in
	trap 'exec 3>&-; kill -CONT $svc 2>/dev/null || true; kill $svc 2>/dev/null || true; wait $svc 2>/dev/null || true' EXIT
	line=0
}
send() {
	local l
	for l in "$@"; do
		echo "$l" >&3
		line=$((line + 1))
		for _ in $(seq 200); do grep -q "^\(ok\|error\) $line\( \|$\)" sim.out && break; sleep 0.01; done
		grep -q "^ok $line$" sim.out || fail "sim: $l: $(grep "^error $line " sim.out || echo no answer)"
	done
}

# the artifact: the cubin whose module cuda-sim loads its kernels from (a launch counts only
# when its module's bytes are an artifact's code object)
KERNELS="$PVG_SRC/tests/fixtures/witness-modules/standin-kernels.sm_90.cubin"
config() { # REQUIRE [FORBID] [ANSWER_MS]
	cat >provgate.json <<JSON
{ "arch": "sm_90", "artifacts": [{ "name": "kernels", "build": "$KERNELS", "install": "$KERNELS" }],
  "witness": { "dir": "wdir", "require": $1, "forbid": ${2:-[]}, "answer_ms": ${3:-2000} } }
JSON
}

gate7() {
	pg run -c provgate.json --pid $svc --gates 7 --json report.json
	status=$(gate_status report.json 7)
	codes=$(problem_codes report.json 7)
}
ev() { jq -r ".gates[6].evidence.witness$1" report.json; }

decode_step=(
	"stream s" "capture s"
	"launch _Z11attn_decodev 32 256 s" "launch _Z7rmsnormv 8 128 s"
	"endcapture s g" "instantiate e g"
)

test_gate_certifies_from_replays_and_via() {
	start_live
	send init "${decode_step[@]}" "replay e 7"
	config '[{"kernel": "attn_decode", "grid": [32], "block": [256], "min_count": 7}]'
	gate7
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev '.required[0].count')" 7
	assert_eq "$(ev '.required[0].in_graph_replays')" 7
	assert_eq "$(ev '.graph_replays_itemized')" 7
	assert_eq "$(jq -c '[.gates[6].evidence.witness.kernels[] | select(.via == "graph") | .name] | sort' report.json)" '["attn_decode()","rmsnorm()"]'
	assert_eq "$(jq -r '.gates[6].evidence.witness.modules[0].artifact' report.json)" kernels
	validate report.json
	# the same launches with no artifact named: their module's bytes are compared with none
	cat >provgate.json <<'JSON'
{ "witness": { "dir": "wdir", "require": [{"kernel": "attn_decode", "min_count": 7}] } }
JSON
	rm report.json
	gate7
	assert_eq "$status" unverifiable "no artifact ($codes)"
	assert_eq "$codes" dispatch-marker.witness-code-unknown
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'the config names no artifact'
	config '[{"kernel": "attn_decode", "via": "graph", "min_count": 7}]'
	gate7
	assert_eq "$status" pass "via graph ($codes)"
	# launched only inside replays: eager launches asked for are not there
	config '[{"kernel": "attn_decode", "via": "eager"}]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" dispatch-marker.witness-too-few
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '{attn_decode via=eager}: 0 launches seen by the witness, 1 required; its launches inside graph replays do not count (via eager)'
	# and the other way round
	send "launch _Z7prefillv 64 256"
	config '[{"kernel": "prefill", "via": "graph"}]'
	gate7
	assert_eq "$status" fail
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'its eager launches do not count (via graph)'
}

test_gate_refuses_a_replay_that_runs_the_fallback() {
	start_live
	send init "stream s" "capture s" "launch _Z17attn_decode_naivev 32 256 s" \
		"endcapture s g" "instantiate e g" "replay e 5"
	config '[{"kernel": "_Z11attn_decodev"}]' '["*naive*"]'
	gate7
	assert_eq "$status" fail
	assert_eq "$codes" "dispatch-marker.witness-too-few dispatch-marker.witness-forbidden"
	assert_contains "$(jq -r '.gates[6].problems[1].message' report.json)" 'launched attn_decode_naive() 5 times'
}

# A launched function no loaded module defines (made by name alone, which no real driver
# does): the code that ran is not known, and its name is no evidence for it.
test_a_kernel_of_no_module_is_code_not_known() {
	start_live
	send init "launch _Z6warmupv 4 64" "launch _Z8orphanedv 4 64"
	config '[{"kernel": "warmup"}, {"kernel": "orphaned"}]'
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-code-unknown
	assert_contains "$("$TOOL" dump wdir/*.pvgw)" 'name="_Z8orphanedv" demangled="orphaned()" module="" grid=4,1,1 block=64,1,1 via=1 flags=0 count=1'
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" '{orphaned}: 0 launches'
}

# The writer's periodic write is an hour away (PROVGATE_WITNESS_INTERVAL_MS=60000 here): only
# the answer to the gate's request can show the launches.
test_launches_just_made_are_seen() {
	start_live
	send init "launch _Z6warmupv 4 64"
	sleep 0.2 # the file written at load has no launch yet
	out=$("$TOOL" dump wdir/*.pvgw)
	assert_contains "$out" 'launches=0 '
	send "${decode_step[@]}" "replay e 3" "launch _Z6warmupv 4 64"
	config '[{"kernel": "warmup", "min_count": 2}, {"kernel": "attn_decode", "via": "graph", "min_count": 3}]'
	gate7
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev '.live_files[0].fresh')" answered
	assert_eq "$(ev '.request.answered')" 1
	[ "$(ev '.request.waited_ms')" -lt 1000 ] || fail "waited $(ev '.request.waited_ms') ms for the answer"
	# the request file is gone, the answer is in the file
	assert_eq "$(ls -A wdir | grep -c request || true)" 0
	assert_contains "$("$TOOL" dump wdir/*.pvgw)" 'launches=5 '
}

test_a_process_that_does_not_answer_is_unverifiable() {
	start_live
	send init "launch _Z6warmupv 4 64"
	config '[{"kernel": "warmup"}]'
	gate7
	assert_eq "$status" pass "while it answers ($codes)"
	send "launch _Z6warmupv 4 64"
	kill -STOP $svc
	config '[{"kernel": "warmup"}]' '[]' 300
	gate7
	kill -CONT $svc
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-no-answer
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" "process $svc did not answer the witness request within"
	assert_eq "$(ev '.live_files[0].fresh')" no-answer
	[ "$(ev '.request.waited_ms')" -ge 300 ] || fail "gave up after $(ev '.request.waited_ms') ms"
	# running again, it answers
	gate7
	assert_eq "$status" pass "after SIGCONT ($codes)"
}

test_a_process_that_exits_during_the_check() {
	start_live
	send init "launch _Z6warmupv 4 64"
	config '[{"kernel": "warmup"}]'
	gate7
	assert_eq "$status" pass "while it answers ($codes)"
	kill -STOP $svc
	config '[{"kernel": "warmup"}]' '[]' 5000
	# killed while the gate waits for its answer (its request is in the folder)
	( for _ in $(seq 500); do ls -A wdir | grep -q '^\.pvgw-request-' && break; sleep 0.01; done
	  sleep 0.2; kill -KILL $svc ) &
	killer=$!
	gate7
	wait $killer
	assert_eq "$status" unverifiable "status ($codes)"
	assert_eq "$codes" dispatch-marker.witness-no-answer
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" "process $svc exited during the check without its final witness write"
	# it stopped waiting when the process was gone, not at answer_ms
	[ "$(ev '.request.waited_ms')" -lt 4000 ] || fail "waited $(ev '.request.waited_ms') ms"
}

# A final file (written by the exit handler) has every launch: no answer is needed.
test_a_final_file_needs_no_answer() {
	mkdir wdir
	PROVGATE_WITNESS_DIR=$PWD/wdir CUDA_INJECTION64_PATH=$LIB sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
	ticks=$(awk '{sub(/.*\) /, ""); print $20}' "/proc/$svc/stat")
	demo="$PVG_SRC/tests/gpu/results/2026-12-01-h200-witness/demo.pvgw"
	# (flags 3: final and recording, as the recorded file is)
	"$TOOL" restamp "$demo" wdir $svc $svc 1 $ticks "$BOOT" 0 3 >/dev/null
	config '[{"kernel": "pvg_wit_plain"}]' '[]' 300
	gate7
	assert_eq "$status" pass "status ($codes)"
	assert_eq "$(ev '.live_files[0].fresh')" final
	assert_eq "$(ev '.request.final')" 1
	# the same file, not final and never answering (a stopped writer): unverifiable
	rm wdir/*.pvgw
	"$TOOL" restamp "$demo" wdir $svc $svc 1 $ticks "$BOOT" 0 2 >/dev/null
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-no-answer
	# a version 1 file (an older library) cannot answer: said so, and no wait for it
	rm wdir/*.pvgw
	"$TOOL" restamp "$demo" wdir $svc $svc 1 $ticks "$BOOT" v1 2 >/dev/null
	config '[{"kernel": "pvg_wit_plain"}]' '[]' 5000
	gate7
	assert_eq "$status" unverifiable
	assert_eq "$codes" dispatch-marker.witness-no-answer
	assert_contains "$(jq -r '.gates[6].problems[0].message' report.json)" 'is version 1: its library cannot answer a request'
	[ "$(ev '.request.waited_ms')" -lt 1000 ] || fail "waited $(ev '.request.waited_ms') ms for a version 1 file"
}

run_tests
