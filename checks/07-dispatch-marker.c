/* SPDX-License-Identifier: MIT */
/* Gate 7 dispatch-marker (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_dispatch_marker = {
	.id = 7,
	.name = "dispatch-marker",
	.run = pvg_check_not_implemented,
};
