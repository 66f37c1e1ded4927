/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the one reader of provgate reports (core/report-read.c) and the cluster
 * decision over it: the input is node n2's report file in a two-node job. */
/* Built by tests/fuzz/build.sh. */
#include <unistd.h>

#include "core/cluster.h"

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/pvg-fuzz-cluster.%d", (int)getpid());
		mkdir(dir, 0700);
	}
	_cleanup_free_ char *path = pvg_path_join(dir, "n2.json");
	FILE *f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct pvg_cluster *c = NULL;
	struct pvg_error err;
	if (pvg_cluster_new("n[1-2]", "--nodes", 300, &c, &err) == 0) {
		pvg_cluster_add(c, dir, &err);
		pvg_cluster_decide(c);
		free(pvg_cluster_report_json(c));
		for (size_t i = 0; i < c->expected.n; i++)
			(void)pvg_cluster_node_status(c, i);
		pvg_cluster_free(c);
	}
	unlink(path);
	return 0;
}
