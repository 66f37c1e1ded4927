/* SPDX-License-Identifier: MIT */
/* Gate 4 process-maps (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_process_maps = {
	.id = 4,
	.name = "process-maps",
	.run = pvg_check_not_implemented,
};
