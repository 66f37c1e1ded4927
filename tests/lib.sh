# Helpers for scenario tests. A test is a function named test_*; each runs in its own
# subshell with `set -e` and a fresh $T folder, and passes when it returns 0.
#   assert_eq ACTUAL EXPECTED [what]     fail "message"     need TOOL...
#   pg ARGS...        runs provgate; sets $rc, $out (stdout) and $err (stderr)
#   gate_status REPORT ID    problem_codes REPORT ID
set -u
: "${PROVGATE:?run through tests/run}"
: "${PVG_SRC:?}"
FIXTURES="$PVG_SRC/tests/fixtures"

fail() { echo "FAIL: $*" >&2; exit 1; }
assert_eq() {
	[ "$1" = "$2" ] || fail "${3:-value}: expected [$2], got [$1]"
}
assert_contains() {
	case "$1" in *"$2"*) ;; *) fail "${3:-text} does not contain [$2]: [$1]";; esac
}
assert_not_contains() {
	case "$1" in *"$2"*) fail "${3:-text} contains [$2]: [$1]";; esac
}

# need TOOL...: skip the test when a tool is missing, except in CI where that is a failure.
need() {
	local t
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			if [ "${CI:-}" = true ]; then fail "required tool $t is not installed"; fi
			echo "SKIP: $t is not installed" >&2
			exit 77
		fi
	done
}

pg() {
	local o e
	o=$(mktemp) e=$(mktemp)
	set +e
	"$PROVGATE" "$@" >"$o" 2>"$e"
	rc=$?
	set -e
	out=$(cat "$o"); err=$(cat "$e")
	rm -f "$o" "$e"
	# sanitizer reports are failures whatever the exit status
	case "$err" in *"ERROR: AddressSanitizer"*|*"runtime error:"*|*"ERROR: LeakSanitizer"*)
		echo "$err" >&2; fail "sanitizer report from provgate $*";; esac
	return 0
}

gate_status() { jq -r --argjson id "$2" '.gates[] | select(.id == $id) | .status' "$1"; }
problem_codes() { jq -r --argjson id "$2" '[.gates[] | select(.id == $id) | .problems[].code] | join(" ")' "$1"; }

run_tests() {
	local fn rc
	for fn in $(declare -F | awk '{print $3}' | grep '^test_'); do
		T=$(mktemp -d "${TMPDIR:-/tmp}/pvg-$fn.XXXXXX")
		( set -e; cd "$T"; "$fn" ) >"$T.log" 2>&1
		rc=$?
		case $rc in
		0) echo "ok - $fn" ;;
		77) echo "skip - $fn: $(grep '^SKIP:' "$T.log" | head -n1)" ;;
		*) echo "not ok - $fn"; sed 's/^/#   /' "$T.log" | tail -n 40 ;;
		esac
		rm -rf "$T" "$T.log"
	done
}

# validate REPORT...: the report matches lib/report.schema.json
validate() { /usr/bin/python3 "$PVG_SRC/tests/validate-report.py" "$@" || fail "report does not validate"; }
