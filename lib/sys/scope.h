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
	bool provgate_output;         /* this run's report, or any file that is a provgate report
				       * by content: counted as ignored */
	bool build_state;             /* a build tool's state file in the build folder (.ninja_log,
				       * CMakeCache.txt, ...): counted as ignored */
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

/* provgate's own files, which are never changes of the experiment (each only ever turns an
 * unknown file into an ignored one; a mapped or compiled file stays what it is). */
struct pvg_scope_own {
	const char *const *inputs; /* files provgate reads (config, logs); NULL entries skipped */
	size_t n_inputs;
	const char *const *outputs; /* files this run writes (--json, --junit, --out, ...) */
	size_t n_outputs;
	/* build.artifact (NULL: none): well-known build-tool state (pvg_scope_is_build_state)
	 * under the top folder of the work tree that holds it ("build/", "cmake-build-rocm/")
	 * is not a runtime file */
	const char *build_artifact;
	/* more of them, the same way (a config with several artifacts) */
	const char *const *build_artifacts;
	size_t n_build_artifacts;
};

/* The change set of src (default_repo when src->repo is unset). An unknown file that is one
 * of own's, or a provgate report by content (formats/report-kind.h), is counted as ignored.
 * own may be NULL. Never NULL; a failure is in err / reason / msg. */
struct pvg_scope *pvg_scope_compute(const struct pvg_source_spec *src, const char *default_repo,
				     const struct pvg_scope_own *own);
void pvg_scope_free(struct pvg_scope *scope);

/* Class of one repo-relative path. For PVG_SCOPE_MAPPED, *install_path (when install_path is
 * not NULL) receives the install location (caller frees). Precedence, first match wins:
 * compiled, install_map (the longest "from" wins), ignore; otherwise unknown. */
enum pvg_scope_class pvg_scope_classify(const struct pvg_source_spec *src, const char *path,
					char **install_path);
const char *pvg_scope_class_name(enum pvg_scope_class cls);
/* A well-known build-tool state file or folder (.ninja_log, CMakeCache.txt, CMakeFiles/,
 * *.o, ...), by its repo-relative path. */
bool pvg_scope_is_build_state(const char *path);
/* The change whose (new) path is path, or NULL. */
const struct pvg_change *pvg_scope_find(const struct pvg_scope *scope, const char *path);
