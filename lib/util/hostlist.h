/* SPDX-License-Identifier: MIT */
/*
 * Slurm hostlist expressions ("gpu[01-04,07]", "n[1-2]", "a,b[9-11]", "r[1-2]n[01-02]"), as
 * SLURM_JOB_NODELIST and `scontrol show hostnames` write and read them: pure, bounded, no
 * run context.
 */
#pragma once
#include <stddef.h>

#define PVG_HOSTLIST_MAX_NAME 255 /* bytes of one expanded host name */

struct pvg_hostlist {
	char **host; /* in the order written; duplicates kept (the caller decides) */
	size_t n;
};

/* Expands spec into out (which it clears first). Items are separated by ',' or white space
 * at the top level, empty items are skipped; an item is a prefix followed by bracket groups
 * "[R,R,...]" with R = N or N-M (M >= N, each number at most 9 digits); a number is written
 * as wide as the range's first number ("01-10" -> 01..10, "1-10" -> 1..10); several groups
 * multiply out in order. Like Slurm, text after the last group is refused ("a[1-2]b").
 * Returns 0; -EINVAL with why (a sentence naming the item) for a malformed expression;
 * -E2BIG when it names more than max_hosts hosts or a name longer than
 * PVG_HOSTLIST_MAX_NAME. */
int pvg_hostlist_expand(const char *spec, size_t max_hosts, struct pvg_hostlist *out, char *why,
			size_t why_size);
void pvg_hostlist_clear(struct pvg_hostlist *l);
