#!/usr/bin/env bash
# Gate 7 and Triton's JIT code (SPEC §12): a change set in a git repository edits a .py with
# @triton.jit kernels, installed through install_map; a live stand-in service whose
# environment names TRITON_CACHE_DIR, a cache tree in Triton 3.6's layout
# (tests/fixtures/triton-cache/make.sh, real cubins) whose entry's .source names the file, and
# a witness file of that process (witness-tool build, then restamp) whose module loaded from
# memory has the sha256 of the entry's cubin and launches the kernel.
source "$PVG_SRC/tests/lib.sh"
need git jq sha256sum
TOOL="$PVG_BUILD/tests/helpers/witness-tool"
LIB="$PVG_BUILD/lib/witness/libprovgate-witness.so"
F="$PVG_SRC/tests/fixtures/triton-cache"
BOOT=$(cat /proc/sys/kernel/random/boot_id)
SM90=$(sha256sum "$F/add_kernel.sm_90.cubin" | cut -c1-64)
SM80=$(sha256sum "$F/add_kernel.sm_80.cubin" | cut -c1-64)
# scale_kernel's autotuned variants: one name, one source, three cubins
B128=$(sha256sum "$F/scale_kernel.b128.sm_90.cubin" | cut -c1-64)
B256=$(sha256sum "$F/scale_kernel.b256.sm_90.cubin" | cut -c1-64)
B256R=$(sha256sum "$F/scale_kernel.b256r32.sm_90.cubin" | cut -c1-64)
PY=pkg/ops/add_kernel.py

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.org GIT_CONFIG_NOSYSTEM=1 HOME="${TMPDIR:-/tmp}"
export GIT_CONFIG_GLOBAL=/dev/null

ticks_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }

# repo: baseline "main" holds an older add_kernel.py; branch "work" the fixture's; the work
# tree's pkg/ installed into inst/pkg/ (install_map, unless $1 is "nomap")
repo() {
	git init -q -b main r
	mkdir -p r/pkg/ops
	printf 'import triton\n\n@triton.jit\ndef add_kernel(x_ptr):\n    pass\n' >r/$PY
	git -C r add -A && git -C r commit -qm base
	git -C r checkout -q -b work
	cp "$F/add_kernel.py" r/$PY
	git -C r add -A && git -C r commit -qm "add_kernel: masked store"
	mkdir -p inst && cp -r r/pkg inst/pkg
	local map='"install_map": [{"from": "pkg/", "to": "inst/pkg/"}],'
	[ "${1:-}" = nomap ] && map=
	cat >provgate.json <<-JSON
	{"arch": "${ARCH:-sm_90}",
	 "source": {"repo": "r", "baseline": "main", $map "include_uncommitted": false},
	 "witness": {"dir": "wdir", "answer_ms": 200}}
	JSON
}

# cache PYFILE: a cache tree under cache/ whose entries' .source name PYFILE
cache() { sh "$F/make.sh" cache "$PWD/cache" "$1" >/dev/null || fail "make.sh cache failed"; }

