/* SPDX-License-Identifier: MIT */
/* Gate 1 build-log (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_build_log = {
	.id = 1,
	.name = "build-log",
	.run = pvg_check_not_implemented,
};
