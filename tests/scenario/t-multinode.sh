#!/usr/bin/env bash
# Multi-node certification on a real two-node Slurm cluster (tests/slurm/cluster.sh: munge,
# slurmctld, `slurmd -N n1` and `slurmd -N n2` on this machine). Every node is certified by
# `srun -N2 --ntasks-per-node=1 provgate certify --out reports/{node}.json` with ONE config
# whose per-node values use {node}; `provgate merge` turns the reports into one verdict.
#
# Both "nodes" share this machine, so whatever is node-specific lives in per-node paths
# (site-n1/, site-n2/, logs/server-n2.log) and the services carry a per-node tag in their
# titles, so that one node's service is never another node's stale process.
source "$PVG_SRC/tests/lib.sh"
source "$PVG_SRC/tests/slurm/cluster.sh"

SVC="$PVG_BUILD/tests/helpers/fake-service"
RAY="$PVG_BUILD/tests/helpers/fake-ray"
tag="mn-$$-$RANDOM"

# ---- one cluster and one build for the whole file ------------------------------------------

cluster_ok=false
base=
top_cleanup() {
	slurm_down
	[ -n "$base" ] && rm -rf "$base"
	[ -n "${slurm_dir:-}" ] && rm -rf "$slurm_dir"
}
trap top_cleanup EXIT

missing_tool=
for t in munged slurmctld slurmd srun sinfo sbatch hipcc ninja git jq ss /usr/bin/python3; do
	command -v "$t" >/dev/null 2>&1 || { missing_tool=$t; break; }
done

# git with a fixed identity
git_c() { git -C repo -c user.name=t -c user.email=t@example.invalid "$@"; }

# The repository (baseline main; the branch changes the kernel and its Python op), hipified
# once, then built twice: builds/A (-O2) and builds/B (-O0, other bytes, same source).
make_base() {
	cd "$base"
	mkdir -p repo/csrc/rocm repo/vllm_demo builds/A builds/B
	git init -q -b main repo
	cat >repo/csrc/rocm/skinny_gemms.cu <<-'CU'
	#include <cuda_runtime.h>
	#ifndef WVSPLITK_BLOCK
	#define WVSPLITK_BLOCK 64
	#endif
	extern "C" __global__ void wvSplitK(float *y, const float *a, const float *x, int m, int n)
	{
		int row = blockIdx.x * WVSPLITK_BLOCK + threadIdx.x;
		if (row >= m)
			return;
		float acc = 0.f;
		for (int k = 0; k < n; k++)
			acc += a[(size_t)row * n + k] * x[k];
		y[row] = acc;
	}
	CU
	printf '' >repo/vllm_demo/__init__.py
	printf 'def use_wvsplitk(m, n):\n    return n %% 512 == 0\n' >repo/vllm_demo/_custom_ops.py
	printf '*.hip\n' >repo/.gitignore
	git_c add -A && git_c commit -qm baseline
	git_c checkout -qb wvsplitk-832
	sed -i 's/#define WVSPLITK_BLOCK 64/#define WVSPLITK_BLOCK 832/' repo/csrc/rocm/skinny_gemms.cu
	sed -i 's/n % 512 == 0/n % 256 == 0/' repo/vllm_demo/_custom_ops.py
	git_c commit -qam "wvSplitK: block size 832"
	local b opt
	for b in A B; do
		opt=-O2; [ $b = B ] && opt=-O0
		{
			/usr/bin/python3 - "$base/repo" <<-'PY'
			import sys
			from torch.utils.hipify import hipify_python
			root = sys.argv[1]
			hipify_python.hipify(project_directory=root, output_directory=root,
			                     includes=[root + "/csrc/*"], show_detailed=True,
			                     show_progress=True, is_pytorch_extension=True)
			PY
			cat >builds/$b/build.ninja <<-NINJA
			rule hipcc
			  command = hipcc -fPIC $opt --offload-arch=gfx90a -c \$in -o \$out
			rule link
			  command = hipcc -shared -fPIC --offload-arch=gfx90a \$in -o \$out
			build $base/builds/$b/skinny_gemms.o: hipcc $base/repo/csrc/rocm/skinny_gemms.hip
			build $base/builds/$b/_rocm_C.abi3.so: link $base/builds/$b/skinny_gemms.o
			NINJA
			ninja -v -C builds/$b
		} >builds/$b/build.log 2>&1 || { cat builds/$b/build.log; return 1; }
	done
	cmp -s builds/A/_rocm_C.abi3.so builds/B/_rocm_C.abi3.so && {
		echo "builds A and B came out identical" >&2; return 1; }
	return 0
}

