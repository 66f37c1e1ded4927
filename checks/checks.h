/* SPDX-License-Identifier: MIT */
/*
 * checks: the seven gates. Each NN-name.c owns its gate's decision: its rules (listed on its
 * first screen, each taking the facts it needs and returning a status and problems), and the
 * functions that build its evidence apart from them. The facts come from facts.h (shared,
 * cached in the context's slots) or from sys/ and formats/ directly. table.c orders the
 * gates and hands the table to the runner.
 */
#pragma once
#include "core/ctx.h"

extern const struct pvg_check pvg_check_build_log;
extern const struct pvg_check pvg_check_install_scope;
extern const struct pvg_check pvg_check_artifact_hash;
extern const struct pvg_check pvg_check_process_maps;
extern const struct pvg_check pvg_check_stale_service;
extern const struct pvg_check pvg_check_code_object;
extern const struct pvg_check pvg_check_dispatch_marker;
