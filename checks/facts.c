/* SPDX-License-Identifier: MIT */
/*
 * Facts that several gates share, computed once per evaluation and kept in the context's
 * slots: the target processes (gates 4, 5, 7), the change set (gates 1, 2) and the live
 * service as gate 7 sees it, so that markers are attributed to exactly the processes the
 * other gates proved.
 */
#include "facts.h"

bool pvg_service_selected(const struct pvg_config *cfg)
{
	return cfg->service.match.n || cfg->service.pid > 0 || cfg->service.pidfile;
}

int pvg_targets_get(struct pvg_ctx *ctx, const struct pvg_targets **out)
{
	struct pvg_targets *t = pvg_ctx_slot(ctx, PVG_SLOT_TARGETS);
	if (!t) {
		/* a live gate 5 reads every process's fds for the port's owner and the GPU
		 * holders: in the same pass, while each process's entries are hot */
		bool fds = ctx->phase == PVG_PHASE_LIVE && (ctx->selected & PVG_GATE_BIT(5)) &&
			   strcmp(ctx->procfs, "/proc") == 0;
		const struct pvg_strv *devices = fds ? pvg_gpu_device_globs_live(ctx->procfs) : NULL;
		if (fds && ctx->cfg->service.port <= 0 && !devices)
			fds = false;
		int r = fds ? pvg_targets_scan_fds(&ctx->cfg->service, devices, &t)
			    : pvg_targets_scan(&ctx->cfg->service, &t);
		if (r < 0)
			return r;
		pvg_ctx_set_slot(ctx, PVG_SLOT_TARGETS, t, pvg_targets_free);
	}
	*out = t;
	return 0;
}

void pvg_targets_prepare(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	(void)pvg_targets_get(ctx, &t);
}

/* A log line's pid is a pid of its writer's namespace (vLLM prints os.getpid()): it is the
 * service's when a process of the tree has that pid in its own namespace. */
static bool targets_in_tree(void *opaque, pid_t pid)
{
	return pvg_targets_tree_has_ns_pid(opaque, pid);
}

int pvg_service_view_get(struct pvg_ctx *ctx, struct pvg_service_view *view)
{
	memset(view, 0, sizeof(*view));
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (r < 0)
		return r;
	if (t->err) {
		view->why = t->msg.text;
		return t->err == -EDESTADDRREQ ? -EDESTADDRREQ : -ESRCH;
	}
	const struct pvg_proc *root = pvg_targets_find(t, t->root);
	if (!root) {
		view->why = "the service's root process exited during the scan";
		return -ESRCH;
	}
	view->in_tree = targets_in_tree;
	view->opaque = (void *)t;
	view->start = root->start;
	view->root = t->root;
	return 0;
}

void pvg_service_view_release(struct pvg_service_view *view)
{
	if (view->release)
		view->release(view->opaque);
	memset(view, 0, sizeof(*view));
}

enum pvg_status pvg_targets_problem(const struct pvg_targets *t, struct pvg_result *res)
{
	const char *reason, *hint;
	enum pvg_status st = PVG_FAIL;
	switch (t->err) {
	case -EDESTADDRREQ:
		reason = "not-configured";
		hint = "set service.match, service.pid or service.pidfile";
		st = PVG_UNVERIFIABLE;
		break;
	case -ENOENT:
		reason = "pidfile-missing";
		hint = "start the service, or point service.pidfile at the file it writes";
		break;
	case -EACCES:
		reason = "pidfile-unreadable";
		hint = "run provgate as a user that can read the pidfile";
		st = PVG_UNVERIFIABLE;
		break;
	case -EINVAL:
		reason = "pidfile-invalid";
		hint = "the pidfile must hold one decimal pid";
		break;
	case -ENOTUNIQ:
		reason = "pidfile-ambiguous";
		hint = "set service.family to the service's process names so that the pidfile's "
		       "writer can be told apart, or run provgate inside the service's container";
		st = PVG_UNVERIFIABLE;
		break;
	default:
		reason = t->how == PVG_SELECT_MATCH ? "no-target" : "target-not-running";
		hint = t->how == PVG_SELECT_MATCH
			       ? "start the service (and check service.match against ps -eo pid,cmd)"
			       : "the service is not running: start it, or update the pid/pidfile";
		break;
	}
	_cleanup_free_ char *code = pvg_asprintf("%s.%s", res->name, reason);
	pvg_problem(res, code, hint, "%s", t->msg.text ? t->msg.text : "no target process");
	pvg_summary(res, "%s", t->msg.text ? t->msg.text : "no target process");
	return st;
}

