/* SPDX-License-Identifier: MIT */
/* lib/util/hostlist.c: Slurm hostlist expressions. The expected expansions are what
 * `scontrol show hostnames` (Slurm 22.05.8, Debian 12) prints for the same text;
 * tests/scenario/t-multinode.sh compares the two on the real cluster as well. */
#include <errno.h>

#include "tap.h"
#include "util/hostlist.h"

static char joined[4096];

/* The expansion joined by spaces, or "ERR:<errno name>" */
static const char *expand(const char *spec, size_t max)
{
	struct pvg_hostlist l = { 0 };
	char why[256];
	int r = pvg_hostlist_expand(spec, max, &l, why, sizeof(why));
	if (r < 0) {
		snprintf(joined, sizeof(joined), "ERR:%s", r == -EINVAL ? "EINVAL"
							 : r == -E2BIG ? "E2BIG" : "other");
		if (!why[0])
			snprintf(joined, sizeof(joined), "ERR:no message");
		return joined;
	}
	size_t o = 0;
	joined[0] = '\0';
	for (size_t i = 0; i < l.n && o < sizeof(joined); i++)
		o += (size_t)snprintf(joined + o, sizeof(joined) - o, "%s%s", i ? " " : "", l.host[i]);
	pvg_hostlist_clear(&l);
	return joined;
}

static void hostlist_expands_ranges_with_zero_padding(void)
{
	CHECK_STR(expand("gpu[01-04,07]", 100), "gpu01 gpu02 gpu03 gpu04 gpu07");
	CHECK_STR(expand("n[1-2]", 100), "n1 n2");
	CHECK_STR(expand("n[1-10]", 100), "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
	CHECK_STR(expand("n[01-2]", 100), "n01 n02");
	CHECK_STR(expand("n[1-01]", 100), "n1");
	CHECK_STR(expand("n[007-9]", 100), "n007 n008 n009");
	CHECK_STR(expand("n[5]", 100), "n5");
}

static void hostlist_expands_comma_lists_and_plain_names(void)
{
	CHECK_STR(expand("a,b[9-11]", 100), "a b9 b10 b11");
	CHECK_STR(expand("n1", 100), "n1");
	CHECK_STR(expand("a b", 100), "a b");
	CHECK_STR(expand("a,,b", 100), "a b");
	CHECK_STR(expand("n[1-2],", 100), "n1 n2");
	CHECK_STR(expand("node-1.cluster,node-2.cluster", 100), "node-1.cluster node-2.cluster");
}

static void hostlist_keeps_duplicates_for_the_caller(void)
{
	CHECK_STR(expand("n[1,1]", 100), "n1 n1");
	CHECK_STR(expand("n1,n[2-3],n1", 100), "n1 n2 n3 n1");
}

static void hostlist_multiplies_bracket_groups(void)
{
	CHECK_STR(expand("r[1-2]n[01-02]", 100), "r1n01 r1n02 r2n01 r2n02");
	CHECK_STR(expand("a[1-2]b[1]", 100), "a1b1 a2b1");
}

static void hostlist_refuses_malformed_text(void)
{
	CHECK_STR(expand("n[3-1]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[1-2", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[1-2]]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[[1-2]]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n]1", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[a-b]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[1-2-3]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[1,]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[-1]", 100), "ERR:EINVAL");
	CHECK_STR(expand("n[1 -2]", 100), "ERR:EINVAL");
	CHECK_STR(expand("a[1-2]b", 100), "ERR:EINVAL");
	CHECK_STR(expand("", 100), "ERR:EINVAL");
	CHECK_STR(expand(" , ", 100), "ERR:EINVAL");
}

static void hostlist_is_bounded(void)
{
	/* refused by arithmetic before anything is allocated */
	CHECK_STR(expand("n[0-99999999999]", 1000), "ERR:E2BIG");
	CHECK_STR(expand("n[0-999999999]", 1000), "ERR:E2BIG");
	CHECK_STR(expand("a[0-999]b[0-999]c[0-999]", 100000), "ERR:E2BIG");
	CHECK_STR(expand("n[1-3],m[1-3]", 5), "ERR:E2BIG");
	CHECK_STR(expand("n[1-3],m[1-2]", 5), "n1 n2 n3 m1 m2");
	char long_name[400];
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK_STR(expand(long_name, 10), "ERR:E2BIG");
	long_name[250] = '[';
	strcpy(long_name + 251, "1-9]");
	CHECK(strncmp(expand(long_name, 10), "xxx", 3) == 0); /* names of 251 bytes: allowed */
	CHECK_INT(strlen(joined), 9 * 251 + 8);
	memset(long_name, 'x', 255);
	strcpy(long_name + 255, "[1-9]");
	CHECK_STR(expand(long_name, 10), "ERR:E2BIG"); /* 256 bytes */
	/* 1,000 nodes, the size of the merge benchmark */
	struct pvg_hostlist l = { 0 };
	CHECK_INT(pvg_hostlist_expand("gpu[0001-1000]", 1000, &l, NULL, 0), 0);
	CHECK_INT(l.n, 1000);
	if (l.n == 1000) {
		CHECK_STR(l.host[0], "gpu0001");
		CHECK_STR(l.host[999], "gpu1000");
	}
	pvg_hostlist_clear(&l);
}

int main(void)
{
	RUN(hostlist_expands_ranges_with_zero_padding);
	RUN(hostlist_expands_comma_lists_and_plain_names);
	RUN(hostlist_keeps_duplicates_for_the_caller);
	RUN(hostlist_multiplies_bracket_groups);
	RUN(hostlist_refuses_malformed_text);
	RUN(hostlist_is_bounded);
	TAP_EXIT();
}
