/* SPDX-License-Identifier: MIT */
/* The ordered runner: knows the table of gates, phases and statuses, nothing of any gate. */
#include <sys/stat.h>

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/run.h"
#include "sys/pymodule.h"
#include "pvg-version.h"

static const char *const status_names[] = {
	[PVG_PASS] = "pass",
	[PVG_FAIL] = "fail",
	[PVG_UNVERIFIABLE] = "unverifiable",
	[PVG_BLOCKED] = "blocked",
	[PVG_SKIPPED] = "skipped",
};

static const char *const phase_names[] = {
	[PVG_PHASE_INSTALL] = "install",
	[PVG_PHASE_PRESTART] = "prestart",
	[PVG_PHASE_LIVE] = "live",
};

const char *pvg_version(void)
{
	return PVG_VERSION;
}

const char *pvg_status_name(enum pvg_status s)
{
	return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "?";
}

const char *pvg_phase_name(enum pvg_phase p)
{
	return (unsigned)p < ARRAY_SIZE(phase_names) ? phase_names[p] : "?";
}

int pvg_phase_from_name(const char *name, enum pvg_phase *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(phase_names); i++)
		if (strcmp(name, phase_names[i]) == 0) {
			*out = (enum pvg_phase)i;
			return 0;
		}
	return -EINVAL;
}

pvg_gate_mask pvg_phase_gates(enum pvg_phase p)
{
	pvg_gate_mask m = 0;
	if ((unsigned)p >= ARRAY_SIZE(phase_names))
		return 0;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (pvg_checks[i]->phases & PVG_IN_PHASE(p))
			m |= PVG_GATE_BIT(pvg_checks[i]->id);
	return m;
}

pvg_gate_mask pvg_recheck_gates(void)
{
	pvg_gate_mask m = 0;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (pvg_checks[i]->rechecked)
			m |= PVG_GATE_BIT(pvg_checks[i]->id);
	return m;
}

const char *pvg_gate_name(int id)
{
	if (id < 1 || id > PVG_N_GATES)
		return NULL;
	return pvg_checks[id - 1]->name;
}

/* ---- results ------------------------------------------------------------------------------ */

void pvg_problem(struct pvg_result *r, const char *code, const char *hint, const char *fmt, ...)
{
	r->problems = pvg_xrealloc(r->problems, r->n_problems + 1, sizeof(*r->problems));
	struct pvg_problem *p = &r->problems[r->n_problems++];
	va_list ap;
	va_start(ap, fmt);
	p->message = pvg_vasprintf(fmt, ap);
	va_end(ap);
	p->code = pvg_strdup(code);
	p->hint = pvg_strdup(hint);
}

void pvg_summary(struct pvg_result *r, const char *fmt, ...)
{
	free(r->summary);
	va_list ap;
	va_start(ap, fmt);
	r->summary = pvg_vasprintf(fmt, ap);
	va_end(ap);
}

void pvg_result_reset(struct pvg_result *r)
{
	for (size_t i = 0; i < r->n_problems; i++) {
		free(r->problems[i].code);
		free(r->problems[i].message);
		free(r->problems[i].hint);
	}
	free(r->problems);
	free(r->summary);
	if (r->evidence)
		cJSON_Delete(r->evidence);
	memset(r, 0, sizeof(*r));
}

/* ---- context ------------------------------------------------------------------------------ */

static cJSON *new_chain(void)
{
	cJSON *chain = cJSON_CreateObject();
	cJSON_AddNullToObject(chain, "build");
	cJSON_AddNullToObject(chain, "installed");
	cJSON_AddNullToObject(chain, "processes");
	cJSON_AddNullToObject(chain, "markers");
	return chain;
}

