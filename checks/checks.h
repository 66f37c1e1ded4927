/* SPDX-License-Identifier: MIT */
/* checks: the seven gates. Each NN-name.c owns its gate's decision; table.c orders them. */
#pragma once
#include "core/ctx.h"

extern const struct pvg_check pvg_check_build_log;
extern const struct pvg_check pvg_check_install_scope;
extern const struct pvg_check pvg_check_artifact_hash;
extern const struct pvg_check pvg_check_process_maps;
extern const struct pvg_check pvg_check_stale_service;
extern const struct pvg_check pvg_check_code_object;
extern const struct pvg_check pvg_check_dispatch_marker;