# start CACHEDIR [VLLM_CACHE_ROOT]: the live service, its environment naming the cache
start() {
	mkdir -p wdir
	VLLM_CACHE_ROOT=${2:-} TRITON_CACHE_DIR=$1 PROVGATE_WITNESS_DIR=$PWD/wdir \
		CUDA_INJECTION64_PATH=$LIB sleep 300 &
	svc=$!
	trap 'kill $svc 2>/dev/null || true' EXIT
	for _ in $(seq 50); do [ "$(readlink /proc/$svc/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.02; done
}

# witness SHA [KERNEL]: the service loaded a module of these bytes from memory and launched
# KERNEL (default add_kernel) from it 4 times
witness() {
	printf 'module sha256=%s size=%s origin=memory arch=90\nrecord name=%s grid=8 block=128 count=4 module=1\n' \
		"$1" "$(stat -c %s "$F/add_kernel.sm_90.cubin")" "${2:-add_kernel}" >w.txt
	"$TOOL" build w.txt w.pvgw || fail "witness-tool build failed"
	rm -f wdir/*.pvgw
	"$TOOL" restamp w.pvgw wdir "$svc" "$svc" 1 "$(ticks_of "$svc")" "$BOOT" >/dev/null ||
		fail "restamp failed"
}

# witness_mods SHA:KERNEL...: the service loaded one module from memory per argument, each
# of those bytes, and launched KERNEL from it 4 times (none where KERNEL is empty)
witness_mods() {
	local i=0 a
	: >w.txt
	for a in "$@"; do
		i=$((i + 1))
		printf 'module sha256=%s size=3968 origin=memory arch=90\n' "${a%%:*}" >>w.txt
		[ -n "${a#*:}" ] &&
			printf 'record name=%s grid=8 block=128 count=4 module=%d\n' "${a#*:}" "$i" >>w.txt
	done
	"$TOOL" build w.txt w.pvgw || fail "witness-tool build failed"
	rm -f wdir/*.pvgw
	"$TOOL" restamp w.pvgw wdir "$svc" "$svc" 1 "$(ticks_of "$svc")" "$BOOT" >/dev/null ||
		fail "restamp failed"
}

# caches PATH...: witness.triton_caches, read after the folders the environment names
caches() {
	jq '.witness.triton_caches = $ARGS.positional' provgate.json --args "$@" >p.json &&
		mv p.json provgate.json
}

# entry_of DIR SHA: the entry folder under DIR whose binary has these bytes
entry_of() {
	local d
	for d in "$1"/*/; do
		[ "$(sha256sum "$d"*.cubin | cut -c1-64)" = "$2" ] && { basename "$d"; return; }
	done
	fail "no entry of $2 under $1"
}

# stale DIR: the entry folder's files as an earlier compile left them, before the install
stale() { touch -d '2020-01-01 00:00' "$1"/*; }

gate7() {
	pg run -c provgate.json --pid "$svc" --gates 7 --json r.json
	status=$(gate_status r.json 7)
	codes=$(problem_codes r.json 7)
	msgs=$(jq -r '.gates[6].problems[].message' r.json)
	validate r.json
}

mod_ev() { jq -r ".gates[6].evidence.witness.triton.modules[0].$1" r.json; }

test_fresh_entry_of_the_installed_file_certifies() {
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict)" linked
	assert_eq "$(mod_ev kernel)" add_kernel
	assert_eq "$(mod_ev arch)" sm_90
	assert_eq "$(mod_ev source)" "$PWD/inst/$PY"
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.caches[0].from' r.json)" TRITON_CACHE_DIR
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].code' r.json)" jit-linked
	# the changed .py is a required source, its kernels read from it
	assert_eq "$(jq -c --arg s "$PY" '.gates[6].evidence.witness.changed_sources[] | select(.source == $s) | .kernels' r.json)" \
		'["add_kernel","scale_kernel"]'
}

test_installed_file_named_through_a_link_is_the_installed_file() {
	# the service imported the package through a linked folder: another path, the same file
	repo; ln -s inst inst-link
	cache "$PWD/inst-link/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict)" linked
	assert_eq "$(mod_ev source)" "$PWD/inst-link/$PY"
}

test_entry_for_sm80_is_refused() {
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/old-arch"; witness "$SM80"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-arch
	assert_contains "$msgs" "its cache entry was compiled for sm_80, the node is sm_90"
}

test_entry_older_than_the_installed_file_is_stale() {
	repo; cache "$PWD/inst/$PY"
	touch -d '2020-01-01 00:00' cache/good/*/*
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-stale
	assert_contains "$msgs" "before $PWD/inst/$PY took its content"
}

test_entry_with_times_at_the_epoch_is_stale() {
	# file times normalised to 0 (an image built with reproducible times): the entry says it
	# was written in 1970, before the installed file took its content; its ctime is now
	repo; cache "$PWD/inst/$PY"
	touch -d @0 cache/good/*/*
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-stale
	assert_eq "$(mod_ev written)" 0
}

test_entry_from_another_copy_is_refused() {
	repo
	# the same bytes at another path: the work tree's file, not the installed one
	cache "$PWD/r/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-other-copy
	assert_contains "$msgs" "compiled from $PWD/r/$PY, another copy of $PY than the installed $PWD/inst/$PY"
}

test_copy_without_install_path_is_unverifiable() {
	# no install_map: where the .py is installed is not known, so no copy can be the file
	repo nomap
	cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-install-unknown
	assert_contains "$msgs" "the installed path of $PY is not known"
	assert_eq "$(mod_ev verdict)" install-unknown
}

test_no_entry_is_unverifiable_naming_the_folders() {
	repo; cache "$PWD/inst/$PY"
	# a cache holding only the sm_80 entry: nothing has the sm_90 module's bytes
	start "$PWD/cache/old-arch"; witness "$SM90"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-no-entry
	assert_contains "$msgs" "no Triton cache entry holds these bytes (1 entry in"
	# the changed source's problem says the same: its JIT launches are undecided by their entry,
	# not by an artifact (the config names none, which has nothing to do with JIT code)
	assert_contains "$msgs" "launches of JIT code from memory that no Triton cache entry links to the change"
	assert_not_contains "$msgs" "the config names no artifact"
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.caches[] | select(.from == "TRITON_CACHE_DIR") | .path' r.json)" "$PWD/cache/old-arch"
}

test_truncated_json_is_unverifiable() {
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/truncated"; witness "$SM90"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-no-entry
	assert_contains "$msgs" "from cache entry"
	assert_contains "$msgs" "it cannot be read: not JSON"
	assert_eq "$(mod_ev verdict)" bad-entry
}

test_triton_kernel_never_run_fails_naming_the_source() {
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90" other_kernel
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.witness-source-not-launched
	assert_contains "$msgs" "changed source $PY: none of its kernels (add_kernel, scale_kernel) was launched"
}

# ---- autotuned variants: one kernel, one source, several entries -------------------------

mod_of() { jq -r --arg s "$1" ".gates[6].evidence.witness.triton.modules[] | select(.sha256 == \$s) | .$2" r.json; }

test_autotuned_variants_all_fresh_certify_listing_each_entry() {
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/variants"
	witness_mods "$B128:scale_kernel" "$B256:scale_kernel" "$B256R:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(jq '.gates[6].evidence.witness.triton.modules | length' r.json)" 3
	assert_eq "$(jq -r '[.gates[6].evidence.witness.triton.modules[].verdict] | unique | join(",")' r.json)" linked
	# each variant's own entry, told apart by its options
	assert_eq "$(mod_of "$B128" entry)" "$(entry_of cache/variants "$B128")"
	assert_eq "$(mod_of "$B256" entry)" "$(entry_of cache/variants "$B256")"
	assert_eq "$(mod_of "$B256R" entry)" "$(entry_of cache/variants "$B256R")"
	assert_eq "$(jq -r '[.gates[6].evidence.witness.triton.modules[].entry] | unique | length' r.json)" 3
	assert_eq "$(mod_of "$B128" num_warps),$(mod_of "$B256" num_warps),$(mod_of "$B256R" num_warps)" 4,8,8
	assert_eq "$(mod_of "$B256R" maxnreg),$(mod_of "$B256R" num_stages)" 32,2
	assert_eq "$(mod_of "$B256" kernel):$(mod_of "$B256" line)" scale_kernel:16
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[] | select(.name == "scale_kernel") | .code' r.json | sort -u)" jit-linked
}

test_one_variant_meets_the_default_requirement() {
	# three entries of the kernel, the service ran one; add_kernel never ran
	repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/variants"; witness_mods "$B256:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict):$(mod_ev entry)" "linked:$(entry_of cache/variants "$B256")"
	assert_eq "$(jq -r --arg s "$PY" '.gates[6].evidence.witness.changed_sources[] | select(.source == $s) | .launches | "\(.from_artifact) \(.other_code)"' r.json)" "4 0"
}

test_stale_variant_that_ran_is_refused_beside_a_fresh_one() {
	repo; cache "$PWD/inst/$PY"
	old=$(entry_of cache/variants "$B256"); stale "cache/variants/$old"
	start "$PWD/cache/variants"
	witness_mods "$B128:scale_kernel" "$B256:scale_kernel"
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_eq "$codes" dispatch-marker.triton-stale
	# the stale variant's entry is named; its fresh sibling does not cover for it
	assert_contains "$msgs" "sha256 ${B256:0:12}"
	assert_contains "$msgs" "from cache entry $old (scale_kernel, num_warps 8, num_stages 3) in $PWD/cache/variants:"
	assert_contains "$msgs" "before $PWD/inst/$PY took its content"
	assert_not_contains "$msgs" "${B128:0:12}"
	assert_eq "$(mod_of "$B128" verdict),$(mod_of "$B256" verdict)" linked,stale
	assert_eq "$(jq -r --arg s "$PY" '.gates[6].evidence.witness.changed_sources[] | select(.source == $s) | .launches | "\(.from_artifact) \(.other_code)"' r.json)" "4 4"
}

test_stale_variant_not_loaded_is_no_failure_but_noted() {
	repo; cache "$PWD/inst/$PY"
	old=$(entry_of cache/variants "$B256R"); stale "cache/variants/$old"
	start "$PWD/cache/variants"
	witness_mods "$B128:scale_kernel" "$B256:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	# not the code that ran: listed with its verdict, no problem
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.other_variants | length' r.json)" 1
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.other_variants[0] | "\(.entry) \(.kernel) \(.verdict) \(.loaded)"' r.json)" \
		"$old scale_kernel stale false"
}

test_stale_variant_loaded_but_never_launched_is_no_failure() {
	# its module was loaded (Triton loads what it compiles or finds), nothing ran from it
	repo; cache "$PWD/inst/$PY"
	old=$(entry_of cache/variants "$B256"); stale "cache/variants/$old"
	start "$PWD/cache/variants"
	witness_mods "$B128:scale_kernel" "$B256:"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.modules | length' r.json)" 1
	assert_eq "$(jq -r --arg s "$B256" '.gates[6].evidence.witness.triton.other_variants[] | select(.sha256 == $s) | "\(.verdict) \(.loaded)"' r.json)" \
		"stale true"
	assert_eq "$(jq -r --arg s "$B256R" '.gates[6].evidence.witness.triton.other_variants[] | select(.sha256 == $s) | "\(.verdict) \(.loaded)"' r.json)" \
		"linked false"
}

# vLLM sets TRITON_CACHE_DIR at run time, per rank, under its compile cache: the service's
# environment names only VLLM_CACHE_ROOT, and the walk goes down to the triton_cache folders
test_entries_in_vllm_per_rank_triton_caches_are_found() {
	repo; cache "$PWD/inst/$PY"
	local tc=vroot/torch_compile_cache/0123456789
	mkdir -p $tc/rank_0_0/backbone $tc/rank_1_0/backbone
	cp -a cache/variants $tc/rank_0_0/backbone/triton_cache
	cp -a cache/twins/rank_1_0 $tc/rank_1_0/backbone/triton_cache
	start "" "$PWD/vroot"
	witness_mods "$B128:scale_kernel" "$B256:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.caches[] | select(.from == "VLLM_CACHE_ROOT") | .entries' r.json)" 4
	assert_eq "$(mod_of "$B256" verdict):$(mod_of "$B256" entry)" "linked:$(entry_of $tc/rank_0_0/backbone/triton_cache "$B256")"
	# the b128 bytes in both ranks' caches
	assert_eq "$(mod_of "$B128" verdict):$(jq -r --arg s "$B128" '.gates[6].evidence.witness.triton.modules[] | select(.sha256 == $s) | .same_bytes | length' r.json)" linked:1
}

# ---- two entries with the same bytes: decided by content ---------------------------------

# twins: the same entry (key and bytes) in two per-rank folders; TRITON_CACHE_DIR names the
# first, witness.triton_caches the second, so the walk meets them in this order
test_same_bytes_stale_then_fresh_entry_certifies() {
	repo; cache "$PWD/inst/$PY"
	stale cache/twins/rank_0_0/*
	caches "$PWD/cache/twins/rank_1_0"
	start "$PWD/cache/twins/rank_0_0"; witness_mods "$B128:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict):$(mod_ev cache)" "linked:$PWD/cache/twins/rank_1_0"
	# the other entry of these bytes is listed with its own verdict
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.modules[0].same_bytes | map("\(.cache) \(.verdict)") | join(";")' r.json)" \
		"$PWD/cache/twins/rank_0_0 stale"
}

test_same_bytes_fresh_then_stale_entry_certifies() {
	repo; cache "$PWD/inst/$PY"
	stale cache/twins/rank_1_0/*
	caches "$PWD/cache/twins/rank_1_0"
	start "$PWD/cache/twins/rank_0_0"; witness_mods "$B128:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict):$(mod_ev cache)" "linked:$PWD/cache/twins/rank_0_0"
}

test_same_bytes_fresh_copy_then_fresh_installed_certifies() {
	repo; cache "$PWD/inst/$PY"
	sh "$F/make.sh" cache "$PWD/copy" "$PWD/r/$PY" >/dev/null || fail "make.sh cache failed"
	caches "$PWD/cache/twins/rank_1_0"
	start "$PWD/copy/twins/rank_0_0"; witness_mods "$B128:scale_kernel"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict):$(mod_ev source)" "linked:$PWD/inst/$PY"
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.modules[0].same_bytes[0].verdict' r.json)" other-copy
}

test_same_bytes_none_fresh_from_the_installed_file_is_refused() {
	# a stale entry of the installed file and a fresh one of another copy: neither is a
	# compile of the installed content, in either order
	repo; cache "$PWD/inst/$PY"
	sh "$F/make.sh" cache "$PWD/copy" "$PWD/r/$PY" >/dev/null || fail "make.sh cache failed"
	stale cache/twins/rank_0_0/*
	local first second
	for order in 1 2; do
		if [ $order = 1 ]; then first=$PWD/cache/twins/rank_0_0 second=$PWD/copy/twins/rank_1_0
		else first=$PWD/copy/twins/rank_1_0 second=$PWD/cache/twins/rank_0_0; fi
		repo_cfg=$(cat provgate.json); caches "$second"
		start "$first"; witness_mods "$B128:scale_kernel"
		gate7
		echo "$repo_cfg" >provgate.json; kill $svc
		assert_eq "$status" fail "order $order: status ($codes)"
		assert_contains "$codes" dispatch-marker.triton-stale
		assert_contains "$msgs" "in $PWD/cache/twins/rank_0_0: the entry was written at"
		assert_contains "$msgs" "no other entry with these bytes links them (1: other-copy)"
		assert_eq "$(jq -r '.gates[6].evidence.witness.triton.modules[0].same_bytes[0].verdict' r.json)" other-copy
	done
}

test_same_bytes_stale_and_unreadable_is_unverifiable() {
	# the unreadable entry may be a fresh compile of the installed file: not a pass, and
	# not a refusal either
	repo; cache "$PWD/inst/$PY"
	stale cache/twins/rank_0_0/*
	j=$(echo cache/twins/rank_1_0/*/scale_kernel.json)
	head -c 40 "$j" >j.cut && mv j.cut "$j"
	caches "$PWD/cache/twins/rank_1_0"
	start "$PWD/cache/twins/rank_0_0"; witness_mods "$B128:scale_kernel"
	gate7
	assert_eq "$status" unverifiable "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-no-entry
	assert_eq "$(mod_ev verdict)" bad-entry
	assert_eq "$(jq -r '.gates[6].evidence.witness.triton.modules[0].same_bytes[0].verdict' r.json)" stale
}

