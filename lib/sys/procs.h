/* SPDX-License-Identifier: MIT */
/*
 * Processes, through libproc2: one snapshot of every process per run (one pass over /proc), the
 * service's targets selected from it (service.pid, service.pidfile or service.match), and the
 * service tree.
 * Callers share one snapshot per evaluation (checks/facts.h caches it).
 */
#pragma once
#include "sys/ns.h"
#include "util/util.h"

/* How the service is found (the config's "service" section). */
struct pvg_service_spec {
	struct pvg_strv match;
	long pid; /* -1 unset */
	char *pidfile;
	long port; /* -1 unset */
	struct pvg_strv family;
};

struct pvg_proc {
	pid_t pid, ppid;
	uid_t uid;              /* (uid_t)-1 unless family, matched or in the tree */
	uint64_t start_ticks;   /* since boot, in clock ticks */
	struct timespec start;  /* epoch; exact to one clock tick (see pvg_targets.tick_ns) */
	char comm[16];          /* the kernel's 15-byte name */
	char *cmdline;          /* arguments joined by spaces; NULL when unreadable or exited */
	bool zombie;            /* exited, not reaped: never a service process */
	bool self;              /* provgate itself: never a service process */
	bool matched;           /* selected by service.pid / pidfile / match */
	bool family;            /* matches service.family or service.match */
	bool in_tree;           /* inside the service tree */
	/* read for processes of the tree, selected ones and service processes only: */
	struct pvg_ns_ids ns;   /* its namespaces (0: not read) */
	pid_t ns_pid;           /* its pid in its own pid namespace (NSpid); 0: not read */
	/* its open files, when the snapshot read them (pvg_targets_scan_fds): the inodes of its
	 * sockets and the paths of the devices it holds that match the scan's device globs */
	uint64_t *sockets;
	uint32_t n_sockets;
	uint32_t n_devices;
	char **devices;
	int fds_err;            /* 0, or -errno of reading its fd folder */
};

enum pvg_select { PVG_SELECT_NONE = 0, PVG_SELECT_PID, PVG_SELECT_PIDFILE, PVG_SELECT_MATCH };

struct pvg_targets {
	struct pvg_proc *procs; /* every process, sorted by pid */
	size_t n;
	enum pvg_select how;
	/* 0 when a target was found; otherwise -EDESTADDRREQ (nothing configured), -ESRCH (no
	 * such process / none matched / pidfile names a dead or reused pid), -ENOENT (pidfile
	 * missing), -EINVAL (pidfile content), -EACCES (pidfile unreadable), -ENOTUNIQ (the
	 * pidfile's pid names a process in more than one pid namespace); msg.text says which.
	 * A pidfile's pid is a pid in its writer's namespace: it is resolved through NSpid. */
	int err;
	struct pvg_msg msg;
	pid_t root;       /* root of the service tree: the target's topmost service ancestor */
	pid_t primary;    /* the selected target: of several matching, the newest whose tree owns
			   * service.port (itself or an ancestor listens on it), else the newest */
	pid_t *targets;   /* selected processes inside the tree, primary first */
	size_t n_targets;
	pid_t *strays;    /* selected (matching) processes outside the tree */
	size_t n_strays;
	/* the pids the tree's processes have in their own pid namespaces (sorted): what the
	 * service writes in its log prefixes and pidfiles */
	pid_t *tree_ns_pids;
	size_t n_tree_ns_pids;
	uint64_t self_pidns; /* provgate's own pid namespace */
	long tick_ns;     /* resolution of start times */
	/* every process's fds were read in the same pass (pvg_targets_scan_fds), and matched
	 * against these device globs (NULL: sockets only) */
	bool fds_read;
	const struct pvg_strv *fd_devices;
	uint64_t scan_ns; /* how long the snapshot took */
};

