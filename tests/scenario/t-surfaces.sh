#!/usr/bin/env bash
# The user-visible surfaces stay in step: each verb's --help, the bash completion, the man
# page; certify --help lists only what certify takes; the README's install steps give a
# working `man provgate`; a built tree has nothing left to rebuild (man pages included).
source "$PVG_SRC/tests/lib.sh"

VERBS=$("$PROVGATE" --help | sed -n '/^Usage:/,/^$/s/^  provgate \([a-z][a-z-]*\) .*/\1/p')

# the flags a verb's --help names: in its usage lines and at the start of its option lines
# (prose that mentions a flag of another verb does not count)
help_flags() {
	"$PROVGATE" "$1" --help | /usr/bin/python3 -c '
import re, sys
flags, usage = set(), False
for line in sys.stdin:
    if line.startswith("Usage:"):
        usage = True
    elif usage and not re.match(r"^ +\[", line):
        usage = False
    if usage:
        flags.update(re.findall(r"(?:^|[][ ,|])(--?[a-zA-Z][a-zA-Z-]*)", line))
    elif re.match(r"^ +-", line):
        head = re.split(r"\s{2,}", line.strip())[0]
        flags.update(t for t in re.findall(r"--?[a-zA-Z][a-zA-Z-]*", head))
flags.discard("--help")
print("\n".join(sorted(flags)))
'
}

# what the completion offers after "provgate VERB -"
completion_flags() {
	# shellcheck source=/dev/null
	source "$PVG_SRC/hooks/provgate.bash-completion"
	COMP_WORDS=(provgate "$1" -)
	COMP_CWORD=2
	COMPREPLY=()
	_provgate
	printf '%s\n' "${COMPREPLY[@]}" | grep -E '^-' | grep -vx -e '--help' -e '--' | sort -u
}

test_completion_offers_every_flag_of_each_verbs_help() {
	local v h c
	for v in $VERBS; do
		h=$(help_flags "$v")
		c=$(completion_flags "$v")
		[ -n "$h" ] || fail "$v --help lists no flag"
		assert_eq "$c" "$h" "completion of $v against its --help"
	done
	# the verbs themselves
	source "$PVG_SRC/hooks/provgate.bash-completion"
	COMP_WORDS=(provgate "")
	COMP_CWORD=1
	_provgate
	local offered listed
	offered=$(printf '%s\n' "${COMPREPLY[@]}" | grep -v '^-' | sort | tr '\n' ' ')
	listed=$(echo "$VERBS" | sort | tr '\n' ' ')
	assert_eq "$offered" "$listed" "verbs completed against provgate --help"
}

# what the zsh completion offers after "provgate VERB -" (its flag lists, read in zsh)
zsh_flags() {
	zsh -fc "source $PVG_SRC/hooks/provgate.zsh-completion; _provgate_verb_flags $1" |
		grep -vx -e '--help' -e '--' | sort -u
}

test_zsh_completion_offers_every_flag_and_loads_in_compinit() {
	need zsh
	local v h
	for v in $VERBS; do
		h=$(help_flags "$v")
		assert_eq "$(zsh_flags "$v")" "$h" "zsh completion of $v against its --help"
	done
	local offered listed
	offered=$(zsh -fc "source $PVG_SRC/hooks/provgate.zsh-completion; _provgate_verbs" |
		cut -d: -f1 | sort | tr '\n' ' ')
	listed=$(echo "$VERBS" | sort | tr '\n' ' ')
	assert_eq "$offered" "$listed" "zsh verbs against provgate --help"
	# installed as _provgate in a folder of fpath, compinit registers it for provgate
	mkdir -p fp
	cp "$PVG_SRC/hooks/provgate.zsh-completion" fp/_provgate
	zsh -n fp/_provgate || fail "zsh syntax"
	assert_eq "$(zsh -fc "fpath=($T/fp \$fpath); autoload -Uz compinit; compinit -u -d $T/zcd; print -r -- \${_comps[provgate]}")" \
		_provgate "compinit's function for provgate"
}