test_kernel_of_another_changed_py_does_not_cover_a_second_py() {
	# two changed .py files whose @triton.jit kernels share a name: the module ran is linked
	# to add_kernel.py only, so the second file's kernel did not run
	repo
	git -C r checkout -q main
	printf 'import triton\n\n@triton.jit\ndef add_kernel(p):\n    pass\n' >r/pkg/ops/mul.py
	git -C r add -A && git -C r commit -qm "mul: base"
	git -C r checkout -q work && git -C r rebase -q main
	printf 'import triton\n\n@triton.jit\ndef add_kernel(p, q):\n    pass\n' >r/pkg/ops/mul.py
	git -C r add -A && git -C r commit -qm "mul: two arguments"
	rm -rf inst && mkdir -p inst && cp -r r/pkg inst/pkg
	cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$(mod_ev verdict)" linked
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$codes" dispatch-marker.witness-source
	assert_contains "$msgs" "changed source pkg/ops/mul.py: none of its kernels (add_kernel)"
	assert_not_contains "$msgs" "changed source $PY"
}

# change_py FILE BASE WORK: FILE (under r/pkg/ops) changed from BASE on main to WORK on the
# branch, installed
change_py() {
	git -C r checkout -q main
	printf '%b' "$2" >"r/pkg/ops/$1"
	git -C r add -A && git -C r commit -qm "$1: base"
	git -C r checkout -q work && git -C r rebase -q main
	printf '%b' "$3" >"r/pkg/ops/$1"
	git -C r add -A && git -C r commit -qm "$1: changed"
	rm -rf inst && mkdir -p inst && cp -r r/pkg inst/pkg
}

