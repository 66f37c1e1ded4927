/* SPDX-License-Identifier: MIT */
/* Gate 2 install-scope (SPEC §2). */
#include "checks.h"

const struct pvg_check pvg_check_install_scope = {
	.id = 2,
	.name = "install-scope",
	.run = pvg_check_not_implemented,
};
