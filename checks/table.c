/* SPDX-License-Identifier: MIT */
/* The seven gates, in the chain's order. The runner knows nothing else about them. */
#include "checks.h"
#include "core/run.h"
#include "environment.h"

const struct pvg_check *const pvg_checks[PVG_N_GATES] = {
	&pvg_check_build_log,
	&pvg_check_install_scope,
	&pvg_check_artifact_hash,
	&pvg_check_process_maps,
	&pvg_check_stale_service,
	&pvg_check_code_object,
	&pvg_check_dispatch_marker,
};

cJSON *(*const pvg_environment_reader)(struct pvg_ctx *ctx) = pvg_environment_collect;