# a kernel spelled through an alias of the module is a kernel all the same: required
test_kernel_of_an_aliased_triton_is_required() {
	repo
	change_py alias.py 'import triton as tr\n\n@tr.jit\ndef alias_kernel(p):\n    pass\n' \
		'import triton as tr\n\n@tr.jit(do_not_specialize=["q"])\ndef alias_kernel(p, q):\n    pass\n'
	cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "changed source pkg/ops/alias.py: none of its kernels (alias_kernel)"
}

# A changed .py that imports triton and in which no kernel is recognised (tl helpers) requires
# nothing, and the evidence and the summary say so: a note, no failure.
test_changed_py_importing_triton_without_kernel_is_noted() {
	repo
	change_py helpers.py 'import triton.language as tl\n\ndef helper(x):\n    return x\n' \
		'import triton.language as tl\n\ndef helper(x):\n    return tl.abs(x)\n'
	cache "$PWD/inst/$PY"
	start "$PWD/cache/good"; witness "$SM90"
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	local src='.gates[6].evidence.witness.changed_sources[] | select(.source == "pkg/ops/helpers.py")'
	assert_eq "$(jq -r "$src | .state" r.json)" no-kernels
	assert_contains "$(jq -r "$src | .why" r.json)" "it imports triton, but no Triton kernel was recognised in it"
	assert_contains "$(jq -r '.gates[6].summary' r.json)" \
		"note: 1 changed .py imports triton with no kernel recognised (pkg/ops/helpers.py)"
}

