#!/bin/sh
# assemble.sh OUT PAGE.scd [FRAGMENT_DIR]: PAGE with every FRAGMENT_DIR/*.scd appended (in
# name order: the problem codes of each gate), rendered by scdoc.
set -eu
out=$1 page=$2 frag=${3:-}
{
	cat "$page"
	if [ -n "$frag" ]; then
		for f in "$frag"/*.scd; do [ -f "$f" ] && { cat "$f"; echo; }; done
	fi
} | scdoc >"$out.tmp"
mv "$out.tmp" "$out"
