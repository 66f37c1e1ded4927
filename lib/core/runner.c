/* SPDX-License-Identifier: MIT */
/* The ordered runner: reads the table of gates it is given (phases, re-checks, preparation)
 * and knows nothing of any single gate. */
#include <sys/wait.h>

#include "core/run.h"

pvg_gate_mask pvg_gates_in_phase(const struct pvg_gate_table *t, enum pvg_phase p)
{
	pvg_gate_mask m = 0;
	if ((unsigned)p > PVG_PHASE_LIVE)
		return 0;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (t->checks[i]->phases & PVG_IN_PHASE(p))
			m |= PVG_GATE_BIT(t->checks[i]->id);
	return m;
}

pvg_gate_mask pvg_gates_rechecked(const struct pvg_gate_table *t)
{
	pvg_gate_mask m = 0;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (t->checks[i]->rechecked)
			m |= PVG_GATE_BIT(t->checks[i]->id);
	return m;
}

const char *pvg_gates_name(const struct pvg_gate_table *t, int id)
{
	if (id < 1 || id > PVG_N_GATES)
		return NULL;
	return t->checks[id - 1]->name;
}

/* ---- preparing later gates ------------------------------------------------------------------ */

/* The selected gates after the current one, on the evaluating thread: the steps that must
 * stay there (see struct pvg_check). */
static void prepare_here(struct pvg_ctx *ctx)
{
	for (int k = 0; k < PVG_N_GATES; k++) {
		const struct pvg_check *c = ctx->gates->checks[k];
		if (c->prepare_here && (ctx->to_prepare & PVG_GATE_BIT(c->id)) &&
		    c->id > ctx->current_gate)
			c->prepare_here(ctx);
	}
}

/* Their prepare steps: only fill caches, never decide (see struct pvg_check). */
static void prepare_later(struct pvg_ctx *ctx)
{
	for (int k = 0; k < PVG_N_GATES; k++) {
		const struct pvg_check *c = ctx->gates->checks[k];
		pvg_gate_mask bit = PVG_GATE_BIT(c->id);
		if (!c->prepare || !(ctx->to_prepare & bit) || c->id <= ctx->current_gate)
			continue;
		ctx->to_prepare &= ~bit;
		uint64_t t0 = pvg_now_ns();
		c->prepare(ctx);
		ctx->prepared_ns[c->id - 1] = pvg_now_ns() - t0;
	}
}

/* ---- evaluation ----------------------------------------------------------------------------- */

int pvg_evaluate(struct pvg_ctx *ctx, const struct pvg_gate_table *t, pvg_gate_mask selected,
		 bool keep_going, struct pvg_result results[PVG_N_GATES], const char *why_skipped)
{
	int not_passed = 0;
	const struct pvg_result *stopper = NULL;
	ctx->gates = t;
	ctx->selected = ctx->to_prepare = selected;
	ctx->prepare_here = prepare_here;
	ctx->prepare_later = prepare_later;
	memset(ctx->prepared_ns, 0, sizeof(ctx->prepared_ns));
	for (int i = 0; i < PVG_N_GATES; i++)
		if (t->checks[i]->start && (selected & PVG_GATE_BIT(t->checks[i]->id)))
			t->checks[i]->start(ctx);
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_check *check = t->checks[i];
		struct pvg_result *r = &results[i];
		pvg_result_reset(r);
		r->id = check->id;
		r->name = check->name;
		r->evidence = cJSON_CreateObject();
		if (!(selected & PVG_GATE_BIT(check->id))) {
			r->status = PVG_SKIPPED;
			if (!(pvg_gates_in_phase(t, ctx->phase) & PVG_GATE_BIT(check->id)))
				pvg_summary(r, "not part of phase %s", pvg_phase_name(ctx->phase));
			else
				pvg_summary(r, "%s", why_skipped ? why_skipped : "not selected");
			continue;
		}
		if (stopper) {
			r->status = PVG_BLOCKED;
			pvg_summary(r, "not evaluated: gate %d %s did not pass (%s)", stopper->id,
				    stopper->name, pvg_status_name(stopper->status));
			not_passed++;
			continue;
		}
		uint64_t t0 = pvg_now_ns();
		ctx->current_gate = check->id;
		ctx->to_prepare &= ~PVG_GATE_BIT(check->id);
		r->status = check->run(ctx, r);
		r->elapsed_ns = pvg_now_ns() - t0;
		r->prepared_ns = ctx->prepared_ns[check->id - 1];
		if (r->status == PVG_PASS && r->n_problems) {
			/* A gate that found a problem cannot pass; guard against a check's slip. */
			r->status = PVG_FAIL;
		}
		if (!r->summary)
			pvg_summary(r, "%s", pvg_status_name(r->status));
		if (r->status != PVG_PASS) {
			not_passed++;
			if (!keep_going)
				stopper = r;
		}
	}
	ctx->current_gate = 0;
	ctx->to_prepare = 0;
	ctx->prepare_here = ctx->prepare_later = NULL;
	ctx->gates = NULL;
	pvg_ctx_cancel_early(ctx); /* the pair was begun but never collected: nobody wants it */
	return not_passed;
}

