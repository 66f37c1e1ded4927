#!/usr/bin/env bash
# Gate 2 install-scope on real git repositories built here: an upstream, a clone with a
# work branch (merges, renames, deletes, staged/unstaged/untracked changes), an install
# folder. The change set is compared with git's own answer in the same test.
source "$PVG_SRC/tests/lib.sh"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.org GIT_CONFIG_NOSYSTEM=1 HOME="${TMPDIR:-/tmp}"
export GIT_CONFIG_GLOBAL=/dev/null

g() { git -C "$T/r" "$@"; }

# upstream "up" with a vLLM-like layout; "r" clones it and works on branch "work".
setup_repo() {
	need git jq
	git init -q -b main up
	mkdir -p up/vllm/layers up/csrc/rocm up/docs up/tests
	for i in 1 2 3 4 5; do echo "layer $i" >"up/vllm/layers/l$i.py"; done
	echo "init" >up/vllm/__init__.py
	seq -f "old_name line %g" 1 40 >up/vllm/old_name.py
	echo "to delete" >up/vllm/gone.py
	echo "__global__ void k() {}" >up/csrc/rocm/skinny_gemms.cu
	echo "# docs" >up/docs/index.md
	echo "def test(): pass" >up/tests/test_a.py
	echo "from setuptools import setup" >up/setup.py
	printf '*.log\nbuild/\n' >up/.gitignore
	git -C up add -A
	git -C up commit -qm base
	git clone -q "file://$T/up" r
	g checkout -q -b work
	mkdir -p inst
	write_config true
}

write_config() {
	cat >provgate.json <<-JSON
	{"source": {"repo": "r", "baseline": "origin/main", "include_uncommitted": $1,
	  "compiled": ["csrc/**"],
	  "install_map": [{"from": "vllm/", "to": "inst/vllm/"}],
	  "ignore": ["docs/**", "tests/**", "**/*.md", ".gitignore"]}}
	JSON
}

commit() { g add -A && g commit -qm "$1"; }

# install = what a deploy script does: copy the work tree's vllm/ folder
install_all() { rm -rf inst/vllm && cp -r r/vllm inst/vllm; }

run_gate() { pg run --gates 2 --json r.json; }

# The change set provgate reports, as "K path" / "R old new" lines, sorted.
pg_changes() {
	jq -r '.gates[1].evidence.changes[] |
		if .kind == "R" then "R \(.old_path) \(.path)" else "\(.kind) \(.path)" end' r.json | sort
}
# git's answer for merge-base..HEAD
git_changes() {
	g diff --name-status -M "$1...HEAD" |
		awk -F'\t' '{k = substr($1, 1, 1); if (k == "R") print "R " $2 " " $3; else print k " " $2}' | sort
}

test_committed_scope_matches_git_diff_three_dot() {
	setup_repo
	write_config false
	# upstream moves on after the branch point: the merge base is not origin/main
	echo "upstream change" >>up/vllm/layers/l5.py
	echo "upstream only" >up/vllm/upstream_only.py
	git -C up add -A && git -C up commit -qm upstream
	g fetch -q origin
	# work: modify, add, delete, rename (with an edit), compiled and ignored changes
	echo "changed" >>r/vllm/layers/l1.py
	echo "new" >r/vllm/new_mod.py
	g rm -q vllm/gone.py
	g mv vllm/old_name.py vllm/new_name.py
	echo "edited after rename" >>r/vllm/new_name.py
	echo "// tuned" >>r/csrc/rocm/skinny_gemms.cu
	echo "more docs" >>r/docs/index.md
	commit work1
	# a side branch merged back in (a merge commit in HEAD's history)
	g checkout -q -b side
	echo "from side" >>r/vllm/layers/l2.py
	commit side
	g checkout -q work
	echo "on work" >>r/vllm/layers/l3.py
	commit work2
	g merge -q --no-edit side
	# uncommitted noise that include_uncommitted=false must leave out
	echo "untracked" >r/vllm/scratch.py
	echo "unstaged" >>r/vllm/layers/l4.py
	install_all
	rm -f inst/vllm/scratch.py
	cp up/vllm/layers/l4.py inst/vllm/layers/l4.py # HEAD's l4, the work tree is not in scope
	run_gate
	assert_eq "$(pg_changes)" "$(git_changes origin/main)" "change set vs git diff --name-status origin/main...HEAD"
	assert_contains "$(pg_changes)" "R vllm/old_name.py vllm/new_name.py"
	assert_eq "$(jq -r .gates[1].evidence.merge_base r.json)" "$(g merge-base origin/main HEAD)" "merge base"
	assert_eq "$(jq -r .gates[1].evidence.head r.json)" "$(g rev-parse HEAD)" "head"
	# the upstream-only commit is not part of the change
	assert_not_contains "$(pg_changes)" "upstream_only"
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.uncommitted)] | length' r.json)" 0
	assert_eq "$(jq -r .gates[1].evidence.counts.compiled r.json)" 1 "compiled count"
	assert_eq "$(jq -r .gates[1].evidence.counts.ignored r.json)" 1 "ignored count"
	assert_eq "$(gate_status r.json 2)" pass
	assert_eq "$rc" 0
}

