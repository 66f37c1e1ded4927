/* SPDX-License-Identifier: MIT */
/* checks: gate 4's facts and rules, apart from reading /proc, so that unit tests can drive
 * each rule with facts they build by hand (checks/04-process-maps.c reads and decides). */
#pragma once

#include <limits.h>
#include <sys/stat.h>

#include "facts.h"
#include "sys/maps.h"
#include "util/untrusted.h"

/* The installed artifact one artifact's mapped files are compared with. */
struct pvg_maps_artifact {
	const char *installed;  /* as configured */
	char canon[PATH_MAX];   /* as maps shows it: links resolved */
	const char *name;       /* base name */
	struct stat st;         /* its dev, inode and ctime now */
	const struct pvg_file_id *inst_id; /* cached identity + digest of the installed file */
	const unsigned char *digest;       /* what the mapped bytes must hash to */
	const char *digest_hex;
	const char *digest_of;             /* "build" or "installed file" */
	long tick_ns;                      /* the start time's resolution */
	struct pvg_maps_id ref;            /* the device and inode maps shows for it */
};

/* The bytes one process maps of the installed file, as read (or not) through map_files. */
struct pvg_mapped_bytes {
	/* not NONE: the address now holds something else (a device, a file over the bound or
	 * mostly holes), which was not read */
	enum pvg_refusal refused;
	uint64_t size;            /* of what the link names now */
	int err;                  /* 0, or -errno of opening (or, with hash_failed, reading) */
	bool hash_failed;
	const char *from;         /* where the digest came from; NULL: no digest */
	unsigned char digest[32];
	char hex[65];
	char *map_files;          /* /proc/PID/map_files/START-END (owned) */
};

/* One file of the artifact's name (or the installed file itself) mapped by one process. */
struct pvg_maps_mapping {
	const struct pvg_mapped_file *f;
	bool is_installed;       /* the installed file, by identity in the process's namespace */
	bool quirk;              /* matched despite a device number quirk */
	bool numbers_only;       /* matched by numbers that btrfs gives files of other
				  * subvolumes too, map_files not followed: its bytes must be read */
	int now_r;               /* stat of f->path in the process's mount namespace: 0/-errno */
	struct stat now;
	bool now_installed;      /* that path names the installed file now */
	bool same_path;          /* the mapped path is the installed path */
	bool still_there;        /* the mapped file is still at its path there */
	struct pvg_mapped_bytes bytes; /* read when is_installed and not deleted */
};

/* One process of the tree against one artifact. */
struct pvg_maps_process {
	const struct pvg_proc *p;
	bool target;             /* a selected target (not just a member of the tree) */
	bool must_map;           /* service.match: each target must map it itself */
	int err;                 /* 0, or -errno of reading its maps (-ESRCH: gone) */
	struct pvg_maps_mapping *m; /* its mappings of the artifact's name, in maps order */
	size_t n;
};

/* The rules of one mapping, in order; each returns its status and problems. */
struct pvg_outcome pvg_maps_rule_not_deleted(const struct pvg_maps_artifact *a,
					     const struct pvg_maps_process *pr,
					     const struct pvg_maps_mapping *m);
struct pvg_outcome pvg_maps_rule_same_file(const struct pvg_maps_artifact *a,
					   const struct pvg_maps_process *pr,
					   const struct pvg_maps_mapping *m);
struct pvg_outcome pvg_maps_rule_same_bytes(const struct pvg_maps_artifact *a,
					    const struct pvg_maps_process *pr,
					    const struct pvg_maps_mapping *m);
struct pvg_outcome pvg_maps_rule_started_after_install(const struct pvg_maps_artifact *a,
						       const struct pvg_maps_process *pr,
						       const struct pvg_maps_mapping *m);

/* A process's verdict: the worst status of its rules, and what the tree's rules count. */
struct pvg_maps_verdict {
	enum pvg_status status;
	bool scanned;            /* its maps were read */
	bool mapped;             /* it loaded the installed file (or its former self) */
	bool named;              /* it maps a file of the artifact's name */
	bool verified;           /* it maps the installed bytes, loaded after the install */
	bool *mapping_verified;  /* per mapping of the process: every rule passed (owned) */
};
void pvg_maps_verdict_clear(struct pvg_maps_verdict *v);

/* Every rule of one process (maps readable, each mapping's, a target maps it); the problems
 * go to res in the order found. */
struct pvg_maps_verdict pvg_maps_check_process(struct pvg_result *res,
					       const struct pvg_maps_artifact *a,
					       const struct pvg_maps_process *pr);

/* The tree's rules for one artifact, over the processes' verdicts. */
struct pvg_maps_tree {
	const struct pvg_targets *t;
	const struct pvg_maps_artifact *a;
	size_t n_checked, n_mapping, n_unscanned, n_named;
	enum pvg_status so_far;     /* the processes' worst status */
};
struct pvg_outcome pvg_maps_rule_tree_scanned(const struct pvg_maps_tree *tr);
struct pvg_outcome pvg_maps_rule_tree_maps(const struct pvg_maps_tree *tr);

/* exec's after-check: the service processes of the tree (service.family or service.match)
 * the before-check certified, against those there now. */
struct pvg_maps_service_change {
	const struct pvg_pinned_proc *pinned; /* every process of the tree, as pinned */
	size_t n_pinned;
	pid_t pinned_primary;                 /* the selected one (rule_service_not_restarted's) */
	uint64_t pinned_ns;                   /* CLOCK_REALTIME of the pin */
	uint64_t window_start_ns, window_end_ns; /* the benchmark's; 0: not known */
	const struct pvg_targets *t;          /* the after-check's snapshot */
};
/* Fails for a certified service process not in the tree now (exited, restarted, or moved out
 * of it), and for a service process of the tree that the before-check did not see; the
 * selected process itself is rule_service_not_restarted's. A process of no service name (a
 * compiler, a shell) is no service process: neither counts. */
struct pvg_outcome pvg_maps_rule_same_service_processes(const struct pvg_maps_service_change *c);
/* "service_processes": certified, gone [...], new [...]. */
void pvg_maps_service_change_json(cJSON *ev, const struct pvg_maps_service_change *c);
