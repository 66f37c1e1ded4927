/* SPDX-License-Identifier: MIT */
/* libFuzzer: Slurm hostlist expressions (merge's --nodes, SLURM_JOB_NODELIST) and the
 * "{node}" placeholders of config values and report paths, on the same text. */
#include "util/hostlist.h"
#include "util/placeholder.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = pvg_xcalloc(size + 1, 1);
	memcpy(s, data, size); /* a NUL inside ends the text, as in argv or the environment */
	struct pvg_hostlist l = { 0 };
	char why[256];
	if (pvg_hostlist_expand(s, 4096, &l, why, sizeof(why)) == 0) {
		if (l.n == 0 || l.n > 4096)
			__builtin_trap();
		for (size_t i = 0; i < l.n; i++)
			if (strlen(l.host[i]) > PVG_HOSTLIST_MAX_NAME)
				__builtin_trap();
	}
	pvg_hostlist_clear(&l);
	static const struct pvg_placeholder t[] = {
		{ "node", "n1", NULL }, { "host", "h", NULL }, { "job", NULL, "unset" } };
	char *out = NULL;
	if (pvg_placeholder_expand(s, t, 3, &out, why, sizeof(why)) == 0 && !out)
		__builtin_trap();
	free(out);
	free(s);
	return 0;
}