test_man_page_names_every_verb_and_flag() {
	local page=$PVG_SRC/man/provgate.1.scd v f
	for v in $VERBS; do
		grep -q "^\*provgate $v\*" "$page" || fail "the man page's synopsis lacks $v"
		for f in $(help_flags "$v"); do
			grep -qE -- "(^|[^a-zA-Z-])$f([^a-zA-Z-]|\$)" "$page" ||
				fail "the man page never names $v's $f"
		done
	done
	# every problem-code fragment is a dependency of the man page's build
	for f in "$PVG_SRC"/man/codes/*.scd; do
		grep -qF "'codes/$(basename "$f")'" "$PVG_SRC/man/meson.build" ||
			fail "man/meson.build does not list $(basename "$f")"
	done
}

# the config keys the help of provgate and of the verbs that read a config names
# (SECTION.key) are keys of lib/config.schema.json, and the help names the keys of what it
# says the gates also do
test_help_names_only_config_keys_that_exist() {
	local h keys
	h=$("$PROVGATE" --help; for v in run certify exec; do "$PROVGATE" "$v" --help; done)
	keys=$(/usr/bin/python3 -c '
import json, re, sys
schema = json.load(open(sys.argv[1]))["properties"]
n = 0
for sec, key in sorted(set(re.findall(r"(?<![\w./-])([a-z_]+)\.([a-z_]+)\b", sys.stdin.read()))):
    if schema.get(sec, {}).get("type") == "object":
        n += 1
        if key not in schema[sec].get("properties", {}):
            print(f"{sec}.{key} is not a config key")
print(f"{n} keys")
' "$PVG_SRC/lib/config.schema.json" <<<"$h")
	assert_eq "$keys" "$(tail -n1 <<<"$keys")" "keys named in --help: $keys"
	local k
	for k in benchmark.allow_loads service.allow_profiler witness.changed_sources; do
		assert_contains "$h" "$k"
	done
}

test_certify_help_lists_only_what_certify_takes() {
	local h
	h=$("$PROVGATE" certify --help)
	assert_not_contains "$h" "--phase"
	assert_not_contains "$h" "--gates"
	pg certify --phase live --gates 3
	assert_eq "$rc" 2 "certify refuses --gates"
	assert_contains "$("$PROVGATE" run --help)" "--gates"
	for v in $VERBS; do
		assert_contains "$("$PROVGATE" --help)" "provgate $v"
	done
}

test_nothing_to_rebuild_in_a_built_tree() {
	need ninja
	local o
	o=$(ninja -C "$PVG_BUILD" -n 2>&1)
	assert_contains "$o" "no work to do" "ninja -n in a built tree"
}

# README: meson setup --prefix, ninja, meson install; then man provgate finds the page
# through PATH (man-db looks in PREFIX/share/man for PREFIX/bin on PATH).
test_install_gives_man_page_completion_and_schemas() {
	need meson man
	meson install -C "$PVG_BUILD" --no-rebuild --destdir "$T/dest" --quiet >install.log 2>&1 ||
		{ cat install.log; fail "meson install"; }
	local prefix
	prefix=$T/dest$(meson introspect "$PVG_BUILD" --buildoptions | jq -r '.[] | select(.name == "prefix") | .value')
	[ -x "$prefix/bin/provgate" ] || fail "no provgate in $prefix/bin"
	assert_eq "$(PATH=$prefix/bin:$PATH man -w provgate)" "$prefix/share/man/man1/provgate.1"
	assert_eq "$(PATH=$prefix/bin:$PATH man -w 5 provgate.json)" "$prefix/share/man/man5/provgate.json.5"
	PATH=$prefix/bin:$PATH MANPAGER=cat MANWIDTH=100 man provgate 2>/dev/null | grep -q 'provgate init' ||
		fail "man provgate does not show the page"
	[ -f "$prefix/share/bash-completion/completions/provgate" ] || fail "completion not installed"
	[ -f "$prefix/share/provgate/config.schema.json" ] || fail "config schema not installed"
	[ -f "$prefix/share/provgate/report.schema.json" ] || fail "report schema not installed"
	# README says so
	local readme=$PVG_SRC/README.md
	grep -q 'meson install' "$readme" || fail "README lacks meson install"
	grep -q 'bash-completion' "$readme" || fail "README does not mention the completion"
	grep -q 'MANPATH\|man provgate' "$readme" || fail "README does not say how man finds the page"
}

# Every example config in the man pages and the README is valid against the schema and loads.
test_documented_configs_are_schema_valid_and_load() {
	need jq /usr/bin/python3
	local n=0 f
	# every fenced block (``` or ```json) that holds a JSON object
	/usr/bin/python3 - "$T" "$PVG_SRC/man/provgate.json.5.scd" "$PVG_SRC/man/provgate.1.scd" \
		"$PVG_SRC/README.md" <<-'PY'
	import os, sys
	out = sys.argv[1]
	for path in sys.argv[2:]:
	    block, n = None, 0
	    for line in open(path):
	        if line.startswith("```"):
	            if block is None:
	                block = []
	            else:
	                text = "".join(block)
	                if text.lstrip().startswith("{"):
	                    n += 1
	                    with open(os.path.join(out, "ex-%s-%d.json" % (os.path.basename(path), n)), "w") as f:
	                        f.write(text)
	                block = None
	        elif block is not None:
	            block.append(line)
	PY
	for f in "$T"/ex-*.json; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" "$f" || fail "$f is not schema-valid"
		pg run -c "$f" --gates 3
		[ "$rc" -ne 2 ] || fail "$f does not load: $err"
	done
	[ "$n" -ge 2 ] || fail "found only $n example configs"
	# and the schema refuses what provgate refuses
	echo '{"bulid": {}}' >bad1.json
	echo '{"service": {"port": 70000}}' >bad2.json
	# several artifacts: both forms at once, an empty list, an entry with both installed forms
	echo '{"build": {"artifact": "a.so"}, "artifacts": [{"name": "a", "build": "b.so"}]}' >bad3.json
	echo '{"artifacts": []}' >bad4.json
	echo '{"artifacts": [{"name": "a", "build": "b.so", "install": "/i.so", "python_module": "v.a"}]}' >bad5.json
	echo '{"artifacts": [{"name": "a", "build": "b.so", "instal": "/i.so"}]}' >bad6.json
	for f in bad1.json bad2.json bad3.json bad4.json bad5.json bad6.json; do
		/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" "$f" >/dev/null && fail "schema accepts $f"
		pg run -c "$f" --gates 3
		assert_eq "$rc" 2 "provgate refuses $f"
	done
}

run_tests
