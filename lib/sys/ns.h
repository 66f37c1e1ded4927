/* SPDX-License-Identifier: MIT */
/*
 * Namespaces and containers of processes, read from /proc (procfs is "/proc" or a fixture
 * tree): namespace inode numbers from /proc/PID/ns/, pids at every namespace level from
 * NSpid, the container from /proc/PID/cgroup, and provgate's own view. Data and -errno only.
 */
#pragma once
#include "formats/container.h"
#include "util/util.h"

/* The kernel's fixed inode number of the initial pid namespace (PROC_PID_INIT_INO): a
 * process whose pid namespace has another number runs inside a container (or unshare). */
#define PVG_PIDNS_INIT_INO 0xEFFFFFFCu

struct pvg_ns_ids {
	uint64_t pid, mnt, net, user, cgroup; /* 0: could not be read */
};

/* Reads <procfs>/<pid>/ns/{pid,mnt,net,user,cgroup}. 0 when at least the pid namespace was
 * read; -ESRCH (gone), -EACCES (another user's process, without privilege), -errno. */
int pvg_ns_read(const char *procfs, pid_t pid, struct pvg_ns_ids *out);
/* NSpid of <procfs>/<pid>/status. 0, -ESRCH, -ENOENT (no NSpid line), -EINVAL, -errno. */
int pvg_proc_nspid(const char *procfs, pid_t pid, struct pvg_nspid *out);
/* The container of <procfs>/<pid>/cgroup: 1 found, 0 none, -errno. */
int pvg_proc_container(const char *procfs, pid_t pid, struct pvg_container *out);

/* What a process's root file system is made of, as far as telling two containers of one
 * image from containers of different images goes. For an overlay root (podman, docker,
 * containerd) the lowerdir layers, each named by the layer directory its link in the
 * engine's l/ folder points to where provgate can read that link (docker's per-container
 * "-init" layer left out), else by its path; sha256 of those names, one a line. */
struct pvg_rootfs_id {
	char fstype[32];
	size_t layers;        /* 0 when the root is not an overlay */
	char sha256[65];      /* "" when the root is not an overlay */
	size_t unresolved;    /* layers named by their path: their links could not be read */
};
/* root: where the engine's storage paths are read ("/" on the host). 1 found, 0 no mount at
 * "/" in <procfs>/<pid>/mountinfo, -ESRCH, -EINVAL (not a mountinfo file), -errno. */
int pvg_proc_rootfs(const char *procfs, const char *root, pid_t pid, struct pvg_rootfs_id *out);

/* Where provgate itself runs. */
struct pvg_self_view {
	bool in_container;   /* its pid namespace is not the initial one */
	struct pvg_ns_ids ns;
	bool have_container; /* container names what it is */
	struct pvg_container container;
	char how[96];        /* what told it: "cgroup", "/run/.containerenv", ... */
};

/* root: "/" (or a fixture tree) for /run/.containerenv and /.dockerenv. 0 or -errno when
 * not even /proc/self/ns/pid can be read. */
int pvg_self_view_read(const char *procfs, const char *root, struct pvg_self_view *out);

/* The container engines' port forwarders: the process that holds the host side of a
 * published port (-p 8000:8000). The engine's name for a comm that is one, else NULL. */
const char *pvg_port_forwarder_engine(const char *comm);
