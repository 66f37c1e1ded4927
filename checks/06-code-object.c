/* SPDX-License-Identifier: MIT */
/* Gate 6 code-object (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_code_object = {
	.id = 6,
	.name = "code-object",
	.run = pvg_check_not_implemented,
};