void pvg_ctx_init(struct pvg_ctx *ctx, const struct pvg_config *cfg, enum pvg_phase phase)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->cfg = cfg;
	ctx->phase = phase;
	const char *procfs = getenv("PROVGATE_PROCFS");
	ctx->procfs = procfs && procfs[0] ? procfs : "/proc";
	const char *sysfs = getenv("PROVGATE_SYSFS");
	ctx->sysfs = sysfs && sysfs[0] ? sysfs : "/sys";
	ctx->started_ns = pvg_now_ns();
	ctx->started_at = time(NULL);
	ctx->chain = new_chain();
}

static void early_cancel(struct pvg_ctx *ctx)
{
	if (ctx->early_pair)
		pvg_pair_cancel(ctx->early_pair);
	ctx->early_pair = NULL;
}

void pvg_ctx_forget(struct pvg_ctx *ctx)
{
	early_cancel(ctx);
	free(ctx->installed_path);
	free(ctx->installed_why);
	ctx->installed_path = ctx->installed_why = NULL;
	ctx->installed_resolved = false;
	ctx->installed_err = 0;
	for (size_t i = 0; i < ctx->n_files; i++)
		pvg_file_id_clear(&ctx->files[i]);
	ctx->n_files = 0;
	for (int s = 0; s < PVG_SLOT__MAX; s++) {
		if (ctx->slot[s] && ctx->slot_free[s])
			ctx->slot_free[s](ctx->slot[s]);
		ctx->slot[s] = NULL;
		ctx->slot_free[s] = NULL;
	}
}

void pvg_ctx_done(struct pvg_ctx *ctx)
{
	pvg_ctx_forget(ctx);
	if (ctx->chain)
		cJSON_Delete(ctx->chain);
	ctx->chain = NULL;
}

void *pvg_ctx_slot(struct pvg_ctx *ctx, enum pvg_slot s)
{
	return ctx->slot[s];
}

void *pvg_ctx_take_slot(struct pvg_ctx *ctx, enum pvg_slot s)
{
	void *p = ctx->slot[s];
	ctx->slot[s] = NULL;
	ctx->slot_free[s] = NULL;
	return p;
}

void pvg_ctx_set_slot(struct pvg_ctx *ctx, enum pvg_slot s, void *p, void (*free_fn)(void *))
{
	if (ctx->slot[s] && ctx->slot_free[s])
		ctx->slot_free[s](ctx->slot[s]);
	ctx->slot[s] = p;
	ctx->slot_free[s] = free_fn;
}

int pvg_ctx_installed(struct pvg_ctx *ctx, const char **path, const char **why)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!ctx->installed_resolved) {
		ctx->installed_resolved = true;
		if (cfg->install.artifact) {
			ctx->installed_path = pvg_strdup(cfg->install.artifact);
		} else if (cfg->install.python_module) {
			ctx->installed_err = -pvg_python_module_path(
				cfg->install.python ? cfg->install.python : "python3",
				cfg->install.python_module, &ctx->installed_path, &ctx->installed_why);
		} else {
			ctx->installed_err = EDESTADDRREQ;
			ctx->installed_why = pvg_strdup(
				"neither install.artifact nor install.python_module is set");
		}
	}
	*path = ctx->installed_path;
	*why = ctx->installed_why;
	return -ctx->installed_err;
}

/* The cached entry for path, if nothing about the file can have changed since. */
static const struct pvg_file_id *cached(struct pvg_ctx *ctx, const char *path)
{
	for (size_t k = 0; k < ctx->n_files; k++) {
		struct pvg_file_id *id = &ctx->files[k];
		struct stat st;
		if (strcmp(id->path, path) != 0)
			continue;
		if (id->hashed && stat(path, &st) == 0 && pvg_file_id_matches(id, &st))
			return id;
		if (!id->hashed && stat(path, &st) < 0 && errno == id->err)
			return id;
		return NULL;
	}
	return NULL;
}

/* Stores a fresh result (taking its memory), replacing a stale entry of the same path; a
 * full cache gives up its entries in turn, so the entries of one call (at most 8) never
 * push each other out. */
