/* SPDX-License-Identifier: MIT */
/* lib/util/placeholder.c and lib/sys/node.c: "{node}" in config values and report paths. */
#include <errno.h>

#include "tap.h"
#include "sys/node.h"
#include "util/placeholder.h"

static const struct pvg_placeholder table[] = {
	{ "node", "n2", NULL },
	{ "host", "box", NULL },
	{ "job", NULL, "SLURM_JOB_ID is not set" },
};

static char why[256];

static const char *exp_(const char *s, int *rc)
{
	static char buf[512];
	char *out = NULL;
	why[0] = '\0';
	*rc = pvg_placeholder_expand(s, table, 3, &out, why, sizeof(why));
	snprintf(buf, sizeof(buf), "%s", out ? out : "(null)");
	free(out);
	return buf;
}

static void placeholder_replaces_known_names(void)
{
	int rc;
	CHECK_STR(exp_("/opt/{node}/venv", &rc), "/opt/n2/venv");
	CHECK_INT(rc, 0);
	CHECK_STR(exp_("logs/{host}-{node}.log", &rc), "logs/box-n2.log");
	CHECK_STR(exp_("{node}{node}", &rc), "n2n2");
	CHECK_STR(exp_("plain/path", &rc), "plain/path");
	CHECK_STR(exp_("", &rc), "");
	CHECK_INT(rc, 0);
}

static void placeholder_doubled_braces_are_literal(void)
{
	int rc;
	CHECK_STR(exp_("a{{node}}b", &rc), "a{node}b");
	CHECK_INT(rc, 0);
	CHECK_STR(exp_("{{{node}}}", &rc), "{n2}");
	CHECK_INT(rc, 0);
}

static void placeholder_refuses_unknown_and_malformed(void)
{
	int rc;
	CHECK_STR(exp_("/opt/{nod}/x", &rc), "(null)");
	CHECK_INT(rc, -EINVAL);
	CHECK(strstr(why, "{nod}") != NULL);
	CHECK(strstr(why, "{node}") != NULL); /* the known ones are listed */
	exp_("/opt/{node", &rc);
	CHECK_INT(rc, -EINVAL);
	exp_("/opt/{}", &rc);
	CHECK_INT(rc, -EINVAL);
	exp_("/opt/}", &rc);
	CHECK_INT(rc, -EINVAL);
	exp_("{a{node}}", &rc);
	CHECK_INT(rc, -EINVAL);
	exp_("{0123456789012345678901234567890123456789}", &rc);
	CHECK_INT(rc, -EINVAL);
}

static void placeholder_without_value_says_why(void)
{
	int rc;
	CHECK_STR(exp_("r/{job}/{node}.json", &rc), "(null)");
	CHECK_INT(rc, -ENOENT);
	CHECK(strstr(why, "SLURM_JOB_ID") != NULL);
}

static void node_prefers_slurmd_nodename(void)
{
	struct pvg_node n;
	char w[256];
	setenv("SLURMD_NODENAME", "gpu07", 1);
	setenv("SLURM_JOB_ID", "1234", 1);
	CHECK_INT(pvg_node_get(&n, w, sizeof(w)), 0);
	CHECK_STR(n.node, "gpu07");
	CHECK_STR(n.node_from, "SLURMD_NODENAME");
	CHECK_STR(n.job, "1234");
	struct pvg_placeholder t[PVG_NODE_PLACEHOLDERS];
	pvg_node_placeholders(&n, t);
	char *out = NULL;
	CHECK_INT(pvg_placeholder_expand("{job}/{node}", t, PVG_NODE_PLACEHOLDERS, &out, w,
					 sizeof(w)), 0);
	CHECK_STR(out, "1234/gpu07");
	free(out);
	setenv("SLURMD_NODENAME", "../etc", 1);
	CHECK_INT(pvg_node_get(&n, w, sizeof(w)), -EINVAL);
	unsetenv("SLURMD_NODENAME");
	unsetenv("SLURM_JOB_ID");
	CHECK_INT(pvg_node_get(&n, w, sizeof(w)), 0);
	CHECK_STR(n.node_from, "hostname");
	CHECK_STR(n.node, n.host);
	CHECK(strchr(n.host, '.') == NULL);
	CHECK_STR(n.job, "");
}

int main(void)
{
	RUN(placeholder_replaces_known_names);
	RUN(placeholder_doubled_braces_are_literal);
	RUN(placeholder_refuses_unknown_and_malformed);
	RUN(placeholder_without_value_says_why);
	RUN(node_prefers_slurmd_nodename);
	TAP_EXIT();
}
