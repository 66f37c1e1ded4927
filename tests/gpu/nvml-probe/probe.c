/* SPDX-License-Identifier: MIT */
/* Prints what lib/sys/gpu-procs.c reads as the driver's list of GPU processes:
 *   probe [SYSFS]     (default /sys; NVML when there is no KFD list) */
#include "sys/gpu-procs.h"

int main(int argc, char **argv)
{
	struct pvg_gpu_procs g;
	char *why = NULL;
	int r = pvg_gpu_procs_read(argc > 1 ? argv[1] : "/sys", true, &g, &why);
	printf("r=%d source=%s where=%s n=%zu namespaced=%d have_memory=%d used_mib=%llu "
	       "listed_mib=%llu entries=%zu why=%s\n",
	       r, g.source ? g.source : "-", g.where ? g.where : "-", g.n, g.namespaced,
	       g.have_memory, (unsigned long long)(g.used_bytes >> 20),
	       (unsigned long long)(g.listed_bytes >> 20), g.n_entries, why ? why : "-");
	for (size_t i = 0; i < g.n; i++)
		printf("pid %d\n", (int)g.pids[i]);
	pvg_gpu_procs_clear(&g);
	free(why);
	return r < 0;
}