test_init_notes_a_changed_py_that_imports_triton_without_kernel() {
	repo
	change_py helpers.py 'import triton.language as tl\n' 'import triton.language as tl\nX = 1\n'
	rm provgate.json
	cd r && pg init . && cd ..
	assert_eq "$rc" 0 "init ($err)"
	assert_contains "$(cat r/provgate.json)" "// TODO: witness.changed_sources pkg/ops/helpers.py: it imports triton, but no Triton kernel was recognised in it"
	assert_contains "$out$err" "to fill in: witness.changed_sources pkg/ops/helpers.py"
}

# init proposes the changed .py's @triton.jit kernels as a changed source, as it does a .cu's
test_init_proposes_the_triton_kernels_of_a_changed_py() {
	repo
	rm provgate.json
	cd r && pg init . && cd ..
	assert_eq "$rc" 0 "init ($err)"
	assert_eq "$(grep -v '^//' r/provgate.json | jq -c .witness.changed_sources)" \
		"{\"$PY\":{\"kernels\":[\"add_kernel\",\"scale_kernel\"]}}"
	assert_contains "$(cat r/provgate.json)" "// guessed: witness.changed_sources $PY: 2 @triton.jit kernels"
	/usr/bin/python3 "$PVG_SRC/tests/validate-config.py" r/provgate.json || fail "config does not validate"
}

