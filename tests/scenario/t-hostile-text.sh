#!/usr/bin/env bash
# Terminal and document injection (SPEC §11): a real service run by an unprivileged user
# names itself, fills its command line, environment and log with escape sequences, newlines,
# C1 controls, invalid UTF-8 and XML-forbidden characters. Whatever root's provgate then
# prints or writes (maps, init's stdout and config, exec --witness, run's text and --junit,
# compare, merge) holds none of them raw and stays a well-formed document.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/helpers/hostile.sh"

# The process name: a clear-screen sequence, a newline and "{" (which would end init's "//"
# comment and start a JSON object), and 0x9b, the one-byte C1 form of CSI. 7 of 15 bytes.
COMM_HEX=1b5b324a0a7b9b

# The service: sets its name (prctl PR_SET_NAME), maps the files it is given, optionally
# rewrites its command line in place (as setproctitle does; "" leaves it all NULs, so that
# /proc/PID/cmdline reads empty) and writes one log line of hostile text after a second.
#   svc_start COMM_HEX ARGV_HEX|- [FILE...] [log=PATH] [VAR=VALUE via $svc_env]
svc_start() {
	cat >"$SVC/svc.py" <<'PY'
import ctypes, mmap, os, sys, time
comm, argv_hex = bytes.fromhex(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(15, ctypes.c_char_p(comm), 0, 0, 0) != 0:
    sys.exit("prctl PR_SET_NAME failed")
keep, log = [], None
for a in sys.argv[3:]:
    if a.startswith("log="):
        log = a[4:]
        continue
    f = open(a, "rb")
    keep.append((f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)))
if argv_hex != "-":
    st = open("/proc/self/stat", "rb").read()
    fields = st[st.rindex(b")") + 2:].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end: fields 48 and 49
    new = bytes.fromhex(argv_hex)[: end - start - 1]
    with open("/proc/self/mem", "r+b", buffering=0) as m:
        m.seek(start)
        m.write(new + b"\0" * (end - start - len(new)))
if log:
    time.sleep(1.2)  # vLLM's times have whole seconds: after the start's second
    t = time.strftime("%m-%d %H:%M:%S")
    with open(log, "a", encoding="utf-8") as f:
        f.write("(EngineCore_DP0 pid=%d) WARNING %s [attention.py:210] fallback to unified "
                "triton \ufffe\uffff \u009b[2J \x1b[2J \x01 \ud7ff\ue000 end\n" % (os.getpid(), t))
open(os.environ["HOME"] + "/ready", "w").write(str(os.getpid()))
time.sleep(300)
PY
	rm -f "$SVC/ready"
	as_hostile env ${svc_env[@]+"${svc_env[@]}"} /usr/bin/python3 "$SVC/svc.py" "$@" \
		</dev/null >"$SVC/out" 2>&1 &
	svc_launcher=$!
	trap 'kill $(cat "$SVC/ready" 2>/dev/null) $svc_launcher 2>/dev/null || true' EXIT
	for _ in $(seq 200); do [ -s "$SVC/ready" ] && break; sleep 0.05; done
	[ -s "$SVC/ready" ] || { cat "$SVC/out"; fail "the service did not start"; }
	svc_pid=$(cat "$SVC/ready")
}

# assert_clean_text FILE WHAT: FILE is valid UTF-8 with no control character but tab and
# newline, no DEL, no C1 control, no noncharacter, no U+2028/U+2029 and no ESC.
assert_clean_text() {
	/usr/bin/python3 - "$1" "$2" <<'PY' || fail "$2 holds raw service text (see above)"
import sys
b = open(sys.argv[1], "rb").read()
try:
    s = b.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("%s: invalid UTF-8 at byte %d: %r" % (sys.argv[2], e.start, b[max(0, e.start - 20):e.start + 20]))
for i, c in enumerate(s):
    o = ord(c)
    if (o < 0x20 and c not in "\t\n") or 0x7f <= o <= 0x9f or o in (0xfffe, 0xffff, 0x2028, 0x2029):
        sys.exit("%s: raw U+%04X at character %d: %r" % (sys.argv[2], o, i, s[max(0, i - 30):i + 30]))
PY
}