struct pvg_run *pvg_run_new_for(const struct pvg_gate_table *t, const struct pvg_config *cfg,
				enum pvg_phase phase, pvg_gate_mask gates, bool keep_going)
{
	struct pvg_run *run = pvg_xcalloc(1, sizeof(*run));
	run->gates = t;
	run->cfg = cfg;
	run->phase = phase;
	pvg_gate_mask in_phase = pvg_gates_in_phase(t, phase);
	run->selected = gates ? (gates & in_phase) : in_phase;
	run->keep_going = keep_going;
	pvg_ctx_init(&run->ctx, cfg, phase);
	return run;
}

void pvg_run_add_output(struct pvg_run *run, const char *path)
{
	if (!path || !path[0] || strcmp(path, "-") == 0)
		return;
	struct pvg_strv *o = &run->ctx.outputs;
	o->v = pvg_xrealloc(o->v, o->n + 2, sizeof(*o->v));
	o->v[o->n++] = pvg_path_absolute(path);
	o->v[o->n] = NULL;
}

int pvg_run_execute(struct pvg_run *run)
{
	int n = pvg_evaluate(&run->ctx, run->gates, run->selected, run->keep_going, run->results,
			     "not selected by --gates");
	run->executed = true;
	/* read while the service the gates just saw is still there, from the same snapshot */
	run->environment = run->gates->environment(&run->ctx);
	return n > 0 ? 1 : 0;
}

int pvg_run_pin(struct pvg_run *run)
{
	int ret = 0;
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_check *c = run->gates->checks[i];
		if (c->pin && (run->selected & PVG_GATE_BIT(c->id))) {
			int r = c->pin(&run->ctx);
			if (r < 0 && !ret)
				ret = r;
		}
	}
	return ret;
}

int pvg_run_recheck(struct pvg_run *run)
{
	if (!run->executed)
		return -EINVAL;
	/* The after-check sees the system anew: nothing cached from before may vouch, except
	 * which service process was certified (a restart must not pass). */
	pvg_ctx_forget(&run->ctx);
	if (!run->after)
		run->after = pvg_xcalloc(PVG_N_GATES, sizeof(*run->after));
	run->after_selected = pvg_gates_rechecked(run->gates);
	int n = pvg_evaluate(&run->ctx, run->gates, run->after_selected, true, run->after,
			     "not re-checked after the command");
	return n > 0 ? 1 : 0;
}

void pvg_run_set_window(struct pvg_run *run, uint64_t start_ns, uint64_t end_ns)
{
	run->ctx.window_start_ns = start_ns;
	run->ctx.window_end_ns = end_ns < start_ns ? start_ns : end_ns;
}

cJSON *pvg_run_exec_info(struct pvg_run *run)
{
	if (!run->exec_info)
		run->exec_info = cJSON_CreateObject();
	return run->exec_info;
}

void pvg_run_set_in_progress(struct pvg_run *run, bool in_progress)
{
	run->in_progress = in_progress;
}

enum pvg_status pvg_run_gate_status(const struct pvg_run *run, int id)
{
	if (id < 1 || id > PVG_N_GATES || !run->executed)
		return PVG_UNVERIFIABLE;
	return run->results[id - 1].status;
}

