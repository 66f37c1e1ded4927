#!/usr/bin/env bash
# Every fuzz target at once, on a machine with more cores than this one and none of our
# packages (same CPU architecture, glibc no older than the build's):
#   tests/fuzz/remote.sh stage DIR            here: build every tests/fuzz/fuzz-*.c target
#                                             (build.sh --seed), then pack the binaries (debug
#                                             info stripped), the shared libraries they load
#                                             beyond glibc and the seeded corpora into
#                                             DIR/fuzz.tar.xz (about 11 MB)
#   tests/fuzz/remote.sh run DIR SECS OUT     there: unpack, run each target for SECS s, all at
#                                             once (one process each), and write OUT/summary.txt
#                                             (per target: seconds, runs, coverage, outcome) and
#                                             OUT/results.tar.gz (each log, each crash input)
# A crash input comes back in results.tar.gz: reproduce it here with the unstripped binary
# (build-fuzz/fuzz-TARGET INPUT), fix it, and keep it as tests/fuzz/crashes/TARGET-NAME.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

stage() {
	local dir=$1 out=${PVG_FUZZ_BUILD:-$src/build-fuzz}
	local targets=()
	for c in "$src"/tests/fuzz/fuzz-*.c; do
		c=${c##*/fuzz-}
		targets+=("${c%.c}")
	done
	PVG_FUZZ_TARGETS="${targets[*]}" PVG_FUZZ_BUILD="$out" "$src/tests/fuzz/build.sh" --seed
	local st
	st=$(mktemp -d)
	mkdir -p "$st/fuzz/bin" "$st/fuzz/lib" "$dir"
	for t in "${targets[@]}"; do
		objcopy --strip-debug "$out/fuzz-$t" "$st/fuzz/bin/fuzz-$t"
		cp -r "$out/corpus-$t" "$st/fuzz/corpus-$t"
		# glibc stays the other machine's own; everything else travels
		ldd "$out/fuzz-$t" | awk '$3 ~ /^\// {print $3}' |
			grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so' |
			xargs -r cp -Lu -t "$st/fuzz/lib/"
	done
	# what was built: PVG_FUZZ_COMMIT names it where $src is an export without .git
	echo "${PVG_FUZZ_COMMIT:-$(git -C "$src" rev-parse HEAD 2>/dev/null)}" >"$st/fuzz/commit"
	printf '%s\n' "${targets[@]}" >"$st/fuzz/targets"
	tar -C "$st" -cf - fuzz | xz -T0 --lzma2=preset=6,dict=192MiB >"$dir/fuzz.tar.xz"
	rm -rf "$st"
	ls -l "$dir/fuzz.tar.xz"
}

run() {
	local dir=$1 secs=$2 res=$3
	local w
	w=$(mktemp -d)
	if command -v xz >/dev/null; then
		xz -dc "$dir/fuzz.tar.xz" | tar -C "$w" -xf -
	else
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$dir/fuzz.tar.xz" "$w"
	fi
	cd "$w/fuzz"
	mkdir -p "$res/logs" "$res/crashes"
	export LD_LIBRARY_PATH=$w/fuzz/lib
	local cpus
	cpus=$(nproc)
	echo "commit $(cat commit 2>/dev/null), $(wc -l <targets) targets, ${secs}s each, $cpus CPUs" |
		tee "$res/summary.txt"
	local pids=()
	while read -r t; do
		(
			s=$(date +%s.%N)
			rc=0
			# -timeout: one input that runs 60 s is a hang, and is reported as one
			bin/fuzz-$t -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 \
				-timeout=60 -print_final_stats=1 -artifact_prefix="$res/crashes/$t-" \
				"corpus-$t" >"$res/logs/$t.log" 2>&1 || rc=$?
			e=$(date +%s.%N)
			echo "$rc $(awk "BEGIN { print $e - $s }")" \
				>"$res/logs/$t.rc"
		) &
		pids+=($!)
	done <targets
	wait "${pids[@]}" || true
	{
		printf '%-16s %8s %12s %8s %8s  %s\n' target seconds runs cov ft outcome
		while read -r t; do
			local l=$res/logs/$t.log rc secs_ran runs cov ft outcome
			read -r rc secs_ran <"$res/logs/$t.rc"
			runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -n1)
			cov=$(grep -oE 'cov: [0-9]+' "$l" | tail -n1 | cut -d' ' -f2)
			ft=$(grep -oE 'ft: [0-9]+' "$l" | tail -n1 | cut -d' ' -f2)
			if [ "$rc" = 0 ]; then
				outcome="no crash"
			else
				outcome="exit $rc: $(grep -m1 -E '^(SUMMARY|==[0-9]+==ERROR)' "$l" | cut -c1-160)"
			fi
			printf '%-16s %8.0f %12s %8s %8s  %s\n' "$t" "$secs_ran" "${runs:-?}" \
				"${cov:-?}" "${ft:-?}" "$outcome"
		done <targets
	} | tee -a "$res/summary.txt"
	tar -C "$res" -czf "$res/results.tar.gz" logs crashes
	rm -rf "$res/logs" "$res/crashes" "$w"
}

case "${1:-}" in
stage) stage "$2" ;;
run) run "$2" "$3" "$4" ;;
*) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
