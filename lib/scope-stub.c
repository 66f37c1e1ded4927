/* SPDX-License-Identifier: MIT */
/*
 * Placeholder for the change set until lib/scope.c (install-scope) is built: without it no
 * gate can know which files changed, so gate 1 reports unverifiable. Remove this file (and
 * its line in lib/meson.build) when lib/scope.c is added.
 */
#include "scope.h"

int pvg_scope_get(struct pvg_ctx *ctx, const struct pvg_scope **out)
{
	(void)ctx;
	*out = NULL;
	return -ENOSYS;
}
