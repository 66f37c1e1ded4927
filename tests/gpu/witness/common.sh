#!/bin/bash
# SPDX-License-Identifier: MIT
# What the GPU scripts of tests/gpu/witness share (sourced, not run): the work folders, the
# environment record, libcupti, building and installing the extension of tests/gpu/ext as
# run-h200.sh does, the two-process PyTorch service with the witness, requests, and certify
# with a summary of each report. The caller sets STAGE, W, PORT and TGZ (the results archive).
set -u
OUT=${OUT:-$W/out}
RES=$W/results
WIT=$W/witness
rm -rf "$W" && mkdir -p "$W/logs" "$RES" "$OUT" "$WIT"
pg() { LD_LIBRARY_PATH=$STAGE/lib "$STAGE/bin/provgate" "$@"; }
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$RES/steps.txt"; }
finish() {
	say "finish"
	stop_all
	cp "$W"/logs/* "$RES/" 2>/dev/null
	cp "$W"/cfg-*.json "$RES/" 2>/dev/null
	mkdir -p "$RES/witness-dir" && cp "$WIT"/* "$RES/witness-dir/" 2>/dev/null
	tar -C "$W" -czf "$OUT/$TGZ" results
}
trap finish EXIT

{
	date -u +"date %Y-%m-%dT%H:%M:%SZ"
	uname -a
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
	nvcc --version | tail -2
	python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
	ninja --version
	pg --version
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus $(nproc); tsc flags: $(grep -o -w -e constant_tsc -e nonstop_tsc -e tsc_known_freq /proc/cpuinfo | sort -u | tr '\n' ' ')"
	echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	cat "$STAGE/provgate-source.txt" 2>/dev/null
} >"$RES/env.txt" 2>&1
cupti=$(python3 -c 'import nvidia.cuda_cupti, os; d = os.path.join(list(nvidia.cuda_cupti.__path__)[0], "lib"); print(os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("libcupti.so"))[0]))' 2>/dev/null)
for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
	[ -z "$cupti" ] && [ -e "$c" ] && cupti=$c
done
echo "cupti $cupti" >>"$RES/env.txt"
cat "$RES/env.txt"
export PROVGATE_WITNESS_CUPTI=$cupti

# ---- build, install (as run-h200.sh) --------------------------------------------------------
build_install() {
	say "build (TORCH_CUDA_ARCH_LIST=9.0+PTX)"
	(cd "$W/repo" && TORCH_CUDA_ARCH_LIST="9.0+PTX" MAX_JOBS=8 python3 tools/build.py "$W/repo" "$W/build") \
		>"$W/logs/build.log" 2>&1
	rc=$?
	echo "build rc=$rc" | tee -a "$RES/steps.txt"
	[ $rc = 0 ] || { tail -40 "$W/logs/build.log"; exit 1; }
	say "install"
	mkdir -p "$W/site/pvgext"
	install -m 0644 "$W/repo/pvgext/__init__.py" "$W/site/pvgext/__init__.py"
	install -m 0755 "$W/build/_C.so" "$W/site/pvgext/_C.so"
}

# ---- the service ----------------------------------------------------------------------------
NSVC=0
start_service() {
	NSVC=$((NSVC + 1))
	say "start service #$NSVC (with the witness)"
	(cd "$W/repo/tools" && PYTHONPATH="$W/site" PYTHONUNBUFFERED=1 \
		exec python3 pvg_service.py --port $PORT) 2>>"$W/logs/server-$NSVC.log" &
	SVC_API=$!
}
request() {
	say "request $*"
	timeout 200 python3 "$W/repo/tools/request.py" $PORT "$@" 2>&1 | tee -a "$RES/steps.txt"
}
stop_all() {
	for p in $(pgrep -f "pvg_service.py"); do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 50); do pgrep -f pvg_service.py >/dev/null || break; sleep 0.1; done
	for p in $(pgrep -f "pvg_service.py"); do kill -9 "$p" 2>/dev/null; done
	for _ in $(seq 50); do pgrep -f pvg_service.py >/dev/null || break; sleep 0.1; done
}
engine_file() { # NAME: the engine's witness file, as the live engine left it
	ENG=$(pgrep -P "$SVC_API" -f "role engine" | head -1)
	ls -l "$WIT" >"$RES/$1.witness-ls.txt"
	local f
	f=$(ls "$WIT"/witness-"$ENG"-*.pvgw 2>/dev/null | head -1)
	if [ -n "$f" ]; then
		cp "$f" "$RES/$1.engine.pvgw"
		echo "$1: engine pid $ENG, witness file $(basename "$f") ($(stat -c %s "$f") bytes)" | tee -a "$RES/steps.txt"
	else
		echo "$1: engine pid $ENG, no witness file" | tee -a "$RES/steps.txt"
	fi
}
certify() { # NAME CONFIG EXPECTATION
	local name=$1 cfg=$2
	shift 2
	ps -eo pid,ppid,lstart,comm,args | grep -e PVG -e pvg_service -e "^ *PID" | grep -v grep >"$RES/$name.ps.txt"
	cat /proc/"$ENG"/environ 2>/dev/null | tr '\0' '\n' | grep -e PROVGATE_WITNESS -e CUDA_INJECTION >"$RES/$name.engine-env.txt"
	pg certify -c "$cfg" --keep-going --out "$RES/$name.json" >"$RES/$name.txt" 2>&1
	local rc=$?
	echo "certify $name ($(basename "$cfg")): exit $rc (expected: $*)" | tee -a "$RES/steps.txt" "$RES/verdicts.txt"
	cat "$RES/$name.txt"
	python3 - "$RES/$name.json" <<'PY' | tee -a "$RES/verdicts.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("   no report:", e); sys.exit()
for g in r["gates"]:
    codes = ",".join(p["code"] for p in g.get("problems", []))
    print(f"   gate {g['id']} {g['name']:16} {g['status']:13} {codes}")
    if g["id"] == 7:
        w = g.get("evidence", {}).get("witness", {})
        for p in g.get("problems", []):
            print(f"      {p['code']}: {p.get('message', '')}")
        print(f"      graph_launches={w.get('graph_launches')} captured={w.get('captured_launches')} "
              f"kernels_total={w.get('kernels_total')} ignored={json.dumps(w.get('ignored_files'))}")
        if "request" in w:
            print(f"      request={json.dumps(w['request'])} graph_replays_itemized="
                  f"{w.get('graph_replays_itemized')} graph_replays_opaque={w.get('graph_replays_opaque')}")
            for f in w.get("live_files", []):
                print(f"      live file {f['file']} fresh={f.get('fresh')} version={f.get('version')} "
                      f"launches={f.get('launches')} written_at={f.get('written_at')}")
            for q in w.get("required", []):
                print(f"      required {json.dumps(q)}")
        for k in w.get("kernels", [])[:12]:
            print(f"      kernel count={k['count']} grid={k['grid']} block={k['block']} "
                  f"{'via=graph ' if k.get('via') == 'graph' else ''}{k['name'][:160]}")
PY
}
settle() { sleep 1.5; } # the library rewrites its file every PROVGATE_WITNESS_INTERVAL_MS
