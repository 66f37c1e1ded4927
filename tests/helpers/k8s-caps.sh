#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# k8s-caps.sh: which capabilities a sidecar needs to read another container's process, as
# gate 4 does (/proc/PID/maps, the links in /proc/PID/map_files, /proc/PID/root, environ),
# measured on this machine's kernel with rootful podman + runc: a pod sharing its pid
# namespace (podman pod create --share pid), a "service" container (sleep, which maps the
# host's libc through a read-only /usr) and a reader container that runs as root with
# --cap-drop ALL and only the capabilities named. Prints one table line per case. As root.
# The last column takes on the target's user (setpriv: setgroups, setresgid, setresuid, as
# provgate's open as the service's user does) and reads its 600 file through its root.
set -u
CTR_TIMEOUT=60
fail() { echo "k8s-caps.sh: $*" >&2; exit 1; }
need() { local t; for t in "$@"; do command -v "$t" >/dev/null || fail "$t is not installed"; done; }
T=$(mktemp -d /tmp/pvg-caps.XXXXXX)
CTR_TAG=caps$$
# shellcheck source=podman.sh
source "$(dirname "$0")/podman.sh"
ctr_setup
trap 'ctr_cleanup; rm -rf "$T"' EXIT

# probe: what the reader sees of pid $1 (pid in the pod's namespace)
read -r -d '' PROBE <<'SH'
p=$1
r() { if "$@" >/dev/null 2>&1; then printf ' yes'; else printf '  no'; fi; }
m=$(grep -m1 ' /usr/lib/x86_64-linux-gnu/libc.so' /proc/$p/maps | cut -d' ' -f1)
r test -n "$m"
[ -n "$m" ] || m=none
r ls /proc/$p/map_files/
r readlink /proc/$p/map_files/$m
r stat -L /proc/$p/map_files/$m
r head -c1 /proc/$p/map_files/$m
r ls /proc/$p/root/
r head -c1 /proc/$p/root/tmp/p
r head -c1 /proc/$p/environ
u=$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$p/status) # no awk: /etc/alternatives
r setpriv --reuid="$u" --regid="$u" --clear-groups head -c1 /proc/$p/root/tmp/p
echo
SH

ctr_image "localhost/pvg-caps-$CTR_TAG:1"
img="localhost/pvg-caps-$CTR_TAG:1"
podman_ pod create --name "pod-$CTR_TAG" --share pid,ipc,uts >/dev/null || fail "pod create"
# a root service with the engine's default capabilities, and one of user 1000 with none; each
# holds a file only its user can read (mode 600), like a model or a key in its root
podman_ run -d --pod "pod-$CTR_TAG" --name "svc-$CTR_TAG" -v /usr:/usr:ro "$img" \
	/bin/sh -c 'umask 077; echo x >/tmp/p; exec sleep 600' >/dev/null || fail "service"
podman_ run -d --pod "pod-$CTR_TAG" --name "usr-$CTR_TAG" -v /usr:/usr:ro --user 1000:1000 \
	--cap-drop all "$img" /bin/sh -c 'umask 077; echo x >/tmp/p; exec sleep 600' \
	>/dev/null || fail "user service"
sleep 1
pid_of() { # NAME -> its process's pid in the pod's namespace (the last of NSpid)
	awk '$1 == "NSpid:" { print $NF }' "/proc/$(ctr_pid "$1-$CTR_TAG")/status"
}
svc=$(pid_of svc) usr=$(pid_of usr)
echo "kernel $(uname -r), podman $(podman --version | cut -d' ' -f3), $(runc --version | head -n1)"
echo "reader: root, --cap-drop all, --read-only, in the pod's pid namespace"
echo "columns: maps  map_files(list)  readlink  stat-follow  open  root/  root/600-file  environ  as-user"
for target in svc usr; do
	pid=$svc; [ "$target" = usr ] && pid=$usr
	[ "$target" = svc ] && echo "target: a root service with podman's default capabilities (pid $pid)"
	[ "$target" = usr ] && echo "target: a service of user 1000 with no capabilities (pid $pid)"
	for caps in "" SYS_PTRACE DAC_READ_SEARCH "SYS_PTRACE DAC_READ_SEARCH" CHECKPOINT_RESTORE \
		"SYS_PTRACE CHECKPOINT_RESTORE" SYS_ADMIN "SYS_PTRACE SYS_ADMIN" \
		"SYS_PTRACE DAC_READ_SEARCH CHECKPOINT_RESTORE" "SYS_PTRACE DAC_READ_SEARCH SYS_ADMIN" \
		"SYS_PTRACE SETUID SETGID" "SYS_PTRACE DAC_READ_SEARCH SETUID" \
		"SYS_PTRACE DAC_READ_SEARCH SETGID" "SYS_PTRACE DAC_READ_SEARCH SETUID SETGID"; do
		add=(); for c in $caps; do add+=(--cap-add "$c"); done
		line=$(podman_ run --rm --pod "pod-$CTR_TAG" -v /usr:/usr:ro --read-only --cap-drop all \
			"${add[@]}" "$img" /bin/sh -c "$PROBE" probe "$pid" 2>/dev/null) || line=" (podman failed)"
		printf '  %-46s%s\n' "${caps:-(none)}" "$line"
	done
done
# the same user as the service, no capabilities
line=$(podman_ run --rm --pod "pod-$CTR_TAG" -v /usr:/usr:ro --read-only --cap-drop all \
	--user 1000:1000 "$img" /bin/sh -c "$PROBE" probe "$usr" 2>/dev/null)
printf '  %-46s%s\n' "(none), as user 1000 (the service's user)" "$line"