# ---- ROCm: Triton's hip backend writes NAME.hsaco, target "hip:gfxNNN" ---------------------

GFX90A=$(sha256sum "$F/add_kernel.gfx90a.hsaco" | cut -c1-64)
# hip_witness: the service loaded the hsaco from memory (hipModuleLoadData) and launched
# add_kernel from it; the module's arch is the ELF's EF_AMDGPU_MACH (0x3f, gfx90a)
hip_witness() {
	printf 'module sha256=%s size=%s origin=memory arch=%d\nrecord name=add_kernel grid=8 block=256 count=4 module=1\n' \
		"$GFX90A" "$(stat -c %s "$F/add_kernel.gfx90a.hsaco")" 0x3f >w.txt
	"$TOOL" build w.txt w.pvgw || fail "witness-tool build failed"
	rm -f wdir/*.pvgw
	"$TOOL" restamp w.pvgw wdir "$svc" "$svc" 1 "$(ticks_of "$svc")" "$BOOT" >/dev/null ||
		fail "restamp failed"
}

test_rocm_entry_for_the_nodes_arch_certifies() {
	ARCH=gfx90a repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/hip"; hip_witness
	gate7
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict)" linked
	assert_eq "$(mod_ev arch)" gfx90a
	assert_eq "$(mod_ev source)" "$PWD/inst/$PY"
}

test_rocm_entry_for_gfx90a_on_a_gfx936_node_is_refused() {
	# a Hygon DCU node reusing a cache compiled on another AMD GPU
	ARCH=gfx936 repo; cache "$PWD/inst/$PY"
	start "$PWD/cache/hip"; hip_witness
	gate7
	assert_eq "$status" fail "status ($codes)"
	assert_contains "$codes" dispatch-marker.triton-arch
	assert_contains "$msgs" "its cache entry was compiled for gfx90a, the node is gfx936"
}

# The real caches Triton 3.6 wrote on an H200 (tests/fixtures/triton-cache/h200-2026-12-05):
# their .source names /tmp/pvgjit/site/pvgjit/kern.py, so provgate and the service run in a
# private mount namespace with a tmpfs at /tmp/pvgjit, where kern.py is installed (install_map)
# and the recorded entry copied; the witness file has the recorded module's sha256 and size.
H=$F/h200-2026-12-05
H_V1=ZDAJQLSDN67ZA6QSQQGBTVQE5E4T3C266W22M54QKIXUHCUNSWLQ
H_V1_SHA=$(sha256sum "$H/triton-cache/$H_V1/pvg_jit_scale.cubin" | cut -c1-64)

# h200_run INSTALLED ORDER: the repo's change is kern-v1.py (pvgjit/kern.py); INSTALLED
# (kern-v1.py or kern-v2.py) is installed at /tmp/pvgjit/site/pvgjit/kern.py and the v1 entry
# copied into /tmp/pvgjit/rec/triton-cache, ORDER "install-first" or "entry-first"; the
# service launched the v1 module; gate 7 in r.json
h200_run() {
	[ "$(id -u)" = 0 ] || { [ "${CI:-}" = true ] && fail "needs root for unshare -m"; echo "SKIP: needs root" >&2; exit 77; }
	need unshare mount
	git init -q -b main r
	mkdir -p r/pvgjit
	printf 'import triton\n\n@triton.jit\ndef pvg_jit_scale(x_ptr):\n    pass\n' >r/pvgjit/kern.py
	git -C r add -A && git -C r commit -qm base
	git -C r checkout -q -b work
	cp "$H/kern-v1.py" r/pvgjit/kern.py
	git -C r add -A && git -C r commit -qm "pvg_jit_scale: the recorded kernel"
	cat >provgate.json <<-JSON
	{"arch": "sm_90",
	 "source": {"repo": "r", "baseline": "main", "include_uncommitted": false,
	            "install_map": [{"from": "pvgjit/", "to": "/tmp/pvgjit/site/pvgjit/"}]},
	 "witness": {"dir": "wdir", "answer_ms": 200}}
	JSON
	mkdir -p /tmp/pvgjit
	export H H_V1 H_V1_SHA TOOL LIB BOOT F
	timeout -k 5 120 unshare -m --propagation private -- bash -c "set -eu
		$(declare -f fail pg gate_status problem_codes ticks_of start)
		mount -t tmpfs tmpfs /tmp/pvgjit
		mkdir -p /tmp/pvgjit/site/pvgjit /tmp/pvgjit/rec/triton-cache
		inst() { install -m 0644 \"\$H/$1\" /tmp/pvgjit/site/pvgjit/kern.py; }
		entry() { cp -r \"\$H/triton-cache/\$H_V1\" /tmp/pvgjit/rec/triton-cache/; }
		if [ $2 = install-first ]; then inst; sleep 0.05; entry; else entry; sleep 0.05; inst; fi
		start /tmp/pvgjit/rec/triton-cache
		printf 'module sha256=%s size=%s origin=memory arch=90\nrecord name=pvg_jit_scale grid=8 block=128 count=5 module=1\n' \
			\"\$H_V1_SHA\" \"\$(stat -c %s /tmp/pvgjit/rec/triton-cache/\$H_V1/pvg_jit_scale.cubin)\" >w.txt
		\"\$TOOL\" build w.txt w.pvgw
		\"\$TOOL\" restamp w.pvgw wdir \"\$svc\" \"\$svc\" 1 \"\$(ticks_of \"\$svc\")\" \"\$BOOT\" >/dev/null
		pg run -c provgate.json --pid \"\$svc\" --gates 7 --json r.json
		echo \"provgate exit \$rc\"
	" || fail "the run in a private mount namespace failed"
	rmdir /tmp/pvgjit 2>/dev/null || true
	status=$(gate_status r.json 7)
	codes=$(problem_codes r.json 7)
	msgs=$(jq -r '.gates[6].problems[].message' r.json)
	validate r.json
}

test_real_h200_v1_entry_of_the_installed_file_certifies() {
	h200_run kern-v1.py install-first
	assert_eq "$status" pass "status ($codes: $msgs)"
	assert_eq "$(mod_ev verdict)" linked
	assert_eq "$(mod_ev kernel)" pvg_jit_scale
	assert_eq "$(mod_ev arch)" sm_90
	assert_eq "$(mod_ev source)" /tmp/pvgjit/site/pvgjit/kern.py
	assert_eq "$(mod_ev sha256)" "$H_V1_SHA"
	assert_eq "$(jq -r '.gates[6].evidence.witness.kernels[0].code' r.json)" jit-linked
}

test_real_h200_v1_entry_before_the_install_is_stale() {
	# as the recording's step 3 left it: the v1 entry written, then kern.py installed again
	h200_run kern-v1.py entry-first
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$codes" dispatch-marker.triton-stale
	assert_contains "$msgs" "before /tmp/pvgjit/site/pvgjit/kern.py took its content"
}

test_real_h200_v1_entry_with_v2_installed_is_another_copy() {
	# the entry's .source names the installed path, whose bytes are not the change's
	h200_run kern-v2.py install-first
	assert_eq "$status" fail "status ($codes: $msgs)"
	assert_contains "$msgs" "does not hold the change's pvgjit/kern.py"
}

run_tests
