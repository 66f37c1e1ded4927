/* SPDX-License-Identifier: MIT */
#pragma once
#include "pvg.h"

extern const struct pvg_check pvg_check_build_log;
extern const struct pvg_check pvg_check_install_scope;
extern const struct pvg_check pvg_check_artifact_hash;
extern const struct pvg_check pvg_check_process_maps;
extern const struct pvg_check pvg_check_stale_service;
extern const struct pvg_check pvg_check_code_object;
extern const struct pvg_check pvg_check_dispatch_marker;
