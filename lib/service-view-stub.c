/* SPDX-License-Identifier: MIT */
/*
 * The live service as gate 7 sees it. Until the target-process discovery of gates 4 and 5
 * provides it, no service is known (-ENOSYS) except for tests, which name the service's root
 * process in $PROVGATE_TEST_SERVICE_PID, and configs that name it (service.pid, service.pidfile).
 * Replace this file when that discovery exists.
 */
#include "markers.h"

int pvg_service_view_get(struct pvg_ctx *ctx, struct pvg_service_view *view)
{
	memset(view, 0, sizeof(*view));
	const char *test_pid = getenv("PROVGATE_TEST_SERVICE_PID");
	if (test_pid && test_pid[0]) {
		char *end;
		long pid = strtol(test_pid, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX)
			return -EINVAL;
		return pvg_service_view_from_pid(ctx->procfs, (pid_t)pid, view);
	}
	/* service.pid / service.pidfile name the root exactly: no discovery needed */
	const struct pvg_config *cfg = ctx->cfg;
	if (cfg->service.pid > 0)
		return pvg_service_view_from_pid(ctx->procfs, (pid_t)cfg->service.pid, view);
	if (cfg->service.pidfile) {
		_cleanup_free_ char *text = NULL;
		size_t len;
		int r = pvg_read_small_file(cfg->service.pidfile, 64, &text, &len);
		if (r < 0)
			return r == -ENOENT ? -ESRCH : r;
		char *end;
		long pid = strtol(text, &end, 10);
		while (*end == '\n' || *end == ' ')
			end++;
		if (*end || pid <= 0 || pid > INT32_MAX)
			return -EINVAL;
		return pvg_service_view_from_pid(ctx->procfs, (pid_t)pid, view);
	}
	return -ENOSYS;
}

