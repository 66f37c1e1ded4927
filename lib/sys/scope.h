/* SPDX-License-Identifier: MIT */
/*
 * The change set of source.repo: merge-base(baseline, HEAD)..HEAD plus uncommitted changes,
 * each file classified by source.compiled / install_map / ignore. Computed once per run
 * (checks/facts.h caches it): the install check needs the mapped files, the build-log check
 * the changed kernel sources.
 */
#pragma once
#include "util/util.h"

struct pvg_install_map {
	char *from; /* repo-relative prefix ("vllm/") or file */
	char *to;   /* absolute install location */
};

/* The source tree and its install layout (the config's "source" section). */
struct pvg_source_spec {
	char *repo;
	char *baseline;
	bool include_uncommitted; /* default true */
	struct pvg_strv compiled;
	struct pvg_install_map *install_map;
	size_t n_install_map;
	struct pvg_strv ignore;
};

enum pvg_scope_class {
	PVG_SCOPE_COMPILED, /* matches source.compiled: proven through the artifact */
	PVG_SCOPE_MAPPED,   /* under an install_map "from": must be installed byte-identical */
	PVG_SCOPE_IGNORED,  /* matches source.ignore */
	PVG_SCOPE_UNKNOWN,  /* none of these: default-deny */
};
#define PVG_SCOPE__N_CLASSES 4

struct pvg_change {
	char *path;      /* repo-relative, '/'-separated; the new path of a rename */
	char *old_path;  /* the old path of a rename, else NULL */
	char kind;       /* 'A' added, 'M' modified, 'D' deleted, 'R' renamed, 'T' type change */
	bool uncommitted; /* staged, unstaged or untracked (not in merge-base..HEAD) */
	enum pvg_scope_class cls;
	char *install_path; /* PVG_SCOPE_MAPPED: where it must be installed */
	/* Added fields. */
	enum pvg_scope_class old_cls; /* the old path's class (renames only) */
	char *old_install_path;       /* the old path's install location when it was mapped */
	bool submodule;               /* a gitlink: the "file" is another repository */
	bool provgate_input;          /* the config or a log provgate reads: counted as ignored */
};

struct pvg_scope {
	int err;   /* 0, or -errno: -ENOENT baseline unknown, -ESRCH shallow / no merge base, ... */
	struct pvg_msg msg; /* when err != 0: what happened (text) and what to do (hint) */
	char *workdir; /* the work tree's root, no trailing '/'; NULL if no repository opened */
	char merge_base[41];
	char head[41];
	struct pvg_change *changes; /* sorted by path (byte order) */
	size_t n;
	/* Added fields. */
	/* When err != 0: a stable slug for the problem code ("shallow", "unknown-baseline",
	 * "no-merge-base", "no-baseline", "not-a-repo", "no-head", "git-error"). */
	const char *reason;
	char *baseline;  /* the baseline as configured */
	char *repo;      /* the folder that was opened (source.repo or the config's folder) */
	bool shallow;
	bool include_uncommitted;
	size_t count[PVG_SCOPE__N_CLASSES]; /* changes per class */
};

/*
 * err values: -EDESTADDRREQ source.baseline not set; -ENOTDIR no repository at source.repo;
 * -ENOENT baseline (or HEAD) cannot be resolved; -ESRCH shallow clone or no merge base;
 * -EIO any other libgit2 failure.
 */

/* The change set of src (default_repo when src->repo is unset). inputs are the files
 * provgate itself reads (config, logs): an untracked or changed one is counted as ignored,
 * never as an unknown runtime file. Never NULL; a failure is in err / reason / msg. */
struct pvg_scope *pvg_scope_compute(const struct pvg_source_spec *src, const char *default_repo,
				     const char *const *inputs, size_t n_inputs);
void pvg_scope_free(struct pvg_scope *scope);

/* Class of one repo-relative path. For PVG_SCOPE_MAPPED, *install_path (when install_path is
 * not NULL) receives the install location (caller frees). Precedence, first match wins:
 * compiled, install_map (the longest "from" wins), ignore; otherwise unknown. */
enum pvg_scope_class pvg_scope_classify(const struct pvg_source_spec *src, const char *path,
					char **install_path);
const char *pvg_scope_class_name(enum pvg_scope_class cls);
/* The change whose (new) path is path, or NULL. */
const struct pvg_change *pvg_scope_find(const struct pvg_scope *scope, const char *path);
