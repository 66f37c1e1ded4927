#!/bin/bash
# SPDX-License-Identifier: MIT
# Makes provgate's OCI image from the bundle (meson compile -C BUILD image runs it):
#   image.sh OUT.tar BUNDLE.tar.gz CONTAINERFILE VERSION SRC BUILD [SOURCE-URL]
# The bundle unpacked at /opt/provgate, /bin/busybox (Debian's busybox-static) with a few of
# its commands, /etc/passwd and /etc/group, a /tmp; built FROM scratch by podman in a storage
# of its own that is removed afterwards (the machine's images are neither read nor changed),
# and written as an OCI archive: podman load -i OUT.tar. Labels and manifest annotations
# org.opencontainers.image.version, .revision (the tree's git commit), .source, .created
# (the last commit's time, or SOURCE_DATE_EPOCH). Needs podman and root or a rootless setup.
set -euo pipefail
out=$1 bundle=$2 containerfile=$3 version=$4 src=$5 build=$6 source=${7:-}

die() { echo "image.sh: $*" >&2; exit 1; }
command -v podman >/dev/null || die "podman not found (Debian: podman)"
busybox=${PROVGATE_IMAGE_BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || die "no $busybox (Debian: busybox-static)"
! readelf -l "$busybox" | grep -q INTERP || die "$busybox is not static (Debian: busybox-static, not busybox)"

revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] || revision=$revision-dirty
[ -n "$source" ] || source=$(git -C "$src" remote get-url origin 2>/dev/null || echo https://provgate.dev/)
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$mtime" +%Y-%m-%dT%H:%M:%SZ)

work=$(mktemp -d "${TMPDIR:-/tmp}/provgate-image.XXXXXX") # podman: a short run root
store=$work/store
p() { podman --root "$store" --runroot "$work/run" --storage-driver vfs --tmpdir "$work/tmp" "$@"; }
cleanup() { p rmi -a -f >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/tmp" "$work/ctx/root/opt" "$work/ctx/root/bin" "$work/ctx/root/etc" "$work/ctx/root/tmp"
tar -C "$work/ctx/root/opt" -xzf "$bundle"
mv "$work/ctx/root/opt/provgate-$version-x86_64-linux" "$work/ctx/root/opt/provgate" ||
	die "$bundle does not hold provgate-$version-x86_64-linux/"
r=$work/ctx/root
install -m 755 "$busybox" "$r/bin/busybox"
for c in sh sleep cat ls env id ps kill head tail grep; do ln -s busybox "$r/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
chmod 1777 "$r/tmp"
cp "$containerfile" "$work/ctx/Containerfile"
find "$r" -exec touch -h -d "@$mtime" {} +

tag=localhost/provgate:$version
ann=()
for kv in "version=$version" "revision=$revision" "source=$source" "created=$created" \
	"title=provgate" "licenses=MIT"; do
	ann+=(--annotation "org.opencontainers.image.$kv")
done
p build -q --format oci --timestamp "$mtime" --build-arg "VERSION=$version" \
	--build-arg "REVISION=$revision" --build-arg "SOURCE=$source" "${ann[@]}" \
	-t "$tag" -f "$work/ctx/Containerfile" "$work/ctx" >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; die "podman build failed"; }
rm -f "$out.tmp"
p save -q --format oci-archive -o "$out.tmp" "$tag" >"$work/save.log" 2>&1 ||
	{ cat "$work/save.log" >&2; die "podman save failed"; }
mv "$out.tmp" "$out"
