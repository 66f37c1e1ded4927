#!/bin/bash
# SPDX-License-Identifier: MIT
# rootfs.sh NAME SUITE PACKAGES: a Debian root file system tarball made by
#   mmdebstrap --variant=minbase --include=PACKAGES SUITE
# once, kept as $PVG_TEST_CACHE/NAME.tar (default /var/tmp/provgate-test-cache) and reused;
# prints its path. Concurrent calls wait for the one making it (.ci/run starts the suite's
# in the background before the suite, so that the download overlaps the build).
set -eu
name=$1 suite=$2 packages=$3
cache=${PVG_TEST_CACHE:-/var/tmp/provgate-test-cache}
tar=$cache/$name.tar
mkdir -p "$cache"
exec 9>"$cache/$name.lock"
flock 9
if [ ! -s "$tar" ]; then
	hooks=()
	[ -d /usr/share/mmdebstrap/hooks/eatmydata ] && command -v eatmydata >/dev/null &&
		hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
	mmdebstrap --quiet --variant=minbase "${hooks[@]}" --include="$packages" "$suite" \
		"$cache/$name.part.tar" >"$cache/$name.log" 2>&1 || { tail -20 "$cache/$name.log" >&2; exit 1; }
	mv "$cache/$name.part.tar" "$tar"
fi
echo "$tar"