test_uncommitted_scope_matches_git_status() {
	setup_repo
	echo "committed" >>r/vllm/layers/l1.py
	commit c1
	echo "staged" >>r/vllm/layers/l2.py
	g add vllm/layers/l2.py
	echo "unstaged" >>r/vllm/layers/l3.py
	echo "staged then more" >>r/vllm/layers/l4.py
	g add vllm/layers/l4.py
	echo "and unstaged" >>r/vllm/layers/l4.py
	mkdir -p r/vllm/newpkg/sub
	echo "untracked" >r/vllm/newpkg/sub/deep.py
	echo "ignored by .gitignore" >r/vllm/debug.log
	mkdir -p r/build && echo x >r/build/out.o
	g mv vllm/old_name.py vllm/renamed_staged.py
	rm r/vllm/gone.py
	install_all
	run_gate
	# every path git knows as changed (committed or in status), and nothing else
	want=$( { g diff --name-only origin/main...HEAD; g status --porcelain -uall |
		sed -E 's/^...//; s/^.* -> //'; g status --porcelain -uall | sed -nE 's/^R. (.*) -> .*/\1/p'; } | sort -u)
	got=$(jq -r '.gates[1].evidence.changes[] | .path, (.old_path // empty)' r.json | sort -u)
	assert_eq "$got" "$want" "changed paths vs git diff + git status"
	assert_not_contains "$got" "debug.log"
	assert_not_contains "$got" "build/out.o"
	kind() { jq -r --arg p "$1" '.gates[1].evidence.changes[] | select(.path == $p) | "\(.kind) \(.uncommitted)"' r.json; }
	assert_eq "$(kind vllm/layers/l1.py)" "M false"
	assert_eq "$(kind vllm/layers/l2.py)" "M true"
	assert_eq "$(kind vllm/layers/l3.py)" "M true"
	assert_eq "$(kind vllm/newpkg/sub/deep.py)" "A true"
	assert_eq "$(kind vllm/renamed_staged.py)" "R true"
	assert_eq "$(kind vllm/gone.py)" "D true"
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.kind == "R") | .old_path' r.json)" vllm/old_name.py
	# the install copied the work tree, so every mapped file is identical
	assert_eq "$(gate_status r.json 2)" pass
	assert_eq "$(jq -r .gates[1].evidence.counts.installed_identical r.json)" 6
}

test_clean_pass_proves_each_mapped_file() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	echo "// v2" >>r/csrc/rocm/skinny_gemms.cu
	echo "docs" >>r/docs/index.md
	commit c1
	install_all
	run_gate
	assert_eq "$rc" 0
	assert_eq "$(gate_status r.json 2)" pass
	assert_eq "$(problem_codes r.json 2)" ""
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "vllm/layers/l1.py") | .installed' r.json)" installed
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "vllm/layers/l1.py") | .install_path' r.json)" \
		"$T/inst/vllm/layers/l1.py"
	assert_eq "$(jq -r '.gates[1].evidence.counts | "\(.changed) \(.mapped) \(.compiled) \(.ignored) \(.unknown)"' r.json)" "3 1 1 1 0"
	assert_contains "$(jq -r .gates[1].summary r.json)" "1 installed identical"
	validate r.json
}