# Well-formed XML 1.0, by a real parser.
assert_well_formed_xml() {
	/usr/bin/python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$1" ||
		fail "$1 is not well-formed XML"
}

# Promise: maps prints a process's own name (when its command line is empty) with no raw
# control byte, escape sequence or invalid UTF-8.
test_maps_escapes_the_name_of_a_process_without_command_line() {
	need /usr/bin/python3
	hostile_setup
	svc_start "$COMM_HEX" ""
	[ -z "$(tr -d '\0' <"/proc/$svc_pid/cmdline")" ] || fail "the command line is not empty"
	pg maps "$svc_pid"
	printf '%s\n' "$out" >maps.txt
	cat maps.txt
	assert_clean_text maps.txt "provgate maps"
	assert_contains "$out" 'pid '"$svc_pid"' \x1b[2J\x0a{\x9b'
	# a command line with C1 controls, both as a raw byte and as UTF-8, is no safer
	kill "$svc_pid"
	svc_start "$COMM_HEX" "$(printf 'svc \x9b2J \xc2\x9b2J \xe2\x80\xae' | od -An -tx1 | tr -d ' \n')"
	pg maps "$svc_pid"
	printf '%s\n' "$out" >maps2.txt
	assert_clean_text maps2.txt "provgate maps (command line)"
	assert_contains "$out" 'svc \x9b2J \u{9b}2J \u{202e}'
}

# Promise: init's stdout and the config it writes never carry the service's name raw; the
# name stays inside its "//" comment, and the config parses as the one init meant.
test_init_keeps_the_service_name_inside_its_comment() {
	need git jq /usr/bin/python3
	hostile_setup
	local M="$FIXTURES/buildlog/multi"
	git init -q -b main repo
	mkdir -p repo/csrc build inst
	echo "// x" >repo/csrc/x.cpp
	git -C repo add -A
	git -C repo -c user.name=t -c user.email=t@t commit -qm base
	: >build/build.ninja
	for l in _a_C _b_C _c_C _d_C; do
		cp "$M/$l.so" build/
		cp build/$l.so inst/
	done
	cp "$M/ninja_log" build/.ninja_log
	sleep 0.01
	sed "s#/src/ext#$PWD/repo#g" "$M/ninja.log" >build.log
	svc_start "$COMM_HEX" - "$PWD/inst/_a_C.so" "$PWD/inst/_b_C.so" "$PWD/inst/_c_C.so"
	pg init
	printf '%s\n%s\n' "$out" "$err" >init.txt
	cat init.txt
	assert_eq "$rc" 0 "init ($err)"
	assert_clean_text init.txt "init's output"
	assert_clean_text provgate.json "the config init wrote"
	assert_contains "$out" "($(printf '\\x1b[2J\\x0a{\\x9b'))"
	# every line before the JSON body is a comment; the body alone is the config
	local body
	body=$(sed '/^\/\//d' provgate.json)
	[ "$(sed -n '/^[^\/]/{p;q}' provgate.json)" = "{" ] || fail "a line before the config is not a comment"
	grep -q '^// guessed: service: process '"$svc_pid"' (\\x1b\[2J\\x0a{\\x9b) maps ' provgate.json ||
		fail "the name is not in its comment"
	assert_eq "$(jq -r '[.artifacts[].name] | sort | join(",")' <<<"$body")" "_a_C,_b_C,_c_C"
	assert_contains "$(jq -r '.service.match[0]' <<<"$body")" "svc.py"
	# and provgate reads it as that config
	pg run --gates 3 --json r3.json
	assert_eq "$(jq -r '.chain.artifacts | length' r3.json)" 3 "the config provgate read ($err)"
}

