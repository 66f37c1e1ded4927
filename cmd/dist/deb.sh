#!/bin/bash
# SPDX-License-Identifier: MIT
# Makes the Debian package from the install tree (meson compile -C BUILD deb runs it):
#   deb.sh OUT.deb VERSION SRC BUILD PREFIX BINDIR LIBDIR DATADIR MANDIR SANITIZE [MAINTAINER]
# meson install into a staging folder, the ELF files stripped and the man pages compressed as
# Debian policy asks, copyright and changelog in /usr/share/doc/provgate, the control data
# from meson's version and dpkg-shlibdeps' dependencies, then dpkg-deb. For Debian 12 and
# Ubuntu 24.04 (the build machine's libraries are the dependencies' floor). Needs dpkg-dev.
set -euo pipefail
out=$1 version=$2 src=$3 build=$4 prefix=$5 libdir=$7 mandir=$9 sanitize=${10}
maintainer=${11:-}

die() { echo "deb.sh: $*" >&2; exit 1; }
[ "$sanitize" = none ] || die "this build is instrumented (b_sanitize=$sanitize): make the package from a plain build"
[ "$prefix" = /usr ] || die "the package installs under /usr: configure the build with --prefix=/usr (it has $prefix)"
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps not found (Debian: dpkg-dev)"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
[ "$libdir" = "lib/$multiarch" ] || die "libdir is $libdir; Debian's is lib/$multiarch (meson's default for --prefix=/usr)"

work=$(mktemp -d "$build/deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
meson install -C "$build" --no-rebuild --destdir "$root" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log" >&2; die "meson install failed"; }
[ -d "$root/$prefix/$mandir" ] || die "no man pages in the install tree (scdoc missing? meson setup -Dman=enabled)"

# ELF files as dh_strip leaves them; man pages as dh_compress does
find "$root" -type f | while read -r f; do
	case "$(head -c 4 "$f" | od -An -c | tr -d ' ')" in
	177ELF)
		case "$f" in
		*.so|*.so.*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
			chmod a-x "$f" ;;
		*) strip --remove-section=.comment --remove-section=.note "$f" ;;
		esac
		chmod go-w "$f" ;;
	esac
done
find "$root/$prefix/$mandir" -type f ! -name '*.gz' -exec gzip -9n {} +

doc=$root/usr/share/doc/provgate
mkdir -p "$doc"
year=$(date -u +%Y)
cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: provgate

Files: *
Copyright: $year provgate developers
License: Expat

License: Expat
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
 THE SOFTWARE.
COPYRIGHT
# the maintainer: -Ddeb_maintainer, else the author of the source tree's last commit
[ -n "$maintainer" ] || maintainer=$(git -C "$src" log -1 --format='%an <%ae>' 2>/dev/null || true)
[ -n "$maintainer" ] || die "no maintainer: configure with -Ddeb_maintainer='NAME <MAIL>'"
date=$(date -u -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}")
{
	echo "provgate ($version) unstable; urgency=medium"
	echo
	echo "  * provgate $version, built from $(git -C "$src" describe --always --dirty 2>/dev/null || echo "its source tree")."
	echo
	echo " -- $maintainer  $date"
} | gzip -9n >"$doc/changelog.gz"

# dependencies: what the ELF files link, as Debian's shlibs and symbols files name them
mkdir -p "$work/debian" "$root/DEBIAN"
printf 'Source: provgate\n\nPackage: provgate\nArchitecture: any\n' >"$work/debian/control"
mapfile -t elfs < <(find "$root/usr" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
	'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
depends=$(cd "$work" && dpkg-shlibdeps -O -lroot/usr/"$libdir" "${elfs[@]/#$work\//}" 2>"$work/shlibdeps.log" |
	sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log" >&2; die "dpkg-shlibdeps failed"; }
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"

# libprovgate.so.0 is in the package: others link it through this shlibs entry; ldconfig runs
soname=$(readelf -d "$root/usr/$libdir"/libprovgate.so.*.* | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "libprovgate ${soname##*.so.} provgate (>= $version)" >"$root/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2) >"$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<CONTROL
Package: provgate
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: python3
Suggests: bash-completion
Section: devel
Priority: optional
Description: build-and-runtime provenance verifier for GPU kernels
 provgate proves that the number a GPU benchmark printed came from the kernel
 that was just modified, built and installed. Seven ordered gates check the
 build log, the install, the artifact's hash, the service's mapped files, stale
 processes, the device code objects and the dispatch markers; it refuses to
 certify unless every link from source to dispatched kernel closes. ROCm/HIP
 and CUDA.
 .
 This package holds the provgate command, libprovgate with its header and
 pkg-config file, the dispatch witness library, man pages, shell completions,
 hooks and JSON Schemas.
CONTROL
chmod 644 "$root/DEBIAN/"*
dpkg-deb --root-owner-group -Zxz --build "$root" "$out.tmp" >/dev/null
mv "$out.tmp" "$out"