test_changed_file_not_installed() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	echo "brand new" >r/vllm/fresh.py
	commit c1
	install_all
	rm inst/vllm/fresh.py
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" fail
	assert_eq "$(problem_codes r.json 2)" install-scope.not-installed
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" "$T/inst/vllm/fresh.py"
	validate r.json
}

test_installed_copy_differs() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	echo "v2" >>r/vllm/layers/l2.py
	commit c1
	install_all
	# same size, other bytes (needs the hash); and an old copy of another size
	sed -i 's/v2/v3/' inst/vllm/layers/l1.py
	cp up/vllm/layers/l2.py inst/vllm/layers/l2.py
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" fail
	assert_eq "$(problem_codes r.json 2)" "install-scope.differs install-scope.differs"
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" \
		"$(sha256sum r/vllm/layers/l1.py | cut -c1-12)"
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" \
		"$(sha256sum inst/vllm/layers/l1.py | cut -c1-12)"
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.installed == "differs")] | length' r.json)" 2
}

test_uncommitted_edit_not_reinstalled_differs() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	commit c1
	install_all
	echo "edited after install" >>r/vllm/layers/l1.py
	run_gate
	assert_eq "$(problem_codes r.json 2)" install-scope.differs
	write_config false
	run_gate
	# narrower scope, but the bytes compared are still the work tree's
	assert_eq "$(problem_codes r.json 2)" install-scope.differs
}

test_deleted_file_still_installed() {
	setup_repo
	g rm -q vllm/gone.py
	commit c1
	install_all
	cp up/vllm/gone.py inst/vllm/gone.py # the deploy copies over, never removes
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(problem_codes r.json 2)" install-scope.deleted-still-installed
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" "vllm/gone.py was deleted"
	rm inst/vllm/gone.py
	run_gate
	assert_eq "$(gate_status r.json 2)" pass
	assert_eq "$(jq -r '.gates[1].evidence.changes[0].installed' r.json)" removed
}

test_renamed_away_file_still_installed() {
	setup_repo
	g mv vllm/old_name.py vllm/new_name.py
	commit c1
	install_all
	cp up/vllm/old_name.py inst/vllm/old_name.py
	run_gate
	assert_eq "$(problem_codes r.json 2)" install-scope.deleted-still-installed
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" "renamed to vllm/new_name.py"
	assert_eq "$(jq -r '.gates[1].evidence.changes[0].old_installed' r.json)" still-installed
}

test_committed_then_deleted_in_work_tree() {
	setup_repo
	echo "added in a commit" >r/vllm/temp.py
	commit c1
	install_all
	rm r/vllm/temp.py # deleted again, not committed
	run_gate
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "vllm/temp.py") | .kind' r.json)" D
	assert_eq "$(problem_codes r.json 2)" install-scope.deleted-still-installed
}

test_commits_and_work_tree_fold_into_one_entry_per_path() {
	setup_repo
	g mv vllm/old_name.py vllm/moved.py
	g rm -q vllm/gone.py
	echo "edited" >>r/vllm/layers/l1.py
	commit c1
	rm r/vllm/moved.py                 # renamed by a commit, then deleted
	echo "back again" >r/vllm/gone.py  # deleted by a commit, then re-created (untracked)
	echo "again" >>r/vllm/layers/l1.py # committed change, edited again
	install_all
	run_gate
	assert_eq "$(pg_changes)" "D vllm/moved.py
D vllm/old_name.py
M vllm/gone.py
M vllm/layers/l1.py"
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.path == "vllm/gone.py" or .path == "vllm/layers/l1.py") | .installed] | join(" ")' r.json)" "installed installed"
	assert_eq "$(gate_status r.json 2)" pass
	cp up/vllm/old_name.py inst/vllm/old_name.py
	run_gate
	assert_eq "$(problem_codes r.json 2)" install-scope.deleted-still-installed
}