# Promise: exec --witness prints the service's own variables with no raw control byte,
# escape sequence or invalid UTF-8.
test_exec_witness_escapes_the_services_variables() {
	need /usr/bin/python3
	hostile_setup
	svc_env=("PROVGATE_WITNESS_DIR=$SVC/w"$'\e[2J\n\e]0;pwned\a\x9b' \
		 "CUDA_INJECTION64_PATH=/x"$'\xc2\x9b\xef\xbf\xbe\r'"CERTIFIED")
	svc_start "$COMM_HEX" -
	printf '{ "arch": "sm_90", "service": {"pid": %d} }' "$svc_pid" >provgate.json
	pg exec --witness wdir
	printf '%s\n' "$out" >witness.txt
	cat witness.txt
	assert_clean_text witness.txt "exec --witness"
	assert_contains "$out" "pid $svc_pid: PROVGATE_WITNESS_DIR=$SVC/w\\x1b[2J\\x0a\\x1b]0;pwned\\x07\\x9b, CUDA_INJECTION64_PATH=/x\\u{9b}\\u{fffe}\\x0dCERTIFIED"
}

# Promise: run's text output and its --junit file hold no raw control character or XML-
# forbidden character from a service's log line, and the JUnit file is well-formed XML.
test_run_junit_stays_well_formed_with_hostile_log_text() {
	need /usr/bin/python3 jq
	hostile_setup
	svc_start "$COMM_HEX" - "log=$SVC/server.log"
	cat >provgate.json <<JSON
{ "markers": { "log": "$SVC/server.log", "prefix": "DCU_KERNEL_DIAG",
               "forbid": ["fallback to unified triton"] } }
JSON
	pg run -c provgate.json --pid "$svc_pid" --gates 7 --junit junit.xml --json r.json
	printf '%s\n' "$out" >run.txt
	cat run.txt
	assert_contains "$(problem_codes r.json 7)" dispatch-marker.forbidden
	assert_well_formed_xml junit.xml
	assert_clean_text junit.xml "the JUnit file"
	assert_clean_text run.txt "run's text output"
	assert_clean_text r.json "the JSON report"
	# the text is still there, escaped, and the characters XML allows are kept
	assert_contains "$(cat junit.xml)" 'triton \u{fffe}\u{ffff} \u{9b}[2J \x1b[2J \x01 '$'\xed\x9f\xbf\xee\x80\x80'' end'
}

# Promise: compare and merge, which print what other nodes' reports say, print none of it raw.
test_compare_and_merge_escape_text_from_reports() {
	need jq /usr/bin/python3
	# two reports as another node could write them: valid JSON, hostile strings
	/usr/bin/python3 - <<'PY'
import json
bad = "n\u001b[2J\u009b\ufffe\u2028x"
for name in ("A", "B"):
    r = {"schema": "provgate.report/1", "name": bad, "certified": True,
         "started_at": "2026-11-29T12:00:00Z", "host": {"node": "node-" + name + bad},
         "gates": [], "environment": {"service": {"cmdline": bad + name}}}
    json.dump(r, open(name + ".json", "w"))
PY
	pg compare A.json B.json -v
	printf '%s\n%s\n' "$out" "$err" >compare.txt
	cat compare.txt
	assert_clean_text compare.txt "compare's output"
	pg compare A.json B.json -v --junit compare.xml
	assert_well_formed_xml compare.xml
	mkdir nodes && cp A.json nodes/ && cp B.json nodes/
	pg merge nodes --nodes "node-A,node-B"
	printf '%s\n%s\n' "$out" "$err" >merge.txt
	cat merge.txt
	assert_clean_text merge.txt "merge's output"
	pg merge nodes --nodes "node-A,node-B" --junit merge.xml
	assert_well_formed_xml merge.xml
}

run_tests