cJSON *pvg_targets_json(const struct pvg_targets *t)
{
	static const char *how[] = { "none", "pid", "pidfile", "match" };
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "selected_by", how[t->how]);
	if (t->err) {
		pvg_json_add_str(o, "error", t->msg.text);
	} else {
		cJSON_AddNumberToObject(o, "primary", t->primary);
		cJSON_AddNumberToObject(o, "tree_root", t->root);
		cJSON *a = cJSON_AddArrayToObject(o, "targets");
		for (size_t i = 0; i < t->n_targets; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(t->targets[i]));
		a = cJSON_AddArrayToObject(o, "strays");
		for (size_t i = 0; i < t->n_strays; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(t->strays[i]));
	}
	pvg_json_add_int(o, "processes_scanned", (int)t->n);
	pvg_json_add_u64(o, "scan_us", t->scan_ns / 1000);
	return o;
}

int pvg_targets_pin(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (r < 0)
		return r;
	const struct pvg_proc *p = t->err ? NULL : pvg_targets_find(t, t->primary);
	if (!p)
		return -ESRCH;
	ctx->pinned = true;
	ctx->pinned_pid = p->pid;
	ctx->pinned_start_ticks = p->start_ticks;
	free(ctx->pinned_procs);
	ctx->pinned_procs = pvg_xcalloc(t->n ? t->n : 1, sizeof(*ctx->pinned_procs));
	ctx->n_pinned_procs = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *q = &t->procs[i];
		if (!q->in_tree || q->zombie || q->self)
			continue;
		struct pvg_pinned_proc *pp = &ctx->pinned_procs[ctx->n_pinned_procs++];
		pp->pid = q->pid;
		pp->nspid = q->ns_pid ? q->ns_pid : q->pid;
		pp->start_ticks = q->start_ticks;
		pp->start = q->start;
		memcpy(pp->comm, q->comm, sizeof(pp->comm));
		pp->service = q->family || q->matched;
	}
	struct timespec rt, bt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	ctx->pinned_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	ctx->pinned_boot_ticks = t->tick_ns > 0 ? ((uint64_t)bt.tv_sec * 1000000000u +
						   (uint64_t)bt.tv_nsec) / (uint64_t)t->tick_ns
						: 0;
	return 0;
}

const struct pvg_pinned_proc *pvg_pinned_find(const struct pvg_ctx *ctx, pid_t pid,
					      uint64_t start_ticks)
{
	for (size_t i = 0; i < ctx->n_pinned_procs; i++)
		if (ctx->pinned_procs[i].pid == pid && ctx->pinned_procs[i].start_ticks == start_ticks)
			return &ctx->pinned_procs[i];
	return NULL;
}

/* ---- change set ------------------------------------------------------------------------------ */

static void scope_free_void(void *p)
{
	pvg_scope_free(p);
}

