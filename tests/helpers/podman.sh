# A private, rootful podman for scenario tests: its own storage, run root, network config and
# containers.conf under $CTR_DIR, so that nothing of the machine's /etc/containers or
# /var/lib/containers is read or changed. Source it from a test after tests/lib.sh.
#   ctr_setup             needs root, podman, runc; builds image localhost/pvg-base-$CTR_TAG;
#                         sets ctr_cleanup as the EXIT trap
#   ctr_run ARGS...       podman run -d with the test's defaults; prints the container id
#   ctr_image NAME DIR    imports DIR (files laid over the base rootfs) as image NAME
#   ctr_exec CTR CMD...   podman exec, bounded in time
#   ctr_cleanup           removes the containers, images and storage (set as the EXIT trap)
# Facts this relies on, found on Debian 12's podman 4.3.1: crun fails on this cgroup v1
# hybrid setup (runc works), and the default RLIMIT_NOFILE of containers.conf cannot be raised
# here (default_ulimits = [] keeps the caller's). No registry is reachable: the image is a
# rootfs tarball of symlinks into a read-only bind of the host's /usr, so that the host's
# libc, python3 and the ASan runtime of the test build work inside.
# shellcheck shell=bash

CTR_TIMEOUT=${CTR_TIMEOUT:-60}

podman_() {
	timeout -k 5 "$CTR_TIMEOUT" podman --root "$CTR_DIR/store" --runroot "$CTR_DIR/run" \
		--storage-driver overlay --cgroup-manager cgroupfs --runtime runc \
		--network-config-dir "$CTR_DIR/net" --tmpdir "$CTR_DIR/tmp" "$@"
}

ctr_cleanup() {
	[ -n "${CTR_DIR:-}" ] && [ -d "$CTR_DIR" ] || return 0
	podman_ rm -a -f -t 0 >/dev/null 2>&1 || true
	podman_ rmi -a -f >/dev/null 2>&1 || true
	# whatever overlay mounts a killed podman left behind
	local m
	for m in $(awk -v d="$CTR_DIR/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$CTR_DIR"
}

# ctr_rootfs DIR: the base rootfs (symlinks into /usr, which every container binds read-only)
ctr_rootfs() {
	local r=$1
	mkdir -p "$r"/{usr,etc,tmp,proc,sys,dev,run,root,var/tmp}
	ln -s usr/bin "$r/bin"; ln -s usr/lib "$r/lib"; ln -s usr/sbin "$r/sbin"
	[ -d /usr/lib64 ] && ln -s usr/lib64 "$r/lib64"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'root:x:0:' >"$r/etc/group"
	echo '127.0.0.1 localhost' >"$r/etc/hosts"
	chmod 1777 "$r/tmp" "$r/var/tmp"
}

# ctr_image NAME [DIR]: a base rootfs with DIR's files laid over it, imported as NAME
ctr_image() {
	local name=$1 extra=${2:-} r
	r=$(mktemp -d "$CTR_DIR/rootfs.XXXXXX")
	ctr_rootfs "$r"
	[ -n "$extra" ] && cp -a "$extra"/. "$r"/
	tar -C "$r" -cf "$r.tar" . || fail "cannot pack the rootfs"
	podman_ import -q "$r.tar" "$name" >/dev/null || fail "podman import $name failed"
	rm -rf "$r" "$r.tar"
}

ctr_setup() {
	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" = true ] && fail "the container tests run rootful podman: run them as root"
		echo "SKIP: rootful podman needs root" >&2
		exit 77
	fi
	need podman runc conmon
	CTR_TAG=${CTR_TAG:-$(printf %s "${T##*.}" | tr A-Z a-z)$$}
	CTR_DIR=$(mktemp -d "/tmp/pvg-ctr.XXXXXX")
	trap ctr_cleanup EXIT
	mkdir -p "$CTR_DIR/net" "$CTR_DIR/tmp"
	cat >"$CTR_DIR/containers.conf" <<-'CONF'
	[containers]
	default_ulimits = []
	[engine]
	runtime = "runc"
	cgroup_manager = "cgroupfs"
	events_logger = "file"
	CONF
	export CONTAINERS_CONF="$CTR_DIR/containers.conf"
	export CONTAINERS_STORAGE_CONF="$CTR_DIR/storage.conf"
	printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
		"$CTR_DIR/store" "$CTR_DIR/run" >"$CONTAINERS_STORAGE_CONF"
	export CONTAINERS_REGISTRIES_CONF="$CTR_DIR/registries.conf"
	: >"$CONTAINERS_REGISTRIES_CONF"
	CTR_IMAGE="localhost/pvg-base-$CTR_TAG:1"
	ctr_image "$CTR_IMAGE"
}

# ctr_run [--image IMG] ARGS... -- CMD...: a detached container with /usr bound read-only
ctr_run() {
	local image=$CTR_IMAGE
	if [ "${1:-}" = --image ]; then image=$2; shift 2; fi
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	podman_ run -d --label "pvg-test=$CTR_TAG" -v /usr:/usr:ro "${opts[@]}" "$image" "$@" ||
		fail "podman run failed"
}

ctr_exec() { podman_ exec "$@"; }
ctr_pid() { podman_ inspect -f '{{.State.Pid}}' "$1"; }

# in_ctr [-e VAR=VALUE]... CTR CMD...: podman exec in $T with a test's environment (no colour,
# UTF-8, the GPU and sysfs stand-ins under $T); sets rc, out, err (t-bundle.sh, t-wheel.sh)
in_ctr() {
	local opts=() o e
	while [ "$1" = -e ]; do opts+=(-e "$2"); shift 2; done
	local ctr=$1; shift
	o=$(mktemp) e=$(mktemp)
	set +e
	ctr_exec -w "$T" -e NO_COLOR=1 -e LC_ALL=C.UTF-8 -e "PROVGATE_GPU_DEVICES=$T/gpu*" \
		-e "PROVGATE_SYSFS=$T/sys" "${opts[@]}" "$ctr" "$@" >"$o" 2>"$e"
	rc=$?
	set -e
	out=$(cat "$o") err=$(cat "$e")
	rm -f "$o" "$e"
}
