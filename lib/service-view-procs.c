/* SPDX-License-Identifier: MIT */
/*
 * The live service as gate 7 sees it: the service tree found by the process discovery of
 * gates 4 and 5 (lib/procs.c), so that markers are attributed to exactly the processes the
 * other gates proved.
 */
#include "markers.h"
#include "procs.h"

static bool targets_in_tree(void *opaque, pid_t pid)
{
	return pvg_targets_in_tree(opaque, pid);
}

int pvg_service_view_get(struct pvg_ctx *ctx, struct pvg_service_view *view)
{
	memset(view, 0, sizeof(*view));
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (r < 0)
		return r;
	if (t->err) {
		view->why = t->why;
		return t->err == -EDESTADDRREQ ? -EDESTADDRREQ : -ESRCH;
	}
	const struct pvg_proc *root = pvg_targets_find(t, t->root);
	if (!root) {
		view->why = "the service's root process exited during the scan";
		return -ESRCH;
	}
	view->in_tree = targets_in_tree;
	view->opaque = (void *)t;
	view->start = root->start;
	view->root = t->root;
	return 0;
}

void pvg_service_view_release(struct pvg_service_view *view)
{
	if (view->release)
		view->release(view->opaque);
	memset(view, 0, sizeof(*view));
}