test_config_and_logs_in_the_checkout_are_not_unknown() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	commit c1
	install_all
	mkdir r/logs
	echo "[1/1] Linking" >r/logs/build.out
	echo "INFO server" >r/logs/server.out
	echo "other" >r/logs/other.txt
	cat >r/provgate.json <<-JSON
	{"build": {"log": "logs/build.out"}, "markers": {"log": "logs/server.out"},
	 "source": {"baseline": "origin/main", "install_map": [{"from": "vllm/", "to": "../inst/vllm/"}]}}
	JSON
	pg run -c r/provgate.json --gates 2 --json r.json
	# the config and both logs are provgate's inputs; the stray file is still unknown
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-scope
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" logs/other.txt
	assert_eq "$(jq -r '[.gates[1].evidence.changes[] | select(.provgate_input) | .path] | join(" ")' r.json)" \
		"logs/build.out logs/server.out provgate.json"
	rm r/logs/other.txt
	pg run -c r/provgate.json --gates 2 --json r.json
	assert_eq "$(gate_status r.json 2)" pass
}

test_unknown_scope_names_the_file() {
	setup_repo
	echo "# new dependency" >>r/setup.py
	echo "v2" >>r/vllm/layers/l1.py
	commit c1
	install_all
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" fail
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-scope
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" setup.py
	assert_contains "$(jq -r .gates[1].problems[0].hint r.json)" install_map
	assert_eq "$(jq -r .gates[1].evidence.counts.unknown r.json)" 1
}

test_shallow_clone_is_unverifiable() {
	setup_repo
	git clone -q --depth 1 "file://$T/up" shallow
	echo "v2" >>shallow/vllm/layers/l1.py
	sed -i 's|"repo": "r"|"repo": "shallow"|' provgate.json
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.shallow
	assert_contains "$(jq -r .gates[1].problems[0].hint r.json)" "git fetch --unshallow"
	assert_eq "$(jq -r .gates[1].evidence.shallow r.json)" true
	# after fetching the history the same checkout is verifiable
	git -C shallow fetch -q --unshallow
	install_all_from() { rm -rf inst/vllm && cp -r shallow/vllm inst/vllm; }
	install_all_from
	run_gate
	assert_eq "$(gate_status r.json 2)" pass
}

test_unknown_baseline_is_unverifiable() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	sed -i 's|origin/main|origin/no-such-branch|' provgate.json
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-baseline
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" origin/no-such-branch
	assert_contains "$(jq -r .gates[1].problems[0].hint r.json)" "git fetch"
}

test_ci_checkout_without_local_baseline_names_the_remote_branch() {
	# GitHub and GitLab checkouts have origin/main but no local main
	setup_repo
	g branch -q -D main
	echo "v2" >>r/vllm/layers/l1.py
	sed -i 's|"origin/main"|"main"|' provgate.json
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable "never a silent switch to origin/main"
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-baseline
	assert_contains "$(jq -r .gates[1].problems[0].hint r.json)" 'set source.baseline to "origin/main"'
	sed -i 's|"main"|"origin/main"|' provgate.json
	install_all
	run_gate
	assert_eq "$(gate_status r.json 2)" pass "with the hint followed"
}

test_missing_baseline_setting_is_unverifiable() {
	setup_repo
	echo '{"source": {"repo": "r", "install_map": [{"from": "vllm/", "to": "inst/vllm/"}]}}' >provgate.json
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.no-baseline
	assert_contains "$(jq -r .gates[1].problems[0].hint r.json)" source.baseline
}

test_unrelated_baseline_has_no_merge_base() {
	setup_repo
	g checkout -q --orphan island
	g rm -rqf .
	echo other >r/other.txt
	commit island
	g checkout -q work
	sed -i 's|origin/main|island|' provgate.json
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.no-merge-base
}

test_no_changes_is_not_a_pass() {
	setup_repo
	install_all
	run_gate
	assert_eq "$rc" 1
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.no-changes
	assert_contains "$(jq -r .gates[1].summary r.json)" "nothing to prove"
	# docs-only changes prove nothing about the runtime either
	echo "more" >>r/docs/index.md
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.no-changes
}

test_not_a_repository_is_unverifiable() {
	need jq
	mkdir plain
	echo '{"source": {"repo": "plain", "baseline": "main"}}' >provgate.json
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.not-a-repo
}