static const struct pvg_file_id *cache_put(struct pvg_ctx *ctx, struct pvg_file_id *fresh)
{
	size_t slot = ctx->n_files;
	for (size_t k = 0; k < ctx->n_files; k++)
		if (strcmp(ctx->files[k].path, fresh->path) == 0)
			slot = k;
	if (slot == PVG_MAX_CACHED_FILES)
		slot = ctx->evict_next++ % PVG_MAX_CACHED_FILES;
	if (slot < ctx->n_files)
		pvg_file_id_clear(&ctx->files[slot]);
	else
		ctx->n_files++;
	ctx->files[slot] = *fresh;
	memset(fresh, 0, sizeof(*fresh));
	return &ctx->files[slot];
}

int pvg_ctx_hash(struct pvg_ctx *ctx, const char *const *paths, size_t n,
		 const struct pvg_file_id **out)
{
	const char *todo[8];
	size_t n_todo = 0;
	if (n > 8)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		out[i] = cached(ctx, paths[i]);
		if (out[i])
			continue;
		bool dup = false;
		for (size_t t = 0; t < n_todo; t++)
			dup |= strcmp(todo[t], paths[i]) == 0;
		if (!dup)
			todo[n_todo++] = paths[i];
	}
	if (n_todo) {
		struct pvg_file_id fresh[8];
		pvg_hash_files(todo, n_todo, fresh);
		for (size_t t = 0; t < n_todo; t++)
			cache_put(ctx, &fresh[t]);
		for (size_t i = 0; i < n; i++)
			if (!out[i])
				for (size_t k = 0; k < ctx->n_files; k++)
					if (strcmp(ctx->files[k].path, paths[i]) == 0)
						out[i] = &ctx->files[k];
	}
	return 0;
}

struct help {
	struct pvg_ctx *ctx;
	struct pvg_pair_job *job;
};

static void *help_thread(void *arg)
{
	struct help *h = arg;
	/* Yield to the hasher: this work has time to spare, the digest has none. Lowering
	 * the priority of a thread of our own needs no privilege. */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	pvg_pair_keep_off(h->job);
	pvg_ctx_help(h->ctx);
	return NULL;
}

/* pvg_ctx_help on a thread of low priority, while this one only waits for it: the ctx is
 * used by one thread at a time. */
static void help_niced(struct pvg_ctx *ctx, struct pvg_pair_job *job)
{
	for (int k = 0; k < PVG_N_GATES; k++) {
		const struct pvg_check *c = pvg_checks[k];
		if (c->prepare_here && (ctx->to_prepare & PVG_GATE_BIT(c->id)) &&
		    c->id > ctx->current_gate)
			c->prepare_here(ctx);
	}
	pthread_t t;
	struct help h = { ctx, job };
	if (pthread_create(&t, NULL, help_thread, &h) == 0)
		pthread_join(t, NULL);
	else
		pvg_ctx_help(ctx);
}

int pvg_ctx_hash_pair(struct pvg_ctx *ctx, const char *build, const char *installed,
		      const struct pvg_file_id *out[2], uint64_t *diff_at)
{
	*diff_at = UINT64_MAX;
	struct pvg_pair_job *job = ctx->early_pair;
	ctx->early_pair = NULL;
	out[0] = cached(ctx, build);
	out[1] = cached(ctx, installed);
	if ((out[0] && out[1]) || strcmp(build, installed) == 0) {
		if (job)
			pvg_pair_cancel(job);
		const char *paths[2] = { build, installed };
		return pvg_ctx_hash(ctx, paths, 2, out);
	}
	if (!job)
		job = pvg_pair_start(build, installed);
	help_niced(ctx, job);
	struct pvg_file_id b, i, own;
	bool own_done = false;
	if (pvg_pair_wait_differs(job)) {
		/* hash the build here while the installed file finishes */
		pvg_hash_file(build, &own);
		own_done = true;
	}
	int eq = pvg_pair_join(job, &b, &i, diff_at);
	if (eq != 1) {
		/* they differ, or could not be compared: the build's own digest */
		pvg_file_id_clear(&b);
		if (own_done)
			b = own;
		else
			pvg_hash_file(build, &b);
	} else if (own_done) {
		pvg_file_id_clear(&own);
	}
	out[1] = cache_put(ctx, &i);
	out[0] = cache_put(ctx, &b);
	return 0;
}