bool pvg_run_certified(const struct pvg_run *run)
{
	if (run->benchmark != PVG_BENCHMARK_NONE && run->benchmark != PVG_BENCHMARK_SUCCEEDED)
		return false;
	return pvg_run_provenance_certified(run);
}

int pvg_wait_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return 3; /* neither: an internal error, never a status a command gave */
}

void pvg_run_set_benchmark(struct pvg_run *run, enum pvg_benchmark b, int wait_status,
			   int start_errno)
{
	static const char *const outcome[] = {
		[PVG_BENCHMARK_NOT_RUN] = "not-run",
		[PVG_BENCHMARK_NOT_STARTED] = "not-started",
		[PVG_BENCHMARK_SUCCEEDED] = "succeeded",
		[PVG_BENCHMARK_FAILED] = "failed",
	};
	if (b == PVG_BENCHMARK_NONE || (unsigned)b >= ARRAY_SIZE(outcome))
		return;
	run->benchmark = b;
	free(run->benchmark_text);
	cJSON *info = pvg_run_exec_info(run);
	const char *argv0 = "";
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(info, "command");
	if (cJSON_IsArray(cmd) && cJSON_IsString(cmd->child))
		argv0 = cmd->child->valuestring;
	cJSON_DeleteItemFromObjectCaseSensitive(info, "ran");
	pvg_json_add_bool(info, "ran", b == PVG_BENCHMARK_SUCCEEDED || b == PVG_BENCHMARK_FAILED);
	cJSON_DeleteItemFromObjectCaseSensitive(info, "outcome");
	cJSON_AddStringToObject(info, "outcome", outcome[b]);
	if (b == PVG_BENCHMARK_NOT_RUN) {
		run->benchmark_text = pvg_strdup("the command was not run");
		return;
	}
	int code = pvg_wait_exit_code(wait_status);
	pvg_json_add_int(info, "exit_status", code);
	if (b == PVG_BENCHMARK_NOT_STARTED) {
		_cleanup_free_ char *why = pvg_asprintf("cannot run %s: %s", argv0,
							strerror(start_errno));
		pvg_json_add_str(info, "error", why);
		run->benchmark_text = pvg_asprintf("%s (exit status %d)", why, code);
	} else if (WIFSIGNALED(wait_status)) {
		int sig = WTERMSIG(wait_status);
		pvg_json_add_int(info, "signal", sig);
		const char *abbrev = sigabbrev_np(sig);
		run->benchmark_text = pvg_asprintf("killed by signal %d%s%s%s, exit status %d", sig,
						   abbrev ? " (SIG" : "", abbrev ? abbrev : "",
						   abbrev ? ")" : "", code);
	} else {
		run->benchmark_text = pvg_asprintf("exit status %d", code);
	}
}

enum pvg_benchmark pvg_run_benchmark(const struct pvg_run *run)
{
	return run->benchmark;
}

const char *pvg_run_benchmark_text(const struct pvg_run *run)
{
	return run->benchmark_text;
}

bool pvg_run_provenance_certified(const struct pvg_run *run)
{
	if (!run->executed || run->phase != PVG_PHASE_LIVE || run->in_progress)
		return false;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (run->results[i].status != PVG_PASS)
			return false;
	if (run->after) {
		for (int i = 0; i < PVG_N_GATES; i++)
			if ((run->after_selected & PVG_GATE_BIT(i + 1)) &&
			    run->after[i].status != PVG_PASS)
				return false;
	}
	return true;
}

void pvg_run_free(struct pvg_run *run)
{
	if (!run)
		return;
	for (int i = 0; i < PVG_N_GATES; i++)
		pvg_result_reset(&run->results[i]);
	if (run->after) {
		for (int i = 0; i < PVG_N_GATES; i++)
			pvg_result_reset(&run->after[i]);
		free(run->after);
	}
	if (run->exec_info)
		cJSON_Delete(run->exec_info);
	free(run->benchmark_text);
	if (run->environment)
		cJSON_Delete(run->environment);
	pvg_ctx_done(&run->ctx);
	free(run);
}
