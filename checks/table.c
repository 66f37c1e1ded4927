/* SPDX-License-Identifier: MIT */
/*
 * The seven gates, in the chain's order, and the reader of the report's environment: the
 * table the runner (lib/core/runner.c) is handed. The public API's calls that need the gates
 * (provgate.h: pvg_phase_gates, pvg_recheck_gates, pvg_gate_name, pvg_run_new) are defined
 * here, where the table is, so that no layer below names a gate.
 */
#include "checks.h"
#include "core/run.h"
#include "environment.h"

static const struct pvg_check *const checks[PVG_N_GATES] = {
	&pvg_check_build_log,
	&pvg_check_install_scope,
	&pvg_check_artifact_hash,
	&pvg_check_process_maps,
	&pvg_check_stale_service,
	&pvg_check_code_object,
	&pvg_check_dispatch_marker,
};

static const struct pvg_gate_table gates = {
	.checks = checks,
	.environment = pvg_environment_collect,
};

pvg_gate_mask pvg_phase_gates(enum pvg_phase p)
{
	return pvg_gates_in_phase(&gates, p);
}

pvg_gate_mask pvg_recheck_gates(void)
{
	return pvg_gates_rechecked(&gates);
}

const char *pvg_gate_name(int id)
{
	return pvg_gates_name(&gates, id);
}

struct pvg_run *pvg_run_new(const struct pvg_config *cfg, enum pvg_phase phase,
			    pvg_gate_mask selected, bool keep_going)
{
	return pvg_run_new_for(&gates, cfg, phase, selected, keep_going);
}