void pvg_ctx_hash_early(struct pvg_ctx *ctx, const char *build, const char *installed)
{
	if (!ctx->early_pair && strcmp(build, installed) != 0 &&
	    !(cached(ctx, build) && cached(ctx, installed)))
		ctx->early_pair = pvg_pair_start(build, installed);
}

void pvg_ctx_help(struct pvg_ctx *ctx)
{
	for (int k = 0; k < PVG_N_GATES; k++) {
		const struct pvg_check *c = pvg_checks[k];
		pvg_gate_mask bit = PVG_GATE_BIT(c->id);
		if (!c->prepare || !(ctx->to_prepare & bit) || c->id <= ctx->current_gate)
			continue;
		ctx->to_prepare &= ~bit;
		uint64_t t0 = pvg_now_ns();
		c->prepare(ctx);
		ctx->prepared_ns[c->id - 1] = pvg_now_ns() - t0;
	}
}

void pvg_chain_set(struct pvg_ctx *ctx, const char *key, cJSON *value)
{
	cJSON_ReplaceItemInObject(ctx->chain, key, value);
}

/* ---- evaluation ----------------------------------------------------------------------------- */

int pvg_evaluate(struct pvg_ctx *ctx, pvg_gate_mask selected, bool keep_going,
		 struct pvg_result results[PVG_N_GATES], const char *why_skipped)
{
	int not_passed = 0;
	const struct pvg_result *stopper = NULL;
	ctx->to_prepare = selected;
	memset(ctx->prepared_ns, 0, sizeof(ctx->prepared_ns));
	for (int i = 0; i < PVG_N_GATES; i++)
		if (pvg_checks[i]->start && (selected & PVG_GATE_BIT(pvg_checks[i]->id)))
			pvg_checks[i]->start(ctx);
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_check *check = pvg_checks[i];
		struct pvg_result *r = &results[i];
		pvg_result_reset(r);
		r->id = check->id;
		r->name = check->name;
		r->evidence = cJSON_CreateObject();
		if (!(selected & PVG_GATE_BIT(check->id))) {
			r->status = PVG_SKIPPED;
			if (!(pvg_phase_gates(ctx->phase) & PVG_GATE_BIT(check->id)))
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
	early_cancel(ctx); /* gate 3 did not run: nobody wants the digest */
	return not_passed;
}

struct pvg_run *pvg_run_new(const struct pvg_config *cfg, enum pvg_phase phase,
			    pvg_gate_mask gates, bool keep_going)
{
	struct pvg_run *run = pvg_xcalloc(1, sizeof(*run));
	run->cfg = cfg;
	run->phase = phase;
	pvg_gate_mask in_phase = pvg_phase_gates(phase);
	run->selected = gates ? (gates & in_phase) : in_phase;
	run->keep_going = keep_going;
	pvg_ctx_init(&run->ctx, cfg, phase);
	return run;
}

int pvg_run_execute(struct pvg_run *run)
{
	int n = pvg_evaluate(&run->ctx, run->selected, run->keep_going, run->results,
			     "not selected by --gates");
	run->executed = true;
	return n > 0 ? 1 : 0;
}

int pvg_run_pin(struct pvg_run *run)
{
	int ret = 0;
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_check *c = pvg_checks[i];
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
	run->after_selected = pvg_recheck_gates();
	int n = pvg_evaluate(&run->ctx, run->after_selected, true, run->after,
			     "not re-checked after the command");
	return n > 0 ? 1 : 0;
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

char *pvg_run_report_json(const struct pvg_run *run)
{
	_cleanup_json_ cJSON *report = pvg_report_build(run);
	return cJSON_Print(report);
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
	pvg_ctx_done(&run->ctx);
	free(run);
}