if [ -z "$missing_tool" ] && [ "$(id -u)" = 0 ]; then
	base=$(mktemp -d "${TMPDIR:-/tmp}/pvg-mn-base.XXXXXX")
	if (make_base) >"$base.log" 2>&1; then
		if slurm_up "$(mktemp -d "${TMPDIR:-/tmp}/pvg-mn-slurm.XXXXXX")" >"$base.slurm.log" 2>&1; then
			cluster_ok=true
		else
			echo "# the Slurm cluster did not come up:"; sed 's/^/#   /' "$base.slurm.log" | tail -n 40
		fi
	else
		echo "# the scenario build failed:"; sed 's/^/#   /' "$base.log" | tail -n 40
	fi
	rm -f "$base.log" "$base.slurm.log"
fi

need_cluster() {
	[ -z "$missing_tool" ] || need "$missing_tool"
	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" = true ] && fail "the Slurm cluster runs its daemons as root"
		echo "SKIP: the Slurm cluster needs root" >&2
		exit 77
	fi
	$cluster_ok || fail "the Slurm cluster or the scenario build did not come up (see above)"
	export SLURM_CONF
}

# ---- per test ------------------------------------------------------------------------------

pids=()
stop_all() {
	local p i
	for p in "${pids[@]}" $(cat run/*.pids 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}" $(cat run/*.pids 2>/dev/null); do
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.02; done
		kill -KILL "$p" 2>/dev/null || true
	done
}

# scene [BUILD_n1 BUILD_n2]: this test's copy of the base; each node's build (default A).
scene() {
	need_cluster
	trap stop_all EXIT
	cp -a "$base"/. "$T"/
	mkdir -p logs run reports builds/n1 builds/n2
	cp -a "builds/${1:-A}"/. builds/n1/
	cp -a "builds/${2:-A}"/. builds/n2/
	cat >provgate.json <<-JSON
	{
	  // one config for every node: what differs per node is named with {node}
	  "name": "wvsplitk-832 on {node}",
	  "arch": "gfx90a",
	  "build": { "log": "builds/{node}/build.log", "artifact": "builds/{node}/_rocm_C.abi3.so" },
	  "source": {
	    "repo": "repo", "baseline": "main", "compiled": ["csrc/**"],
	    "install_map": [{ "from": "vllm_demo/", "to": "site-{node}/vllm_demo/" }],
	    "ignore": [".gitignore"]
	  },
	  "install": { "artifact": "site-{node}/vllm_demo/_rocm_C.abi3.so" },
	  "service": { "match": ["VLLM::EngineCore {node}-$tag"], "family": ["VLLM:: {node}-$tag"] },
	  "code_object": { "require_kernels": ["wvSplitK"] },
	  "markers": {
	    "log": "logs/server-{node}.log", "prefix": "DCU_KERNEL_DIAG",
	    "require": [{ "selected": "True", "shape": "(4096, 5120)", "dtype": "torch.bfloat16" }],
	    "forbid": ["fallback to unified triton"], "facts": ["block size = 832"]
	  }
	}
	JSON
}

install_node() { # NODE: install that node's build into site-NODE (new inodes, like cmake --install)
	mkdir -p "site-$1/vllm_demo"
	install -m 644 repo/vllm_demo/*.py "site-$1/vllm_demo/"
	install -m 755 "builds/$1/_rocm_C.abi3.so" "site-$1/vllm_demo/_rocm_C.abi3.so"
}

# start_service NODE: that node's vLLM stand-in, loading site-NODE, one warm-up request.
start_service() {
	local n=$1 i
	"$SVC" --workers 1 --lib "$T/site-$n/vllm_demo/_rocm_C.abi3.so" --log "$T/logs/server-$n.log" \
		--engine-pidfile "run/$n.epid" --tag "$n-$tag" &
	pids+=($!)
	for i in $(seq 200); do [ -s "run/$n.epid" ] && break; sleep 0.05; done
	[ -s "run/$n.epid" ] || fail "the service of $n did not start"
	cat "run/$n.epid" >>"run/$n.pids"
	echo "4096 5120 torch.bfloat16" >"logs/server-$n.log.request"
	kill -USR1 "$(cat "run/$n.epid")"
	for i in $(seq 200); do grep -q 'request 1 done' "logs/server-$n.log" 2>/dev/null && return 0; sleep 0.05; done
	fail "the service of $n did not answer"
}

# certify_all [SRUN ARGS...]: every node certifies itself, through srun; rc in $srun_rc.
certify_all() {
	set +e
	srun -N2 --ntasks-per-node=1 --chdir="$T" "$@" \
		"$PROVGATE" certify -c provgate.json --out 'reports/{node}.json' -q >srun.out 2>&1
	srun_rc=$?
	set -e
	if grep -q -e "ERROR: AddressSanitizer" -e "runtime error:" -e "LeakSanitizer" srun.out; then
		cat srun.out >&2; fail "sanitizer report from provgate under srun"
	fi
}

clean_cluster() {
	scene
	install_node n1; install_node n2
	sleep 0.05 # the services start after the install
	start_service n1; start_service n2
}

# ---- cases -------------------------------------------------------------------------------

test_both_nodes_clean_give_a_merged_certificate() {
	clean_cluster
	certify_all
	assert_eq "$srun_rc" 0 "srun certify ($(cat srun.out))"
	assert_eq "$(ls reports)" "$(printf 'n1.json\nn2.json')" "one report per node, named by {node}"
	assert_eq "$(jq -r .host.node reports/n1.json) $(jq -r .host.node reports/n2.json)" "n1 n2"
	assert_eq "$(jq -r .host.node_from reports/n2.json)" SLURMD_NODENAME
	assert_eq "$(jq -r .host.slurm_job_id reports/n2.json)" "$(jq -r .host.slurm_job_id reports/n1.json)"
	# the per-node values really were per node
	assert_eq "$(jq -r .chain.installed.path reports/n2.json)" "$T/site-n2/vllm_demo/_rocm_C.abi3.so"
	assert_eq "$(jq -r .name reports/n1.json)" "wvsplitk-832 on n1"
	validate reports/n1.json reports/n2.json
	pg merge reports --nodes 'n[1-2]' --json cluster.json --junit cluster.xml
	assert_eq "$rc" 0 "merge ($out $err)"
	assert_contains "$out" "CLUSTER CERTIFIED: 2 nodes"
	assert_contains "$out" "n1    certified"
	assert_contains "$out" "n2    certified"
	validate cluster.json
	assert_eq "$(jq -r .certified cluster.json)" true
	assert_eq "$(jq -r '.identity.installed_sha256' cluster.json)" "$(sha256sum builds/A/_rocm_C.abi3.so | cut -d' ' -f1)"
	assert_eq "$(jq -r '.identity.source_commit' cluster.json)" "$(git -C repo rev-parse HEAD)"
	assert_eq "$(jq -r '.identity.config_sha256' cluster.json)" "$(sha256sum provgate.json | cut -d' ' -f1)"
	assert_eq "$(jq -r '[.nodes[].node] | join(" ")' cluster.json)" "n1 n2"
	# JUnit: one testcase per node, none failed
	assert_eq "$(grep -c '<testcase ' cluster.xml)" 2
	assert_not_contains "$(cat cluster.xml)" "<failure"
	/usr/bin/python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' cluster.xml
	# the cluster verdict as a signed attestation: subjects are the agreed artifacts
	openssl genpkey -algorithm ed25519 -out key.pem 2>/dev/null && chmod 600 key.pem
	openssl pkey -in key.pem -pubout -out pub.pem 2>/dev/null
	pg merge reports --nodes 'n[1-2]' --json cluster2.json --attest cluster.att --sign-key key.pem
	assert_eq "$rc" 0 "merge --attest ($out $err)"
	assert_eq "$(jq -r .payload cluster.att | base64 -d | jq -r .predicateType)" \
		"https://provgate.dev/attestation/cluster/v1"
	assert_eq "$(jq -r .payload cluster.att | base64 -d | jq -r '.subject[0].name')" "_rocm_C.abi3.so"
	validate cluster.att
	pg verify-attestation cluster.att --key pub.pem --artifact builds/A/_rocm_C.abi3.so
	assert_eq "$rc" 0 "verify the cluster attestation ($out $err)"
	pg verify-attestation cluster.att --key pub.pem --artifact provgate.json
	assert_eq "$rc" 1 "a file that is not the artifact"
	# the job's own node list is the default, and the hostlist expands as Slurm's does
	local nodelist
	nodelist=$(srun -N2 --ntasks-per-node=1 -w n1 bash -c 'echo "$SLURM_JOB_NODELIST"' | head -n1)
	assert_eq "$(scontrol show hostnames "$nodelist" | tr '\n' ' ')" "n1 n2 "
	SLURM_JOB_NODELIST=$nodelist pg merge reports -q
	assert_eq "$rc" 0 "merge with SLURM_JOB_NODELIST=$nodelist ($out $err)"
	assert_contains "$out" "CLUSTER CERTIFIED"

	# a report that says certified without its gates passed is not taken at its word
	mkdir forged
	jq '.gates[3].status = "fail"' reports/n1.json >forged/n1.json
	pg merge forged/n1.json reports/n2.json --nodes 'n[1-2]'
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.not-certified n1: not certified: gate 4 process-maps fail; the report says certified, but not all seven gates passed"
	jq '.gates |= map(select(.id != 6))' reports/n1.json >forged/n1.json
	pg merge forged/n1.json reports/n2.json --nodes 'n[1-2]'
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.not-certified n1: not certified: the report says certified, but not all seven gates passed"
	# a report of an older provgate (no host.node) stands for its short host name
	mkdir old
	jq 'del(.host.node, .host.node_from)' reports/n1.json >old/n1.json
	pg merge old/n1.json reports/n2.json --nodes "n1,n2"
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.unexpected-node $(hostname -s): report old/n1.json"
	assert_contains "$out" "the report has no host.node, so its host name stood for the node"
	pg merge old/n1.json reports/n2.json --nodes "$(hostname -s),n2" --json old.json
	assert_eq "$rc" 0 "$out"
	assert_eq "$(jq -r '.nodes[0].node_from_hostname' old.json)" true
	# truncated copies of a real report: each refused by name, never a crash
	mkdir bad
	local size cut
	size=$(stat -c %s reports/n1.json)
	for cut in 0 1 2 17 100 1000 $((size / 2)) $((size - 2)); do
		head -c "$cut" reports/n1.json >bad/n1.json
		pg merge bad reports/n2.json --nodes 'n[1-2]' --json bad.json
		assert_eq "$rc" 1 "cut at $cut of $size ($out $err)"
		assert_contains "$out" "cluster.bad-report bad/n1.json"
		assert_contains "$out" "cluster.missing-node n1"
		validate bad.json
	done
	# and copies with bytes flipped: whatever they say, an answer and no sanitizer report
	/usr/bin/python3 - reports/n1.json bad <<-'PY'
	import random, sys
	data = bytearray(open(sys.argv[1], "rb").read())
	rnd = random.Random(16)
	for i in range(40):
	    d = bytearray(data)
	    for _ in range(rnd.randint(1, 8)):
	        d[rnd.randrange(len(d))] = rnd.randrange(256)
	    open(f"{sys.argv[2]}/flip{i:02d}.json", "wb").write(d)
	PY
	rm bad/n1.json
	local f
	for f in bad/flip*.json; do
		pg merge "$f" reports/n2.json --nodes 'n[1-2]'
		case $rc in 0|1) ;; *) fail "merge of $f: exit $rc ($err)";; esac
	done
}

test_node_serving_an_old_install_is_refused_by_name_and_gate() {
	clean_cluster
	# n2 is reinstalled under its running service: the service still maps the old file
	install_node n2
	certify_all
	assert_eq "$srun_rc" 1 "srun certify: one task failed ($(cat srun.out))"
	assert_eq "$(jq -r .certified reports/n1.json) $(jq -r .certified reports/n2.json)" "true false"
	assert_eq "$(gate_status reports/n2.json 4)" fail
	assert_contains "$(problem_codes reports/n2.json 4)" process-maps.deleted
	pg merge reports --nodes 'n[1-2]' --json cluster.json --junit cluster.xml
	assert_eq "$rc" 1 "merge ($out)"
	assert_contains "$out" "CLUSTER REFUSED: 1 problem (n2)"
	assert_contains "$out" "cluster.not-certified n2: not certified: gate 4 process-maps fail (process-maps.deleted"
	validate cluster.json
	assert_eq "$(jq -r '.problems[0] | "\(.code) \(.node) \(.gate)"' cluster.json)" "cluster.not-certified n2 4"
	assert_eq "$(jq -r '[.nodes[] | "\(.node)=\(.status)"] | join(" ")' cluster.json)" "n1=certified n2=refused"
	# JUnit: the failure is n2's testcase
	/usr/bin/python3 - cluster.xml <<-'PY'
	import sys, xml.etree.ElementTree as ET
	cases = {c.get("name"): c for c in ET.parse(sys.argv[1]).iter("testcase")}
	assert sorted(cases) == ["n1", "n2"], cases
	assert cases["n1"].find("failure") is None
	f = cases["n2"].find("failure")
	assert f is not None and f.get("type") == "cluster.not-certified", f
	assert "gate 4" in f.get("message"), f.get("message")
	PY
}

test_missing_and_duplicate_nodes_are_refused() {
	clean_cluster
	# only n1 certifies: n2's report is missing
	set +e
	srun -N1 -w n1 --chdir="$T" "$PROVGATE" certify -c provgate.json --out 'reports/{node}.json' -q >srun.out 2>&1
	assert_eq "$?" 0 "srun on n1 ($(cat srun.out))"
	set -e
	pg merge reports --nodes 'n[1-2]' --json cluster.json
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.missing-node n2: no report from this node"
	assert_eq "$(jq -r '[.nodes[] | "\(.node)=\(.status)"] | join(" ")' cluster.json)" "n1=certified n2=missing"
	validate cluster.json
	# n1 certified twice (two runs kept), n2 now present: n1 is claimed twice
	certify_all
	assert_eq "$srun_rc" 0 "$(cat srun.out)"
	set +e
	srun -N1 -w n1 --chdir="$T" "$PROVGATE" certify -c provgate.json --out 'reports/{node}-again.json' -q >srun.out 2>&1
	set -e
	pg merge reports --nodes 'n[1-2]' --json cluster.json
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.duplicate-node n1: 2 reports claim this node"
	assert_contains "$out" "reports/n1-again.json"
	assert_eq "$(jq -r '[.nodes[] | "\(.node)=\(.status)"] | join(" ")' cluster.json)" "n1=duplicate n2=certified"
	# a report of a node that is not in the job
	rm reports/n1-again.json
	pg merge reports --nodes n1
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.unexpected-node n2: report"
	# the same file named twice is one report, not a duplicate
	pg merge reports reports/n1.json --nodes 'n[1-2]' -q
	assert_eq "$rc" 0 "$out"
	# a node list naming a node twice is a usage error
	pg merge reports --nodes 'n1,n[1-2]'
	assert_eq "$rc" 2
	assert_contains "$err" "names node n1 twice"
}

test_nodes_with_different_builds_are_refused() {
	scene A B
	install_node n1; install_node n2
	sleep 0.05
	start_service n1; start_service n2
	certify_all
	# each node on its own is certified: only the merge sees they differ
	assert_eq "$srun_rc" 0 "$(cat srun.out)"
	pg merge reports --nodes 'n[1-2]' --json cluster.json
	assert_eq "$rc" 1 "$out"
	assert_contains "$out" "cluster.installed-differs n2: chain.installed.sha256"
	assert_contains "$out" "cluster.build-differs n2: chain.build.sha256"
	assert_not_contains "$out" "cluster.commit-differs"
	assert_not_contains "$out" "cluster.config-differs"
	assert_eq "$(jq -r '.identity.installed_sha256' cluster.json)" null
	assert_eq "$(jq -r '.identity.source_commit' cluster.json)" "$(git -C repo rev-parse HEAD)"
	validate cluster.json
}

test_nodes_with_different_configs_are_refused() {
	clean_cluster
	# n2 runs a config that differs (here: only a comment; the digest is of the file)
	sed 's|// one config|// another config|' provgate.json >provgate-n2.json
	set +e
	srun -N2 --ntasks-per-node=1 --chdir="$T" bash -c \
		'c=provgate.json; [ "$SLURMD_NODENAME" = n2 ] && c=provgate-n2.json
		 exec "$0" certify -c "$c" --out "reports/{node}.json" -q' "$PROVGATE" >srun.out 2>&1
	assert_eq "$?" 0 "$(cat srun.out)"
	set -e
	pg merge reports --nodes 'n[1-2]' --json cluster.json
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.config-differs n2: config.sha256"
	assert_eq "$(jq -r '[.problems[].code] | join(" ")' cluster.json)" cluster.config-differs
}

test_report_outside_the_skew_window_is_refused() {
	clean_cluster
	set +e
	srun -N1 -w n2 --chdir="$T" "$PROVGATE" certify -c provgate.json --out 'reports/{node}.json' -q >srun.out 2>&1
	sleep 2.1
	srun -N1 -w n1 --chdir="$T" "$PROVGATE" certify -c provgate.json --out 'reports/{node}.json' -q >>srun.out 2>&1
	set -e
	assert_eq "$(jq -r .certified reports/n1.json) $(jq -r .certified reports/n2.json)" "true true"
	pg merge reports --nodes 'n[1-2]' --max-skew 1 --json cluster.json
	assert_eq "$rc" 1 "$out"
	assert_contains "$out" "cluster.skew n2: report made at"
	assert_contains "$out" "before the other 1 node"
	assert_eq "$(jq -r '.problems[0].field' cluster.json)" started_at
	pg merge reports --nodes 'n[1-2]' --max-skew 60 -q
	assert_eq "$rc" 0 "a wider window ($out)"
}

# ---- Ray worker nodes ------------------------------------------------------------------------

# start_raylet NODE WORKERS: that node's raylet stand-in (through a link named raylet) with
# WORKERS ray::RayWorkerWrapper workers mapping site-NODE; their output goes to logs/ray-NODE.log
start_raylet() {
	local n=$1 w=$2 i pf="run/$n-raylet.$RANDOM"
	mkdir -p ray/core/src/ray/raylet ray/bin
	ln -sf "$RAY" ray/core/src/ray/raylet/raylet
	ln -sf "$RAY" ray/bin/python3
	FAKE_RAY_WORKERS=$w FAKE_RAY_LIB="$T/site-$n/vllm_demo/_rocm_C.abi3.so" \
	FAKE_RAY_PYTHON="$T/ray/bin/python3" FAKE_RAY_PIDFILE="$pf" FAKE_RAY_TAG="$n-$tag" \
	FAKE_RAY_REQUEST="$T/logs/ray.request" \
		"$T/ray/core/src/ray/raylet/raylet" \
		--raylet_socket_name="/tmp/ray/session_$n-$tag/sockets/raylet" \
		--store_socket_name="/tmp/ray/session_$n-$tag/sockets/plasma_store" \
		--object_manager_port=0 --min_worker_port=10002 --max_worker_port=19999 \
		--node_manager_port=0 --node_ip_address=127.0.0.1 --maximum_startup_concurrency=2 \
		--session_name="session_$n-$tag" >>"logs/ray-$n.log" 2>&1 &
	pids+=($!)
	for i in $(seq 200); do [ -s "$pf" ] && break; sleep 0.05; done
	[ -s "$pf" ] || fail "raylet of $n did not start"
	cat "$pf" >>"run/$n.pids"
	raylet_pid=$(head -n1 "$pf")
}

ray_config() {
	cat >provgate.json <<-JSON
	{
	  "name": "wvsplitk-832 ray worker {node}",
	  "arch": "gfx90a",
	  "build": { "log": "builds/{node}/build.log", "artifact": "builds/{node}/_rocm_C.abi3.so" },
	  "source": {
	    "repo": "repo", "baseline": "main", "compiled": ["csrc/**"],
	    "install_map": [{ "from": "vllm_demo/", "to": "site-{node}/vllm_demo/" }],
	    "ignore": [".gitignore"]
	  },
	  "install": { "artifact": "site-{node}/vllm_demo/_rocm_C.abi3.so" },
	  // a worker node: the GPU workers are Ray actors under raylet (the tag keeps the two
	  // nodes of this one machine apart; a real config says "ray::RayWorkerWrapper")
	  "service": { "match": ["ray::RayWorkerWrapper*{node}-$tag"],
	               "family": ["ray::*{node}-$tag", "session_{node}-$tag"] },
	  "code_object": { "require_kernels": ["wvSplitK"] },
	  "markers": {
	    "log": "logs/ray-{node}.log", "prefix": "DCU_KERNEL_DIAG",
	    "require": [{ "selected": "True", "shape": "(4096, 5120)", "dtype": "torch.bfloat16" }],
	    "forbid": ["fallback to unified triton"], "facts": ["block size = 832"]
	  }
	}
	JSON
}

ray_request() { # every worker of both nodes' live raylets runs one execute_method
	echo "4096 5120 torch.bfloat16" >logs/ray.request
	local n i before=()
	for n in n1 n2; do before+=("$(grep -c 'execute_model done' "logs/ray-$n.log" || true)"); done
	for n in n1 n2; do kill -USR1 "$(cat "run/$n.raylet")"; done
	for n in 0 1; do
		for i in $(seq 200); do
			[ "$(grep -c 'execute_model done' "logs/ray-n$((n + 1)).log" || true)" -ge $((before[n] + 2)) ] && break
			sleep 0.05
		done
	done
}

test_ray_worker_nodes_are_certified_and_a_stale_worker_is_refused() {
	scene
	ray_config
	install_node n1; install_node n2
	sleep 0.05
	start_raylet n1 2; echo "$raylet_pid" >run/n1.raylet
	start_raylet n2 2; echo "$raylet_pid" >run/n2.raylet
	# the stand-in has the real process names and tree
	local w
	w=$(sed -n 2p "run/n2.pids")
	assert_eq "$(cat "/proc/$w/comm")" "ray::RayWorkerW"
	assert_eq "$(tr '\0' ' ' <"/proc/$w/cmdline" | sed 's/ *$//')" "ray::RayWorkerWrapper n2-$tag"
	assert_eq "$(awk '{print $4}' "/proc/$w/stat")" "$(cat run/n2.raylet)"
	assert_eq "$(cat "/proc/$(cat run/n2.raylet)/comm")" raylet
	grep -q "site-n2/vllm_demo/_rocm_C.abi3.so" "/proc/$w/maps" || fail "the worker does not map the extension"
	ray_request
	assert_contains "$(cat logs/ray-n2.log)" ":actor_name:RayWorkerWrapper"
	certify_all
	assert_eq "$srun_rc" 0 "srun certify ($(cat srun.out); $(jq -c '[.gates[] | select(.status != "pass") | .problems]' reports/*.json 2>/dev/null))"
	# gate 4 saw both workers of the node, under its raylet
	assert_eq "$(jq -r '.chain.processes | length' reports/n2.json)" 2
	assert_eq "$(jq -r '.gates[4].evidence.selection.tree_root' reports/n2.json)" "$(cat run/n2.raylet)"
	assert_eq "$(jq -r '.gates[6].evidence.markers.matched' reports/n2.json)" 2
	pg merge reports --nodes 'n[1-2]' -q
	assert_eq "$rc" 0 "merge ($out)"

	# n2's raylet dies hard and a worker of it stays behind, still mapping the old install;
	# a new raylet serves the reinstalled extension
	kill -KILL "$(cat run/n2.raylet)"
	sleep 0.2
	w=$(sed -n 2p "run/n2.pids")
	kill -0 "$w" || fail "the stale worker did not survive its raylet"
	install_node n2
	sleep 0.05
	start_raylet n2 2; echo "$raylet_pid" >run/n2.raylet
	ray_request
	rm -f reports/*.json
	certify_all
	assert_eq "$srun_rc" 1 "srun certify: n2 refused ($(cat srun.out))"
	assert_eq "$(jq -r .certified reports/n1.json)" true
	assert_eq "$(gate_status reports/n2.json 5)" fail
	assert_contains "$(problem_codes reports/n2.json 5)" stale-service.orphan
	assert_contains "$(jq -r '.gates[4].problems[].message' reports/n2.json)" "$w"
	pg merge reports --nodes 'n[1-2]' --json cluster.json
	assert_eq "$rc" 1
	assert_contains "$out" "cluster.not-certified n2: not certified: gate 5 stale-service fail (stale-service.orphan"
	assert_eq "$(jq -r '.problems[0].gate' cluster.json)" 5
}

# ---- the sbatch hook -----------------------------------------------------------------------

test_sbatch_hook_certifies_benchmarks_rechecks_and_merges() {
	clean_cluster
	cat >bench.sh <<-'SH'
	#!/bin/sh
	echo "benchmark ran on $SLURMD_NODENAME"
	SH
	chmod +x bench.sh
	set +e
	PROVGATE_CONFIG="$T/provgate.json" PROVGATE_REPORT_DIR="$T/job" \
		sbatch --wait -N2 --chdir="$T" --output="$T/job.out" \
		"$PVG_SRC/hooks/slurm/provgate.sbatch" ./bench.sh >sbatch.out 2>&1
	local src=$?
	set -e
	assert_eq "$src" 0 "sbatch ($(cat sbatch.out) $(cat job.out 2>/dev/null))"
	local out; out=$(cat job.out)
	assert_contains "$out" "benchmark ran on n1"
	assert_contains "$out" "CLUSTER CERTIFIED: 2 nodes"
	local d; d=$(ls -d job/*)
	assert_eq "$(ls "$d/before" "$d/after" | tr '\n' ' ')" "$d/after: n1.json n2.json  $d/before: n1.json n2.json "
	assert_eq "$(jq -r .exec.exit_status "$d/bench-n1.json")" 0
	assert_eq "$(jq -r .certified "$d/bench-n1.json")" true
	assert_eq "$(jq -r .certified "$d/cluster-before.json") $(jq -r .certified "$d/cluster-after.json")" "true true"
	validate "$d/cluster-after.json" "$d/bench-n1.json"

	# the same job with n2 reinstalled under its service: refused before the benchmark runs
	install_node n2
	set +e
	PROVGATE_CONFIG="$T/provgate.json" PROVGATE_REPORT_DIR="$T/job2" \
		sbatch --wait -N2 --chdir="$T" --output="$T/job2.out" \
		"$PVG_SRC/hooks/slurm/provgate.sbatch" ./bench.sh >sbatch.out 2>&1
	src=$?
	set -e
	assert_eq "$src" 1 "sbatch refused ($(cat job2.out))"
	out=$(cat job2.out)
	assert_not_contains "$out" "benchmark ran"
	assert_contains "$out" "cluster.not-certified n2: not certified: gate 4 process-maps"
}

# ---- bad input -----------------------------------------------------------------------------

test_bad_reports_are_clear_refusals() {
	mkdir r
	printf 'not json at all\n' >r/garbage.json
	printf '{"schema": "provgate.report/1", "host": {"node": "n1"' >r/truncated.json
	printf '{"schema": "something.else/1"}\n' >r/other.json
	printf '[1, 2, 3]\n' >r/array.json
	: >r/empty.json
	head -c 3000 /dev/urandom >r/binary.json
	printf '{"schema": "provgate.report/1", "host": {"node": null}, "certified": true}\n' >r/nullnode.json
	printf '{"schema": "provgate.report/1", "host": {"node": "n2"}, "certified": true, "gates": "x",
	         "chain": {"installed": {"sha256": 5}}, "config": [], "started_at": "yesterday"}\n' >r/n2.json
	pg merge r --nodes 'n[1-2]' --json cluster.json --junit cluster.xml
	assert_eq "$rc" 1 "$out $err"
	for f in garbage truncated other array empty binary nullnode; do
		assert_contains "$out" "cluster.bad-report r/$f.json"
	done
	assert_contains "$out" "r/truncated.json: not JSON (it ends early at byte"
	assert_contains "$out" "cluster.missing-field n2: gates[1].evidence.head is missing"
	assert_contains "$out" "cluster.missing-node n1"
	assert_contains "$out" "cluster.not-certified n2"
	assert_contains "$out" "cluster.missing-field n2: chain.installed.sha256 is missing"
	assert_contains "$out" "cluster.missing-field n2: started_at is malformed"
	validate cluster.json
	/usr/bin/python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' cluster.xml
	# --json -: the cluster report on stdout instead of the table
	pg merge r --nodes 'n[1-2]' --json -
	assert_eq "$rc" 1
	printf '%s\n' "$out" >stdout.json
	assert_eq "$(jq -r '.schema + " " + (.certified | tostring)' stdout.json)" "provgate.cluster/1 false"
	validate stdout.json
	# a folder of node reports may hold the cluster report: it is not read as a node
	mkdir ok && cp cluster.json ok/
	pg merge ok --nodes n1 --json ok/cluster2.json
	assert_eq "$rc" 1
	assert_contains "$out" "ignored 1 cluster report"
	assert_contains "$out" "cluster.missing-node n1"
	# usage errors
	pg merge --nodes 'n[1-2]'
	assert_eq "$rc" 2
	pg merge r --nodes 'n[2-1]'
	assert_eq "$rc" 2
	assert_contains "$err" "ends before it starts"
	pg merge no-such-dir --nodes n1
	assert_eq "$rc" 2
	env -u SLURM_JOB_NODELIST "$PROVGATE" merge r >/dev/null 2>err.txt && fail "no node list: accepted"
	assert_contains "$(cat err.txt)" "SLURM_JOB_NODELIST"
	pg merge r --nodes n1 --max-skew -3
	assert_eq "$rc" 2
	pg merge r --nodes n1 --json 'out-{nodename}.json'
	assert_eq "$rc" 2
	assert_contains "$err" "unknown placeholder {nodename}"
	# the same for the node's own report paths, before anything runs
	pg certify -c /nonexistent.json --out 'r/{nodename}.json'
	assert_eq "$rc" 2
	assert_contains "$err" "--json/--out: unknown placeholder {nodename} (known: {node}, {host}, {job})"
	env -u SLURM_JOB_ID "$PROVGATE" run -c /nonexistent.json --junit 'j-{job}.xml' 2>err.txt && fail "{job} outside a job: accepted"
	assert_contains "$(cat err.txt)" "--junit: placeholder {job} has no value here: SLURM_JOB_ID is not set"
}

run_tests
