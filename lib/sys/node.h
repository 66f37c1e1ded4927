/* SPDX-License-Identifier: MIT */
/*
 * Which node of a job this is, for the config's placeholders and the report's host.node:
 * Slurm's SLURMD_NODENAME (what `srun` gives every task, and what SLURM_JOB_NODELIST names),
 * else the short host name.
 */
#pragma once
#include <stddef.h>

#include "util/placeholder.h"

struct pvg_node {
	char node[256];       /* "n2", "gpu07" */
	const char *node_from; /* "SLURMD_NODENAME" or "hostname" */
	char host[256];       /* the short host name (up to the first '.') */
	char job[64];         /* SLURM_JOB_ID, or "" */
};

/* Fills *n from the environment and uname. Returns 0, or -EINVAL with why when
 * SLURMD_NODENAME is not a usable node name (empty, holds '/', too long, "." or ".."). */
int pvg_node_get(struct pvg_node *n, char *why, size_t why_size);

/* The placeholder table for n: {node}, {host}, {job}; fills table[3]. */
#define PVG_NODE_PLACEHOLDERS 3
void pvg_node_placeholders(const struct pvg_node *n, struct pvg_placeholder table[PVG_NODE_PLACEHOLDERS]);
