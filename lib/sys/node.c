/* SPDX-License-Identifier: MIT */
/* The node's name for placeholders and reports: see node.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "sys/node.h"

/* A name that may stand in a path component. */
static int usable(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n >= max || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

int pvg_node_get(struct pvg_node *n, char *why, size_t why_size)
{
	memset(n, 0, sizeof(*n));
	struct utsname u;
	if (uname(&u) == 0) {
		size_t l = strcspn(u.nodename, ".");
		if (l >= sizeof(n->host))
			l = sizeof(n->host) - 1;
		memcpy(n->host, u.nodename, l);
	}
	if (!usable(n->host, sizeof(n->host)))
		snprintf(n->host, sizeof(n->host), "localhost");
	const char *job = getenv("SLURM_JOB_ID");
	if (job && usable(job, sizeof(n->job)))
		snprintf(n->job, sizeof(n->job), "%s", job);
	const char *sn = getenv("SLURMD_NODENAME");
	if (sn && sn[0]) {
		if (!usable(sn, sizeof(n->node))) {
			if (why && why_size)
				snprintf(why, why_size,
					 "SLURMD_NODENAME is not a usable node name (empty, longer "
					 "than 255 bytes, \".\", \"..\", or holding '/' or a control "
					 "character)");
			return -EINVAL;
		}
		snprintf(n->node, sizeof(n->node), "%s", sn);
		n->node_from = "SLURMD_NODENAME";
	} else {
		memcpy(n->node, n->host, sizeof(n->node));
		n->node_from = "hostname";
	}
	return 0;
}

void pvg_node_placeholders(const struct pvg_node *n, struct pvg_placeholder table[PVG_NODE_PLACEHOLDERS])
{
	table[0] = (struct pvg_placeholder){ "node", n->node, NULL };
	table[1] = (struct pvg_placeholder){ "host", n->host, NULL };
	table[2] = (struct pvg_placeholder){ "job", n->job[0] ? n->job : NULL,
					     "SLURM_JOB_ID is not set (not inside a Slurm job)" };
}
