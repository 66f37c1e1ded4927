/* SPDX-License-Identifier: MIT */
/*
 * The change set of source.repo: merge-base(baseline, HEAD)..HEAD plus uncommitted changes,
 * each file classified by source.compiled / install_map / ignore. Computed once per run
 * (PVG_SLOT_SCOPE) and shared by gate 2 (install-scope) and gate 1 (build-log), which needs
 * the changed kernel sources.
 */
#pragma once
#include "pvg.h"

enum pvg_scope_class {
	PVG_SCOPE_COMPILED, /* matches source.compiled: proven by gates 1, 3, 6 */
	PVG_SCOPE_MAPPED,   /* under an install_map "from": must be installed byte-identical */
	PVG_SCOPE_IGNORED,  /* matches source.ignore */
	PVG_SCOPE_UNKNOWN,  /* none of these: default-deny */
};

struct pvg_change {
	char *path;      /* repo-relative, '/'-separated; the new path of a rename */
	char *old_path;  /* the old path of a rename, else NULL */
	char kind;       /* 'A' added, 'M' modified, 'D' deleted, 'R' renamed, 'T' type change */
	bool uncommitted; /* staged, unstaged or untracked (not in merge-base..HEAD) */
	enum pvg_scope_class cls;
	char *install_path; /* PVG_SCOPE_MAPPED: where it must be installed */
};

struct pvg_scope {
	int err;   /* 0, or -errno: -ENOENT baseline unknown, -ESRCH shallow / no merge base, ... */
	char *why; /* message when err != 0 */
	char *workdir;
	char merge_base[41];
	char head[41];
	struct pvg_change *changes;
	size_t n;
};

/* The run's change set (computed on first use). Returns 0 or scope->err. */
int pvg_scope_get(struct pvg_ctx *ctx, const struct pvg_scope **out);