int pvg_scope_get(struct pvg_ctx *ctx, const struct pvg_scope **out)
{
	struct pvg_scope *s = pvg_ctx_slot(ctx, PVG_SLOT_CHANGE_SET);
	if (!s) {
		const struct pvg_config *cfg = ctx->cfg;
		/* provgate's own inputs are not runtime files of the change */
		const char *inputs[] = { cfg->path, cfg->build.log,
					 cfg->markers.log && strcmp(cfg->markers.log, PVG_LOG_CONTAINER)
						 ? cfg->markers.log : NULL };
		_cleanup_free_ const char **builds = pvg_xcalloc(ctx->n_arts + 1, sizeof(*builds));
		for (size_t i = 0; i < ctx->n_arts; i++)
			builds[i] = ctx->arts[i].a.build;
		const struct pvg_scope_own own = {
			.inputs = inputs,
			.n_inputs = ARRAY_SIZE(inputs),
			.outputs = (const char *const *)ctx->outputs.v,
			.n_outputs = ctx->outputs.n,
			.build_artifacts = builds,
			.n_build_artifacts = ctx->n_arts,
		};
		/* an artifact's own compiled globs are compiled sources too (gate 2 names the
		 * artifact, gate 1 proves them) */
		struct pvg_source_spec src = cfg->source;
		size_t n_globs = cfg->source.compiled.n;
		for (size_t i = 0; i < ctx->n_arts; i++)
			n_globs += ctx->arts[i].a.compiled.n;
		_cleanup_free_ char **globs = pvg_xcalloc(n_globs + 1, sizeof(*globs));
		size_t g = 0;
		for (size_t k = 0; k < cfg->source.compiled.n; k++)
			globs[g++] = cfg->source.compiled.v[k];
		for (size_t i = 0; i < ctx->n_arts; i++)
			for (size_t k = 0; k < ctx->arts[i].a.compiled.n; k++)
				globs[g++] = ctx->arts[i].a.compiled.v[k];
		src.compiled.v = globs;
		src.compiled.n = g;
		s = pvg_scope_compute(&src, cfg->dir, &own);
		pvg_ctx_set_slot(ctx, PVG_SLOT_CHANGE_SET, s, scope_free_void);
	}
	*out = s;
	return s->err;
}

void pvg_ctx_roots(const struct pvg_ctx *ctx, struct pvg_roots *roots)
{
	roots->procfs = ctx->procfs;
	roots->sysfs = ctx->sysfs;
	roots->etc = "/etc";
}

/* ---- the service tree's own facts ------------------------------------------------------------- */

static void tree_facts_free(void *p)
{
	struct pvg_tree_facts *tf = p;
	for (size_t i = 0; i < tf->n; i++)
		pvg_service_facts_clear(&tf->f[i]);
	free(tf->f);
	free(tf);
}

int pvg_tree_facts_get(struct pvg_ctx *ctx, const struct pvg_tree_facts **out)
{
	struct pvg_tree_facts *tf = pvg_ctx_slot(ctx, PVG_SLOT_TREE_FACTS);
	if (!tf) {
		const struct pvg_targets *t;
		int r = pvg_targets_get(ctx, &t);
		if (r < 0)
			return r;
		struct pvg_roots roots;
		pvg_ctx_roots(ctx, &roots);
		tf = pvg_xcalloc(1, sizeof(*tf));
		tf->f = pvg_xcalloc(t->n ? t->n : 1, sizeof(*tf->f));
		for (size_t i = 0; i < t->n; i++) {
			const struct pvg_proc *p = &t->procs[i];
			if (!p->in_tree || p->zombie)
				continue;
			if (pvg_service_facts_read(&roots, p->pid, false, &tf->f[tf->n]) == 0)
				tf->n++; /* else: exited since the snapshot */
		}
		pvg_ctx_set_slot(ctx, PVG_SLOT_TREE_FACTS, tf, tree_facts_free);
	}
	*out = tf;
	return 0;
}

/* ---- several artifacts ------------------------------------------------------------------------ */

static void prefix_problems(struct pvg_result *res, size_t from, const char *name)
{
	for (size_t k = from; k < res->n_problems; k++) {
		char *m = pvg_asprintf("%s: %s", name, res->problems[k].message);
		free(res->problems[k].message);
		res->problems[k].message = m;
	}
}

void pvg_problems_label(const struct pvg_ctx *ctx, struct pvg_result *res, size_t from,
			size_t ai)
{
	if (ctx->n_arts > 1 && ai < ctx->n_arts)
		prefix_problems(res, from, ctx->arts[ai].a.name);
}

