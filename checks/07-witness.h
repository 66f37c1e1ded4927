/* SPDX-License-Identifier: MIT */
/* Gate 7's dispatch-witness decision (07-witness.c), called by 07-dispatch-marker.c. */
#pragma once
#include "checks.h"
#include "core/result.h"

/* witness.dir is set: the witness is part of gate 7. */
bool pvg_witness_configured(const struct pvg_config *cfg);
/* Checks the witness files of the live service against witness.require / forbid; adds its
 * problems and evidence ("witness") to res and returns its status. *summary: one line. */
enum pvg_status pvg_witness_check(struct pvg_ctx *ctx, struct pvg_result *res, char **summary);
