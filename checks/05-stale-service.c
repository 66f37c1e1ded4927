/* SPDX-License-Identifier: MIT */
/* Gate 5 stale-service (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_stale_service = {
	.id = 5,
	.name = "stale-service",
	.run = pvg_check_not_implemented,
};