enum pvg_status pvg_each_artifact(struct pvg_ctx *ctx, struct pvg_result *res,
				  pvg_artifact_check_fn one, void *arg)
{
	if (ctx->n_arts <= 1)
		return one(ctx, 0, res->evidence, res, arg);
	cJSON *list = cJSON_AddArrayToObject(res->evidence, "artifacts");
	enum pvg_status st = PVG_PASS;
	_cleanup_free_ char *all = NULL, *first_bad = NULL;
	size_t n_bad = 0;
	for (size_t i = 0; i < ctx->n_arts; i++) {
		const char *name = ctx->arts[i].a.name;
		cJSON *ev = cJSON_CreateObject();
		pvg_json_add_str(ev, "name", name);
		cJSON_AddItemToArray(list, ev);
		size_t from = res->n_problems;
		free(res->summary);
		res->summary = NULL;
		enum pvg_status s = one(ctx, i, ev, res, arg);
		prefix_problems(res, from, name);
		pvg_json_add_str(ev, "status", pvg_status_name(s));
		const char *sum = res->summary ? res->summary : pvg_status_name(s);
		if (s != PVG_PASS && n_bad++ == 0)
			first_bad = pvg_asprintf("%s: %s", name, sum);
		char *j = all ? pvg_asprintf("%s; %s: %s", all, name, sum)
			      : pvg_asprintf("%s: %s", name, sum);
		free(all);
		all = j;
		st = pvg_status_worst(st, s);
	}
	if (n_bad > 1)
		pvg_summary(res, "%s (and %zu more of %zu artifacts)", first_bad, n_bad - 1,
			    ctx->n_arts);
	else if (n_bad == 1)
		pvg_summary(res, "%s", first_bad);
	else
		pvg_summary(res, "%s", all);
	return st;
}

cJSON *pvg_chain_artifact(struct pvg_ctx *ctx, size_t i)
{
	cJSON *list = cJSON_GetObjectItem(ctx->chain, "artifacts");
	return cJSON_IsArray(list) ? cJSON_GetArrayItem(list, (int)i) : NULL;
}

/* ---- rules ---- */

void pvg_outcome_problem(struct pvg_outcome *o, enum pvg_status st, const char *code,
			 const char *hint, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *message = pvg_vasprintf(fmt, ap);
	va_end(ap);
	/* the problems are a result's, kept apart until the gate reports them */
	struct pvg_result r = { .problems = o->problems, .n_problems = o->n_problems };
	pvg_problem(&r, code, hint, "%s", message);
	o->problems = r.problems;
	o->n_problems = r.n_problems;
	o->status = pvg_status_worst(o->status, st);
}

void pvg_outcome_worsen(struct pvg_outcome *o, enum pvg_status st)
{
	o->status = pvg_status_worst(o->status, st);
}

enum pvg_status pvg_outcome_report(struct pvg_result *res, struct pvg_outcome *o)
{
	enum pvg_status st = o->status;
	if (o->n_problems) {
		res->problems = pvg_xrealloc(res->problems, res->n_problems + o->n_problems,
					     sizeof(*res->problems));
		memcpy(&res->problems[res->n_problems], o->problems,
		       o->n_problems * sizeof(*o->problems));
		res->n_problems += o->n_problems;
	}
	free(o->problems);
	free(o->summary);
	*o = (struct pvg_outcome){ 0 };
	return st;
}

enum pvg_status pvg_outcome_into(struct pvg_result *res, struct pvg_outcome o)
{
	return pvg_outcome_report(res, &o);
}

enum pvg_status pvg_outcome_final(struct pvg_result *res, struct pvg_outcome o)
{
	if (o.summary)
		pvg_summary(res, "%s", o.summary);
	return pvg_outcome_report(res, &o);
}

struct pvg_outcome pvg_outcome_since(struct pvg_result *res, size_t from, enum pvg_status st)
{
	struct pvg_outcome o = { .status = st };
	if (res->n_problems > from) {
		o.n_problems = res->n_problems - from;
		o.problems = pvg_xcalloc(o.n_problems, sizeof(*o.problems));
		memcpy(o.problems, &res->problems[from], o.n_problems * sizeof(*o.problems));
		res->n_problems = from;
	}
	return o;
}

void pvg_outcome_clear(struct pvg_outcome *o)
{
	struct pvg_result r = { .problems = o->problems, .n_problems = o->n_problems };
	pvg_result_reset(&r);
	free(o->summary);
	*o = (struct pvg_outcome){ 0 };
}
