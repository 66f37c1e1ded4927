/* SPDX-License-Identifier: MIT */
/* lib/core: a run (phase, selection, results, exec's after-check) and its report. */
#pragma once

#include "core/ctx.h"

struct pvg_run {
	const struct pvg_gate_table *gates;
	const struct pvg_config *cfg;
	enum pvg_phase phase;
	pvg_gate_mask selected;
	bool keep_going;
	struct pvg_ctx ctx;
	struct pvg_result results[PVG_N_GATES];
	bool executed;
	/* exec: the after-check, when one ran */
	struct pvg_result *after;
	pvg_gate_mask after_selected;
	cJSON *exec_info;
	/* exec: the command is still running (the interim report); never certified */
	bool in_progress;
	/* exec: what became of the command (PVG_BENCHMARK_NONE for run and certify) and its
	 * words for the verdict ("exit status 3", "cannot run x: No such file or directory") */
	enum pvg_benchmark benchmark;
	char *benchmark_text;
	/* the report's "environment": what the benchmark ran on (host, GPU, service, inputs) */
	cJSON *environment;
};

/* The table-driven runner behind provgate.h's pvg_phase_gates, pvg_recheck_gates,
 * pvg_gate_name and pvg_run_new, which checks/table.c defines with its table of gates. */
pvg_gate_mask pvg_gates_in_phase(const struct pvg_gate_table *t, enum pvg_phase p);
pvg_gate_mask pvg_gates_rechecked(const struct pvg_gate_table *t);
const char *pvg_gates_name(const struct pvg_gate_table *t, int id);
struct pvg_run *pvg_run_new_for(const struct pvg_gate_table *t, const struct pvg_config *cfg,
				enum pvg_phase phase, pvg_gate_mask gates, bool keep_going);

/* Evaluates `selected` gates into results[] (stop at first non-pass unless keep_going).
 * Returns the number of selected gates that did not pass. */
int pvg_evaluate(struct pvg_ctx *ctx, const struct pvg_gate_table *t, pvg_gate_mask selected,
		 bool keep_going, struct pvg_result results[PVG_N_GATES], const char *why_skipped);
cJSON *pvg_report_build(const struct pvg_run *run);
cJSON *pvg_result_json(const struct pvg_result *r);

/* exec's record of the command (created on first use; the report's "exec" object). */
cJSON *pvg_run_exec_info(struct pvg_run *run);
/* While the command runs: the report says so and is never certified. */
void pvg_run_set_in_progress(struct pvg_run *run, bool in_progress);

static inline void pvg_run_freep(struct pvg_run **run)
{
	pvg_run_free(*run);
}
#define _cleanup_run_ _cleanup_(pvg_run_freep)