test_many_changes_are_bounded_in_the_report() {
	setup_repo
	for i in $(seq 1 260); do echo "$i" >"r/vllm/gen_$i.py"; done
	commit many
	install_all
	for i in $(seq 1 120); do rm "inst/vllm/gen_$i.py"; done
	run_gate
	assert_eq "$(jq -r '.gates[1].evidence.changes | length' r.json)" 200
	assert_eq "$(jq -r .gates[1].evidence.counts.changed r.json)" 260
	# 50 problems named one by one, then one line for the rest
	assert_eq "$(jq -r '.gates[1].problems | length' r.json)" 51
	assert_contains "$(jq -r '.gates[1].problems[50].message' r.json)" "70 more"
	assert_contains "$(jq -r .gates[1].summary r.json)" "120 of 260"
}

test_installed_path_is_a_directory() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	commit c1
	install_all
	rm inst/vllm/layers/l1.py && mkdir inst/vllm/layers/l1.py
	run_gate
	assert_eq "$(gate_status r.json 2)" fail
	assert_eq "$(problem_codes r.json 2)" install-scope.differs
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" "directory"
}

test_odd_file_names_are_escaped_in_the_report() {
	setup_repo
	printf 'x\n' >"r/vllm/with space.py"
	printf 'y\n' >"r/"$'bad\xff name.txt'
	commit odd
	install_all
	run_gate
	assert_eq "$(problem_codes r.json 2)" install-scope.unknown-scope
	assert_contains "$(jq -r .gates[1].problems[0].message r.json)" 'bad\xff name.txt'
	assert_eq "$(jq -r '.gates[1].evidence.changes[] | select(.path == "vllm/with space.py") | .installed' r.json)" installed
	validate r.json
}

test_submodule_under_install_prefix_is_unverifiable() {
	setup_repo
	export LSAN_OPTIONS="suppressions=$PVG_SRC/tests/lsan-libgit2.supp:print_suppressions=0"
	git -C r -c protocol.file.allow=always submodule add -q "file://$T/up" vllm/vendored
	commit sub
	install_all
	run_gate
	# .gitmodules is not classified: that alone is a fail, which outranks unverifiable
	assert_eq "$(gate_status r.json 2)" fail
	assert_eq "$(problem_codes r.json 2)" "install-scope.unknown-scope install-scope.submodule"
	sed -i 's|".gitignore"|".gitignore", ".gitmodules"|' provgate.json
	run_gate
	assert_eq "$(gate_status r.json 2)" unverifiable
	assert_eq "$(problem_codes r.json 2)" install-scope.submodule
	assert_contains "$(jq -r '.gates[1].problems[0].message' r.json)" vllm/vendored
}

test_upstream_merged_into_work_stays_out_of_scope() {
	setup_repo
	echo "work" >>r/vllm/layers/l1.py
	commit w1
	echo "upstream" >>up/vllm/layers/l5.py
	echo "upstream" >>up/setup.py
	git -C up commit -qam upstream
	g fetch -q origin
	g merge -q --no-edit origin/main
	install_all
	run_gate
	assert_eq "$(pg_changes)" "$(git_changes origin/main)" "change set vs git diff --name-status"
	assert_eq "$(pg_changes)" "M vllm/layers/l1.py"
	assert_eq "$(jq -r .gates[1].evidence.merge_base r.json)" "$(g rev-parse origin/main)"
	assert_eq "$(gate_status r.json 2)" pass
}

test_repository_is_left_untouched() {
	setup_repo
	echo "v2" >>r/vllm/layers/l1.py
	commit c1
	install_all
	# edits right after the index was written are "racily clean": the diff must read them
	# without refreshing the index
	echo "v3" >>r/vllm/layers/l1.py
	echo "new" >r/vllm/fresh.py
	before=$(cd r/.git && find . -type f -print0 | sort -z | xargs -0 sha256sum)
	run_gate
	after=$(cd r/.git && find . -type f -print0 | sort -z | xargs -0 sha256sum)
	assert_eq "$after" "$before" ".git contents"
	assert_eq "$(problem_codes r.json 2)" "install-scope.not-installed install-scope.differs"
}

run_tests