const struct pvg_proc *pvg_targets_find(const struct pvg_targets *t, pid_t pid);
bool pvg_targets_in_tree(const struct pvg_targets *t, pid_t pid);
/* Is pid, read as a pid of the writer's own pid namespace, a process of the tree? */
bool pvg_targets_tree_has_ns_pid(const struct pvg_targets *t, pid_t pid);
void pvg_targets_free(void *t);


/* Builds the snapshot and selection from the live system (no caching). */
int pvg_targets_scan(const struct pvg_service_spec *svc, struct pvg_targets **out);
/* The same, with every process's open files read in the same pass over /proc (a process's
 * entries are then read while they are hot, by the same threads, and the later fd scans of
 * the snapshot are answered from memory): its socket inodes, and its fds whose path matches
 * devices (NULL: sockets only). For a caller that will look for a port's owner and the
 * GPU holders among every process. */
int pvg_targets_scan_fds(const struct pvg_service_spec *svc, const struct pvg_strv *devices,
			 struct pvg_targets **out);

/* A service.match / service.family pattern against a process: glob when the pattern holds
 * '*', '?' or '[', else a substring, tried on the command line and on comm; a pattern longer
 * than 15 bytes without space or '/' (a process name) also matches a comm that is its
 * 15-byte prefix (the kernel's cut). */
bool pvg_proc_matches(const struct pvg_proc *p, const char *pattern);
bool pvg_proc_matches_any(const struct pvg_proc *p, const struct pvg_strv *patterns);

/* Who holds what: one pass over /proc/<pid>/fd of the snapshot's processes. */
struct pvg_fd_holder {
	pid_t pid;
	bool in_tree;          /* the holder is a process of the service tree */
	uint64_t socket_inode; /* 0 unless a wanted socket */
	char *path;            /* the device path for a GPU device hit */
};

struct pvg_fd_scan {
	struct pvg_fd_holder *hits;
	size_t n_hits;
	pid_t *denied; /* processes whose fds could not be read (another user, no privilege) */
	size_t n_denied;
	size_t n_scanned;
};

/* The device globs: $PROVGATE_GPU_DEVICES (':'-separated) or /dev/kfd, /dev/dri/renderD*,
 * /dev/nvidia*. Returns a static string list owned by the function. */
const struct pvg_strv *pvg_gpu_device_globs(void);
/* The globs worth matching against every process's fds: NULL when they are the built-in
 * ones and procfs/devices registers none of their character drivers (nvidia*, kfd, drm):
 * no process holds such a device then, since a node of an unregistered major cannot be
 * opened and a driver with open files cannot be unloaded. */
const struct pvg_strv *pvg_gpu_device_globs_live(const char *procfs);
/* Scans fds of every process of t but provgate itself: socket:[inode] for each of inodes,
 * and (when devices is non-NULL) paths matching a device glob (hits of the tree's own
 * processes have in_tree set). When the snapshot read the fds (t->fds_read, of /proc, with
 * these devices or none asked) the answer comes from what it read. */
int pvg_fd_scan(const char *procfs, const struct pvg_targets *t, const uint64_t *inodes,
		size_t n_inodes, const struct pvg_strv *devices, struct pvg_fd_scan *out);
void pvg_fd_scan_clear(struct pvg_fd_scan *s);

/* Calls fn for every open descriptor of pid under procfs with its number and link text
 * ("/path", "socket:[123]", "pipe:[4]"); dirfd is the fd folder (fstatat on an entry stats
 * the open file itself). fn returns false to stop. 0, or -errno when the folder cannot be
 * read (-ENOENT: the process exited; -EACCES: another user's process). */
typedef bool (*pvg_fd_fn)(void *opaque, int dirfd, int fd, const char *link);
int pvg_proc_fds(const char *procfs, pid_t pid, pvg_fd_fn fn, void *opaque);

/* Time as "2026-11-29T12:00:00.123456789Z". */
void pvg_proc_format_start(const struct pvg_proc *p, char *out, size_t size);

