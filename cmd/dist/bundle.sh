#!/bin/bash
# SPDX-License-Identifier: MIT
# Makes the relocatable bundle (meson compile -C BUILD bundle runs it):
#   bundle.sh OUT.tar.gz LAUNCHER PROGRAM INSTALLED-PROGRAM VERSION SRC BUILD PREFIX BINDIR
#             LIBDIR DATADIR MANDIR SANITIZE
#
#   provgate-VERSION-x86_64-linux/
#     bin/provgate                    the launcher (static; launcher.c)
#     libexec/provgate/provgate       provgate (PT_INTERP ld-linux-x86-64.so.2, DT_RPATH $ORIGIN/lib)
#     libexec/provgate/lib/           its loader and every shared library it loads, this
#                                     machine's (ldd of the installed program)
#     lib/provgate/libprovgate-witness.so
#     share/man/, share/bash-completion/, share/zsh/, share/provgate/ (schemas, hooks, CI
#     templates, the CMake snippet; BUNDLE: what the bundle holds, printed by --version)
#     README
set -euo pipefail
out=$1 launcher=$2 program=$3 installed=$4 version=$5 src=$6 build=$7 prefix=$8
libdir=${10} datadir=${11} mandir=${12} sanitize=${13}
arch=$(uname -m)

die() { echo "bundle.sh: $*" >&2; exit 1; }
[ "$sanitize" = none ] || die "this build is instrumented (b_sanitize=$sanitize): make the bundle from a plain build (meson setup build)"
[ "$arch" = x86_64 ] || die "the bundle is made for x86_64; this machine is $arch"

name=provgate-$version-x86_64-linux
work=$(mktemp -d "$build/bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --no-rebuild --destdir "$work/install" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log" >&2; die "meson install failed"; }
inst=$work/install$prefix
r=$work/$name
mkdir -p "$r/bin" "$r/libexec/provgate/lib" "$r/lib/provgate" "$r/share"

install -m 755 "$launcher" "$r/bin/provgate"
install -m 755 "$program" "$r/libexec/provgate/provgate"
install -m 644 "$inst/$libdir/provgate/libprovgate-witness.so" "$r/lib/provgate/"
cp -a "$inst/$datadir/provgate" "$inst/$datadir/bash-completion" "$inst/$datadir/zsh" "$r/share/"
[ -d "$inst/$mandir" ] || die "no man pages in the install tree (scdoc missing? meson setup -Dman=enabled)"
cp -a "$inst/$mandir" "$r/share/man"
strip --remove-section=.comment --remove-section=.note "$r/bin/provgate" "$r/libexec/provgate/provgate"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$r/lib/provgate/libprovgate-witness.so"

# the loader the installed program names, and what it loads
interp=$(readelf -l "$installed" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$(basename "$interp")" = ld-linux-x86-64.so.2 ] || die "unexpected loader $interp"
cp -L "$interp" "$r/libexec/provgate/lib/ld-linux-x86-64.so.2"
libs=$(ldd "$installed" | awk '$2 == "=>" && $3 ~ /^\// {print $1 " " $3}')
[ -n "$libs" ] || die "ldd listed no libraries of $installed"
pkg_of() { # PATH -> "package version", from dpkg's database (a merged /usr: either path)
	command -v dpkg-query >/dev/null || return 0
	local p f
	for f in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
		p=$(dpkg-query -S "$f" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$p" ] && break
	done
	[ -n "${p:-}" ] && dpkg-query -W -f='${Package} ${Version}' "$p" 2>/dev/null
	return 0
}
manifest=$r/share/provgate/BUNDLE
{
	echo "bundle: $name, made $(date -u +%Y-%m-%d) on $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "source: $(git -C "$src" describe --always --dirty 2>/dev/null || echo "provgate $version")"
	echo "needs: Linux 4.1 or newer on x86_64, nothing else of the host"
	echo "loader: libexec/provgate/lib/ld-linux-x86-64.so.2 ($(getconf GNU_LIBC_VERSION); $(pkg_of "$interp"))"
	echo "libraries (libexec/provgate/lib):"
	while read -r soname path; do
		cp -L "$path" "$r/libexec/provgate/lib/$soname"
		chmod 644 "$r/libexec/provgate/lib/$soname"
		echo "  $soname ($(pkg_of "$path"))"
	done <<<"$libs"
	echo "witness: lib/provgate/libprovgate-witness.so (loads into services with glibc 2.17 or newer)"
	echo "man pages: share/man (man -M ROOT/share/man provgate); completions: share/bash-completion, share/zsh"
	echo "files: share/provgate (JSON Schemas, hooks, CI templates, CMake snippet)"
} >"$manifest"
chmod 755 "$r/libexec/provgate/lib/ld-linux-x86-64.so.2"

cat >"$r/README" <<README
provgate $version, a relocatable bundle for x86-64 Linux (kernel 4.1 or newer; nothing else
of the host is used: provgate runs with its own loader and libraries).

  bin/provgate --version            what the bundle holds
  bin/provgate certify -c provgate.json
  export PATH="\$PWD/bin:\$PATH" MANPATH="\$PWD/share/man:"

Unpack it anywhere (or copy or bind-mount it into a container) and run bin/provgate; a
symbolic link to bin/provgate from a folder on PATH works too. The dispatch witness is
lib/provgate/libprovgate-witness.so (provgate exec --witness DIR prints how to start a
service with it).
README

# one owner, one time, sorted: the same build gives the same bytes
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$work" -cf - "$name" |
	gzip -9n >"$out.tmp"
mv "$out.tmp" "$out"
