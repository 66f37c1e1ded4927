/* SPDX-License-Identifier: MIT */
/*
 * What /proc text says about namespaces and containers: the NSpid line of /proc/PID/status,
 * the container a cgroup path names (docker, podman/libpod, containerd/CRI-O under
 * Kubernetes), and the "ns:[INODE]" text of /proc/PID/ns links. Pure parsers: bytes in.
 */
#pragma once
#include "util/util.h"

/* A process's pid at each pid-namespace level that the reading /proc can see, outermost
 * first: the last one is the pid in the process's own namespace (what getpid() returns
 * inside it, and what it writes in a log line or a pidfile). */
#define PVG_NSPID_MAX 32
struct pvg_nspid {
	pid_t pid[PVG_NSPID_MAX];
	size_t n;
};

/* Finds "NSpid:" in the text of /proc/PID/status. 0; -ENOENT when there is no NSpid line
 * (kernels before 4.1); -EINVAL when the line is malformed or has more than
 * PVG_NSPID_MAX levels. */
int pvg_nspid_parse(const char *status, size_t len, struct pvg_nspid *out);
static inline pid_t pvg_nspid_inner(const struct pvg_nspid *n)
{
	return n->n ? n->pid[n->n - 1] : 0;
}

/* A container, as its cgroup path names it. */
struct pvg_container {
	char engine[16]; /* "docker", "podman", "containerd", "cri-o" */
	char id[72];     /* the full hexadecimal id */
	char pod[48];    /* Kubernetes pod uid, or "" */
	bool conmon;     /* podman's monitor for that container, not a process inside it */
};

/* Reads the text of /proc/PID/cgroup (v1 lines "N:controllers:/path", v2 "0::/path") and
 * finds a container id in any line's path:
 *   podman   .../libpod-<id>.scope, /libpod_parent/libpod-<id>, libpod-conmon-<id> (conmon)
 *   docker   /docker/<id>, .../docker-<id>.scope
 *   containerd .../cri-containerd-<id>.scope, /kubepods/.../pod<uid>/<id>
 *   cri-o    .../crio-<id>.scope
 * Returns 1 when found, 0 when no line names a container (the host, or a private cgroup
 * namespace that shows "/"), -EINVAL for text that is not a cgroup file. */
int pvg_cgroup_container(const char *text, size_t len, struct pvg_container *out);

/* "pid:[4026531836]" -> 4026531836 when the prefix is kind. 0, or -EINVAL. */
int pvg_ns_link_parse(const char *link, const char *kind, uint64_t *ino);

/* The root file system a process sees: the last mount at "/" in the text of its
 * /proc/PID/mountinfo ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE
 * SOURCE SUPER-OPTIONS", fields octal-escaped). */
struct pvg_rootfs {
	char fstype[32];
	char *source;
	char *lowerdir; /* overlay: the lowerdir= super option, unescaped; NULL otherwise */
};
/* 1 when a mount at "/" was found, 0 when none was, -EINVAL for text that is not a
 * mountinfo file. out is cleared first; pvg_rootfs_clear frees it. */
int pvg_mountinfo_root(const char *text, size_t len, struct pvg_rootfs *out);
void pvg_rootfs_clear(struct pvg_rootfs *r);

/* conmon's command line (NUL-separated, as /proc/PID/cmdline): is it the monitor of container
 * id (-c/--cid ID), and the log it was given (-l/--log-path "DRIVER:PATH", or a bare PATH,
 * which conmon writes as k8s-file). 1 when it is that container's monitor, 0 when it is not.
 * *path: the first file-backed log, or NULL; *drivers: every driver, comma-joined ("" when
 * none was given: conmon then writes none). */
int pvg_conmon_log_parse(const char *cmdline, size_t len, const char *id, char **path,
			 char **drivers);
