/* SPDX-License-Identifier: MIT */
/*
 * Placeholders in config values and report paths: "{node}" is replaced by its value, "{{"
 * and "}}" stand for a literal brace. Pure: the caller supplies the table of names and
 * values (lib/sys/node.h builds provgate's).
 */
#pragma once
#include <stddef.h>

struct pvg_placeholder {
	const char *name;  /* "node" */
	const char *value; /* NULL: a known name that has no value here */
	const char *unset; /* why it has none ("SLURM_JOB_ID is not set") */
};

/* Expands every placeholder of s into *out (malloc'd). Returns 0; -EINVAL with why for an
 * unknown name ("{nod}"), an unclosed "{" or a lone "}"; -ENOENT with why for a known name
 * without a value. *out is NULL on error. A string without braces is copied. */
int pvg_placeholder_expand(const char *s, const struct pvg_placeholder *table, size_t n,
			   char **out, char *why, size_t why_size);
/* Whether s holds a brace at all (a value that expansion can change). */
int pvg_placeholder_present(const char *s);
